/**
 * Issue 26: a real HTTP client that disconnects mid-call has its statement cancelled on the server within a second,
 * hundreds of times in a row on each SQL driver, and afterwards the pool is whole, nothing runs on the server and the
 * next calls are served at once. The statements are kept running by a lock an admin session holds on the tool's
 * table (the guard refuses pg_sleep/SLEEP): anything not cancelled would still be waiting when the loop ends.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { verifies } from '../requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from '../support/gateway.ts';
import { createConnector, restTools } from '../support/mcp.ts';
import { MYSQL_URL, PG_URL, serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { registry } from '../../src/observability/metrics.ts';

const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
const ROUNDS = 200;
/** One round's bound: the requirement is one second; a starved CPU adds to it (process scheduling, forks). */
const SINGLE_ROUND_MAX_MS = 3000;
/** Calls that may run per connector at once (the pools hold 10 connections). */
const CAP = 4;

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let manage: string;
let t: Targets;

/** How one driver's target is locked and watched from the side. */
interface Side {
  type: 'postgresql' | 'mysql';
  tool: string;
  /** Holds a lock on `items` that every call of the tool waits for, until the returned function is called. */
  lock(): Promise<() => Promise<void>>;
  /** Statements of the tool's database that the gateway's sessions are running now. */
  running(): Promise<number>;
  /** Connections the gateway holds to the tool's database (0 for MySQL, where the pool is not observable this way). */
  connections(): Promise<number>;
}

const sides: Side[] = [];

/** Calls holding a connector slot and calls waiting for one, for a connector type (toolgate_connector_pool_usage). */
async function poolUsage(type: string): Promise<{ running: number; waiting: number }> {
  const text = await registry.metrics();
  const read = (state: string): number =>
    Number(new RegExp(`toolgate_connector_pool_usage\\{connector_type="${type}",state="${state}"\\} (\\d+)`).exec(text)?.[1] ?? NaN);
  return { running: read('running'), waiting: read('waiting') };
}

/**
 * A tools/call over a raw TCP connection that is destroyed after `delayMs` (the client goes away). Resolves when the
 * socket is gone, with whether any answer had arrived before (it must not have: the call was still running).
 */
async function disconnectingCall(tool: string, sql: string, delayMs: number): Promise<{ answered: boolean }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: { sql } } });
  const socket = net.connect(server.port!, '127.0.0.1');
  let answered = false;
  socket.on('data', () => (answered = true));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(
    `POST /mcp/${org.slug} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
      `MCP-Protocol-Version: 2025-06-18\r\nX-API-Key: ${org.apiKey}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await Bun.sleep(delayMs);
  socket.destroy();
  return { answered };
}

/** A tools/call over real HTTP that stays connected. */
async function liveCall(tool: string, sql: string): Promise<{ isError: boolean; text: string }> {
  const response = await fetch(`http://127.0.0.1:${server.port}/mcp/${org.slug}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      'x-api-key': org.apiKey,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: { sql } } }),
  });
  const { result } = (await response.json()) as { result: { isError?: boolean; content: { text: string }[] } };
  return { isError: Boolean(result.isError), text: result.content[0]!.text };
}

/** Milliseconds until `check` holds, polling every 5 ms; Infinity if it does not within `withinMs`. */
async function msUntil(check: () => Promise<boolean>, withinMs: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < withinMs) {
    if (await check()) return performance.now() - started;
    await Bun.sleep(5);
  }
  return Infinity;
}

const READ = 'SELECT id, name FROM items';
const WRITE = 'UPDATE items SET price = price WHERE id = 1';

describe.skipIf(!available)('issue 26: a client that disconnects mid-call', () => {
  beforeAll(async () => {
    [g, t] = await Promise.all([
      startTestGateway('pglite', {
        // Only the cancel may end these statements: the limits are far away.
        TOOLGATE_STATEMENT_TIMEOUT_MS: '60000',
        TOOLGATE_LOCK_TIMEOUT_MS: '60000',
        TOOLGATE_CONNECTOR_MAX_CONCURRENT_CALLS: String(CAP),
        TOOLGATE_CONNECTOR_QUEUE_TIMEOUT_MS: '3000',
        // The PostgreSQL resolution check parses the statement and would wait for the lock itself: verdicts are
        // taken before the lock and kept for the whole run.
        TOOLGATE_PG_RESOLUTION_CACHE_TTL_SECONDS: '3600',
      }),
      createTargets('tg_cancel'),
    ]);
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
    org = await onboard(g);
    manage = await tokenFor(g, org.clientId, org.clientSecret);
    for (const [type, config] of [
      ['postgresql', t.pgConfig],
      ['mysql', t.myConfig],
    ] as const) {
      const created = await createConnector(g, manage, { name: `${type}-cancel`, type, config, allow_write: true });
      expect(created.status).toBe('active');
    }
    const tools = (await restTools(g, manage, org.orgId)).map((x) => x.tool_name);
    const pgUrl = new URL(PG_URL);
    pgUrl.pathname = `/${t.name}`;
    const myUrl = new URL(MYSQL_URL);
    const myOptions = { host: t.myConfig.host, port: t.myConfig.port, user: t.myConfig.user, password: decodeURIComponent(myUrl.password), database: t.name };
    sides.push(
      {
        type: 'postgresql',
        tool: tools.find((n) => n === 'query_postgresql_items')!,
        lock: async () => {
          const holder = postgres(pgUrl.toString(), { max: 1, onnotice: () => {} });
          await holder.unsafe('begin');
          await holder.unsafe('lock table items in access exclusive mode');
          return async () => {
            await holder.unsafe('rollback');
            await holder.end();
          };
        },
        running: async () =>
          Number(
            (
              await t.pg(
                `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'toolgate' and state <> 'idle'`,
              )
            )[0]!.n,
          ),
        connections: async () =>
          Number((await t.pg(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'toolgate'`))[0]!.n),
      },
      {
        type: 'mysql',
        tool: tools.find((n) => n === 'query_mysql_items')!,
        lock: async () => {
          const holder = await mysql.createConnection(myOptions);
          await holder.query('LOCK TABLES items WRITE');
          return async () => {
            await holder.query('UNLOCK TABLES');
            await holder.end();
          };
        },
        running: async () =>
          Number(
            (
              await t.my(
                `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO NOT LIKE 'KILL %' AND INFO NOT LIKE 'LOCK %'`,
              )
            )[0]!.n,
          ),
        connections: async () => 0,
      },
    );
    for (const side of sides) expect(side.tool).toBeString();
  }, 60_000);

  afterAll(async () => {
    server?.stop(true);
    await g?.close();
    await t?.drop();
  });

  for (const type of ['postgresql', 'mysql'] as const) {
    test(`${type}: ${ROUNDS} clients disconnect mid-call in a row; each statement is gone within a second, the pool is whole`, async () => {
      verifies('SQL-CANCEL-DISCONNECT');
      const side = sides.find((s) => s.type === type)!;
      // Both statements once without the lock: the tool works, and (postgres) the resolution verdicts are cached.
      for (const sql of [READ, WRITE]) expect((await liveCall(side.tool, sql)).isError).toBe(false);
      const release = await side.lock();
      const gone: number[] = [];
      try {
        for (let i = 0; i < ROUNDS; i++) {
          // Reads and writes (postgres: the one-statement path and the pipelined transaction); one in five leaves
          // within 20 ms, often before the statement has reached the server.
          const early = i % 5 === 0;
          const delay = early ? Math.random() * 20 : 20 + Math.random() * 280;
          const { answered } = await disconnectingCall(side.tool, i % 2 === 0 ? READ : WRITE, delay);
          expect({ i, answered }).toEqual({ i, answered: false });
          const ms = await msUntil(async () => {
            const usage = await poolUsage(type);
            return usage.running === 0 && usage.waiting === 0 && (await side.running()) === 0;
          }, 5000);
          gone.push(ms);
          // Slack for a loaded machine (2 shared cores, load ~12 seen): a single round may take longer; the
          // distribution below must still keep the second.
          expect({ i, delay: Math.round(delay), ms: ms <= SINGLE_ROUND_MAX_MS }).toEqual({ i, delay: Math.round(delay), ms: true });
        }
        // The lock is still held: a statement that escaped its cancel would still be waiting for it now.
        await Bun.sleep(200);
        expect(await side.running()).toBe(0);
      } finally {
        await release();
      }
      const sorted = [...gone].sort((a, b) => a - b);
      const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
      console.log(`[issue 26] ${type}: ${ROUNDS} disconnects, statement gone and slot free after p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms`);
      expect(at(0.9)).toBeLessThanOrEqual(1000);

      // The pool is whole: no slot held, no more connections than the pool has, and CAP calls at once are served at once.
      expect(await poolUsage(type)).toEqual({ running: 0, waiting: 0 });
      expect(await side.connections()).toBeLessThanOrEqual(10);
      const started = performance.now();
      const next = await Promise.all(Array.from({ length: CAP }, () => liveCall(side.tool, READ)));
      const servedMs = performance.now() - started;
      expect(next.map((r) => r.isError)).toEqual(Array(CAP).fill(false));
      console.log(`[issue 26] ${type}: ${CAP} concurrent calls right after served in ${Math.round(servedMs)} ms`);
      expect(servedMs).toBeLessThan(1500);
    }, 240_000);

    test(`${type}: a client that leaves while its call waits for a slot gives the place up, and nothing runs`, async () => {
      verifies('SQL-CANCEL-QUEUED');
      const side = sides.find((s) => s.type === type)!;
      const release = await side.lock();
      let holders: Promise<{ isError: boolean; text: string }>[] = [];
      try {
        // Every slot taken by connected callers waiting for the lock.
        holders = Array.from({ length: CAP }, () => liveCall(side.tool, READ));
        expect(await msUntil(async () => (await poolUsage(type)).running === CAP, 3000)).toBeLessThan(3000);
        // `notes` is not locked: a write that got a slot would run at once.
        await disconnectingCall(side.tool.replace('items', 'notes'), "INSERT INTO notes (id, body) VALUES (99, 'queued')", 150);
        // It had queued, and leaves the queue when the client goes, long before the 3 s queue deadline: within half of it
        // (600 ms was seen once while the parallel suite's other worker held the CPU).
        expect(await msUntil(async () => (await poolUsage(type)).waiting === 0, 1500)).toBeLessThan(1500);
        expect((await poolUsage(type)).running).toBe(CAP);
      } finally {
        await release();
      }
      expect((await Promise.all(holders)).map((r) => r.isError)).toEqual(Array(CAP).fill(false));
      const rows = type === 'postgresql' ? await t.pg('select id from notes where id = 99') : await t.my('SELECT id FROM notes WHERE id = 99');
      expect(rows).toEqual([]);
      expect(await poolUsage(type)).toEqual({ running: 0, waiting: 0 });
    }, 30_000);
  }

  test('the audit row of an abandoned call says so: outcome error, abandoned', async () => {
    verifies('SQL-CANCEL-DISCONNECT');
    const response = await api(g, 'GET', '/api/audit?action=tool.called&limit=200', manage);
    expect(response.status).toBe(200);
    const { events } = (await response.json()) as { events: { outcome: string; details: Record<string, unknown> }[] };
    const abandoned = events.filter((e) => e.details.abandoned === true);
    expect(abandoned.length).toBeGreaterThan(0);
    for (const e of abandoned) expect({ outcome: e.outcome, counted: typeof e.details.counted }).toEqual({ outcome: 'error', counted: 'boolean' });
    const connected = events.filter((e) => e.details.abandoned === undefined);
    expect(connected.length).toBeGreaterThan(0);
  });
});
