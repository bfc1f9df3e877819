// The shell blocks of README.md and then of the docs pages in DOCS order, run as a reader would: in order, with bash, in a folder that looks like a fresh checkout
// (the tracked files, node_modules and the SDK build that `npm install` leaves), against a gateway started there with
// `npm start` on its embedded defaults. Variables carry from block to block as in one terminal; `set -euo pipefail`
// makes an unset variable or a failing command fail its block. Blocks marked `readme-test: skip` are listed as
// skipped tests with their reason. The fixed ports (8080, 3001, 9000) are mapped to free ones. A docs page with shell
// blocks that is not in DOCS fails, so no example escapes the run.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { Subprocess } from 'bun';
import { shellBlocks, type ReadmeBlock } from './support/readme.ts';
import { serviceAvailable } from './support/services.ts';

const ROOT = resolve(import.meta.dir, '..');
/**
 * The pages whose shell blocks run, in the order a reader follows them, all in one terminal against one gateway:
 * the quickstart leaves acme's $TOKEN for connectors.md; approvals.md sets the demo org's $TOKEN and $KEY that
 * webhooks.md uses; audit.md's verify runs after the gateway stopped.
 */
const DOCS = [
  'README.md',
  'docs/connectors.md',
  'docs/approvals.md',
  'docs/operations.md',
  'docs/sdk.md',
  'docs/webhooks.md',
  'docs/audit.md',
  'docs/console.md',
  'docs/deployment.md',
  'docs/install.md',
  'docs/store.md',
];
const BLOCKS = DOCS.flatMap((file) => shellBlocks(readFileSync(join(ROOT, file), 'utf8'), file));

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}
const pgUp = await serviceAvailable('postgres');

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) });
  const port = probe.port!;
  probe.stop(true);
  return port;
}
const PORTS: Record<string, number> = { '8080': freePort(), '3001': freePort(), '9000': freePort() };
const GATEWAY = `http://127.0.0.1:${PORTS['8080']}`;
const withPorts = (text: string) => text.replace(/\b(8080|3001|9000)\b/g, (p) => String(PORTS[p]));

/** A reader's shell: PATH without this repository's node_modules/.bin (a fresh machine has no bun on it). */
const BASE_ENV: Record<string, string> = {
  PATH: (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':'),
  HOME: process.env.HOME ?? '/tmp',
  LANG: process.env.LANG ?? 'C.UTF-8',
  NO_COLOR: '1',
  ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
};

let work: string;
let gateway: Subprocess<'ignore', 'pipe', 'pipe'> | null = null;
const gatewayOutput: string[] = [];
const background: { block: ReadmeBlock; proc: Subprocess<'ignore', 'pipe', 'pipe'>; output: string[] }[] = [];
/** The variables of the reader's terminal, as left by the last block. */
let state: Record<string, string> = { ...BASE_ENV };
const outputs = new Map<ReadmeBlock, { stdout: string; stderr: string }>();

function drain(stream: ReadableStream<Uint8Array>, into: string[]): void {
  void (async () => {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    for (let next = await reader.read(); !next.done; next = await reader.read()) into.push(decoder.decode(next.value, { stream: true }));
  })();
}

/** A fresh checkout's view: each tracked top-level entry and node_modules linked; data/ and the rest its own. */
function prepareCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-readme-'));
  const tracked = Bun.spawnSync(['git', 'ls-files'], { cwd: ROOT }).stdout.toString().split('\n').filter(Boolean);
  // Outside a git checkout: everything but what the README's blocks write (linked, they would write into ROOT).
  const writes = new Set(['data', 'sdk-example', '.git']);
  const entries = new Set(tracked.length > 0 ? tracked.map((path) => path.split('/')[0]!) : readdirSync(ROOT).filter((e) => !writes.has(e)));
  entries.add('node_modules');
  for (const entry of entries) if (existsSync(join(ROOT, entry))) symlinkSync(join(ROOT, entry), join(dir, entry));
  return dir;
}

async function waitFor(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await Bun.sleep(200);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

const answers = (url: string) => () =>
  fetch(url, { signal: AbortSignal.timeout(1000) }).then(
    (r) => r.status < 500,
    () => false,
  );

/** Stops a process group this suite started (setsid made the child its leader), gracefully first. */
async function stopGroup(proc: Subprocess, ms = 20_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  try {
    process.kill(-proc.pid, 'SIGTERM');
  } catch {
    return;
  }
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(ms).then(() => false)]);
  if (!exited) process.kill(-proc.pid, 'SIGKILL');
}

/** npm ends by the signal at once; the server (same process group) drains, then releases the data folder. */
async function stopGateway(): Promise<void> {
  if (!gateway) return;
  await stopGroup(gateway);
  await waitFor('the server to release the data folder', 30_000, () => !existsSync(join(work, 'data', 'server.lock')));
}

/** Runs one block in bash with the terminal's variables, and keeps the variables it leaves. */
async function runBlock(block: ReadmeBlock): Promise<{ code: number; stdout: string; stderr: string }> {
  const envFile = join(work, `.readme-env-${block.file.replace(/\W/g, '_')}-${block.line}`);
  const script = `set -euo pipefail\nset -a\n${withPorts(block.code)}\nenv -0 > "$README_TEST_ENV_FILE"\n`;
  const proc = Bun.spawn(['setsid', 'bash', '-c', script], {
    cwd: work,
    env: { ...state, README_TEST_ENV_FILE: envFile },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const timer = setTimeout(() => void stopGroup(proc, 1000), 90_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (code === 0) {
    const next: Record<string, string> = {};
    for (const pair of readFileSync(envFile, 'utf8').split('\0')) {
      const eq = pair.indexOf('=');
      if (eq > 0) next[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    for (const noise of ['README_TEST_ENV_FILE', '_', 'SHLVL', 'OLDPWD']) delete next[noise];
    state = next;
  }
  return { code, stdout, stderr };
}

/** The JSON document(s) a block printed (curl -s prints them back to back). */
function jsonDocuments(text: string): any[] {
  const docs: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === '}' && depth > 0 && --depth === 0) docs.push(JSON.parse(text.slice(start, i + 1)));
  }
  return docs;
}

async function api(path: string, token: string): Promise<any> {
  const response = await fetch(`${GATEWAY}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return response.json();
}

/** A connector the block created leaves `validating`, and must end `active`. */
async function expectActive(stdout: string): Promise<string> {
  const [created] = jsonDocuments(stdout);
  expect(created).toMatchObject({ status: 'validating' });
  let connector = created;
  await waitFor(`connector ${created.name} to validate`, 20_000, async () => {
    connector = await api(`/api/connectors/${created.id}`, state.TOKEN!);
    return connector.status !== 'validating';
  });
  expect({ status: connector.status, reason: connector.status_reason }).toEqual({ status: 'active', reason: null });
  return created.id;
}

/** What the key blocks must have shown, found by a snippet of their code (each must match exactly one block). */
const CHECKS: { snippet: string; check: (out: { stdout: string; stderr: string }) => Promise<void> | void }[] = [
  {
    snippet: '"method":"tools/list"',
    check: ({ stdout }) => {
      const [list, call] = jsonDocuments(stdout);
      expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(
        expect.arrayContaining(['query_postgresql_customers', 'query_postgresql_orders', 'query_postgresql_products', 'check_approval_status']),
      );
      expect(call.result.isError ?? false).toBe(false);
      expect(call.result.structuredContent.rows).toEqual([
        { name: 'Ada Lovelace', country: 'GB' },
        { name: 'Grace Hopper', country: 'US' },
        { name: 'Margaret Hamilton', country: 'US' },
      ]);
    },
  },
  {
    snippet: 'org create --slug acme',
    check: ({ stdout }) =>
      expect(jsonDocuments(stdout)).toEqual([{ status: 'provisioned', endpoint: `http://localhost:${PORTS['8080']}/mcp/acme`, toolCount: 0 }]),
  },
  { snippet: '"name":"warehouse"', check: ({ stdout }) => expectActive(stdout).then(() => undefined) },
  {
    snippet: '"name":"tickets"',
    check: async ({ stdout }) => {
      const id = await expectActive(stdout);
      const { tools } = await api(`/api/mcp/${state.ORG_ID}/tools?connector_id=${id}`, state.TOKEN!);
      expect(tools.map((t: { name: string }) => t.name)).toContain('tickets__echo');
    },
  },
  {
    snippet: 'check_approval_status',
    check: ({ stdout }) => {
      const docs = jsonDocuments(stdout);
      expect(docs.find((d) => 'approvals' in d)).toMatchObject({ approvals: [{ id: state.APPROVAL_ID, status: 'pending' }] });
      expect(docs.at(-1).result.structuredContent).toMatchObject({ status: 'executed', result: { structuredContent: { rows: [{ n: 40 }] } } });
    },
  },
  { snippet: '/metrics', check: ({ stdout }) => expect(stdout).toContain('toolgate_tool_calls_total{tool_type="postgresql",outcome="success"}') },
  {
    snippet: '/resend',
    check: async ({ stdout }) => {
      const docs = jsonDocuments(stdout);
      expect(docs.at(-1)).toEqual({ event_id: state.EVENT_ID, status: 'pending' });
      expect(state.WEBHOOK_SECRET).toMatch(/^whsec_/);
      // The receiver printed the event once on delivery and once more on the resend.
      const receiver = background.find((b) => b.block.code.includes('x-service-event'))!;
      await waitFor('the resent delivery', 15_000, () => receiver.output.join('').split(state.EVENT_ID!).length - 1 >= 2);
      expect(receiver.output.join('')).toContain('tool.called {');
    },
  },
  { snippet: 'd.client_id', check: ({ stdout }) => expect(stdout).toMatch(/^tgc_\S+\n\S+\n$/) },
  {
    snippet: 'node sdk-consumer.mjs',
    check: ({ stdout }) => {
      const runs = jsonDocuments(stdout);
      expect(runs.map((r) => r.runtime)).toEqual(['node', 'deno', 'bun']);
      for (const run of runs) expect(run).toMatchObject({ org: 'sdk-example', connector: { status: 'active' }, error: { status: 404, isToolgateError: true } });
    },
  },
  { snippet: 'audit verify --org acme', check: ({ stdout }) => expect(stdout).toMatch(/audit chain of acme is intact: \d+ rows verified/) },
];

describe('the README block reader', () => {
  test('reads shell blocks with their markers, indented ones included, and ignores other languages', () => {
    const md = [
      '```sh',
      'echo one',
      '```',
      '',
      '<!-- readme-test: skip (starts a server) -->',
      '```bash',
      'npm start',
      '```',
      '```json',
      '{}',
      '```',
      '1. step',
      '',
      '   ```sh',
      '   echo three',
      '   ```',
    ].join('\n');
    expect(shellBlocks(md)).toEqual([
      { file: 'README.md', line: 1, lang: 'sh', code: 'echo one', mode: 'run', reason: null },
      { file: 'README.md', line: 6, lang: 'bash', code: 'npm start', mode: 'skip', reason: 'starts a server' },
      { file: 'README.md', line: 14, lang: 'sh', code: 'echo three', mode: 'run', reason: null },
    ]);
  });

  test('refuses what would let a block escape unseen', () => {
    expect(() => shellBlocks('```\necho\n```')).toThrow('without a language');
    expect(() => shellBlocks('```sh\necho')).toThrow('unclosed');
    expect(() => shellBlocks('<!-- readme-test: skip -->\n```sh\necho\n```')).toThrow('expected <!-- readme-test');
    expect(() => shellBlocks('<!-- readme-test: later (why) -->\n```sh\necho\n```')).toThrow('expected <!-- readme-test');
    expect(() => shellBlocks('<!-- readme-test: skip (why) -->\n```json\n{}\n```')).toThrow('a readme-test marker on a json block');
    expect(() => shellBlocks('text\n```\necho\n```', 'docs/page.md')).toThrow('docs/page.md:2: a code fence without a language');
  });

  test('every docs page with shell blocks is in the run list, and the list names each page once', () => {
    const pages = markdownUnder(join(ROOT, 'docs')).map((path) => relative(ROOT, path));
    const unlisted = pages.filter((page) => !DOCS.includes(page) && shellBlocks(readFileSync(join(ROOT, page), 'utf8'), page).length > 0);
    expect(unlisted).toEqual([]);
    expect(new Set(DOCS).size).toBe(DOCS.length);
    for (const page of DOCS) expect({ page, blocks: BLOCKS.filter((b) => b.file === page).length > 0 }).toEqual({ page, blocks: true });
  });

  test('README.md and the listed pages parse, and every marked block gives its reason', () => {
    expect(BLOCKS.length).toBeGreaterThan(10);
    for (const block of BLOCKS) if (block.mode !== 'run') expect(block.reason!.length).toBeGreaterThan(10);
  });
});

describe.skipIf(!pgUp)('README.md and docs shell blocks, run in order against npm start', () => {
  beforeAll(async () => {
    work = prepareCheckout();
    // The gateway as the README restarts it for services on the reader's machine (its one allow-list line).
    const starts = BLOCKS.map((b) => /^TOOLGATE_OUTBOUND_ALLOW_HOSTS=(\S+) npm start$/m.exec(b.code)?.[1]).filter(Boolean);
    expect(starts.length).toBe(1);
    gateway = Bun.spawn(['setsid', 'npm', 'start'], {
      cwd: work,
      env: { ...BASE_ENV, PORT: String(PORTS['8080']), HOST: '127.0.0.1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: withPorts(starts[0]!) },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    drain(gateway.stdout, gatewayOutput);
    drain(gateway.stderr, gatewayOutput);
    await waitFor('the gateway to be ready', 100_000, async () => {
      if (gateway!.exitCode !== null) throw new Error(`npm start exited ${gateway!.exitCode}:\n${gatewayOutput.join('')}`);
      return (
        existsSync(join(work, 'data', 'demo.json')) &&
        (await fetch(`${GATEWAY}/readyz`).then(
          (r) => r.ok,
          () => false,
        ))
      );
    });
  }, 120_000);

  afterAll(async () => {
    for (const { proc } of background) await stopGroup(proc, 5000);
    await stopGateway();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test("README's agent configurations (Claude Code, mcp-remote, Cursor, VS Code) reach the demo's tools with the header they set", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const key = JSON.parse(readFileSync(join(work, 'data', 'demo.json'), 'utf8')).api_key as string;
    const clients: { what: string; url: string; headers: Record<string, string> }[] = [];
    // The command lines: the URL and the --header "Name: $KEY" (or Name:${KEY}) they pass.
    for (const block of BLOCKS.filter((b) => /claude mcp add|mcp-remote/.test(b.code))) {
      const header = /--header "?([\w-]+): ?\$\{?KEY\}?"?/.exec(block.code);
      clients.push({ what: `${block.file}:${block.line}`, url: /(http:\/\/localhost:8080\/mcp\/\S+)/.exec(block.code)![1]!, headers: { [header![1]!]: key } });
    }
    // The JSON files: each server entry's url and headers, with the ${env:...}/${input:...} placeholders filled.
    for (const [, json] of readme.matchAll(/^```json\n([\s\S]*?)^```$/gm)) {
      const config = JSON.parse(json!);
      for (const [name, server] of Object.entries<any>(config.mcpServers ?? config.servers ?? {})) {
        const headers = Object.fromEntries(Object.entries<string>(server.headers).map(([h, v]) => [h, v.replace(/^\$\{(env|input):[\w-]+\}$/, key)]));
        clients.push({ what: `json server ${name}`, url: server.url, headers });
      }
    }
    expect(clients.length).toBe(4);
    for (const { what, url, headers } of clients) {
      expect({ what, placeholders: Object.values(headers).some((v) => v.includes('$')) }).toEqual({ what, placeholders: false });
      const response = await fetch(withPorts(url), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect({ what, status: response.status }).toEqual({ what, status: 200 });
      const { result } = (await response.json()) as { result: { tools: { name: string }[] } };
      expect(result.tools.map((tool) => tool.name)).toContain('query_postgresql_customers');
    }
  });

  test('every check names exactly one block that runs', () => {
    for (const { snippet } of CHECKS) {
      expect({ snippet, blocks: BLOCKS.filter((b) => b.mode !== 'skip' && b.code.includes(snippet)).length }).toEqual({ snippet, blocks: 1 });
    }
  });

  const ordered = [...BLOCKS.filter((b) => b.mode !== 'after-stop'), ...BLOCKS.filter((b) => b.mode === 'after-stop')];
  let stopped = false;
  for (const block of ordered) {
    const title = `${block.file}:${block.line} ${block.code
      .split('\n')
      .find((l) => l.trim() && !l.startsWith('#'))
      ?.slice(0, 70)}`;
    if (block.mode === 'skip') {
      test.skip(`${title} (skipped: ${block.reason})`, () => {});
      continue;
    }
    test(block.mode === 'background'
      ? `${title} (in the background)`
      : block.mode === 'after-stop'
        ? `${title} (after the gateway stopped)`
        : title, async () => {
      if (block.mode === 'background') {
        const output: string[] = [];
        const proc = Bun.spawn(['setsid', 'bash', '-c', `set -euo pipefail\n${withPorts(block.code)}`], {
          cwd: work,
          env: state,
          stdin: 'ignore',
          stdout: 'pipe',
          stderr: 'pipe',
        });
        drain(proc.stdout, output);
        drain(proc.stderr, output);
        background.push({ block, proc, output });
        const ports = [...block.code.matchAll(/\b(3001|9000)\b/g)].map((m) => PORTS[m[1]!]!);
        expect(ports.length).toBeGreaterThan(0);
        for (const port of ports) {
          await waitFor(`${block.file}:${block.line} to listen on ${port}`, 30_000, async () => {
            if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}: ${output.join('')}`);
            return answers(`http://127.0.0.1:${port}/`)();
          });
        }
        return;
      }
      if (block.mode === 'after-stop' && !stopped) {
        await stopGateway();
        stopped = true;
      }
      const result = await runBlock(block);
      outputs.set(block, result);
      expect({ line: block.line, code: result.code, stderr: result.code === 0 ? '' : result.stderr, stdout: result.code === 0 ? '' : result.stdout }).toEqual({
        line: block.line,
        code: 0,
        stderr: '',
        stdout: '',
      });
      for (const { snippet, check } of CHECKS) if (block.code.includes(snippet)) await check(result);
    }, 120_000);
  }
});
