/** Onboarding pages: "Connect an agent" (copyable client configurations) and the tool playground. */
import { useState } from 'preact/hooks';
import { call, client, playgroundCall, rest } from './api.ts';
import { agentConfigs } from './agent-configs.ts';
import { Empty, toast } from './controls.tsx';
import { CopyButton, ErrorBox, Loading, Page, useAction, useLoad, type PageProps } from './kit.tsx';
import { isDatabaseType } from './connector-types.ts';

export function ConnectPage({ session }: PageProps) {
  const status = useLoad(() => call(rest.getProvisioningStatus({ client, path: { orgId: session.org_id } })));
  const [key, setKey] = useState('');
  const endpoint = status.data?.endpoint;
  const configs = endpoint ? agentConfigs(endpoint, key.trim() || '<your API key>') : [];
  return (
    <Page title="Connect an agent">
      <p>
        Agents reach this org's tools at one MCP endpoint (Streamable HTTP). Give each agent its own API key (<a href="#/credentials">API keys</a>), so its
        calls show under its name in the audit log and can be revoked alone.
      </p>
      <Loading loading={status.loading && !endpoint} />
      <ErrorBox error={status.error} />
      {endpoint && (
        <>
          <p>
            Endpoint: <code data-testid="connect-endpoint">{endpoint}</code> <CopyButton text={endpoint} label="Copy endpoint URL" />
          </p>
          <div class="field">
            <label for="connect-key">API key to put into the configurations (stays in this page)</label>
            <input id="connect-key" type="password" autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
          </div>
          {configs.map((c) => (
            <section class="card" key={c.id} aria-labelledby={`cfg-${c.id}`} data-testid={`config-${c.id}`}>
              <div class="page-header">
                <h2 id={`cfg-${c.id}`}>{c.client}</h2>
                <CopyButton text={c.text} label={`Copy the ${c.client} configuration`} />
              </div>
              <p class="hint">Put into: {c.where}</p>
              <pre>{c.text}</pre>
            </section>
          ))}
        </>
      )}
    </Page>
  );
}

/** The arguments a tool of this connector type starts with: database tools take one statement in `sql`. */
const template = (type: string) => (isDatabaseType(type) ? JSON.stringify({ sql: '' }, null, 2) : '{}');

/** The typed arguments as an object, or why they are not one. */
function parseArguments(text: string): { parsed: Record<string, unknown> | null; problem: string | null } {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? { parsed: value, problem: null }
      : { parsed: null, problem: 'The arguments must be a JSON object.' };
  } catch (err) {
    return { parsed: null, problem: `Not valid JSON: ${(err as Error).message}` };
  }
}

export function PlaygroundPage({ session }: PageProps) {
  const tools = useLoad(() => call(rest.listTools({ client, path: { orgId: session.org_id } })));
  const [toolId, setToolId] = useState('');
  const [args, setArgs] = useState('');
  const [answer, setAnswer] = useState<string | null>(null);
  const action = useAction();
  const enabled = (tools.data?.tools ?? []).filter((t) => t.enabled);
  const tool = enabled.find((t) => t.id === toolId) ?? enabled[0];
  const { parsed, problem } = parseArguments(args.trim() || (tool ? template(tool.connector_type) : '{}'));
  const run = (e: Event) => {
    e.preventDefault();
    if (!tool || !parsed) return;
    action.run(async () => {
      const out = await playgroundCall(session.org_slug, tool.name, parsed!);
      setAnswer(JSON.stringify(out.result ?? out.error, null, 2));
      toast(out.error || (out.result as { isError?: boolean })?.isError ? 'error' : 'ok', out.error ? `Refused: ${out.error.message}` : `Called ${tool.name}`);
    });
  };
  return (
    <Page title="Tool playground">
      <p>
        Runs a tool as you (<strong>{session.actor_name}</strong>), through the MCP endpoint: the call is audited under your name, and approvals, scopes and
        limits apply as for an agent.
      </p>
      <Loading loading={tools.loading && !tools.data} />
      <ErrorBox error={tools.error ?? action.error} />
      {tools.data && enabled.length === 0 && (
        <Empty>
          No enabled tools. <a href="#/connectors">Add a connector</a> first.
        </Empty>
      )}
      {tool && (
        <form class="card" aria-label="Call a tool" onSubmit={run} noValidate>
          <div class="field">
            <label for="pg-tool">Tool</label>
            <select id="pg-tool" value={tool.id} onChange={(e) => (setToolId(e.currentTarget.value), setArgs(''))}>
              {enabled.map((t) => (
                <option value={t.id} key={t.id}>
                  {t.name} ({t.connector_name})
                </option>
              ))}
            </select>
            <span class="hint">{tool.description}</span>
          </div>
          <div class="field">
            <label for="pg-args">Arguments (JSON)</label>
            <textarea
              id="pg-args"
              rows={6}
              value={args || template(tool.connector_type)}
              onInput={(e) => setArgs(e.currentTarget.value)}
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? 'pg-args-problem' : undefined}
            />
            {problem && (
              <span class="field-error" id="pg-args-problem">
                {problem}
              </span>
            )}
          </div>
          <button type="submit" disabled={action.pending || !!problem}>
            {action.pending ? 'Calling…' : 'Call the tool'}
          </button>
        </form>
      )}
      {answer && (
        <>
          <h2>Answer</h2>
          <pre data-testid="playground-answer">{answer}</pre>
        </>
      )}
    </Page>
  );
}
