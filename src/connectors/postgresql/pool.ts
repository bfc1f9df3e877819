/** postgres.js client options for Toolgate: TLS modes, JSON-safe type parsers, and session defaults. */
import type net from 'node:net';
import postgres from 'postgres';
import type { DatabaseConfig } from '../types.ts';
import type { PoolSettings } from '../shared/pools.ts';
import { connectionBudget, serverKey } from '../shared/budget.ts';
import { DEFAULT_PG_PORT } from './config.ts';
import { byteaHexToBase64, decimalTextToJson, int64TextToJson, parseFloatText, timestampTextToIso, timestamptzTextToIso } from '../shared/jsonsafe.ts';

export type PgSql = postgres.Sql<Record<string, never>>;

/** How long a pooled connection may sit unused before postgres.js closes it (the pool object stays). */
const CONNECTION_IDLE_S = 30;

const text = (x: unknown): string => String(x);

/**
 * Parsers implementing the rules of shared/jsonsafe.ts at parse time, so rows come out JSON-safe with no extra
 * pass. int8 (20) and numeric (1700) become numbers while exact, strings beyond; array types use these element
 * parsers too (postgres.js resolves array OIDs on connect, fetch_types).
 */
const JSON_SAFE_TYPES = {
  tgInt8: { to: 20, from: [20], serialize: text, parse: int64TextToJson },
  tgNumeric: { to: 1700, from: [1700], serialize: text, parse: decimalTextToJson },
  tgFloat: { to: 701, from: [700, 701], serialize: text, parse: parseFloatText },
  tgDate: { to: 1082, from: [1082], serialize: text, parse: text },
  tgTimestamp: { to: 1114, from: [1114], serialize: text, parse: timestampTextToIso },
  tgTimestamptz: {
    to: 1184,
    from: [1184],
    serialize: (x: unknown) => (x instanceof Date ? x.toISOString() : String(x)),
    parse: timestamptzTextToIso,
  },
  tgBytea: { to: 17, from: [17], serialize: text, parse: byteaHexToBase64 },
};

function sslOption(config: DatabaseConfig): false | 'require' | { rejectUnauthorized: true; host: string } {
  switch (config.tls ?? 'disable') {
    case 'require':
      return 'require';
    case 'verify-full':
      // An object: postgres.js passes it to tls.connect, which then checks the chain and the host name.
      return { rejectUnauthorized: true, host: config.host };
    default:
      return false;
  }
}

/**
 * Session defaults of a pool's connections, from the call that opened it. With them, a read on a tool of `schema`
 * under the same limits can run as one bare statement (see runPgFast); other calls set their own per transaction.
 */
export interface PgSession {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  schema: string;
}

export interface PgPool {
  sql: PgSql;
  session: PgSession | null;
  /** Set for good if a connection ever reports default_transaction_read_only other than on. */
  tainted: boolean;
  /**
   * One connection beside the pool that cancels statements of the pool's sessions (pg_cancel_backend), opened on the
   * first cancel: a cancel then costs one round trip instead of a new server process per CancelRequest, which a
   * loaded server takes hundreds of milliseconds to start. It is a connection to the server like the pool's, so it
   * holds a token of the connection budget while open (decision 0411); null when no token is free now (no call may
   * wait for one): the cancel then goes as the protocol's CancelRequest (run.ts), which opens no session.
   */
  canceller(): PgSql | null;
}

/**
 * The tool's schema before pg_catalog (listed explicitly, so it is not searched first as by default): an unqualified
 * name the guard took for the tool's table can then never resolve to a catalog relation of the same name (pg_class,
 * pg_settings, pg_stats...). User functions, operators and types of that schema that now come before built-ins of the
 * same name are refused by the server-side resolution check (resolution.ts). pg_temp last, so a temporary table
 * cannot shadow the tool's table.
 */
export const searchPath = (schema: string): string => `"${schema.replace(/"/g, '""')}", pg_catalog, pg_temp`;

/** What opening a pool takes besides config and credential: session defaults, and how sockets are made. */
export interface PgOpen {
  session?: PgSession;
  /**
   * Makes each connection's socket (the outbound policy's checked, pinned connection, or an embedded database's
   * private socket). Unset only where no policy applies (drivers used directly, as by benchmarks).
   */
  socket?: () => Promise<net.Socket>;
  /** At most this many connections, below the pool settings' max (an embedded database is one session). */
  max?: number;
}

/**
 * Opens a postgres.js pool (lazily: no connection until the first query). Every option is explicit so PG* env vars
 * never leak in. `max` overrides the pool size (validate and introspect use a throwaway single connection).
 */
export function openPgPool(config: DatabaseConfig, credential: string | null, settings: PoolSettings, open: PgOpen = {}, max = settings.max): PgPool {
  const session = open.session;
  let canceller: PgSql | null = null;
  const server = serverKey(config.host, config.port ?? DEFAULT_PG_PORT);
  const pool: PgPool = {
    sql: undefined as unknown as PgSql,
    session: session ?? null,
    tainted: false,
    // The side connection that cancels statements is dialled like the pool's own: through the checked socket.
    canceller: () => {
      if (canceller) return canceller;
      if (!connectionBudget.tryAcquire(server)) return null;
      return (canceller = openPgPool(config, credential, settings, { socket: open.socket }, 1).sql);
    },
  };
  cancellers.set(pool, {
    open: () => canceller !== null,
    close: async () => {
      const side = canceller;
      if (!side) return;
      canceller = null;
      // Its token comes back once it is closed, as a pool's do (shared/pools.ts).
      await side.end({ timeout: 1 }).catch(() => undefined);
      connectionBudget.release(server, 1);
    },
  });
  pool.sql = postgres({
    // A host with a slash would be a Unix socket path to postgres.js, one with a comma a list of hosts: the policy
    // refuses both, and the socket hook below replaces postgres.js's own connect anyway.
    host: config.host,
    ...(open.socket ? { socket: open.socket } : {}),
    port: config.port ?? DEFAULT_PG_PORT,
    database: config.database,
    user: config.user,
    pass: credential ?? '',
    ssl: sslOption(config),
    max: Math.min(max, open.max ?? max),
    idle_timeout: CONNECTION_IDLE_S,
    connect_timeout: Math.max(1, Math.ceil(settings.connectTimeoutMs / 1000)),
    // Named prepared statements are allowed, but every query is unnamed unless it asks: agent SQL is arbitrary, and
    // postgres.js keeps a connection's statements until it closes. Only the fast path asks, within a bound (see
    // execute.ts). Unnamed statements still use the extended protocol, which runs exactly one statement per query.
    prepare: true,
    fetch_types: true,
    onnotice: () => undefined,
    // The server reports default_transaction_read_only (GUC_REPORT, PG 14+): the fast path runs only while every
    // connection says "on", so a session somehow switched to read-write sends reads back to explicit transactions.
    onparameter: (key: string, value: string) => {
      if (key === 'default_transaction_read_only' && value !== 'on') pool.tainted = true;
    },
    types: JSON_SAFE_TYPES,
    transform: { undefined: null },
    connection: {
      application_name: 'toolgate',
      // Timestamptz text in UTC, dates as YYYY-MM-DD: the parsers above rely on both.
      TimeZone: 'UTC',
      DateStyle: 'ISO, YMD',
      idle_in_transaction_session_timeout: 60_000,
      ...(session
        ? {
            default_transaction_read_only: true,
            statement_timeout: Math.max(1, Math.floor(session.statementTimeoutMs)),
            lock_timeout: Math.max(1, Math.floor(session.lockTimeoutMs)),
            search_path: searchPath(session.schema),
          }
        : // A safety net for what runs outside the per-call limits (introspection).
          { statement_timeout: 30_000 }),
    },
  }) as unknown as PgSql;
  return pool;
}

/** Closes the canceller connection of a pool if it was opened, and gives its budget token back (with the pool). */
const cancellers = new WeakMap<PgPool, { open: () => boolean; close: () => Promise<void> }>();

/** Budget tokens a pool holds besides its pool connections: 1 while its cancel session is open. */
export const pgSideTokens = (pool: PgPool): number => (cancellers.get(pool)?.open() ? 1 : 0);

export async function endPgPool(pool: PgPool): Promise<void> {
  await Promise.all([pool.sql.end({ timeout: 5 }), cancellers.get(pool)?.close()]);
}
