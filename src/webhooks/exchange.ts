/**
 * What a delivery attempt keeps of its exchange (docs/decisions/0283-webhook-attempt-exchange.md): the request headers
 * it sent (none is a secret: the signatures are per attempt) and, when an answer came, the response's headers (at most
 * MAX_HEADERS, each value cut at MAX_HEADER_VALUE characters, set-cookie withheld) and the first MAX_BODY_BYTES of its
 * body. The request body is the event's, stored once per event.
 */
import type { AttemptExchange } from './repository.ts';

const MAX_BODY_BYTES = 4096;
const MAX_HEADERS = 50;
const MAX_HEADER_VALUE = 512;
/** Response headers whose values are the receiver's credentials for the gateway, not something to show. */
const WITHHELD = new Set(['set-cookie', 'set-cookie2']);

function cappedHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of headers) {
    if (n++ >= MAX_HEADERS) break;
    out[name] = WITHHELD.has(name) ? '[withheld]' : value.length > MAX_HEADER_VALUE ? `${value.slice(0, MAX_HEADER_VALUE)}…` : value;
  }
  return out;
}

/** The first MAX_BODY_BYTES of `bytes` as UTF-8, never cutting a character in two. */
function cappedBody(bytes: Uint8Array): { text: string; truncated: boolean } {
  if (bytes.length <= MAX_BODY_BYTES) return { text: new TextDecoder().decode(bytes), truncated: false };
  let end = MAX_BODY_BYTES;
  // Back off continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: new TextDecoder().decode(bytes.subarray(0, end)), truncated: true };
}

/** The exchange of an attempt that got `res` (already buffered by the outbound guard), or none (`res` null). */
export async function attemptExchange(requestHeaders: Record<string, string>, res: Response | null): Promise<AttemptExchange> {
  if (!res) return { requestHeaders, responseHeaders: null, responseBody: null, responseTruncated: false };
  const body = cappedBody(new Uint8Array(await res.arrayBuffer()));
  return { requestHeaders, responseHeaders: cappedHeaders(res.headers), responseBody: body.text, responseTruncated: body.truncated };
}
