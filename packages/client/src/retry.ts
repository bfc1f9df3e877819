/**
 * The fetch every Toolgate client sends with: bounded retries and a per-attempt timeout around the runtime's fetch
 * (or the one given). Retried: 429 on any method (the gateway refuses before doing anything, and says when to come
 * back in Retry-After), and 5xx or a network failure on the idempotent methods only (GET, HEAD, PUT, DELETE), so a
 * POST or PATCH that may have taken effect is never sent twice. Uses only fetch, AbortController and timers.
 */
import { ToolgateError } from './error.ts';

export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 turns retrying off). */
  attempts?: number;
  /** The first backoff when the gateway names no Retry-After; doubled per attempt, with jitter (default 250 ms). */
  baseDelayMs?: number;
  /** The longest wait before a retry (default 30 s): a Retry-After beyond it is not waited for, the 429 is returned. */
  maxDelayMs?: number;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** The wait a Retry-After header asks for (delay-seconds or an HTTP date), in ms; null when absent or unreadable. */
function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One attempt, aborted by the caller's signal or after `timeoutMs` (a ToolgateError `timeout`, status 0). */
async function attempt(send: typeof fetch, request: Request, timeoutMs: number | undefined): Promise<Response> {
  if (timeoutMs === undefined) return send(request);
  // AbortSignal.any is missing before Node 20.3: link the caller's signal and the timer by hand.
  const controller = new AbortController();
  const outer = request.signal;
  const onAbort = () => controller.abort(outer.reason);
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  const timedOut = new ToolgateError(0, { error: 'timeout', message: `No response from the gateway within ${timeoutMs} ms` });
  const timer = setTimeout(() => controller.abort(timedOut), timeoutMs);
  try {
    return await send(request, { signal: controller.signal });
  } catch (error) {
    throw controller.signal.reason === timedOut ? timedOut : error;
  } finally {
    clearTimeout(timer);
    outer.removeEventListener('abort', onAbort);
  }
}

/** A fetch that retries as described above; `base` is looked up per request, so a replaced global fetch is used. */
export function retryingFetch(base: () => typeof fetch, retry: RetryOptions | false | undefined, timeoutMs?: number): typeof fetch {
  const settings = retry === false ? { attempts: 1 } : (retry ?? {});
  const attempts = Math.max(1, Math.floor(settings.attempts ?? 3));
  const baseDelayMs = settings.baseDelayMs ?? 250;
  const maxDelayMs = settings.maxDelayMs ?? 30_000;
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const idempotent = IDEMPOTENT.has(request.method.toUpperCase());
    for (let n = 1; ; n++) {
      const last = n >= attempts;
      // Each attempt sends a copy, so the body is still there for the next one.
      const sent = last ? request : request.clone();
      let response: Response;
      try {
        response = await attempt(base(), sent, timeoutMs);
      } catch (error) {
        // A network failure (fetch's TypeError) is retried on idempotent methods; timeouts and aborts are not.
        if (!(error instanceof TypeError) || request.signal.aborted) throw error;
        if (last || !idempotent) throw unreachable(request, error);
        await sleep(backoff(n, baseDelayMs, maxDelayMs), request.signal);
        continue;
      }
      const retriable = response.status === 429 || (response.status >= 500 && idempotent);
      if (last || !retriable) return response;
      const asked = retryAfterMs(response.headers.get('retry-after'));
      if (asked !== null && asked > maxDelayMs) return response;
      await response.body?.cancel().catch(() => {});
      await sleep(asked ?? backoff(n, baseDelayMs, maxDelayMs), request.signal);
    }
  }) as typeof fetch;
}

/**
 * A request that got no response (refused, reset, no route, DNS): a ToolgateError of status 0 and error
 * `network_error` (decision 0311), with the runtime's own error as its `cause`, instead of each runtime's TypeError.
 */
function unreachable(request: Request, error: TypeError): ToolgateError {
  const code = (error.cause as { code?: unknown } | undefined)?.code ?? (error as { code?: unknown }).code;
  const detail = `${error.message}${typeof code === 'string' && !error.message.includes(code) ? ` (${code})` : ''}`;
  const origin = new URL(request.url).origin;
  return new ToolgateError(0, { error: 'network_error', message: `No response from the gateway at ${origin}: ${detail}` }, { cause: error });
}

/** Exponential backoff with full jitter: up to base·2^(n-1), capped. */
function backoff(n: number, baseDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, Math.round(baseDelayMs * 2 ** (n - 1) * (0.5 + Math.random() / 2)));
}
