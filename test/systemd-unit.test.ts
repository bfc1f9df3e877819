// Issue 43 item 2: the systemd unit and its environment template are checked, not just shipped. systemd's own
// analyzer verifies the unit (any complaint fails: `verify` exits 0 on unknown keys and bad values, so its output must
// be empty); the unit's stop settings are held against the gateway's graceful stop (src/main.ts, test/lifecycle.test.ts),
// and a real gateway started through the package's bin with the template's production environment (PostgreSQL +
// Redis) gets the unit's KillSignal on the launcher alone, as KillMode=mixed sends it, and exits 0 well within
// TimeoutStopSec.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import postgres from 'postgres';
import { loadConfig } from '../src/config.ts';
import { PG_URL, REDIS_URL, serviceAvailable } from './support/services.ts';

const ROOT = resolve(import.meta.dir, '..');
const UNIT = readFileSync(join(ROOT, 'deploy', 'systemd', 'toolgate.service'), 'utf8');
const ENV_TEMPLATE = readFileSync(join(ROOT, 'deploy', 'systemd', 'toolgate.env.example'), 'utf8');
const PREFIX = '/opt/toolgate';

const analyzer = Bun.which('systemd-analyze');
if (!analyzer) console.warn('[skip] systemd-unit: systemd-analyze is not installed (apt-get install systemd): the unit is not verified');
const pgUp = await serviceAvailable('postgres');
const redisUp = await serviceAvailable('redis');

/** The `[Service]` settings of the unit (the last value of a key wins, as in systemd). */
function serviceSettings(unit: string): Record<string, string> {
  const settings: Record<string, string> = {};
  let section = '';
  for (const line of unit.split('\n').map((l) => l.trim())) {
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) section = header[1]!;
    else if (section === 'Service') {
      const at = line.indexOf('=');
      settings[line.slice(0, at)] = line.slice(at + 1);
    }
  }
  return settings;
}

/** An EnvironmentFile as systemd reads it: KEY=value lines, comments only at the start of a line. */
function envFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const at = line.indexOf('=');
    env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env;
}

const scratch = mkdtempSync(join(tmpdir(), 'toolgate-systemd-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The unit with its install prefix pointing at a folder laid out like an install (its bin: this checkout's launcher). */
function installedUnit(unitText: string, name: string): string {
  const prefix = join(scratch, name);
  mkdirSync(join(prefix, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(join(ROOT, 'bin', 'toolgate.js'), join(prefix, 'node_modules', '.bin', 'toolgate'));
  const path = join(prefix, 'toolgate.service');
  writeFileSync(path, unitText.replaceAll(PREFIX, prefix));
  return path;
}

async function verify(path: string) {
  const proc = Bun.spawn([analyzer!, 'verify', path], { stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, output: (stdout + stderr).trim() };
}

describe.skipIf(!analyzer)('systemd-analyze verify', () => {
  test('passes on deploy/systemd/toolgate.service with nothing to say', async () => {
    expect(await verify(installedUnit(UNIT, 'ok'))).toEqual({ code: 0, output: '' });
  });

  test('says something about a unit with a misspelled key or a bad signal (the check can fail)', async () => {
    const misspelled = await verify(installedUnit(UNIT.replace('TimeoutStopSec=', 'TimeoutStopSc='), 'misspelled'));
    expect(misspelled.output).toContain("Unknown key 'TimeoutStopSc'");
    const badSignal = await verify(installedUnit(UNIT.replace('KillSignal=SIGTERM', 'KillSignal=SIGNOPE'), 'bad-signal'));
    expect(badSignal.output).toContain('SIGNOPE');
  });
});

describe('the unit and its environment template', () => {
  const settings = serviceSettings(UNIT);
  const env = envFile(ENV_TEMPLATE);

  test('the stop is the graceful one: SIGTERM to the launcher, which passes it on, and a timeout 15 s above the deadline', () => {
    expect(settings.ExecStart).toBe(`${PREFIX}/node_modules/.bin/toolgate start`);
    expect(settings.KillSignal).toBe('SIGTERM');
    expect(settings.KillMode).toBe('mixed');
    expect(settings.EnvironmentFile).toBe('/etc/toolgate/toolgate.env');
    const deadlineMs = Number(env.TOOLGATE_SHUTDOWN_DEADLINE_MS);
    expect(deadlineMs).toBe(loadConfig({}).shutdownDeadlineMs);
    expect(Number(settings.TimeoutStopSec) * 1000).toBeGreaterThanOrEqual(deadlineMs + 15_000);
  });

  test('the template is a production configuration: PostgreSQL and Redis, and it refuses to start until the secrets are filled in', () => {
    expect(() => loadConfig(env)).toThrow('TOOLGATE_SECRET_KEY is required when DATABASE_URL is set');
    const filled = { ...env, TOOLGATE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), TOOLGATE_OPERATOR_TOKEN: 'o'.repeat(32) };
    const config = loadConfig(filled);
    expect(config.databaseUrl).toStartWith('postgres://');
    expect(config.redisUrl).toStartWith('redis://');
    expect(config.demo).toBe(false);
    expect(config.shutdownDeadlineMs).toBe(Number(env.TOOLGATE_SHUTDOWN_DEADLINE_MS));
  });
});

/** Appends what a child process writes on `stream` (until it closes) through `onText`. */
async function collect(stream: ReadableStream<Uint8Array>, onText: (text: string) => void): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onText(decoder.decode(value, { stream: true }));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

describe.skipIf(!pgUp || !redisUp)('the unit stopping a production gateway', () => {
  const database = `h6_systemd_${process.pid}`;
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  afterAll(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  test("the launcher started as ExecStart does, on the template's environment, stops on KillSignal within TimeoutStopSec", async () => {
    await admin.unsafe(`CREATE DATABASE ${database}`);
    const settings = serviceSettings(UNIT);
    const port = await freePort();
    const url = new URL(PG_URL);
    url.pathname = `/${database}`;
    const dataDir = join(scratch, 'state');
    mkdirSync(dataDir);
    const env = {
      ...envFile(ENV_TEMPLATE),
      DATABASE_URL: url.toString(),
      REDIS_URL,
      TOOLGATE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
      TOOLGATE_OPERATOR_TOKEN: 'h6-systemd-operator-token-0123456789',
      TOOLGATE_DATA_DIR: dataDir,
      PORT: String(port),
      PATH: process.env.PATH ?? '/usr/bin:/bin',
    };
    const [, ...args] = settings.ExecStart!.split(' ');
    const proc = Bun.spawn(['node', join(ROOT, 'bin', 'toolgate.js'), ...args], { cwd: dataDir, env, stdout: 'pipe', stderr: 'pipe' });
    let output = '';
    for (const stream of [proc.stdout, proc.stderr]) void collect(stream, (text) => (output += text));
    try {
      let ready: { status?: string; redis?: string } = {};
      for (let i = 0; i < 300 && ready.status !== 'ready'; i++) {
        await Bun.sleep(100);
        ready = (await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.json(),
          () => ({}),
        )) as typeof ready;
        if (proc.exitCode !== null) break;
      }
      expect(ready, output).toEqual({ status: 'ready', store: 'ok', migrations: 'done', redis: 'ok' } as never);
      // KillMode=mixed: the signal goes to the main process (the launcher), not to the Bun child directly.
      const stopped = Date.now();
      proc.kill(settings.KillSignal as NodeJS.Signals);
      const code = await Promise.race([proc.exited, Bun.sleep(Number(settings.TimeoutStopSec) * 1000).then(() => 'timed out')]);
      expect(code).toBe(0);
      expect(Date.now() - stopped).toBeLessThan(Number(settings.TimeoutStopSec) * 1000);
      expect(output).toContain('SIGTERM, shutting down');
      expect(output).toMatch(/stopped after \d+ ms/);
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await proc.exited;
    }
  }, 60_000);
});
