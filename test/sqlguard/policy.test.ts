// Guard-level cases of tool policies (issue 30 items 3-4, docs/tool-policies.md): what each dialect's guard reports or
// refuses when a tool has a policy. SQL Server and Oracle (no server here) enforce hidden columns in the guard alone;
// PostgreSQL and MariaDB report every reference to the table for the rewrite, which the live suite
// (test/connectors/tool-policies.test.ts) proves end to end.
import { beforeAll, describe, expect, test } from 'bun:test';
import { guardMssqlSql } from '../../src/connectors/mssql/guard/guard.ts';
import { guardOracleSql } from '../../src/connectors/oracle/guard/guard.ts';
import { guardPostgresSql } from '../../src/connectors/postgresql/guard/guard.ts';
import { loadMysqlGuard, MYSQL_DIALECT } from '../../src/connectors/mysql/execute.ts';
import { prepareCall, isRefusal, type Dialect } from '../../src/connectors/shared/prepare.ts';
import { applyPolicy, checkPolicyShape } from '../../src/connectors/shared/policy.ts';
import { PG_POLICY } from '../../src/connectors/postgresql/policy.ts';
import { bindPositional, parseTemplate } from '../../src/connectors/shared/saved.ts';
import { MSSQL_MARKERS, MSSQL_SYNTAX } from '../../src/connectors/mssql/saved.ts';
import { PG_SYNTAX } from '../../src/connectors/postgresql/saved.ts';
import { MYSQL_POLICY } from '../../src/connectors/mysql/policy.ts';
import type { GuardOptions, GuardResult } from '../../src/connectors/shared/sqlguard/types.ts';
import type { ExecutionContext, SqlToolSpec, CallPolicy, ToolPolicy } from '../../src/connectors/types.ts';

const policy = { key: 'p1', hidden: ['SSN'] };
const MS: GuardOptions = { table: { schema: 'dbo', name: 'people' }, allowWrite: false, allowDdl: false, readOnly: true, defaultSchema: 'dbo', policy };
const ORA: GuardOptions = {
  table: { schema: 'APP', name: 'PEOPLE' },
  allowWrite: false,
  allowDdl: false,
  readOnly: true,
  columns: ['ID', 'EMAIL', 'SSN'],
  policy,
};

type Guard = (sql: string, o: GuardOptions) => GuardResult;
const reason = (g: Guard, sql: string, o: GuardOptions): string | null => {
  const r = g(sql, o);
  return r.ok ? null : r.reason;
};

describe('SQL Server and Oracle: hidden columns kept out by the guard', () => {
  for (const [name, g, o, table] of [
    ['mssql', guardMssqlSql, MS, 'dbo.people'],
    ['oracle', guardOracleSql, ORA, 'APP.PEOPLE'],
  ] as const) {
    test(`${name}: a hidden column named anywhere, * and t.* are refused; other columns pass`, () => {
      for (const sql of [
        `SELECT ssn FROM ${table}`,
        `SELECT p.SSN FROM ${table} p`,
        `SELECT id FROM ${table} WHERE ssn LIKE '1%'`,
        `SELECT id FROM ${table} ORDER BY ssn`,
        `SELECT COUNT(*) FROM ${table} GROUP BY ssn`,
        `SELECT id FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ssn IS NOT NULL)`,
        `WITH x AS (SELECT ssn AS s FROM ${table}) SELECT s FROM x`,
        `SELECT id FROM ${table} UNION SELECT ssn FROM ${table}`,
        `SELECT a.id FROM ${table} a JOIN ${table} b ON a.ssn = b.ssn`,
      ]) {
        expect([sql, reason(g, sql, o)]).toEqual([sql, expect.stringContaining('not available')]);
      }
      for (const sql of [`SELECT * FROM ${table}`, `SELECT p.* FROM ${table} p`, `WITH x AS (SELECT id FROM ${table}) SELECT * FROM x`]) {
        expect([sql, reason(g, sql, o)]).toEqual([sql, expect.stringContaining('* and t.*')]);
      }
      expect(reason(g, `SELECT id, email FROM ${table} WHERE email LIKE '%@x'`, o)).toBeNull();
      expect(reason(g, `SELECT COUNT(*) FROM ${table}`, o)).toBeNull();
    });
  }

  test('masks and row filters cannot be applied there: the call is refused before the guard runs anything', () => {
    const tool = {
      name: 't',
      description: '',
      inputSchema: { type: 'object', properties: {} },
      target: { schema: 'dbo', table: 'people', kind: 'table', columns: [{ name: 'id', type: 'int' }] },
    } as SqlToolSpec;
    const dialect: Dialect = { name: 'mssql', guardSpan: 'guard mssql', syntax: MSSQL_SYNTAX, guard: guardMssqlSql };
    const ctx = {
      allowWrite: false,
      allowDdl: false,
      readOnly: true,
      limits: { statementTimeoutMs: 1000, maxRows: 10, maxResultBytes: 10_000 },
      policy: { policy: { hidden_columns: [], masked_columns: [], row_filter: 'id = :caller.x' }, key: 'k', maskKey: null, caller: {} },
    } as unknown as ExecutionContext;
    const out = prepareCall(dialect, tool, { sql: 'SELECT id FROM dbo.people' }, ctx);
    expect(isRefusal(out)).toBe(true);
    expect(JSON.stringify(out)).toContain('cannot apply');
    expect(checkPolicyShape(['id'], { hidden_columns: [], masked_columns: [{ column: 'id', mask: 'hash' }], row_filter: null }, null)).toContain(
      'hidden columns only',
    );
  });

  test('a saved tool on SQL Server under a hidden-column policy: checked with literals at its markers, values still bound', () => {
    const parameters = [{ name: 'min', type: 'integer' as const, description: 'First id' }];
    const savedOf = (statement: string) => ({ statement, parameters, version: 1, ...parseTemplate(statement, parameters, MSSQL_SYNTAX) });
    const toolOf = (statement: string) =>
      ({
        name: 's',
        description: '',
        inputSchema: { type: 'object', properties: {} },
        target: {
          schema: 'dbo',
          table: 'people',
          kind: 'table',
          defaultSchema: 'dbo',
          columns: [
            { name: 'id', type: 'int' },
            { name: 'ssn', type: 'text' },
          ],
          saved: savedOf(statement),
        },
      }) as SqlToolSpec;
    const dialect: Dialect = {
      name: 'mssql',
      guardSpan: 'guard mssql',
      syntax: MSSQL_SYNTAX,
      guard: guardMssqlSql,
      bind: (saved, args) => bindPositional(MSSQL_MARKERS, saved, args),
    };
    const ctx = {
      allowWrite: false,
      allowDdl: false,
      readOnly: true,
      limits: { statementTimeoutMs: 1000, maxRows: 10, maxResultBytes: 10_000 },
      policy: { policy: { hidden_columns: ['ssn'], masked_columns: [], row_filter: null }, key: 'k', maskKey: null, caller: {} },
    } as unknown as ExecutionContext;
    const ok = prepareCall(dialect, toolOf('SELECT id FROM dbo.people WHERE id >= :min'), { min: 3 }, ctx);
    expect(isRefusal(ok) ? ok : { statement: ok.statement, values: ok.values }).toEqual({
      statement: 'SELECT id FROM dbo.people WHERE id >= @p1',
      values: [3],
    });
    for (const statement of ['SELECT id, ssn FROM dbo.people WHERE id >= :min', 'SELECT * FROM dbo.people WHERE id >= :min']) {
      const out = prepareCall(dialect, toolOf(statement), { min: 3 }, ctx);
      expect(isRefusal(out), statement).toBe(true);
    }
  });

  test('a policy naming a column the table no longer has (renamed, re-introspected) refuses every call', () => {
    const columns = [
      { name: 'id', type: 'int' },
      { name: 'social', type: 'text' },
    ];
    const tool = {
      name: 't',
      description: '',
      inputSchema: { type: 'object', properties: {} },
      target: { schema: 'public', table: 'people', kind: 'table', columns },
    } as SqlToolSpec;
    const dialect: Dialect = {
      name: 'postgresql',
      guardSpan: 'guard postgresql',
      syntax: PG_SYNTAX,
      guard: guardPostgresSql,
      wrapRead: (b) => b,
      policy: PG_POLICY,
    };
    const ctx = {
      allowWrite: false,
      allowDdl: false,
      readOnly: true,
      limits: { statementTimeoutMs: 1000, maxRows: 10, maxResultBytes: 10_000 },
      policy: { policy: { hidden_columns: ['ssn'], masked_columns: [], row_filter: null }, key: 'k', maskKey: null, caller: {} },
    } as unknown as ExecutionContext;
    expect(JSON.stringify(prepareCall(dialect, tool, { sql: 'SELECT * FROM people' }, ctx))).toContain('no longer has');
  });
});

describe('PostgreSQL and MariaDB: every reference to the table is reported, a CTE of its name is not', () => {
  beforeAll(async () => {
    await loadMysqlGuard();
  });
  const PG: GuardOptions = {
    table: { schema: 'public', name: 'people' },
    allowWrite: false,
    allowDdl: false,
    readOnly: true,
    policy: { key: 'p', hidden: ['ssn'] },
  };
  const MY: GuardOptions = { ...PG, table: { schema: 'db', name: 'people' } };

  test('PostgreSQL: references in CTE bodies, subqueries, UNION branches and joins; the shadowing CTE is left alone', () => {
    const sql =
      'WITH people AS (SELECT * FROM people) SELECT * FROM people, public.people p WHERE EXISTS (SELECT 1 FROM people) UNION ALL SELECT * FROM "people"';
    const r = guardPostgresSql(sql, PG);
    if (!r.ok) throw new Error(r.reason);
    // The CTE body's reference and public.people p; in the outer FROM, inside EXISTS and in the UNION's last branch
    // (the WITH covers the whole set operation) `people` is the CTE, which itself reads the filtered table.
    expect(r.refs!.map((x) => sql.slice(x.start, x.end))).toEqual(['people', 'public.people']);
    expect(r.refs!.map((x) => x.alias)).toEqual(['people', null]);
  });

  test('MariaDB: the same, by the parser positions (a non-ASCII text before a reference included)', () => {
    const sql = "SELECT 'é😀' AS x, id FROM people WHERE id IN (SELECT id FROM db.`people` AS q) UNION SELECT 1, 2 FROM people";
    const r = MYSQL_DIALECT.guard(sql, MY);
    if (!r.ok) throw new Error(r.reason);
    expect(r.refs!.map((x) => sql.slice(x.start, x.end))).toEqual(['people', 'db.`people`', 'people']);
  });

  test('ONLY, $n / ? parameters and writes are refused with a policy', () => {
    expect(reason(guardPostgresSql, 'SELECT * FROM ONLY people', PG)).toContain('ONLY');
    expect(reason(guardPostgresSql, 'SELECT $1 FROM people', PG)).toContain('parameters');
    expect(reason(MYSQL_DIALECT.guard, 'SELECT ? FROM people', MY)).toContain('parameters');
    expect(reason(guardPostgresSql, 'DELETE FROM people', { ...PG, allowWrite: true, readOnly: true })).not.toBeNull();
  });

  test('the rewrite: typed parameters, the fence, FALSE for a missing attribute, typed NULLs for the resolution check', () => {
    const p: ToolPolicy = { hidden_columns: ['ssn'], masked_columns: [{ column: 'email', mask: 'fixed', text: '[hidden]' }], row_filter: 'tenant = :caller.t' };
    const cp = (caller: Record<string, string>): CallPolicy => ({ policy: p, key: 'k', maskKey: null, caller });
    const sql = 'SELECT * FROM people';
    const refs = [{ start: 14, end: 20, alias: 'people' }];
    const withT = applyPolicy(PG_POLICY, sql, refs, '"public"."people"', ['id', 'tenant', 'email', 'ssn'], cp({ t: "x' OR 1=1 --" }));
    expect(withT.statement).toBe(
      'SELECT * FROM (SELECT "id", "tenant", CASE WHEN "email" IS NULL THEN NULL ELSE $1::pg_catalog.text END AS "email" FROM "public"."people" WHERE (tenant = $2::pg_catalog.text) OFFSET 0) AS people',
    );
    expect(withT.values).toEqual(['[hidden]', "x' OR 1=1 --"]);
    expect(withT.resolution).not.toContain('$');
    const without = applyPolicy(PG_POLICY, sql, refs, '"public"."people"', ['id', 'tenant', 'email', 'ssn'], cp({}));
    expect(without.statement).toContain('WHERE FALSE OFFSET 0');
  });

  test("a saved tool's own markers: admitted up to its count, the policy's values numbered after them or merged by position", () => {
    const saved = { ...PG, policy: { ...PG.policy!, params: 2 } };
    expect(reason(guardPostgresSql, 'SELECT $1::text AS a FROM people WHERE id = $2::text::int8', saved)).toBeNull();
    expect(reason(guardPostgresSql, 'SELECT $3::text AS a FROM people', saved)).toContain('parameters');
    expect(reason(MYSQL_DIALECT.guard, 'SELECT ? AS a FROM people WHERE id = ?', { ...MY, policy: { ...MY.policy!, params: 2 } })).toBeNull();
    // The verdict cache keys on the count: the same text on the free-SQL tool is still refused.
    expect(reason(guardPostgresSql, 'SELECT $1::text AS a FROM people WHERE id = $2::text::int8', PG)).toContain('parameters');
    const p: ToolPolicy = { hidden_columns: [], masked_columns: [], row_filter: 'tenant = :caller.t' };
    const cp: CallPolicy = { policy: p, key: 'k', maskKey: null, caller: { t: 'acme' } };
    const pg = applyPolicy(PG_POLICY, 'SELECT $1 AS a FROM people WHERE id = $2', [{ start: 20, end: 26, alias: 'people' }], 'q', ['id', 'tenant'], cp, {
      values: ['x', '7'],
    });
    expect(pg.statement).toContain('WHERE (tenant = $3::pg_catalog.text)');
    expect(pg.values).toEqual(['x', '7', 'acme']);
    expect(pg.resolution).toContain('$1 AS a');
    const sql = 'SELECT ? AS a FROM people WHERE id = ?';
    const my = applyPolicy(MYSQL_POLICY, sql, [{ start: 19, end: 25, alias: 'people' }], 'q', ['id', 'tenant'], cp, { values: ['x', 7], offsets: [7, 37] });
    expect(my.values).toEqual(['x', 'acme', 7]);
  });
});
