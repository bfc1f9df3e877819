import { ConnectorError, type DatabaseConfig } from '../types.ts';
import { busyText, ConnectorBusyError } from '../shared/pools.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, type Described } from '../shared/errors.ts';
import { netErrorCode } from '../shared/netcause.ts';

import { DEFAULT_MSSQL_PORT } from './config.ts';
export interface ErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
}

interface MsErr {
  code?: string;
  number?: number;
  message?: string;
  originalError?: { message?: string; code?: string };
}

function describeConnect(err: unknown, ctx: ErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_MSSQL_PORT;
  const e = (typeof err === 'object' && err !== null ? err : {}) as MsErr;
  const net = describeNetworkError({ code: netErrorCode(err), cause: err }, host, port, ctx.connectTimeoutMs);
  if (net) return net;
  if (e.code === 'ELOGIN') {
    if (/database/i.test(e.message ?? '')) return { message: `user ${user} may not open database ${database}`, code: 'auth_failed' };
    return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
  }
  if (e.code === 'ETIMEOUT' && e.number === undefined && /connect/i.test(e.message ?? '')) {
    return { message: `could not connect to ${host}:${port}: no answer within ${Math.round(ctx.connectTimeoutMs / 1000)} s`, code: 'timeout' };
  }
  if (e.code === 'ESOCKET') return { message: `could not connect to ${host}:${port}`, code: 'connection_failed' };
  if (e.code === 'EENCRYPT' || e.code === 'ETLS') return { message: `TLS with ${host}:${port} failed`, code: 'connection_failed' };
  return null;
}

export function connectorError(err: unknown, ctx: ErrorContext, fallback: ConnectorError['code']): ConnectorError {
  return connectorFailure(err, err instanceof ConnectorError ? null : describeConnect(err, ctx), ctx.credential, fallback);
}

export function callErrorText(err: unknown, ctx: ErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  const e = (err ?? {}) as MsErr;
  if (e.code === 'ABORTED') return 'The call was aborted.';
  if (e.code === 'STATEMENT_TIMEOUT' || (e.code === 'ETIMEOUT' && e.number === undefined && !/connect/i.test(e.message ?? ''))) {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  let text: string;
  switch (e.number) {
    case 1222: // lock request time out period exceeded
      text = `The query waited more than ${ctx.lockTimeoutMs} ms for a lock and was cancelled (lock timeout).`;
      break;
    case 229: // permission denied on object
    case 230:
      text = `Permission denied: ${e.message}.`;
      break;
    case undefined:
      return INTERNAL_FAILURE_TEXT;
    default:
      text = `The database rejected the query: ${e.message} (error ${e.number}).`;
  }
  return scrub(text, ctx.credential);
}
