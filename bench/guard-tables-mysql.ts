/**
 * The MySQL/MariaDB guard's cost per verdict, one table against a JOIN over the connector's tables (issue 38,
 * docs/decisions/0292): µs per uncached verdict (a new literal every call, so the verdict cache never answers) and per
 * cached verdict, for the single-table form (no `tables`), the same statement with the connector's list (20 tables,
 * one with a policy), and a two-table JOIN, of two tables without a policy and reading the policy table (with that
 * list, and with one of 2,000 tables). Interleaved rounds (A/B/C/... in turn), median of
 * the rounds. No database: the guard lexes and parses only.
 *
 *   node_modules/.bin/bun bench/guard-tables-mysql.ts [rounds=15] [perRound=2000]
 */
import { clearMysqlGuardCache, guardMysqlSql } from '../src/connectors/mysql/guard/guard.ts';
import type { GuardOptions, GuardTable } from '../src/connectors/shared/sqlguard/types.ts';

const rounds = Number(process.argv[2] ?? 15);
const perRound = Number(process.argv[3] ?? 2000);

const schema = 'shop';
const list: GuardTable[] = [
  { schema, name: 'items' },
  { schema, name: 'categories', hidden: ['internal_code'], policy: true },
  ...Array.from({ length: 18 }, (_, i) => ({ schema, name: `t${i}` })),
];
const SINGLE: GuardOptions = { table: { schema, name: 'items' }, allowWrite: false, allowDdl: false, readOnly: true };
const LISTED: GuardOptions = { ...SINGLE, tables: { key: 'bench', list } };
const big: GuardTable[] = [...list, ...Array.from({ length: 1980 }, (_, i) => ({ schema, name: `big${i}` }))];
const BIG: GuardOptions = { ...SINGLE, tables: { key: 'bench-2000', list: big } };

let n = 0;
const single = () => `SELECT id, sku, name, price, qty FROM items WHERE id > ${5000 + (n++ % 4000)} ORDER BY id LIMIT 10`;
const join = () =>
  `SELECT i.id, i.sku, i.name, i.price, c.label FROM items i JOIN categories c ON c.id = i.qty WHERE i.id > ${5000 + (n++ % 4000)} ORDER BY i.id LIMIT 10`;
const plainJoin = () =>
  `SELECT i.id, i.sku, i.name, i.price, c.label FROM items i JOIN t0 c ON c.id = i.qty WHERE i.id > ${5000 + (n++ % 4000)} ORDER BY i.id LIMIT 10`;
const SINGLE_FIXED = single();
const JOIN_FIXED = join();

const cases: Record<string, () => void> = {
  'single table, uncached (no tables)': () => check(guardMysqlSql(single(), SINGLE)),
  'single table, uncached (with tables)': () => check(guardMysqlSql(single(), LISTED)),
  'JOIN of two tables, no policy, uncached': () => check(guardMysqlSql(plainJoin(), LISTED)),
  'JOIN of two tables, uncached': () => check(guardMysqlSql(join(), LISTED), 1),
  'JOIN, 2,000-table list, uncached': () => check(guardMysqlSql(join(), BIG), 1),
  'single table, cached (no tables)': () => check(guardMysqlSql(SINGLE_FIXED, SINGLE)),
  'JOIN of two tables, cached': () => check(guardMysqlSql(JOIN_FIXED, LISTED), 1),
};

function check(r: ReturnType<typeof guardMysqlSql>, refs = 0): void {
  if (!r.ok) throw new Error(r.reason);
  if ((r.refs?.length ?? 0) !== refs) throw new Error(`expected ${refs} references, got ${r.refs?.length ?? 0}`);
}

// Warm-up: the parser's WASM and the JIT.
for (const f of Object.values(cases)) for (let i = 0; i < 500; i++) f();
clearMysqlGuardCache();

const samples = new Map<string, number[]>(Object.keys(cases).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of Object.entries(cases)) {
    const start = performance.now();
    for (let i = 0; i < perRound; i++) f();
    samples.get(name)!.push(((performance.now() - start) * 1000) / perRound);
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const results = Object.fromEntries([...samples].map(([k, xs]) => [k, median(xs)]));
for (const [k, us] of Object.entries(results)) console.log(`${k.padEnd(42)} ${us.toFixed(2).padStart(8)} µs/verdict`);
const ratio = results['JOIN of two tables, uncached']! / results['single table, uncached (no tables)']!;
console.log(
  `JOIN / single, uncached: ${ratio.toFixed(2)}x; list cost on a single-table statement: ${(results['single table, uncached (with tables)']! / results['single table, uncached (no tables)']!).toFixed(2)}x`,
);
