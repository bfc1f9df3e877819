/**
 * Reaching the store's PostgreSQL server at start (issue 42 item 4). A server that is starting, restarting or not
 * yet reachable (a machine's boot order, a failover) is waited for, a line each try, with a growing pause, up to
 * TOOLGATE_STORE_START_WAIT_MS; a server that answers but refuses us (password, missing database) is not worth
 * waiting for. Either way the process ends with one line naming the server (never its credentials) and the
 * reason, not a driver's stack trace.
 */
import postgres from 'postgres';

/** The store could not be reached or refused the gateway: `message` is the one line to print. */
export class StoreUnreachableError extends Error {
  override name = 'StoreUnreachableError';
}

/**
 * Codes worth waiting for: the network's (nothing listens yet, a name not yet in DNS, a timeout) and the server's
 * own "not now" answers (57P03 starting up or shutting down, 53300 too many connections, 08006/08001 failures).
 */
const TRANSIENT = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  '57P03',
  '53300',
  '08001',
  '08006',
]);

/** host:port/database of a postgres:// URL: what a log line may say of it (no user, no password, no options). */
export function describeServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname || '/'}`;
  } catch {
    return 'the DATABASE_URL server (the URL does not parse)';
  }
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** The reason without anything of the URL: the server's message for its own refusals, the code for the network's. */
function reasonOf(err: unknown): string {
  const code = codeOf(err);
  if (/^[0-9A-Z]{5}$/.test(code) && err instanceof Error) return `${err.message} (${code})`;
  return code || (err instanceof Error ? err.message : String(err));
}

export interface ReachOptions {
  /** How long to keep trying while the failure is transient (0: one try). */
  waitMs: number;
  /** Told each failed try that will be retried: one line. */
  onWait(message: string): void;
  /** Tests: the pause before try n (1-based); default 0.5 s doubling to 5 s. */
  pauseMs?(attempt: number): number;
}

/** Resolves once the server answers a query; throws StoreUnreachableError when it will not (see the module note). */
export async function reachServer(url: string, options: ReachOptions): Promise<void> {
  const where = describeServer(url);
  const started = Date.now();
  const pause = options.pauseMs ?? ((n: number) => Math.min(5000, 500 * 2 ** (n - 1)));
  for (let attempt = 1; ; attempt++) {
    const client = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {}, connection: { application_name: 'toolgate' } });
    try {
      await client`SELECT 1`;
      return;
    } catch (err) {
      const reason = reasonOf(err);
      if (!TRANSIENT.has(codeOf(err))) throw new StoreUnreachableError(`the store at ${where} refused the gateway: ${reason}`);
      const elapsed = Date.now() - started;
      const wait = Math.min(pause(attempt), Math.max(0, options.waitMs - elapsed));
      if (elapsed >= options.waitMs || wait <= 0)
        throw new StoreUnreachableError(
          `the store at ${where} is unreachable (${reason}) after ${attempt} ${attempt === 1 ? 'try' : 'tries'} in ${Math.round(elapsed / 1000)} s${
            // A server waits (and the setting says how long); a CLI command tries once, so the setting is not its switch.
            options.waitMs > 0 ? '; set TOOLGATE_STORE_START_WAIT_MS to wait longer' : ''
          }`,
        );
      options.onWait(`the store at ${where} is unreachable (${reason}); trying again in ${(wait / 1000).toFixed(1)} s`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    } finally {
      await client.end({ timeout: 1 }).catch(() => {});
    }
  }
}
