// Issue 42 item 4: an instance that cannot reach its store at start says so in one line and retries. Real gateway
// processes (`bun src/main.ts`) against a port where nothing listens yet, then a TCP relay to the real PostgreSQL
// opened on that port mid-start; and a server that answers but refuses the gateway (no such role), which is not
// waited for. No output carries the URL's credentials or a stack trace.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server } from 'node:net';
import { describeServer } from '../src/store/reach.ts';
import { freshDatabase } from './support/gateway.ts';
import { PG_URL, serviceAvailable } from './support/services.ts';

setDefaultTimeout(120_000);
const hasPg = await serviceAvailable('postgres');
const SECRET = randomBytes(32).toString('base64');
const PASSWORD = 'sekrit-store-password-42';

/** A port nothing listens on right now (taken from the system, then closed). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Relays `port` to the real PostgreSQL, byte for byte. */
async function relay(port: number): Promise<Server> {
  const target = new URL(PG_URL);
  const server = createServer((socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

/** A gateway process (`bun src/main.ts`) on embedded defaults but for `env`, its output piped. */
function spawnGateway(env: Record<string, string>) {
  return Bun.spawn([process.execPath, 'src/main.ts'], {
    cwd: `${import.meta.dir}/..`,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      HOST: '127.0.0.1',
      TOOLGATE_DEMO: '0',
      TOOLGATE_SECRET_KEY: SECRET,
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

/** Runs a gateway process to its end; its output and exit code. */
async function runToEnd(env: Record<string, string>): Promise<{ code: number; output: string; ms: number }> {
  const started = performance.now();
  const proc = spawnGateway(env);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, output: out + err, ms: performance.now() - started };
}

function urlAt(port: number, database: string, user = 'postgres'): string {
  return `postgres://${user}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

describe('describing the store server in a log line', () => {
  test('host, port and database only: never the user, the password or the options', () => {
    expect(describeServer('postgres://admin:hunter2@db.internal:6432/toolgate?sslmode=require')).toBe('db.internal:6432/toolgate');
    expect(describeServer('postgres://db.internal/toolgate')).toBe('db.internal:5432/toolgate');
    expect(describeServer('not a url with hunter2')).not.toContain('hunter2');
  });
});

describe.skipIf(!hasPg)('a store that does not answer at start', () => {
  const relays: Server[] = [];
  const drops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const r of relays) r.close();
    for (const drop of drops) await drop();
  });

  test('nothing listens: a line per try, then one line naming the server and the switch, exit 1, no stack, no password', async () => {
    const port = await freePort();
    const run = await runToEnd({ DATABASE_URL: urlAt(port, 'toolgate'), TOOLGATE_STORE_START_WAIT_MS: '2500' });
    expect(run.code).toBe(1);
    const lines = run.output.trim().split('\n');
    const wait = new RegExp(`^toolgate: the store at 127\\.0\\.0\\.1:${port}/toolgate is unreachable \\(ECONNREFUSED\\); trying again in \\d\\.\\d s$`);
    const waits = lines.filter((l) => wait.test(l));
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^toolgate: the store at 127\\.0\\.0\\.1:${port}/toolgate is unreachable \\(ECONNREFUSED\\) after \\d+ tries in \\d+ s; set TOOLGATE_STORE_START_WAIT_MS to wait longer$`,
      ),
    );
    expect(lines.every((l) => l.startsWith('toolgate: '))).toBe(true);
    expect(run.output).not.toContain(PASSWORD);
    expect(run.output).not.toMatch(/\n\s+at /);
    expect(run.ms).toBeLessThan(15_000);
  });

  test("a CLI command does not wait: one try, one line without the servers' switch, exit 3", async () => {
    const port = await freePort();
    const started = performance.now();
    const proc = Bun.spawn([process.execPath, 'src/cli.ts', 'org', 'list', '--json'], {
      cwd: `${import.meta.dir}/..`,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TOOLGATE_SECRET_KEY: SECRET, DATABASE_URL: urlAt(port, 'toolgate') },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(3);
    const lines = (out + err).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the store at 127.0.0.1:${port}/toolgate is unreachable (ECONNREFUSED) after 1 try`);
    expect(lines[0]).not.toContain('TOOLGATE_STORE_START_WAIT_MS');
    expect(out + err).not.toContain(PASSWORD);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  test('the server appears while the instance waits: it starts, serves /readyz, and said it was waiting', async () => {
    const db = await freshDatabase('tg_reach');
    drops.push(db.drop);
    const port = await freePort();
    const database = new URL(db.url).pathname.slice(1);
    // Trust auth on this machine: the password is sent and ignored, and must still never be printed.
    const proc = spawnGateway({ TOOLGATE_LOG_LEVEL: 'error', DATABASE_URL: urlAt(port, database), TOOLGATE_STORE_START_WAIT_MS: '60000' });
    let output = '';
    const sink = async (stream: ReadableStream<Uint8Array>) => {
      const reader = stream.getReader();
      const decoder = new TextDecoder();
      for (let next = await reader.read(); !next.done; next = await reader.read()) output += decoder.decode(next.value, { stream: true });
    };
    void sink(proc.stdout);
    void sink(proc.stderr);
    const until = async (pattern: RegExp) => {
      for (let i = 0; i < 600 && !pattern.test(output); i++) await Bun.sleep(100);
      return pattern.exec(output);
    };
    try {
      // The relay opens only once the instance said it is waiting (the first try failed), so the wait is real.
      expect(
        await until(new RegExp(`toolgate: the store at 127\\.0\\.0\\.1:${port}/${database} is unreachable \\(ECONNREFUSED\\); trying again in`)),
      ).not.toBeNull();
      relays.push(await relay(port));
      const listening = await until(/toolgate: port (\d+)/);
      expect(listening).not.toBeNull();
      expect((await fetch(`http://127.0.0.1:${listening![1]}/readyz`)).status).toBe(200);
      expect(output).not.toContain(PASSWORD);
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      proc.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    }
  });

  test('a server that refuses the gateway (no such role) is not waited for: one line at once, exit 1', async () => {
    const target = new URL(PG_URL);
    const run = await runToEnd({
      DATABASE_URL: `postgres://no_such_role_42:${PASSWORD}@${target.hostname}:${target.port || 5432}/postgres`,
      TOOLGATE_STORE_START_WAIT_MS: '60000',
    });
    expect(run.code).toBe(1);
    expect(run.output.trim()).toBe(
      `toolgate: the store at ${target.hostname}:${target.port || 5432}/postgres refused the gateway: role "no_such_role_42" does not exist (28000)`,
    );
    expect(run.ms).toBeLessThan(15_000);
  });
});
