// Acceptance (issue 31, "Connect an agent"): the console's mcp-remote configurations, exactly as agentConfigs()
// writes them (the Claude Desktop JSON and the "Any stdio-only client" shell line), fed to the real mcp-remote 0.15.1,
// which the official MCP SDK client drives over stdio against a gateway served on a real port. The only change made
// to each configuration is `npx -y mcp-remote` → `node <the installed mcp-remote's bin>`, so no registry is reached
// at run time; mcp-remote expands `${TOOLGATE_API_KEY}` in its --header argument itself, from the env the
// configuration sets. mcp-remote is installed on demand into .cache/mcp-remote (git-ignored); without the registry
// the tests are skipped with that reason.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { agentConfigs } from '../web/console/agent-configs.ts';
import { onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';

setDefaultTimeout(60_000);

const VERSION = '0.15.1';
const DIR = resolve('.cache/mcp-remote');
const PACKAGE_DIR = join(DIR, 'node_modules/mcp-remote');
/** What mcp-remote logs (stderr) when it expands the placeholder of the --header argument from its env. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: mcp-remote's own placeholder, as it logs it
const EXPANDED = "Replacing ${TOOLGATE_API_KEY} with environment value in header 'X-API-Key'";

/** Installs mcp-remote when missing; returns why it cannot run here, or null. */
function installMcpRemote(): string | null {
  const installed = (): boolean =>
    existsSync(join(PACKAGE_DIR, 'package.json')) && JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).version === VERSION;
  if (installed()) return null;
  try {
    execFileSync('npm', ['install', '--prefix', DIR, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', `mcp-remote@${VERSION}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 180_000,
    });
  } catch (error) {
    return `mcp-remote@${VERSION} could not be installed (the npm registry cannot be reached?): ${String(error).slice(0, 300)}`;
  }
  return installed() ? null : `mcp-remote@${VERSION} is not in ${DIR} after npm install`;
}

const skipReason = installMcpRemote();
if (skipReason) console.warn(`agent-configs-mcp-remote: skipped: ${skipReason}`);

/** The installed mcp-remote's executable, as its package.json "bin" names it. */
function mcpRemoteBin(): string {
  const bin = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).bin as Record<string, string>;
  return join(PACKAGE_DIR, bin['mcp-remote']!);
}

/** A client's command line: `npx -y mcp-remote …` becomes `node <bin> …`; anything else is left as it is. */
function withInstalledMcpRemote(command: string, args: string[]): { command: string; args: string[] } {
  expect([command, ...args.slice(0, 2)]).toEqual(['npx', '-y', 'mcp-remote']);
  return { command: 'node', args: [mcpRemoteBin(), ...args.slice(2)] };
}

/**
 * The words of a POSIX shell line of the form the console writes (`NAME=value … command 'quoted word' …`): blanks
 * split words, single quotes keep their text as it is. Anything else a shell treats specially fails the test.
 */
function shellWords(line: string): string[] {
  expect(line).not.toMatch(/["\\`;|&<>()\n]|\$(?![{][A-Z_]+[}]')/);
  const words: string[] = [];
  for (const match of line.matchAll(/(?:'[^']*'|[^\s'])+/g)) words.push(match[0].replace(/'([^']*)'/g, '$1'));
  return words;
}

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let endpoint: string;
let configDir: string;
const transports: StdioClientTransport[] = [];

beforeAll(async () => {
  if (skipReason) return;
  g = await startTestGateway('pglite');
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  endpoint = `http://127.0.0.1:${server.port}/mcp/${org.slug}`;
  // mcp-remote keeps its OAuth state under MCP_REMOTE_CONFIG_DIR (~/.mcp-auth by default): a throwaway one here.
  configDir = mkdtempSync(join(tmpdir(), 'tg-mcp-remote-'));
}, 120_000);
afterAll(async () => {
  // Closing the transport ends mcp-remote (stdin closed, then SIGTERM, then SIGKILL); the pid check makes sure.
  for (const t of transports) {
    const pid = t.pid;
    await t.close().catch(() => {});
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  server?.stop(true);
  await g?.close();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
}, 60_000);

/** Runs mcp-remote as the configuration says, connects the SDK client over stdio, lists the tools and calls one. */
async function exercise(command: string, args: string[], env: Record<string, string>) {
  const transport = new StdioClientTransport({ command, args, env: { ...env, MCP_REMOTE_CONFIG_DIR: configDir }, stderr: 'pipe' });
  transports.push(transport);
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'agent-config-check', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: 30_000 });
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('check_approval_status');
    const approvalId = crypto.randomUUID();
    const result = (await client.callTool({ name: 'check_approval_status', arguments: { approvalId } })) as {
      content: { type: string; text: string }[];
      structuredContent?: unknown;
      isError?: boolean;
    };
    return { tools, result, approvalId, stderr };
  } catch (error) {
    throw new Error(`${String(error)}\nmcp-remote stderr:\n${stderr}`);
  } finally {
    await client.close().catch(() => {});
  }
}

describe.skipIf(Boolean(skipReason))('mcp-remote fed the console configurations', () => {
  test('Claude Desktop: claude_desktop_config.json as shown, run by the real mcp-remote', async () => {
    const config = agentConfigs(endpoint, org.apiKey).find((c) => c.id === 'claude-desktop')!;
    const server = JSON.parse(config.text).mcpServers.toolgate as { command: string; args: string[]; env: Record<string, string> };
    expect(server.env).toEqual({ TOOLGATE_API_KEY: org.apiKey });
    // The key is not in the args: mcp-remote expands the placeholder from the env the configuration sets.
    expect(server.args.join(' ')).not.toContain(org.apiKey);
    const run = withInstalledMcpRemote(server.command, server.args);
    const { result, approvalId, stderr } = await exercise(run.command, run.args, server.env);
    expect(stderr).toContain(EXPANDED);
    expect(stderr).not.toContain(org.apiKey);
    // The gateway's answer, carried back through mcp-remote: the call reached the org's endpoint with the key.
    expect(result.structuredContent).toEqual({ status: 'not_found', approvalId });
    expect(result.content[0]!.text).toContain(approvalId);
  });

  test('Any stdio-only client: the shell line as shown, run by the real mcp-remote', async () => {
    const config = agentConfigs(endpoint, org.apiKey).find((c) => c.id === 'mcp-remote')!;
    const words = shellWords(config.text);
    const env: Record<string, string> = {};
    while (/^[A-Z_]+=/.test(words[0]!)) {
      const [name, ...value] = words.shift()!.split('=');
      env[name!] = value.join('=');
    }
    expect(env).toEqual({ TOOLGATE_API_KEY: org.apiKey });
    const run = withInstalledMcpRemote(words[0]!, words.slice(1));
    const { result, approvalId, stderr } = await exercise(run.command, run.args, env);
    expect(stderr).toContain(EXPANDED);
    // The gateway's answer, carried back through mcp-remote: the call reached the org's endpoint with the key.
    expect(result.structuredContent).toEqual({ status: 'not_found', approvalId });
    expect(result.content[0]!.text).toContain(approvalId);
  });
});
