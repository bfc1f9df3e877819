// The PostgreSQL parser as the guard loads it (src/connectors/postgresql/guard/parser.ts: libpg-query's binary with a
// smaller initial memory) must answer exactly what the package's own functions answer: same trees, same tokens, same
// errors, also once the module has grown its memory. Both are loaded here, in one process.
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as stock from 'libpg-query';
import { verifies } from './requirements.ts';
import { initialPages, memoryBytes, parseSync, scanSync, shrinkInitialMemory } from '../src/connectors/postgresql/guard/parser.ts';

const ROOT = join(import.meta.dir, '..');
const WASM = readFileSync(join(ROOT, 'node_modules/libpg-query/wasm/libpg-query.wasm'));

/**
 * Every plain string literal in the guard's and the resolution check's tests (SQL texts and the rest: whatever the
 * text, both parsers must agree on it).
 */
function testCorpus(): string[] {
  const out = new Set<string>();
  const re = /'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\$])*`/g;
  for (const file of ['test/sqlguard/postgres.test.ts', 'test/connectors/postgresql-resolution.test.ts']) {
    for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(re)) {
      try {
        const value = new Function(`return ${m[0]}`)() as unknown;
        if (typeof value === 'string' && value.trim().length >= 3) out.add(value);
      } catch {
        // Not a plain literal: left out.
      }
    }
  }
  return [...out];
}

const HAND_PICKED = [
  'SELECT id, name FROM public.users WHERE id = $1',
  "SELECT 'héllo wörld ✓ 😀' AS s, E'a\\nb' AS e, $$dollar 'quoted'$$ AS d, $tag$x$tag$",
  'SELECT 1; SELECT 2',
  '/* only a comment */',
  ';;;',
  'select from where',
  "SELECT 'unterminated",
  'SELECT "unterminated',
  'SELECT 1 +',
  'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t',
  'UPDATE users SET name = $1 WHERE id = $2 RETURNING *',
  "CREATE TABLE x (id int8 PRIMARY KEY, j jsonb DEFAULT '{}')",
  "SELECT U&'d\\0061t\\+000061' AS u",
  'SELECT 1e400, 0x1F, 1_000_000, .5, 5.',
  '\u00a0SELECT\u00a01',
  `SELECT ${'('.repeat(1000)}1${')'.repeat(1000)}`,
];

function outcome(fn: () => unknown): unknown {
  try {
    return { ok: fn() };
  } catch (err) {
    const e = err as Error & { sqlDetails?: unknown };
    return { error: e.name, message: e.message, details: e.sqlDetails };
  }
}

describe('pg-parser: libpg-query with a smaller initial memory', () => {
  test('the module starts with far less memory than the binary declares', () => {
    verifies('GUARD-PARSER-MEMORY');
    const declared = shrinkInitialMemory(WASM)!.declaredPages;
    expect(declared).toBe(2048);
    expect(initialPages).not.toBeNull();
    expect(initialPages!).toBeLessThan(declared);
    // The stack (32 MB) and data (~1 MB) plus 4 MB of heap room.
    expect(initialPages! * 65536).toBeLessThanOrEqual(40 * 1024 * 1024);
    expect(memoryBytes()).toBeGreaterThanOrEqual(initialPages! * 65536);
  });

  test('the shrunk binary is valid WebAssembly and differs from the original only in the initial size', () => {
    const shrunk = shrinkInitialMemory(WASM)!;
    expect(WebAssembly.validate(shrunk.bytes)).toBe(true);
    expect(shrunk.bytes.length).toBe(WASM.length);
    const differing = [...shrunk.bytes.keys()].filter((i) => shrunk.bytes[i] !== WASM[i]);
    expect(differing.length).toBeGreaterThan(0);
    expect(differing.length).toBeLessThanOrEqual(5);
    // The original buffer is left as it was.
    expect(shrinkInitialMemory(WASM)!.declaredPages).toBe(2048);
  });

  test('anything but the expected layout is left to the package loader (null)', () => {
    expect(shrinkInitialMemory(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))).toBeNull();
    // A module with no memory at all: magic, version, nothing else.
    expect(shrinkInitialMemory(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]))).toBeNull();
    // Headroom that would need more than the declared pages: no point shrinking.
    expect(shrinkInitialMemory(WASM, 200 * 1024 * 1024)).toBeNull();
  });

  test('parseSync and scanSync answer what the package answers, on the string literals of the guard tests and hand-picked texts', async () => {
    verifies('GUARD-PARSER-MEMORY');
    await stock.loadModule();
    const corpus = [...testCorpus(), ...HAND_PICKED];
    expect(corpus.length).toBeGreaterThan(300);
    for (const sql of corpus) {
      expect({ sql, parse: outcome(() => parseSync(sql)) }).toEqual({ sql, parse: outcome(() => stock.parseSync(sql)) });
      expect({ sql, scan: outcome(() => scanSync(sql)) }).toEqual({ sql, scan: outcome(() => stock.scanSync(sql)) });
    }
  });

  test('a parse that needs more memory grows it, and the answers stay the same after the growth', async () => {
    verifies('GUARD-PARSER-MEMORY');
    await stock.loadModule();
    const before = memoryBytes();
    // Near the guard's 100,000-character maximum: a wide select list and a long IN list.
    const wide = `SELECT ${Array.from({ length: 9000 }, (_, i) => `c${i}`).join(', ')} FROM t WHERE id IN (${Array.from({ length: 3000 }, (_, i) => i).join(',')})`;
    expect(wide.length).toBeLessThan(100_000);
    const tree = parseSync(wide);
    expect(tree).toEqual(stock.parseSync(wide));
    expect(memoryBytes()).toBeGreaterThan(before);
    expect(scanSync(wide)).toEqual(stock.scanSync(wide));
    for (const sql of HAND_PICKED) expect(outcome(() => parseSync(sql))).toEqual(outcome(() => stock.parseSync(sql)));
  });
});
