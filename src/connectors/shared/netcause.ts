/**
 * Drivers that wrap socket errors (mongodb's server selection, tedious' ConnectionError, oracledb's NJS-503) keep
 * the Node error code in a cause chain or only in the message: this finds it, so describeNetworkError can word it.
 */
const NET_CODES = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EAI_NONAME|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|EPIPE)\b/;

export function netErrorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 6 && typeof e === 'object' && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NET_CODES.test(code)) return code;
    const m = NET_CODES.exec(String((e as { message?: unknown }).message ?? ''));
    if (m) return m[1];
    const next = (e as { cause?: unknown; originalError?: unknown; reason?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
    e = next;
  }
  return undefined;
}
