/**
 * The statement shape that keys the PostgreSQL resolution verdict (sqlguard/postgres-shape.ts): texts that differ only in
 * literal values of the same kind share it; texts that differ in anything that can change what the server resolves
 * (a name, an operator, a cast, a type, a literal's kind or an integer's range, a column position, a type modifier)
 * do not. The server-side half (that a shared shape really means one analysis, and what stays per text) is in
 * test/connectors/postgresql-resolution-shape.test.ts.
 */
import { describe, expect, test } from 'bun:test';
import { guardPostgresSql } from '../../src/connectors/postgresql/guard/guard.ts';
import { prepareCall } from '../../src/connectors/shared/prepare.ts';
import { PG_SYNTAX } from '../../src/connectors/postgresql/saved.ts';
import type { ExecutionContext, SqlToolSpec } from '../../src/connectors/types.ts';

const opts = { table: { schema: 'public', name: 't' }, allowWrite: true, allowDdl: false, readOnly: false };

function shapeOf(sql: string): string {
  const v = guardPostgresSql(sql, opts);
  if (!v.ok) throw new Error(`guard refused ${sql}: ${v.reason}`);
  if (typeof v.shape !== 'string' || v.shape.length !== 64) throw new Error(`no shape for ${sql}`);
  return v.shape;
}

describe('statement shape: what must NOT share a verdict', () => {
  test.each([
    ['a cast target', 'SELECT id::int8 FROM t', 'SELECT id::int4 FROM t'],
    ['a cast written with CAST()', 'SELECT CAST(id AS int8) FROM t', 'SELECT CAST(id AS numeric) FROM t'],
    ['a type name on a literal', "SELECT id FROM t WHERE d = date '2024-01-01'", "SELECT id FROM t WHERE d = timestamp '2024-01-01'"],
    ['a type modifier', 'SELECT id::numeric(10,2) FROM t', 'SELECT id::numeric(12,2) FROM t'],
    ['a varchar length', "SELECT id FROM t WHERE name = 'a'::varchar(5)", "SELECT id FROM t WHERE name = 'a'::varchar(6)"],
    ['a column', 'SELECT id FROM t WHERE id = 1', 'SELECT id FROM t WHERE qty = 1'],
    ['a quoted identifier (case)', 'SELECT "Id" FROM t', 'SELECT id FROM t'],
    ['a qualifier (attribute notation)', 'SELECT t.name FROM t', 'SELECT t.lower FROM t'],
    ['an alias', 'SELECT id AS a FROM t ORDER BY a', 'SELECT id AS b FROM t ORDER BY a'],
    ['an operator', 'SELECT id FROM t WHERE id = 1', 'SELECT id FROM t WHERE id < 1'],
    ['a function name', 'SELECT lower(name) FROM t', 'SELECT upper(name) FROM t'],
    ['a keyword (sort direction)', 'SELECT id FROM t ORDER BY id ASC', 'SELECT id FROM t ORDER BY id DESC'],
    ['UNION against UNION ALL', 'SELECT id FROM t UNION SELECT id FROM t', 'SELECT id FROM t UNION ALL SELECT id FROM t'],
    ['number against string literal', 'SELECT id FROM t WHERE id = 1', "SELECT id FROM t WHERE id = '1'"],
    ['integer against numeric literal', 'SELECT id FROM t WHERE id = 1', 'SELECT id FROM t WHERE id = 1.0'],
    ['integer against exponent literal', 'SELECT id FROM t WHERE id = 100', 'SELECT id FROM t WHERE id = 1e2'],
    ['int4 against int8 range', 'SELECT id FROM t WHERE id = 2147483647', 'SELECT id FROM t WHERE id = 2147483648'],
    ['a negated int4 against int8 (the minus folded)', 'SELECT id FROM t WHERE id = -2147483648', 'SELECT id FROM t WHERE id = -2147483649'],
    ['int8 against numeric range', 'SELECT id FROM t WHERE id = 9223372036854775807', 'SELECT id FROM t WHERE id = 9223372036854775808'],
    ['NULL against a value', 'SELECT coalesce(qty, NULL) FROM t', 'SELECT coalesce(qty, 1) FROM t'],
    ['NULL against a string', 'SELECT coalesce(name, NULL) FROM t', "SELECT coalesce(name, 'x') FROM t"],
    ['boolean against string', 'SELECT id FROM t WHERE flag = true', "SELECT id FROM t WHERE flag = 'true'"],
    ['bit string against string', "SELECT id FROM t WHERE b = B'1'", "SELECT id FROM t WHERE b = '1'"],
    ['array length', 'SELECT id FROM t WHERE id = ANY (ARRAY[1])', 'SELECT id FROM t WHERE id = ANY (ARRAY[1, 2])'],
    ['array element kind', 'SELECT id FROM t WHERE id = ANY (ARRAY[1])', 'SELECT id FROM t WHERE id = ANY (ARRAY[1.5])'],
    ['array constructor against array literal text', 'SELECT id FROM t WHERE id = ANY (ARRAY[1])', "SELECT id FROM t WHERE id = ANY ('{1}')"],
    ['IN list length', 'SELECT id FROM t WHERE id IN (1, 2)', 'SELECT id FROM t WHERE id IN (1, 2, 3)'],
    ['ORDER BY position', 'SELECT id, name FROM t ORDER BY 1', 'SELECT id, name FROM t ORDER BY 2'],
    ['GROUP BY position', 'SELECT id, name FROM t GROUP BY 1, 2 ORDER BY id', 'SELECT id, name FROM t GROUP BY 2, 1 ORDER BY id'],
    ['DISTINCT ON position', 'SELECT DISTINCT ON (1) id, name FROM t', 'SELECT DISTINCT ON (2) id, name FROM t'],
    ['a window PARTITION BY', 'SELECT row_number() OVER (PARTITION BY 1) FROM t', 'SELECT row_number() OVER (PARTITION BY 2) FROM t'],
    ['hexadecimal integers keep their text', 'SELECT 0x1F FROM t', 'SELECT 0x20 FROM t'],
    ['integers with underscores keep their text', 'SELECT 1_000 FROM t', 'SELECT 2_000 FROM t'],
    ['a subquery against a constant', 'SELECT id FROM t WHERE id = 1', 'SELECT id FROM t WHERE id = (SELECT 1)'],
    ['a write against a read of the same text', 'DELETE FROM t WHERE id = 1', 'SELECT id FROM t WHERE id = 1'],
  ])('%s', (_name, a, b) => {
    expect(shapeOf(a)).not.toBe(shapeOf(b));
  });

  test('the read wrapper: another row limit or byte cap is another shape', () => {
    const tool = { name: 'query_t', target: { schema: 'public', table: 't' } } as unknown as SqlToolSpec;
    const ctx = (maxRows: number, maxResultBytes: number) =>
      ({
        connectorId: 'c',
        config: {},
        credential: null,
        allowWrite: false,
        allowDdl: false,
        readOnly: false,
        limits: { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows, maxResultBytes },
      }) as unknown as ExecutionContext;
    const shape = (maxRows: number, bytes: number) => {
      const p = prepareCall(
        {
          name: 'postgresql',
          guardSpan: 'guard postgresql',
          syntax: PG_SYNTAX,
          guard: guardPostgresSql,
          wrapRead: (body, limit, rowBytes) => `select * from (${body}) q limit ${limit} -- ${rowBytes}`,
        },
        tool,
        { sql: 'SELECT id FROM t' },
        ctx(maxRows, bytes),
      );
      if ('content' in p) throw new Error('refused');
      return p.shape;
    };
    expect(shape(10, 1000)).toBe(shape(10, 1000));
    expect(shape(10, 1000)).not.toBe(shape(11, 1000));
    expect(shape(10, 1000)).not.toBe(shape(10, 2000));
  });
});

describe('statement shape: texts differing only in literal values of the same kind share it', () => {
  test.each([
    ['integers', 'SELECT id FROM t WHERE id = 5', 'SELECT id FROM t WHERE id = 6000'],
    ['negative and positive integers', 'SELECT id FROM t WHERE id > -5', 'SELECT id FROM t WHERE id > 7'],
    ['int8-range integers', 'SELECT id FROM t WHERE id = 5000000000', 'SELECT id FROM t WHERE id = 6000000000'],
    ['decimals', 'SELECT id FROM t WHERE price > 1.5', 'SELECT id FROM t WHERE price > 22.25'],
    ['strings of any spelling', "SELECT id FROM t WHERE name = 'abc'", 'SELECT id FROM t WHERE name = $$x y$$'],
    ['escape strings', "SELECT id FROM t WHERE name = E'a\\nb'", "SELECT id FROM t WHERE name = 'plain'"],
    ['booleans', 'SELECT id FROM t WHERE flag = true', 'SELECT id FROM t WHERE flag = false'],
    ['bit strings', "SELECT id FROM t WHERE b = B'1'", "SELECT id FROM t WHERE b = X'F'"],
    ['typed literals', "SELECT id FROM t WHERE d > date '2024-01-01'", "SELECT id FROM t WHERE d > date '1999-12-31'"],
    ['LIMIT and OFFSET', 'SELECT id FROM t ORDER BY id LIMIT 5 OFFSET 1', 'SELECT id FROM t ORDER BY id LIMIT 50 OFFSET 20'],
    ['IN lists of the same length', 'SELECT id FROM t WHERE id IN (1, 2)', 'SELECT id FROM t WHERE id IN (30, 40)'],
    ['whitespace and comments', 'SELECT id FROM t WHERE id = 1', 'SELECT  id /* why */ FROM t\n WHERE id = 12 -- done'],
    ['a multibyte string before the literal', "SELECT id FROM t WHERE name = 'äöü€' AND id = 1", "SELECT id FROM t WHERE name = 'x' AND id = 99"],
    ['writes', "UPDATE t SET name = 'a' WHERE id = 1", "UPDATE t SET name = 'bcd' WHERE id = 77"],
  ])('%s', (_name, a, b) => {
    expect(shapeOf(a)).toBe(shapeOf(b));
  });
});
