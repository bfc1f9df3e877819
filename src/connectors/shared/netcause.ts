/**
 * Drivers that wrap socket errors (mongodb's server selection, tedious' ConnectionError over an AggregateError of
 * per-address attempts, oracledb's NJS-503) keep the Node error code in a cause chain or only in the message: this
 * finds it, so describeNetworkError can word it.
 */
const NET_CODES = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EAI_NONAME|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|EPIPE)\b/;

export function netErrorCode(err: unknown): string | undefined {
  const queue: unknown[] = [err];
  for (let seen = 0; seen < 12 && queue.length > 0; seen++) {
    const e = queue.shift();
    if (typeof e !== 'object' || e === null) continue;
    const o = e as { code?: unknown; message?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
    if (typeof o.code === 'string' && NET_CODES.test(o.code)) return o.code;
    const m = NET_CODES.exec(String(o.message ?? ''));
    if (m) return m[1];
    queue.push(o.cause, o.originalError);
    if (Array.isArray(o.errors)) queue.push(...o.errors.slice(0, 4));
  }
  return undefined;
}
