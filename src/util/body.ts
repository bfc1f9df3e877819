/** Reads request bodies defensively: a size cap while streaming, strict UTF-8, bounded nesting, then JSON. */
import { AppError } from '../errors.ts';

const MAX_JSON_DEPTH = 64;

export class BodyError extends AppError {}

/**
 * Reads at most maxBytes; a larger body is refused with 413 without buffering the rest. The one body reader of every
 * surface (REST, the MCP transport, console sign-in). A plain Content-Length within the cap is read in one go (HTTP
 * framing ends the body there; cheaper than streaming); anything else (chunked, no length) is streamed with the cap
 * enforced as it comes.
 */
export async function readBodyCapped(request: Request, maxBytes: number): Promise<Uint8Array> {
  const length = request.headers.get('content-length');
  if (length !== null && /^\d{1,10}$/.test(length) && Number(length) <= maxBytes && !request.headers.has('transfer-encoding')) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength <= maxBytes) return bytes;
    throw tooLarge(maxBytes);
  }
  const declared = Number(length ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

function tooLarge(maxBytes: number): BodyError {
  return new BodyError(413, 'payload_too_large', `The request body is larger than ${maxBytes} bytes.`);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new BodyError(400, 'invalid_encoding', 'The request body is not valid UTF-8.');
  }
}

/** Deepest nesting of arrays/objects outside strings; a linear scan so hostile input costs O(n). */
function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

export type JsonParse = { ok: true; value: unknown } | { ok: false; reason: 'syntax' | 'depth' };

export function parseJson(text: string): JsonParse {
  if (jsonDepth(text) > MAX_JSON_DEPTH) return { ok: false, reason: 'depth' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'syntax' };
  }
}
