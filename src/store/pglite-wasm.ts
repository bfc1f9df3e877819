/**
 * PGlite's WebAssembly module, compiled once per process with a smaller declared initial memory (decision 0235).
 *
 * PGlite's binary imports its linear memory with 2,048 initial pages (128 MB) and PGlite creates it at that size.
 * PostgreSQL touches ~15-30 MB of it; the rest is never resident, but JavaScriptCore counts the whole memory (twice)
 * as extra heap memory and sizes its collection thresholds from it (as decision 0108 found for libpg-query): with the
 * store's 128 MB the engine believed its heap was ~270 MB before any request, and let garbage pile up accordingly.
 * Here the import's initial size is lowered to what the binary's static data and stack need plus HEADROOM_BYTES, and
 * PGlite is given that module and a memory of that size; PostgreSQL grows the memory itself when it needs more
 * (emscripten's memory growth, up to the binary's own 2 GB maximum, as it does past 128 MB today). Nothing else in
 * the binary changes. If the binary is not laid out as expected, null: PGlite loads its own module as before.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const PAGE = 65536;
/** Room above the static data and stack at start: PostgreSQL's shared memory and first allocations (it grows past). */
const HEADROOM_BYTES = 16 * 1024 * 1024;

function readU32(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  let p = at;
  for (;;) {
    const b = bytes[p++];
    if (b === undefined || shift > 35) throw new Error('bad LEB128');
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(b & 0x80)) return { value, next: p };
  }
}

/** An i32.const initialiser `41 <sleb> 0b` at `at`: its value (as unsigned) and where it ends, or null. */
function constI32(bytes: Uint8Array, at: number): { value: number; next: number } | null {
  if (bytes[at] !== 0x41) return null;
  let value = 0;
  let shift = 0;
  let p = at + 1;
  let b: number;
  do {
    b = bytes[p++]!;
    value |= (b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80 && shift < 35);
  if (shift < 32 && b & 0x40) value |= -1 << shift;
  return bytes[p] === 0x0b ? { value: value >>> 0, next: p + 1 } : null;
}

const readName = (bytes: Uint8Array, at: number) => {
  const length = readU32(bytes, at);
  return { name: new TextDecoder().decode(bytes.subarray(length.next, length.next + length.value)), next: length.next + length.value };
};

/** Where the imported memory's initial size is (offset, LEB width, pages), or null when there is none we can patch. */
function importedMemory(bytes: Uint8Array, start: number): { at: number; width: number; pages: number } | null {
  const count = readU32(bytes, start);
  let at = count.next;
  for (let i = 0; i < count.value; i++) {
    const module = readName(bytes, at);
    const field = readName(bytes, module.next);
    at = field.next;
    const kind = bytes[at++];
    if (kind === 0) at = readU32(bytes, at).next;
    else if (kind === 3) at += 2;
    else if (kind === 4) at = readU32(bytes, at + 1).next;
    else if (kind === 1 || kind === 2) {
      if (kind === 1) at++; // the table's element type
      const flags = readU32(bytes, at);
      const min = readU32(bytes, flags.next);
      if (kind === 2) return flags.value === 1 ? { at: flags.next, width: min.next - flags.next, pages: min.value } : null;
      at = flags.value & 1 ? readU32(bytes, min.next).next : min.next;
    } else return null;
  }
  return null;
}

/** The highest constant i32 global (the stack top, the heap base) in the global section, or null if one is not constant. */
function highestGlobal(bytes: Uint8Array, start: number): number | null {
  const count = readU32(bytes, start);
  let at = count.next;
  let highest = 0;
  for (let i = 0; i < count.value; i++) {
    if (bytes[at] !== 0x7f) return null; // i32 globals only
    const init = constI32(bytes, at + 2);
    if (!init) return null;
    highest = Math.max(highest, init.value);
    at = init.next;
  }
  return highest;
}

/** The end of the last active data segment (each placed at a constant offset), or null. */
function dataEnd(bytes: Uint8Array, start: number): number | null {
  const count = readU32(bytes, start);
  let at = count.next;
  let end = 0;
  for (let i = 0; i < count.value; i++) {
    const flags = readU32(bytes, at);
    let offset = 0;
    at = flags.next;
    if (flags.value === 0) {
      const init = constI32(bytes, at);
      if (!init) return null;
      offset = init.value;
      at = init.next;
    } else if (flags.value !== 1) return null;
    const size = readU32(bytes, at);
    at = size.next + size.value;
    end = Math.max(end, offset + size.value);
  }
  return end;
}

/**
 * A copy of the binary whose imported memory starts at the pages its static data and stack need plus `headroom`, or
 * null when the layout is not the expected one (one imported memory with a maximum, constant i32 globals, active
 * data segments at constant offsets) or the new size would not be smaller.
 */
export function lowerImportedMemory(original: Uint8Array, headroom = HEADROOM_BYTES): { bytes: Uint8Array<ArrayBuffer>; pages: number } | null {
  if (original.length < 8 || original[0] !== 0 || original[1] !== 0x61 || original[2] !== 0x73 || original[3] !== 0x6d) return null;
  let memory: { at: number; width: number; pages: number } | null = null;
  let needed: number | null = 0;
  try {
    for (let p = 8; p < original.length; ) {
      const id = original[p++]!;
      const size = readU32(original, p);
      if (id === 2) memory = importedMemory(original, size.next);
      else if (id === 6 || id === 11) {
        const part = id === 6 ? highestGlobal(original, size.next) : dataEnd(original, size.next);
        needed = part === null || needed === null ? null : Math.max(needed, part);
      }
      p = size.next + size.value;
    }
  } catch {
    return null;
  }
  if (!memory || needed === null) return null;
  const pages = Math.ceil((needed + headroom) / PAGE);
  if (pages >= memory.pages || pages >= 128 ** memory.width) return null;
  const bytes = new Uint8Array(original);
  let value = pages;
  for (let i = 0; i < memory.width; i++) {
    bytes[memory.at + i] = (value & 0x7f) | (i === memory.width - 1 ? 0 : 0x80);
    value = Math.floor(value / 128);
  }
  return { bytes, pages };
}

export interface PgliteWasm {
  /** PGlite's `pgliteWasmModule` option. */
  pgliteWasmModule: WebAssembly.Module;
  /** PGlite's `initialMemory` option (bytes): the module's new declared initial size. */
  initialMemory: number;
}

let compiled: Promise<PgliteWasm | null> | null = null;

/** The module (compiled once, shared by the store and the demo's sample database), or null: PGlite's own loading. */
export function pgliteWasm(): Promise<PgliteWasm | null> {
  compiled ??= (async () => {
    try {
      const file = fileURLToPath(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite')));
      const lowered = lowerImportedMemory(new Uint8Array(await readFile(file)));
      if (!lowered) return null;
      return { pgliteWasmModule: await WebAssembly.compile(lowered.bytes), initialMemory: lowered.pages * PAGE };
    } catch {
      return null;
    }
  })();
  return compiled;
}
