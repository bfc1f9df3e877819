// Acceptance (issue 31, "Connect an agent"): the console's Claude Code line, exactly as agentConfigs() writes it
// (`claude mcp add --transport http toolgate <endpoint> --header "X-API-Key: <key>"`), run by the real Claude Code
// 2.1.332 against a gateway served on a real port; then `claude mcp get toolgate` runs Claude Code's own health check,
// which connects to the server and initializes an MCP session, and must report it connected. The only change made to
// the line is `claude` → `node <the package's cli-wrapper.cjs>` (the package's launcher for installs without
// postinstall, which runs the platform's native binary). HOME and CLAUDE_CONFIG_DIR point at a throwaway folder; no
// login and no network to Anthropic is needed. Claude Code is installed on demand into .cache/claude-code
// (git-ignored); without the registry the tests are skipped with that reason.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { agentConfigs } from '../web/console/agent-configs.ts';
import { onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';

setDefaultTimeout(90_000);

const VERSION = '2.1.332';
const DIR = resolve('.cache/claude-code');
const PACKAGE_DIR = join(DIR, 'node_modules/@anthropic-ai/claude-code');
const WRAPPER = join(PACKAGE_DIR, 'cli-wrapper.cjs');

/** Installs Claude Code when missing; returns why it cannot run here, or null. */
function installClaudeCode(): string | null {
  const installed = (): boolean => existsSync(WRAPPER) && JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).version === VERSION;
  if (!installed()) {
    try {
      execFileSync('npm', ['install', '--prefix', DIR, '--no-save', '--ignore-scripts', '--no-audit', '--no-fund', `@anthropic-ai/claude-code@${VERSION}`], {
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 300_000,
      });
    } catch (error) {
      return `@anthropic-ai/claude-code@${VERSION} could not be installed (the npm registry cannot be reached?): ${String(error).slice(0, 300)}`;
    }
    if (!installed()) return `@anthropic-ai/claude-code@${VERSION} is not in ${DIR} after npm install`;
  }
  try {
    const version = execFileSync('node', [WRAPPER, '--version'], { encoding: 'utf8', timeout: 60_000 });
    return version.includes(VERSION) ? null : `claude --version printed ${version.trim()}`;
  } catch (error) {
    return `Claude Code ${VERSION} does not run on this platform: ${String(error).slice(0, 300)}`;
  }
}

const skipReason = installClaudeCode();
if (skipReason) console.warn(`agent-configs-claude-code: skipped: ${skipReason}`);

/**
 * The words of a shell line of the form the console writes (`command word "double quoted words"`): blanks split
 * words, double quotes keep their text as it is. Anything else a shell treats specially fails the test.
 */
function shellWords(line: string): string[] {
  expect(line).not.toMatch(/['\\`$;|&<>()\n]/);
  expect(line).toMatch(/^(?:[^\s"]+|"[^"]*")(?: (?:[^\s"]+|"[^"]*"))*$/);
  return [...line.matchAll(/[^\s"]+|"([^"]*)"/g)].map((m) => m[1] ?? m[0]);
}

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let endpoint: string;
let home: string;
/** The X-API-Key of each request that reached the org's MCP endpoint, with its JSON-RPC method. */
const seen: { key: string | null; method: string }[] = [];
const children: ReturnType<typeof Bun.spawn>[] = [];

beforeAll(async () => {
  if (skipReason) return;
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: async (request) => {
      if (new URL(request.url).pathname === `/mcp/${org?.slug}` && request.method === 'POST') {
        const body = (await request
          .clone()
          .json()
          .catch(() => ({}))) as { method?: string };
        seen.push({ key: request.headers.get('x-api-key'), method: body.method ?? '' });
      }
      return g.handle(request);
    },
  });
  // The gateway's public URL is the served one, so its 401 points Claude Code at OAuth metadata it can reach.
  g = await startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: `http://127.0.0.1:${server.port}`, TOOLGATE_ALLOWED_HOSTS: 'gateway.test' });
  org = await onboard(g);
  endpoint = `http://127.0.0.1:${server.port}/mcp/${org.slug}`;
  home = mkdtempSync(join(tmpdir(), 'tg-claude-code-'));
  mkdirSync(join(home, 'project'));
}, 120_000);
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  server?.stop(true);
  await g?.close();
  if (home) rmSync(home, { recursive: true, force: true });
}, 60_000);

/** Runs Claude Code (asynchronously: the gateway answers from this process) with a throwaway HOME and config. */
async function claude(args: string[]): Promise<{ code: number; out: string }> {
  const child = Bun.spawn(['node', WRAPPER, ...args], {
    cwd: join(home, 'project'),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  children.push(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  return { code, out: out + err };
}

/** The console's Claude Code line for a key, as words, with `claude` replaced by the installed one. */
function claudeCodeLine(key: string): string[] {
  const config = agentConfigs(endpoint, key).find((c) => c.id === 'claude-code')!;
  const words = shellWords(config.text);
  expect(words.slice(0, 3)).toEqual(['claude', 'mcp', 'add']);
  expect(words).toContain(`X-API-Key: ${key}`);
  return words.slice(1);
}

describe.skipIf(Boolean(skipReason))('Claude Code fed the console configuration', () => {
  test('the `claude mcp add` line as shown adds the server, and Claude Code’s health check connects to it', async () => {
    const added = await claude(claudeCodeLine(org.apiKey));
    expect(added.code, added.out).toBe(0);
    expect(added.out).toContain(`Added HTTP MCP server toolgate with URL: ${endpoint}`);
    // Claude Code shows the header redacted; it must not print the key.
    expect(added.out).not.toContain(org.apiKey);

    const get = await claude(['mcp', 'get', 'toolgate']);
    expect(get.code, get.out).toBe(0);
    expect(get.out).toContain(endpoint);
    expect(get.out).toMatch(/Status: ✔ Connected/);
    // It really reached the gateway, every request with the key from the line, and listed the tools.
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen.map((s) => s.key))).toEqual(new Set([org.apiKey]));
    expect(seen).toContainEqual({ key: org.apiKey, method: 'tools/list' });
  });

  test('the same line with a wrong key: the health check reports the failure (the gateway refuses it)', async () => {
    const wrong = `tg_wrong_${crypto.randomUUID().replaceAll('-', '')}`;
    const removed = await claude(['mcp', 'remove', 'toolgate']);
    expect(removed.code, removed.out).toBe(0);
    const added = await claude(claudeCodeLine(wrong));
    expect(added.code, added.out).toBe(0);
    const before = seen.length;
    const get = await claude(['mcp', 'get', 'toolgate']);
    // The gateway answers 401 with its OAuth resource metadata: Claude Code reports the server needs a sign-in.
    expect(get.out).not.toMatch(/Connected/);
    expect(get.out).toMatch(/Status: ! Needs authentication/);
    expect(seen.slice(before).map((s) => s.key)).toContain(wrong);
  });
});
