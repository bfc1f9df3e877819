/**
 * PostgreSQL's own parser (libpg-query's WebAssembly build), instantiated with a smaller initial memory.
 *
 * Why not `import { parseSync } from 'libpg-query'`: its binary declares 2,048 initial pages (128 MB) of linear
 * memory, of which it needs ~33 MB (a 32 MB stack below the heap, ~1 MB of data). JavaScriptCore counts that memory
 * (twice) as extra heap memory and sizes its collection thresholds from it, so under load a gateway's RSS climbed to
 * 740-870 MB before its first full collection (docs/decisions/0108-pg-parser-memory.md). Here the same binary is
 * instantiated with its memory section's initial size lowered to what the stack and data need plus
 * INITIAL_HEAP_BYTES; the module grows its memory itself when a parse needs more (emscripten's
 * ALLOW_MEMORY_GROWTH, up to the binary's own 1 GB maximum). Nothing else in the binary changes.
 *
 * parseSync and scanSync below follow libpg-query 18.1.5's wasm/index.js line for line (same C entry points, same
 * struct reads, same errors), so the guard sees exactly what the package's functions return;
 * test/pg-parser.test.ts compares both on a corpus. If the binary ever cannot be read as expected, the package's
 * own loader is used unchanged.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ParseResult, ScanResult } from 'libpg-query';

/** Heap room above the stack and data at start; parses of the 100,000-character maximum grow past it. */
const INITIAL_HEAP_BYTES = 4 * 1024 * 1024;
const PAGE = 65536;

interface EmscriptenModule {
  _malloc(size: number): number;
  _free(ptr: number): void;
  _wasm_parse_query_raw(ptr: number): number;
  _wasm_free_parse_result(ptr: number): void;
  _wasm_scan(ptr: number): number;
  _wasm_free_string(ptr: number): void;
  getValue(ptr: number, type: 'i32'): number;
  UTF8ToString(ptr: number): string;
  stringToUTF8(str: string, ptr: number, max: number): void;
  lengthBytesUTF8(str: string): number;
  HEAPU8: Uint8Array;
}
type Factory = (options: {
  instantiateWasm(imports: WebAssembly.Imports, receive: (instance: WebAssembly.Instance) => void): object;
}) => Promise<EmscriptenModule>;

/** What the parse error carries, as the package's SqlError does. */
class SqlError extends Error {
  constructor(
    message: string,
    readonly sqlDetails: { message: string; cursorPosition: number; fileName?: string; functionName?: string; lineNumber?: number },
  ) {
    super(message);
    this.name = 'SqlError';
  }
}

// ---------------------------------------------------------------------------------------------------
// The binary: where the memory section's initial size is, and how much the stack and data need

function readU32(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  let p = at;
  for (;;) {
    const b = bytes[p++]!;
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(b & 0x80)) return { value, next: p };
    if (shift > 35) throw new Error('bad LEB128');
  }
}

function readI32(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  let p = at;
  let b: number;
  do {
    b = bytes[p++]!;
    value |= (b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80 && shift < 35);
  if (shift < 32 && b & 0x40) value |= -1 << shift;
  return { value, next: p };
}

/** LEB128 of `value` padded to exactly `width` bytes (continuation bits on all but the last). */
function paddedLeb(value: number, width: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < width; i++) {
    const last = i === width - 1;
    out.push((value & 0x7f) | (last ? 0 : 0x80));
    value = Math.floor(value / 128);
  }
  if (value !== 0) throw new Error('value does not fit');
  return out;
}

/**
 * A copy of the binary whose one defined memory starts at `pages` pages instead of its declared initial size, or
 * null when the layout is not the expected one (one defined memory, a mutable i32 global initialised by a constant:
 * the stack pointer, growth allowed). The initial size must cover the highest constant initialiser of a global (the
 * stack top, which the stack grows down from) and the end of every data segment.
 */
export function shrinkInitialMemory(
  original: Uint8Array,
  headroomBytes = INITIAL_HEAP_BYTES,
): { bytes: Uint8Array; pages: number; declaredPages: number } | null {
  const bytes = new Uint8Array(original);
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) return null;
  let p = 8;
  let memory: { at: number; width: number; pages: number; max: number } | null = null;
  let needed = 0;
  while (p < bytes.length) {
    const id = bytes[p++]!;
    const size = readU32(bytes, p);
    const start = size.next;
    const end = start + size.value;
    if (id === 5) {
      const count = readU32(bytes, start);
      if (count.value !== 1) return null; // exactly one defined memory
      const flags = readU32(bytes, count.next);
      if (flags.value !== 1) return null; // a maximum and no other flag (not shared, not 64-bit)
      const min = readU32(bytes, flags.next);
      const max = readU32(bytes, min.next);
      memory = { at: flags.next, width: min.next - flags.next, pages: min.value, max: max.value };
    } else if (id === 6) {
      const q = readU32(bytes, start);
      const count = q.value;
      let at = q.next;
      for (let i = 0; i < count; i++) {
        const type = bytes[at++]!;
        at++; // mutability
        const op = bytes[at++]!;
        if (type !== 0x7f || op !== 0x41) return null; // only constant i32 globals expected
        const v = readI32(bytes, at);
        at = v.next;
        if (bytes[at++] !== 0x0b) return null;
        needed = Math.max(needed, v.value >>> 0);
      }
    } else if (id === 11) {
      const q = readU32(bytes, start);
      const count = q.value;
      let at = q.next;
      for (let i = 0; i < count; i++) {
        const flags = readU32(bytes, at);
        at = flags.next;
        if (flags.value !== 0) return null; // active segments of memory 0 with a constant offset only
        if (bytes[at++] !== 0x41) return null;
        const offset = readI32(bytes, at);
        at = offset.next;
        if (bytes[at++] !== 0x0b) return null;
        const len = readU32(bytes, at);
        at = len.next + len.value;
        needed = Math.max(needed, (offset.value >>> 0) + len.value);
      }
    }
    p = end;
  }
  if (!memory || needed === 0) return null;
  const pages = Math.ceil((needed + headroomBytes) / PAGE);
  if (pages >= memory.pages || pages > memory.max) return null;
  let encoded: number[];
  try {
    encoded = paddedLeb(pages, memory.width);
  } catch {
    return null;
  }
  bytes.set(encoded, memory.at);
  return { bytes, pages, declaredPages: memory.pages };
}

// ---------------------------------------------------------------------------------------------------
// Loading

const require = createRequire(import.meta.url);

async function instantiate(): Promise<{ module: EmscriptenModule; pages: number | null }> {
  const factory = require('libpg-query/wasm/libpg-query.js') as Factory;
  const shrunk = shrinkInitialMemory(readFileSync(require.resolve('libpg-query/wasm/libpg-query.wasm')));
  if (!shrunk) {
    // Not the layout this loader knows: the package's own loader, as it ships.
    const stock = (await import('libpg-query')) as unknown as { loadModule(): Promise<void>; parseSync: typeof parseSync; scanSync: typeof scanSync };
    await stock.loadModule();
    fallback = stock;
    return { module: null as unknown as EmscriptenModule, pages: null };
  }
  const module = await factory({
    instantiateWasm(imports, receive) {
      void WebAssembly.instantiate(shrunk.bytes, imports).then((result) => receive(result.instance));
      return {};
    },
  });
  return { module, pages: shrunk.pages };
}

let fallback: { parseSync: typeof parseSync; scanSync: typeof scanSync } | null = null;
const loaded = await instantiate();
const wasm = loaded.module;

/** The initial memory in pages this loader gave the module (null: the package's own loader is in use). */
export const initialPages: number | null = loaded.pages;

/** The module's linear memory right now, in bytes (it grows when a parse needs more). */
export function memoryBytes(): number {
  return fallback ? NaN : wasm.HEAPU8.length;
}

function stringToPtr(str: string): number {
  if (typeof str !== 'string') throw new TypeError(`Expected a string, got ${typeof str}`);
  const len = wasm.lengthBytesUTF8(str) + 1;
  const ptr = wasm._malloc(len);
  try {
    wasm.stringToUTF8(str, ptr, len);
    return ptr;
  } catch (error) {
    wasm._free(ptr);
    throw error;
  }
}

/** libpg-query's parseSync: the parse tree of `query`, or a SqlError with the server's message and position. */
export function parseSync(query: string): ParseResult {
  if (fallback) return fallback.parseSync(query);
  if (query === null || query === undefined) throw new Error('Query cannot be null or undefined');
  if (query === '') throw new Error('Query cannot be empty');
  const queryPtr = stringToPtr(query);
  let resultPtr = 0;
  try {
    resultPtr = wasm._wasm_parse_query_raw(queryPtr);
    if (!resultPtr) throw new Error('Failed to parse query: memory allocation failed');
    const parseTreePtr = wasm.getValue(resultPtr, 'i32');
    const errorPtr = wasm.getValue(resultPtr + 8, 'i32');
    if (errorPtr) {
      const messagePtr = wasm.getValue(errorPtr, 'i32');
      const funcnamePtr = wasm.getValue(errorPtr + 4, 'i32');
      const filenamePtr = wasm.getValue(errorPtr + 8, 'i32');
      const lineno = wasm.getValue(errorPtr + 12, 'i32');
      const cursorpos = wasm.getValue(errorPtr + 16, 'i32');
      const message = messagePtr ? wasm.UTF8ToString(messagePtr) : 'Unknown error';
      throw new SqlError(message, {
        message,
        cursorPosition: cursorpos > 0 ? cursorpos - 1 : 0,
        fileName: filenamePtr ? wasm.UTF8ToString(filenamePtr) : undefined,
        functionName: funcnamePtr ? wasm.UTF8ToString(funcnamePtr) : undefined,
        lineNumber: lineno > 0 ? lineno : undefined,
      });
    }
    if (!parseTreePtr) throw new Error('No parse tree generated');
    return JSON.parse(wasm.UTF8ToString(parseTreePtr)) as ParseResult;
  } finally {
    wasm._free(queryPtr);
    if (resultPtr) wasm._wasm_free_parse_result(resultPtr);
  }
}

/** libpg-query's scanSync: the tokens of `query` as PostgreSQL's scanner reads them. */
export function scanSync(query: string): ScanResult {
  if (fallback) return fallback.scanSync(query);
  const queryPtr = stringToPtr(query);
  let resultPtr = 0;
  try {
    resultPtr = wasm._wasm_scan(queryPtr);
    const resultStr = wasm.UTF8ToString(resultPtr);
    if (resultStr.startsWith('syntax error') || resultStr.startsWith('deparse error') || resultStr.startsWith('ERROR')) {
      throw new Error(resultStr);
    }
    return JSON.parse(resultStr) as ScanResult;
  } finally {
    wasm._free(queryPtr);
    if (resultPtr) wasm._wasm_free_string(resultPtr);
  }
}
