/** Turns mysql2 and server errors into messages fit for an agent or an org admin: clear, and without secrets. */
import { ConnectorError, type DatabaseConfig } from '../types.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, TLS_REQUIRED_TEXT, type Described } from '../shared/errors.ts';
import { busyText, ConnectorBusyError } from '../shared/pools.ts';
import { budgetText, ConnectionBudgetError } from '../shared/budget.ts';
import { DEFAULT_MYSQL_PORT } from './config.ts';

export interface MyErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
}

interface MysqlError {
  errno?: number;
  code?: string;
  sqlMessage?: string;
  message?: string;
}

/** Server error numbers a statement killed by a time limit (server or our KILL QUERY) comes back with. */
export const TIMEOUT_ERRNOS = new Set([1969 /* MariaDB max_statement_time */, 3024 /* MySQL max_execution_time */, 1317 /* KILL QUERY */]);

const asMysql = (err: unknown): MysqlError => (typeof err === 'object' && err !== null ? (err as MysqlError) : {});

function describeConnect(err: unknown, ctx: MyErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_MYSQL_PORT;
  const net = describeNetworkError(err, host, port, ctx.connectTimeoutMs, { mode: ctx.config.tls ?? 'disable', connecting: false });
  if (net) return net;
  const e = asMysql(err);
  switch (e.errno) {
    case 1045: // ER_ACCESS_DENIED_ERROR
    case 1698: // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
      return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
    case 1130: // ER_HOST_NOT_PRIVILEGED
      return { message: `authentication failed for user ${user}: this host may not connect to ${host}:${port}`, code: 'auth_failed' };
    case 1044: // ER_DBACCESS_DENIED_ERROR
      return { message: `user ${user} may not access database ${database}`, code: 'auth_failed' };
    case 1049: // ER_BAD_DB_ERROR
      return { message: `database ${database} does not exist on ${host}:${port}`, code: 'invalid_config' };
    case 3159: // ER_SECURE_TRANSPORT_REQUIRED
      return { message: TLS_REQUIRED_TEXT(`${host}:${port}`), code: 'connection_failed' };
    case 1040: // ER_CON_COUNT_ERROR
      return { message: `${host}:${port} has no connection slot left (too many connections)`, code: 'connection_failed' };
  }
  return null;
}

/** For validate/introspect: a ConnectorError with a safe message. */
export function myConnectorError(err: unknown, ctx: MyErrorContext, fallback: ConnectorError['code']): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const e = asMysql(err);
  return connectorFailure(err, describeConnect(err, ctx), ctx.credential, fallback, e.sqlMessage ?? e.message);
}

/** For execute: the text of an isError result. */
export function myCallErrorText(err: unknown, ctx: MyErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  if (err instanceof ConnectionBudgetError) return budgetText(err);
  const e = asMysql(err);
  if (e.code === 'ABORTED') return 'The call was aborted.';
  if (e.code === 'STATEMENT_TIMEOUT' || (e.errno !== undefined && TIMEOUT_ERRNOS.has(e.errno))) {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  const message = e.sqlMessage ?? e.message ?? String(err);
  let text: string;
  switch (e.errno) {
    case 1205: // ER_LOCK_WAIT_TIMEOUT
      text = `The query waited more than ${ctx.lockTimeoutMs} ms for a lock and was cancelled (lock timeout).`;
      break;
    case 1792: // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
      text = 'The statement tried to write, but this call runs read-only.';
      break;
    case 1142: // ER_TABLEACCESS_DENIED_ERROR
    case 1143: // ER_COLUMNACCESS_DENIED_ERROR
    case 1227: // ER_SPECIFIC_ACCESS_DENIED_ERROR
      text = `Permission denied: ${message}.`;
      break;
    case 1060: // ER_DUP_FIELDNAME, from the row-limiting wrapper
      text = `The database rejected the query: ${message}. Give every selected column a distinct name (use AS).`;
      break;
    default:
      // Without a server error number it is the driver or the gateway failing (a packet parse error, a Buffer or
      // string limit): its text describes internals, not the query.
      if (e.errno === undefined || e.sqlMessage === undefined) return INTERNAL_FAILURE_TEXT;
      text = `The database rejected the query: ${message} (error ${e.errno}).`;
  }
  return scrub(text, ctx.credential);
}
