/**
 * The MCP client configurations the "Connect an agent" page offers, for an org's endpoint and an API key (sent as
 * X-API-Key). Pure functions, so the tests feed the very same text to the clients (or their schemas).
 */
export interface AgentConfig {
  id: string;
  client: string;
  /** Where the text goes. */
  where: string;
  language: 'json' | 'shell' | 'text';
  text: string;
}

export function agentConfigs(endpoint: string, key: string): AgentConfig[] {
  const json = (value: unknown) => JSON.stringify(value, null, 2);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp-remote itself expands it from its env (no shell involved)
  const remoteArgs = ['-y', 'mcp-remote', endpoint, '--header', 'X-API-Key:${TOOLGATE_API_KEY}'];
  return [
    {
      id: 'claude-desktop',
      client: 'Claude Desktop',
      where: 'claude_desktop_config.json (Settings → Developer → Edit Config); it runs mcp-remote, which needs Node.js',
      language: 'json',
      text: json({ mcpServers: { toolgate: { command: 'npx', args: remoteArgs, env: { TOOLGATE_API_KEY: key } } } }),
    },
    {
      id: 'claude-code',
      client: 'Claude Code',
      where: 'a terminal',
      language: 'shell',
      text: `claude mcp add --transport http toolgate ${endpoint} --header "X-API-Key: ${key}"`,
    },
    {
      id: 'vscode',
      client: 'VS Code (GitHub Copilot agent mode)',
      where: '.vscode/mcp.json in the workspace (VS Code asks for the key once and stores it)',
      language: 'json',
      text: json({
        inputs: [{ type: 'promptString', id: 'toolgate-api-key', description: 'Toolgate API key', password: true }],
        // biome-ignore lint/suspicious/noTemplateCurlyInString: VS Code's own input variable
        servers: { toolgate: { type: 'http', url: endpoint, headers: { 'X-API-Key': '${input:toolgate-api-key}' } } },
      }),
    },
    {
      id: 'cursor',
      client: 'Cursor',
      where: '~/.cursor/mcp.json (or .cursor/mcp.json in a project)',
      language: 'json',
      text: json({ mcpServers: { toolgate: { url: endpoint, headers: { 'X-API-Key': key } } } }),
    },
    {
      id: 'mcp-remote',
      client: 'Any stdio-only client (mcp-remote)',
      where: "the client's command for a stdio server",
      language: 'shell',
      text: `TOOLGATE_API_KEY=${key} npx ${remoteArgs.map((a) => (a.includes('$') ? `'${a}'` : a)).join(' ')}`,
    },
    {
      id: 'chatgpt',
      client: 'ChatGPT (connectors, developer mode)',
      where: 'Settings → Connectors → Create',
      language: 'text',
      text: `MCP server URL: ${endpoint}\nAuthentication: ChatGPT connectors sign in with OAuth and cannot send an API key header; use one of the clients above with a key, or the org's OAuth sign-in once it is set up.`,
    },
  ];
}
