/**
 * Where a CLI command runs: the operator API of a running server (TOOLGATE_OPERATOR_URL, or the embedded server holding the
 * data folder), or directly on the store (offline, or PostgreSQL shared with running servers). Errors become CliError.
 */
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { createGateway, type Gateway } from '../gateway.ts';
import { StoreUnreachableError } from '../store/reach.ts';
import { acquireDataDirLock, DataDirBusyError, embeddedOperatorToken, lockHolder } from '../util/datadir.ts';

/** Exit codes: documented in the CLI's usage text. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3 } as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
  }
}

export type Target = { kind: 'api'; url: string; token: string; name: string } | { kind: 'direct'; config: Config };

/** The config, or a CliError naming the variable's problem. */
export function configOrFail(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.unreachable);
    throw err;
  }
}

/**
 * TOOLGATE_OPERATOR_URL names a running server: always its operator API (TOOLGATE_OPERATOR_TOKEN required). Otherwise an
 * embedded server holding the data folder is called through its API (PGlite allows one process per folder), and
 * without one the command runs on the store itself.
 */
export function chooseTarget(env: NodeJS.ProcessEnv = process.env): Target {
  const remote = env.TOOLGATE_OPERATOR_URL?.trim();
  const config = configOrFail();
  if (remote) {
    if (!config.operatorToken) throw new CliError('TOOLGATE_OPERATOR_URL is set: TOOLGATE_OPERATOR_TOKEN is required to call its operator API', EXIT.usage);
    return { kind: 'api', url: remote.replace(/\/+$/, ''), token: config.operatorToken, name: 'the server at TOOLGATE_OPERATOR_URL' };
  }
  const holder = config.databaseUrl ? null : lockHolder(config.dataDir);
  // Another CLI command holds the folder (it serves no operator API): wait for it rather than calling port 0.
  if (holder && holder.port === 0)
    throw new CliError(`the data folder is in use by process ${holder.pid} (another toolgate command); try again`, EXIT.unreachable);
  if (holder) {
    const token = config.operatorToken ?? embeddedOperatorToken(config.dataDir);
    return { kind: 'api', url: `http://127.0.0.1:${holder.port}`, token, name: 'the server holding the data folder' };
  }
  return { kind: 'direct', config };
}

/** Calls the operator API; the response on success, else a CliError with the server's message. */
export async function callApi(target: Extract<Target, { kind: 'api' }>, method: string, path: string, body?: unknown): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(`${target.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    throw new CliError(`${target.name} does not answer at ${target.url} (${(err as Error).message}); try again`, EXIT.unreachable);
  }
  if (response.ok) return response;
  const payload = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  throw new CliError(String(payload.message ?? payload.error ?? `HTTP ${response.status}`), response.status === 401 ? EXIT.unreachable : EXIT.failed);
}

export async function apiJson<T>(target: Extract<Target, { kind: 'api' }>, method: string, path: string, body?: unknown): Promise<T> {
  return (await (await callApi(target, method, path, body)).json()) as T;
}

/** Runs `work` on a gateway opened on the store (holding the data folder meanwhile); domain errors become CliError. */
export async function onStore<T>(config: Config, work: (gateway: Gateway) => Promise<T>): Promise<T> {
  let release: () => void;
  try {
    release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir, { port: 0, url: 'cli' });
  } catch (err) {
    if (err instanceof DataDirBusyError) throw new CliError(`${err.message}; try again`, EXIT.unreachable);
    throw err;
  }
  try {
    // A command does not wait for a store that is down (a server does, decision 0324): one try, exit 3.
    const gateway = await createGateway({ ...config, logLevel: 'error', storeStartWaitMs: 0 }).catch((err: unknown) => {
      throw err instanceof StoreUnreachableError ? new CliError(err.message, EXIT.unreachable) : err;
    });
    try {
      return await work(gateway);
    } catch (err) {
      if (err instanceof AppError) throw new CliError(err.message);
      throw err;
    } finally {
      await gateway.close();
    }
  } finally {
    release();
  }
}
