// Acceptance (issue 29, "Prove it": the Inspector CLI keeps working): the real MCP Inspector CLI, the version the
// README runs (0.21.2), lists the tools and calls check_approval_status against a gateway served on a real port,
// with the org's API key in its --header argument, as the README's command line does. The README starts it with
// `bunx --bun @modelcontextprotocol/inspector@0.21.2 --cli …`; here the package's own bin entry is run with
// `bun --bun`, so no registry is reached at run time. The Inspector is installed on demand into .cache/inspector
// (git-ignored); without the registry the tests are skipped with that reason.
// Not covered: the 2026-07-28 revision. The Inspector CLI has no option to choose a protocol revision; its MCP SDK
// (1.x) negotiates 2025-11-25 through initialize and cannot add the `_meta` envelope 2026-07-28 needs.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';

setDefaultTimeout(60_000);

const VERSION = '0.21.2';
const DIR = resolve('.cache/inspector');
const PACKAGE_DIR = join(DIR, 'node_modules/@modelcontextprotocol/inspector');

/** Installs the Inspector when missing; returns why it cannot run here, or null. */
function installInspector(): string | null {
  const installed = (): boolean =>
    existsSync(join(PACKAGE_DIR, 'package.json')) && JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).version === VERSION;
  if (installed()) return null;
  try {
    execFileSync(
      'npm',
      ['install', '--prefix', DIR, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', `@modelcontextprotocol/inspector@${VERSION}`],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 180_000 },
    );
  } catch (error) {
    return `@modelcontextprotocol/inspector@${VERSION} could not be installed (the npm registry cannot be reached?): ${String(error).slice(0, 300)}`;
  }
  return installed() ? null : `@modelcontextprotocol/inspector@${VERSION} is not in ${DIR} after npm install`;
}

const skipReason = installInspector();
if (skipReason) console.warn(`mcp-inspector-cli: skipped: ${skipReason}`);

/** The installed Inspector's executable, as its package.json "bin" names it. */
function inspectorBin(): string {
  const bin = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).bin as Record<string, string>;
  return join(PACKAGE_DIR, bin['mcp-inspector']!);
}

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let endpoint: string;

beforeAll(async () => {
  if (skipReason) return;
  g = await startTestGateway('pglite');
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  endpoint = `http://127.0.0.1:${server.port}/mcp/${org.slug}`;
}, 120_000);
afterAll(async () => {
  server?.stop(true);
  await g?.close();
}, 60_000);

/** Runs the Inspector CLI as the README does (bun instead of bunx), returns its parsed JSON output. */
async function inspector(apiKey: string, ...method: string[]): Promise<{ code: number; json: unknown; out: string }> {
  const cmd = [process.execPath, '--bun', inspectorBin(), '--cli', endpoint, '--transport', 'http', '--header', `X-API-Key: ${apiKey}`, ...method];
  const child = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } });
  const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  let json: unknown = null;
  try {
    json = JSON.parse(out);
  } catch {
    // not JSON: the caller's expectation shows the output
  }
  return { code, json, out: `${out}\n${err}` };
}

describe.skipIf(Boolean(skipReason))(`MCP Inspector CLI ${VERSION} against a served gateway`, () => {
  test('--method tools/list lists the org tools', async () => {
    const { code, json, out } = await inspector(org.apiKey, '--method', 'tools/list');
    expect(code, out).toBe(0);
    const tools = (json as { tools: { name: string; inputSchema: { required?: string[] } }[] }).tools;
    const check = tools.find((t) => t.name === 'check_approval_status');
    expect(check?.inputSchema.required).toEqual(['approvalId']);
  });

  test('--method tools/call check_approval_status answers not_found for an unknown id', async () => {
    const approvalId = crypto.randomUUID();
    const { code, json, out } = await inspector(
      org.apiKey,
      '--method',
      'tools/call',
      '--tool-name',
      'check_approval_status',
      '--tool-arg',
      `approvalId=${approvalId}`,
    );
    expect(code, out).toBe(0);
    const result = json as { content: { type: string; text: string }[]; structuredContent: unknown; isError?: boolean };
    expect(result.structuredContent).toEqual({ status: 'not_found', approvalId });
    expect(result.content[0]!.text).toContain(approvalId);
    expect(result.isError ?? false).toBe(false);
  });

  test('a wrong API key: the Inspector fails and prints no tool list', async () => {
    const { code, json, out } = await inspector(`${org.apiKey}x`, '--method', 'tools/list');
    expect(code, out).not.toBe(0);
    expect(json).toBeNull();
    expect(out).not.toContain('check_approval_status');
  });
});
