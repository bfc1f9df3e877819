/** postgres.js client options for Toolgate: TLS modes, JSON-safe type parsers, and session defaults. */
import postgres from 'postgres';
import type { DatabaseConfig } from '../types.ts';
import type { PoolSettings } from '../shared/pools.ts';
import { byteaHexToBase64, parseFloatText, timestampTextToIso, timestamptzTextToIso } from '../shared/jsonsafe.ts';

export type PgSql = postgres.Sql<Record<string, never>>;

export const DEFAULT_PG_PORT = 5432;

/** How long a pooled connection may sit unused before postgres.js closes it (the pool object stays). */
const CONNECTION_IDLE_S = 30;

const text = (x: unknown): string => String(x);

/**
 * Parsers implementing the rules of shared/jsonsafe.ts at parse time, so rows come out JSON-safe with no extra
 * pass. int8 (20) and numeric (1700) are strings already (postgres.js' default, kept on purpose); array types use
 * these element parsers too (postgres.js resolves array OIDs on connect, fetch_types).
 */
const JSON_SAFE_TYPES = {
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

/** Opens a postgres.js pool (lazily: no connection until the first query). Every option is explicit so PG* env vars never leak in. */
export function openPgPool(config: DatabaseConfig, credential: string | null, settings: PoolSettings, max = settings.max): PgSql {
  return postgres({
    host: config.host,
    port: config.port ?? DEFAULT_PG_PORT,
    database: config.database,
    user: config.user,
    pass: credential ?? '',
    ssl: sslOption(config),
    max,
    idle_timeout: CONNECTION_IDLE_S,
    connect_timeout: Math.max(1, Math.ceil(settings.connectTimeoutMs / 1000)),
    // Agent SQL is arbitrary: named prepared statements would grow a per-connection cache without bound.
    // Unnamed statements still use the extended protocol, which runs exactly one statement per query.
    prepare: false,
    fetch_types: true,
    onnotice: () => undefined,
    types: JSON_SAFE_TYPES,
    transform: { undefined: null },
    connection: {
      application_name: 'toolgate',
      // Timestamptz text in UTC, dates as YYYY-MM-DD: the parsers above rely on both.
      TimeZone: 'UTC',
      DateStyle: 'ISO, YMD',
      // Safety nets for anything not run under the per-call SET LOCAL limits (introspection).
      statement_timeout: 30_000,
      idle_in_transaction_session_timeout: 60_000,
    },
  }) as unknown as PgSql;
}

export async function endPgPool(sql: PgSql): Promise<void> {
  await sql.end({ timeout: 5 });
}
