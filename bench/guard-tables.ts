/**
 * Issue 38: what the PostgreSQL guard costs per verdict for a single-table statement and for a JOIN over the
 * connector's tables (GuardOptions.tables), cold (the verdict caches cleared before each verdict: a parse and a walk)
 * and cached (the same text again). The JOIN reads a table with a policy, so its verdict also locates the governed
 * references. Lists of 2 and of 2,000 tables show that the list's size does not enter a verdict (its index is built
 * once per list). Then the whole pre-database step of a call (prepareCall: guard, governance of the touched tables,
 * policy rewrite, row-limit wrapper) for the single-table read and the JOIN, cached verdicts, as a call pays it. No
 * database: the guard only parses.
 *
 *   node_modules/.bin/bun bench/guard-tables.ts [iterations]
 */
import { clearPostgresGuardCache, guardPostgresSql } from '../src/connectors/postgresql/guard/guard.ts';
import type { GuardOptions } from '../src/connectors/shared/sqlguard/types.ts';
import { isRefusal, prepareCall } from '../src/connectors/shared/prepare.ts';
import { PG_DIALECT } from '../src/connectors/postgresql/execute.ts';
import { loadPgGuard } from '../src/connectors/postgresql/guard/lazy.ts';
import { policyKey } from '../src/connectors/shared/policy.ts';
import type { ExecutionContext, SqlTarget, SqlToolSpec, ToolPolicy } from '../src/connectors/types.ts';

const ITERATIONS = Number(process.argv[2] ?? 2000);
await loadPgGuard();
const table = { schema: 'public', name: 'items' };
const SINGLE = 'SELECT id, sku, name, price FROM items WHERE qty = 7 ORDER BY id LIMIT 50';
const JOIN = 'SELECT i.id, i.sku, i.name, c.label FROM items i JOIN categories c ON c.id = i.qty WHERE i.qty = 7 ORDER BY i.id LIMIT 50';

const base: GuardOptions = { table, allowWrite: false, allowDdl: false, readOnly: false };
function withTables(n: number, policy = true): GuardOptions {
  const list: { schema: string; name: string; policy?: boolean; hidden?: string[] }[] = [
    { schema: 'public', name: 'items' },
    { schema: 'public', name: 'categories', ...(policy ? { policy: true, hidden: ['secret'] } : {}) },
  ];
  for (let i = list.length; i < n; i++) list.push({ schema: 'public', name: `t${i}` });
  return { ...base, tables: { key: `bench:${n}:${policy}`, list } };
}

/** Microseconds per verdict, median of 5 rounds. */
function measure(sql: string, opts: GuardOptions, cold: boolean): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    guardPostgresSql(sql, opts); // warm the JIT and (cached) the verdict
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) {
      if (cold) clearPostgresGuardCache();
      const v = guardPostgresSql(sql, opts);
      if (!v.ok) throw new Error(`refused: ${v.reason}`);
    }
    rounds.push(((performance.now() - start) * 1000) / ITERATIONS);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

const rows: [string, string, GuardOptions][] = [
  ['single table, no list', SINGLE, base],
  ['single table, list of 2', SINGLE, withTables(2)],
  ['JOIN, list of 2, no policy', JOIN, withTables(2, false)],
  ['JOIN, list of 2 (one table with a policy)', JOIN, withTables(2)],
  ['JOIN, list of 2,000', JOIN, withTables(2000)],
];
console.log(`PostgreSQL guard, µs per verdict (median of 5 rounds of ${ITERATIONS})`);
console.log('statement'.padEnd(44), 'cold'.padStart(8), 'cached'.padStart(8));
for (const [name, sql, opts] of rows) {
  console.log(name.padEnd(44), measure(sql, opts, true).toFixed(1).padStart(8), measure(sql, opts, false).toFixed(2).padStart(8));
}

// ---------------------------------------------------------------------------------------------------------------------
// prepareCall per call (verdicts cached, as for a repeated statement).

const target = (name: string, columns: string[]): SqlTarget => ({
  schema: 'public',
  table: name,
  kind: 'table',
  columns: columns.map((c) => ({ name: c, type: 'text' })),
});
const ITEMS = target('items', ['id', 'sku', 'name', 'price', 'qty']);
const CATS = target('categories', ['id', 'label', 'secret']);
const POLICY: ToolPolicy = { hidden_columns: ['secret'], masked_columns: [], row_filter: 'id >= :caller.min' };
const tool = { name: 'query_postgresql_items', description: '', inputSchema: {}, target: ITEMS } as unknown as SqlToolSpec;
const limits = { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 1_000_000 };
const baseCtx = { allowWrite: false, allowDdl: false, readOnly: false, limits } as unknown as ExecutionContext;
const tablesCtx = (policy: boolean): ExecutionContext => ({
  ...baseCtx,
  tables: {
    key: `bench-prepare:${policy}`,
    list: [
      { target: ITEMS, enabled: true },
      { target: CATS, enabled: true, ...(policy ? { policy: { policy: POLICY, key: policyKey(POLICY), maskKey: null, caller: { min: '0' } } } : {}) },
    ],
  },
});

function perCall(sql: string, ctx: ExecutionContext): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) if (isRefusal(prepareCall(PG_DIALECT, tool, { sql }, ctx))) throw new Error('refused');
    rounds.push(((performance.now() - start) * 1000) / ITERATIONS);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

console.log(`\nprepareCall, µs per call (median of 5 rounds of ${ITERATIONS}, verdicts cached)`);
for (const [name, sql, ctx] of [
  ['single table, no list', SINGLE, baseCtx],
  ['single table, list of 2', SINGLE, tablesCtx(true)],
  ['JOIN, no policy', JOIN, tablesCtx(false)],
  ['JOIN, a policy on one side (rewrite)', JOIN, tablesCtx(true)],
] as const) {
  console.log(name.padEnd(44), perCall(sql, ctx).toFixed(1).padStart(8));
}
