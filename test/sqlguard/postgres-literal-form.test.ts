/**
 * Verdicts reused by literal form (postgresql/guard/literals.ts, decision 0291): a new text that differs from a known
 * one only in small numbers takes that text's verdict without a parse. Reuse must be exact: for every pair below,
 * the verdict a text gets right after another text of its form equals the verdict it gets alone, from a fresh parse
 * (same kind, same shape; the shape keys the server-side resolution verdict). The pairs include the ones whose forms
 * are equal but whose shapes are not (ORDER BY 1 against ORDER BY 2, type modifiers), which must not be reused.
 */
import { describe, expect, test } from 'bun:test';
import { clearPostgresGuardCache, guardPostgresSql } from '../../src/connectors/postgresql/guard/guard.ts';
import { literalForm } from '../../src/connectors/postgresql/guard/literals.ts';
import { loadPgGuard, scanSync } from '../../src/connectors/postgresql/guard/lazy.ts';
import { MAX_SQL_LENGTH } from '../../src/connectors/shared/sqlguard/common.ts';
import type { GuardOptions } from '../../src/connectors/shared/sqlguard/types.ts';

const opts: GuardOptions = { table: { schema: 'public', name: 't' }, allowWrite: true, allowDdl: false, readOnly: false };
const M = '\u0001';

describe('literalForm: small numbers become their kind, everything else is copied', () => {
  test.each([
    ['an integer', 'SELECT id FROM t WHERE id > 5012', `SELECT id FROM t WHERE id > ${M}i`],
    ['a negative integer keeps its minus', 'SELECT id FROM t WHERE id > -7', `SELECT id FROM t WHERE id > -${M}i`],
    ['nine digits are an int4', 'SELECT 999999999', `SELECT ${M}i`],
    ['leading zeros do not count', 'SELECT 0000000000001', `SELECT ${M}i`],
    ['ten digits stay as written', 'SELECT 2147483647', 'SELECT 2147483647'],
    ['a decimal', 'SELECT 1.5, 2., 3e4, 5.5E-3', `SELECT ${M}n, ${M}n, ${M}n, ${M}n`],
    ['a number after a point stays', 'SELECT .5, t.5', 'SELECT .5, t.5'],
    ['hex, octal, binary, underscores stay', 'SELECT 0x1F, 0o7, 0b1, 1_000', 'SELECT 0x1F, 0o7, 0b1, 1_000'],
    ['a number run into letters stays', 'SELECT 5e, 12abc', 'SELECT 5e, 12abc'],
    ['digits inside identifiers stay', 'SELECT c1, "c 2", t3.x4 FROM s5.t6', 'SELECT c1, "c 2", t3.x4 FROM s5.t6'],
    ['strings stay, doubled quotes included', "SELECT 'a''5' || '6', 7", `SELECT 'a''5' || '6', ${M}i`],
    ['quoted identifiers stay', 'SELECT "x""9", 9', `SELECT "x""9", ${M}i`],
    ['comments stay, block comments nest', 'SELECT 1 /* 2 /* 3 */ 4 */ -- 5\n, 6', `SELECT ${M}i /* 2 /* 3 */ 4 */ -- 5\n, ${M}i`],
    ['a line comment ends at a carriage return too', "SELECT 1 -- 2\r, '3 4' || 5", `SELECT ${M}i -- 2\r, '3 4' || ${M}i`],
    ['prefixed strings stay', "SELECT B'101', X'1F', N'7', E'8'", "SELECT B'101', X'1F', N'7', E'8'"],
    ['no number: the text itself', 'SELECT id FROM t', 'SELECT id FROM t'],
  ])('%s', (_name, sql, form) => {
    expect(literalForm(sql)).toBe(form);
  });

  test.each([
    ['a dollar quote', 'SELECT $$5$$, 1'],
    ['a parameter', 'SELECT id FROM t WHERE id = $1'],
    ['a backslash', "SELECT E'\\n', 1"],
    ['a Unicode escape', "SELECT U&'\\0041', 1"],
    ['a Unicode identifier', 'SELECT u&"d", 1'],
    ['an open string', "SELECT 'abc, 1"],
    ['an open quoted identifier', 'SELECT "abc, 1'],
    ['an open block comment', 'SELECT 1 /* 2 /* 3 */'],
    ['a NUL', 'SELECT 1\u0000'],
    ['the marker itself', `SELECT ${M}i`],
  ])('no form: %s', (_name, sql) => {
    expect(literalForm(sql)).toBeNull();
  });
});

describe("literalForm against PostgreSQL's own lexer (libpg-query's scanner)", () => {
  // Fragments run together in seeded random order: numbers in every spelling, next to and inside strings, quoted
  // identifiers, line comments (ended by \n or \r), nested block comments, prefixed strings and identifiers.
  const FRAGMENTS = [
    '5',
    '-7',
    '1.5',
    '2.',
    '3e4',
    '5.5E-3',
    '1e+2',
    '0x1F',
    '1_000',
    '.5',
    '007',
    '1234567890',
    '999999999',
    '12abc',
    '5e',
    "'a5'",
    "'it''s 6'",
    '"c7"',
    '"x""8"',
    'c9',
    't1.c2',
    '-- 3 \n',
    '-- 4 \r',
    '/* 5 /* 6 */ 7 */',
    "E'8'",
    "B'101'",
    "X'1F'",
    "N'9'",
    '(',
    ')',
    ',',
    ' ',
    '\n',
    '+',
    '-',
    '*',
    '/',
    '<',
    '=',
    '::int',
    '[1:2]',
    'AND',
    'SELECT',
    'FROM',
    'ä1',
    '1.2.3',
    "'x' 'y' 4",
    "'x\\n7'",
    '1_0001e+2',
    '0x1Fe+3',
    '5ee--x\\n',
    '1.5e',
    '5.foo',
    '1e-',
    "'y\\r8'",
    '/*',
    '*/',
  ];
  let seed = 27;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };

  test('every number the form replaces is one numeric token of the real lexer, at the same place', async () => {
    await loadPgGuard();
    let checked = 0;
    for (let t = 0; t < 20000; t++) {
      let sql = '';
      const parts = 2 + rand(10);
      for (let p = 0; p < parts; p++) sql += `${FRAGMENTS[rand(FRAGMENTS.length)]}${rand(3) ? ' ' : ''}`;
      const spans: [number, number][] = [];
      if (literalForm(sql, spans) === null || spans.length === 0) continue;
      let tokens: { start: number; end: number; tokenName: string }[];
      try {
        tokens = scanSync(sql).tokens;
      } catch {
        continue; // not a text the server would read either
      }
      const byte = (i: number) => Buffer.byteLength(sql.slice(0, i));
      for (const [from, to] of spans) {
        const token = tokens.find((k) => k.start === byte(from));
        expect({ sql, token: token && { end: token.end, name: token.tokenName } }).toEqual({
          sql,
          token: { end: byte(to), name: expect.stringMatching(/^(ICONST|FCONST)$/) },
        });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(5000);
  });
});

/** Pairs with one form (or close to it): what b gets after a, against what b gets alone. */
const PAIRS: [string, string, string][] = [
  ['integers', 'SELECT id FROM t WHERE id = 5', 'SELECT id FROM t WHERE id = 6000'],
  ['negative and positive', 'SELECT id FROM t WHERE id > -5', 'SELECT id FROM t WHERE id > 7'],
  ['decimals', 'SELECT id FROM t WHERE price > 1.5', 'SELECT id FROM t WHERE price > 22.25'],
  ['an integer against a decimal', 'SELECT id FROM t WHERE id = 100', 'SELECT id FROM t WHERE id = 1e2'],
  ['LIMIT and OFFSET', 'SELECT id FROM t ORDER BY id LIMIT 5 OFFSET 1', 'SELECT id FROM t ORDER BY id LIMIT 50 OFFSET 20'],
  ['IN lists', 'SELECT id FROM t WHERE id IN (1, 2)', 'SELECT id FROM t WHERE id IN (30, 40)'],
  ['a write', "UPDATE t SET name = 'a' WHERE id = 1", "UPDATE t SET name = 'a' WHERE id = 77"],
  ['a delete', 'DELETE FROM t WHERE id = 1', 'DELETE FROM t WHERE id = 2'],
  ['an insert', 'INSERT INTO t (id, qty) VALUES (1, 2)', 'INSERT INTO t (id, qty) VALUES (3, 4)'],
  ['ORDER BY position (same form, other shape)', 'SELECT id, name FROM t ORDER BY 1', 'SELECT id, name FROM t ORDER BY 2'],
  ['GROUP BY position', 'SELECT id, name FROM t GROUP BY 1, 2 ORDER BY id', 'SELECT id, name FROM t GROUP BY 2, 1 ORDER BY id'],
  ['DISTINCT ON position', 'SELECT DISTINCT ON (1) id, name FROM t', 'SELECT DISTINCT ON (2) id, name FROM t'],
  ['PARTITION BY position', 'SELECT row_number() OVER (PARTITION BY 1) FROM t', 'SELECT row_number() OVER (PARTITION BY 2) FROM t'],
  ['a type modifier', 'SELECT id::numeric(10,2) FROM t', 'SELECT id::numeric(12,2) FROM t'],
  ['a varchar length', "SELECT id FROM t WHERE name = 'a'::varchar(5)", "SELECT id FROM t WHERE name = 'a'::varchar(6)"],
  ['a position and a value', 'SELECT id FROM t WHERE id > 3 ORDER BY 1', 'SELECT id FROM t WHERE id > 4 ORDER BY 1'],
  ['int4 boundary (kept as written)', 'SELECT id FROM t WHERE id = 2147483647', 'SELECT id FROM t WHERE id = 2147483648'],
  ['negated boundary', 'SELECT id FROM t WHERE id = -2147483648', 'SELECT id FROM t WHERE id = -2147483649'],
  [
    'a subquery and a CTE',
    'WITH c AS (SELECT id FROM t WHERE id < 9) SELECT id FROM c WHERE id > 1',
    'WITH c AS (SELECT id FROM t WHERE id < 90) SELECT id FROM c WHERE id > 10',
  ],
  ['a refused form', 'SELECT pg_sleep(1) FROM t', 'SELECT pg_sleep(2) FROM t'],
  ['another table (refused)', 'SELECT id FROM t WHERE id = 1', 'SELECT id FROM u WHERE id = 1'],
  ['a data-modifying CTE under read-only', 'SELECT id FROM t WHERE id = 1', 'WITH d AS (DELETE FROM t WHERE id = 1 RETURNING id) SELECT id FROM d'],
];

describe('a verdict reused by form equals the verdict from a fresh parse', () => {
  test.each(PAIRS)('%s', (_name, a, b) => {
    for (const o of [opts, { ...opts, allowWrite: false, readOnly: true }]) {
      clearPostgresGuardCache();
      const alone = guardPostgresSql(b, o);
      clearPostgresGuardCache();
      guardPostgresSql(a, o);
      const after = guardPostgresSql(b, o);
      expect(after).toEqual(alone);
    }
  });

  test('a form is reused: the second text of a form is not parsed again', () => {
    clearPostgresGuardCache();
    const first = guardPostgresSql('SELECT id FROM t WHERE id = 5', opts);
    const second = guardPostgresSql('SELECT id FROM t WHERE id = 6', opts);
    expect(first.ok).toBe(true);
    // The very object of the first verdict: no parse, no walk, no shape for the second text.
    expect(second).toBe(first);
    // A position keeps its value in the shape: not reused.
    const byPos = guardPostgresSql('SELECT id FROM t ORDER BY 1', opts);
    expect(guardPostgresSql('SELECT id FROM t ORDER BY 1 ', opts)).not.toBe(byPos);
  });

  test('a text over the length limit is refused even when its form is known', () => {
    clearPostgresGuardCache();
    const base = 'SELECT id FROM t WHERE id = 1';
    const pad = ' '.repeat(MAX_SQL_LENGTH - base.length);
    expect(guardPostgresSql(`${base}${pad}`, opts).ok).toBe(true);
    const long = guardPostgresSql(`SELECT id FROM t WHERE id = 123456789${pad}`, opts);
    expect(long.ok).toBe(false);
  });
});
