/** mysql2 pools for Toolgate: client options, server flavour detection, and cached per-connection session settings. */
import mysql from 'mysql2/promise';
import type { DatabaseConfig } from '../types.ts';
import type { PoolSettings } from '../shared/pools.ts';
import { DEFAULT_MYSQL_PORT } from './config.ts';
import { pendingCheckedSocket } from '../../net/dial.ts';
import type { OutboundPolicy } from '../../net/policy.ts';

export type Flavour = 'mariadb' | 'mysql';

export interface MyPool {
  pool: mysql.Pool;
  /** Options for side connections (KILL QUERY) and validate. */
  options: mysql.ConnectionOptions;
  /** Detected on first use, once per pool. */
  flavour: Promise<Flavour> | null;
  /** The side connection that sends KILL QUERY, kept open once used (a kill then costs one round trip). */
  killer: Promise<mysql.Connection> | null;
  /** The pool was ended: a kill still due uses a connection of its own, which is not kept. */
  ended: boolean;
}

/** Session settings a connection currently has; tracked so a call only sends SET when something changes. */
export interface SessionState {
  /** Default database: unqualified names resolve there, so it must be the tool's own schema. */
  database: string;
  readOnly: boolean;
  /** max_statement_time (MariaDB, seconds) / max_execution_time (MySQL, ms), in ms; 0 = none. */
  statementTimeoutMs: number;
  lockTimeoutS: number;
}

const sessions = new WeakMap<object, SessionState>();

/**
 * The sql_mode the SQL guard reads statements under, set on every session whatever the server's global mode: with
 * ANSI_QUOTES a "double-quoted" string would be a name to the server, and MariaDB's ORACLE mode turns `s.nextval`
 * (a plain column reference to the guard) into a sequence call. Valid on MySQL 5.7/8 and MariaDB.
 */
export const GUARD_SQL_MODE = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

const MAX_PREPARED_PER_CONNECTION = 32;

/** Client options; every value explicit. JSON-safe rules (shared/jsonsafe.ts): BIGINT/DECIMAL and dates as strings. */
export function mysqlOptions(config: DatabaseConfig, credential: string | null, connectTimeoutMs: number, outbound?: OutboundPolicy): mysql.ConnectionOptions {
  const tls = config.tls ?? 'disable';
  const port = config.port ?? DEFAULT_MYSQL_PORT;
  const target = { host: config.host, port, database: config.database };
  return {
    // `host` stays the org's name: mysql2 uses it as the TLS server name; the socket itself comes from `stream`.
    host: config.host,
    port,
    // Every connection (pool, validate, the KILL QUERY side connection) goes to an address the policy checked at
    // that moment. Unset only where no policy applies (drivers used directly, as by benchmarks).
    ...(outbound ? { stream: () => pendingCheckedSocket(outbound, target, connectTimeoutMs) } : {}),
    user: config.user,
    password: credential ?? '',
    database: config.database,
    ssl: tls === 'disable' ? undefined : { rejectUnauthorized: tls === 'verify-full' },
    connectTimeout: connectTimeoutMs,
    charset: 'utf8mb4',
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    dateStrings: true,
    // The protocol-level guarantee of one statement per call: without MULTI_STATEMENTS the server refuses
    // `SELECT 1; DROP TABLE t` as a syntax error, whatever the guard decided.
    multipleStatements: false,
    // A database server must not be able to ask the gateway for its files (LOAD DATA LOCAL INFILE).
    // No IGNORE_SPACE: the server adds it to the session's sql_mode at login but COM_RESET_CONNECTION (after a
    // call) drops it, so every call parses with the server's own sql_mode, the first one included.
    flags: ['-LOCAL_FILES', '-IGNORE_SPACE'],
    enableKeepAlive: true,
    // Prepared statements a connection keeps (LRU, the evicted one closed on the server): saved-statement reads keep
    // theirs between calls (decision 0400), one text per saved tool version; mysql2's default is 16,000, and the
    // server's max_prepared_stmt_count (16,382 by default) is shared by every connection.
    maxPreparedStatements: MAX_PREPARED_PER_CONNECTION,
  };
}

/** What opening a pool takes besides config and credential: the outbound policy its connections are checked by. */
export interface MyOpen {
  outbound?: OutboundPolicy;
}

export function openMyPool(config: DatabaseConfig, credential: string | null, settings: PoolSettings, open: MyOpen = {}): MyPool {
  const options = mysqlOptions(config, credential, settings.connectTimeoutMs, open.outbound);
  const pool = mysql.createPool({
    ...options,
    connectionLimit: settings.max,
    // maxIdle = limit: no per-pool sweeper timer; the whole pool is closed when idle by the PoolRegistry.
    maxIdle: settings.max,
    waitForConnections: true,
    queueLimit: 0,
  });
  return { pool, options, flavour: null, killer: null, ended: false };
}

export async function endMyPool(p: MyPool): Promise<void> {
  const killer = p.killer;
  p.killer = null;
  p.ended = true;
  await Promise.all([
    p.pool.end(),
    killer?.then(
      (c) => c.destroy(),
      () => undefined,
    ),
  ]);
}

/** MariaDB or MySQL, asked once per pool (their timeout and read-only variables differ). */
export function flavourOf(p: MyPool): Promise<Flavour> {
  if (!p.flavour) {
    const detecting = p.pool.query('SELECT VERSION() AS v').then(([rows]): Flavour => {
      const v = String((rows as { v?: unknown }[])[0]?.v ?? '');
      return /mariadb/i.test(v) ? 'mariadb' : 'mysql';
    });
    p.flavour = detecting;
    // A failed detection (database down) must be retried on the next call, not cached.
    detecting.catch(() => {
      if (p.flavour === detecting) p.flavour = null;
    });
  }
  return p.flavour;
}

/** The connection's session is about to be reset (COM_RESET_CONNECTION): the next call sets everything again. */
export function forgetSession(conn: mysql.PoolConnection): void {
  sessions.delete(conn.connection as object);
}

/**
 * Brings a connection's session to `want` with at most one SET statement, and none when it already matches.
 * The first SET also fixes time_zone to UTC (TIMESTAMP values are then read as UTC, see jsonsafe.ts) and sql_mode.
 * Agent statements cannot change these variables: the guard admits no SET, and a SELECT cannot assign a
 * system variable.
 */
export async function applySession(conn: mysql.PoolConnection, flavour: Flavour, want: SessionState): Promise<void> {
  const key = conn.connection as object;
  const have = sessions.get(key);
  const parts: string[] = [];
  if (!have) parts.push(`time_zone = '+00:00'`, `sql_mode = '${GUARD_SQL_MODE}'`);
  if (have?.readOnly !== want.readOnly) parts.push(`${flavour === 'mariadb' ? 'tx_read_only' : 'transaction_read_only'} = ${want.readOnly ? 1 : 0}`);
  if (have?.lockTimeoutS !== want.lockTimeoutS) parts.push(`lock_wait_timeout = ${want.lockTimeoutS}`, `innodb_lock_wait_timeout = ${want.lockTimeoutS}`);
  if (have?.statementTimeoutMs !== want.statementTimeoutMs) {
    parts.push(flavour === 'mariadb' ? `max_statement_time = ${want.statementTimeoutMs / 1000}` : `max_execution_time = ${want.statementTimeoutMs}`);
  }
  const useDb = have?.database !== want.database;
  if (parts.length === 0 && !useDb) return;
  sessions.delete(key); // unknown state while this runs: if it fails, the next call sets everything again
  if (useDb) await conn.query(`USE \`${want.database.replace(/`/g, '``')}\``);
  if (parts.length) await conn.query(`SET SESSION ${parts.join(', ')}`);
  sessions.set(key, { ...want });
}
