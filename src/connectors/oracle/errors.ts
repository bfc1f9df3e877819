import { ConnectorError, type DatabaseConfig } from '../types.ts';
import { busyText, ConnectorBusyError } from '../shared/pools.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, type Described } from '../shared/errors.ts';
import { netErrorCode } from '../shared/netcause.ts';

import { DEFAULT_ORACLE_PORT } from './config.ts';
export interface ErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
}

export interface OraErr {
  code?: string;
  errorNum?: number;
  message?: string;
}

function describeConnect(err: unknown, ctx: ErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_ORACLE_PORT;
  const e = (typeof err === 'object' && err !== null ? err : {}) as OraErr;
  const net = describeNetworkError({ code: netErrorCode(err), cause: err }, host, port, ctx.connectTimeoutMs);
  if (net) return net;
  switch (e.code) {
    case 'ORA-01017':
      return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
    case 'ORA-28000':
      return { message: `the account of user ${user} is locked`, code: 'auth_failed' };
    case 'ORA-12514':
    case 'ORA-12505':
      return { message: `service ${database} is not known on ${host}:${port}`, code: 'invalid_config' };
    case 'NJS-503':
    case 'NJS-501':
    case 'NJS-500':
      return { message: `could not connect to ${host}:${port}`, code: 'connection_failed' };
    case 'NJS-515':
      return { message: `${host}:${port}/${database} is not an address oracledb accepts (host:port/service_name)`, code: 'invalid_config' };
    case 'NJS-510':
      return { message: `could not connect to ${host}:${port}: no answer within ${Math.round(ctx.connectTimeoutMs / 1000)} s`, code: 'timeout' };
  }
  return null;
}

export function connectorError(err: unknown, ctx: ErrorContext, fallback: ConnectorError['code']): ConnectorError {
  return connectorFailure(err, err instanceof ConnectorError ? null : describeConnect(err, ctx), ctx.credential, fallback);
}

export function callErrorText(err: unknown, ctx: ErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  const e = (err ?? {}) as OraErr;
  if (e.code === 'ABORTED' || e.code === 'ORA-01013') return 'The call was aborted.';
  if (e.code === 'STATEMENT_TIMEOUT' || e.code === 'NJS-123' || e.code === 'DPI-1067') {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  if (e.code === 'ORA-01456') return 'The statement tried to write, but this call runs read-only.';
  if (e.code === 'ORA-01031' || e.code === 'ORA-00942') return scrub(`The database rejected the query: ${e.message}.`, ctx.credential);
  if (typeof e.code === 'string' && e.code.startsWith('ORA-')) return scrub(`The database rejected the query: ${e.message}.`, ctx.credential);
  return INTERNAL_FAILURE_TEXT;
}
