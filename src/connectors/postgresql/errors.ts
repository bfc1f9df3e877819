/** Turns postgres.js and server errors into messages fit for an agent or an org admin: clear, and without secrets. */
import postgres from 'postgres';
import { ConnectorError, type DatabaseConfig } from '../types.ts';
import { describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, TLS_REQUIRED_TEXT, type Described } from '../shared/errors.ts';
import { busyText, ConnectorBusyError } from '../shared/pools.ts';
import { budgetText, ConnectionBudgetError } from '../shared/budget.ts';
import { DEFAULT_PG_PORT } from './config.ts';

export interface PgErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  /** Set while validating or introspecting: a connection that closes then, with TLS on, is a TLS refusal. */
  connecting?: boolean;
}

function isPostgresError(err: unknown): err is postgres.PostgresError {
  return err instanceof postgres.PostgresError || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'PostgresError');
}

/** Classifies connection-time failures (validate, introspect, and calls whose connection could not open). */
function describeConnect(err: unknown, ctx: PgErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_PG_PORT;
  const net = describeNetworkError(err, host, port, ctx.connectTimeoutMs, { mode: ctx.config.tls ?? 'disable', connecting: ctx.connecting === true });
  if (net) return net;
  if (!isPostgresError(err)) {
    const code = String((err as { code?: unknown } | null)?.code ?? '');
    if (code === 'SASL_SIGNATURE_MISMATCH' || /password|auth/i.test(code)) return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
    return null;
  }
  switch (err.code) {
    case '28P01':
      return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
    case '28000':
      if (/no encryption/i.test(err.message)) return { message: TLS_REQUIRED_TEXT(`${host}:${port}`), code: 'connection_failed' };
      // "role x does not exist" or no pg_hba.conf entry: both are the server refusing this user.
      return { message: `authentication failed for user ${user}: ${err.message}`, code: 'auth_failed' };
    case '3D000':
      return { message: `database ${database} does not exist on ${host}:${port}`, code: 'invalid_config' };
    case '53300':
      return { message: `${host}:${port} has no connection slot left (too many connections)`, code: 'connection_failed' };
    case '57P03':
      return { message: `${host}:${port} is not accepting connections yet (starting up or in recovery)`, code: 'connection_failed' };
  }
  return null;
}

/** For validate/introspect: a ConnectorError with a safe message. */
export function pgConnectorError(err: unknown, ctx: PgErrorContext, fallback: ConnectorError['code']): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const d = describeConnect(err, { ...ctx, connecting: true });
  if (d) return new ConnectorError(scrub(d.message, ctx.credential), d.code);
  const message = err instanceof Error ? err.message : String(err);
  return new ConnectorError(
    scrub(`${fallback === 'introspection_failed' ? 'introspection' : 'connection check'} failed: ${message}`, ctx.credential),
    fallback,
  );
}

/** Marker text the read wrapper (execute.ts) fails with when a row is larger than the byte cap allows. */
export const ROW_TOO_LARGE = 'toolgate_row_too_large';

/** The wrapper's cast of ROW_TOO_LARGE failed: 22P02 quoting the marker. */
export function isRowTooLarge(err: unknown): boolean {
  return isPostgresError(err) && err.code === '22P02' && err.message.includes(ROW_TOO_LARGE);
}

/** For execute: the text of an isError result. */
export function pgCallErrorText(err: unknown, ctx: PgErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  if (err instanceof ConnectionBudgetError) return budgetText(err);
  const own = (err as { code?: unknown } | null)?.code;
  if (own === 'ABORTED') return 'The call was aborted.';
  if (own === 'STATEMENT_TIMEOUT') return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  if (!isPostgresError(err)) return INTERNAL_FAILURE_TEXT;
  let text: string;
  switch (err.code) {
    case '57014':
      text = /statement timeout/.test(err.message)
        ? `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`
        : 'The query was cancelled.';
      break;
    case '55P03':
      text = `The query waited more than ${ctx.lockTimeoutMs} ms for a lock and was cancelled (lock timeout).`;
      break;
    case '08P01':
      text = /bind message supplies/.test(err.message)
        ? 'Query parameters ($1, $2, ...) are not supported: write the values into the statement.'
        : `The database rejected the query: ${err.message} (SQLSTATE ${err.code}).`;
      break;
    case '25006':
      text = 'The statement tried to write, but this call runs read-only.';
      break;
    case '42501':
      text = `Permission denied: ${err.message}.`;
      break;
    case '57P01':
    case '57P02':
    case '57P03':
      text = `The database is unavailable: ${err.message}.`;
      break;
    default: {
      // The hint often says how to fix the statement; detail is left out (it can quote other rows' values).
      const hint = err.hint ? ` Hint: ${err.hint}` : '';
      text = `The database rejected the query: ${err.message} (SQLSTATE ${err.code}).${hint}`;
    }
  }
  return scrub(text, ctx.credential);
}
