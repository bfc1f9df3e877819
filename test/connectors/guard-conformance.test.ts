// The shared security cases (cases.ts COMMON_CASES) through every SQL type's own execute path, without a server:
// each call is refused by the type's guard before any connection is made (a counting listener sees none), and the
// refusal is counted under the type's name (toolgate_guard_refusals_total), whatever the type. postgresql and mysql
// also run every case live in their conformance suites; mssql and oracle run live only where a server is configured
// (new-types-live.test.ts skips with its reason). mongodb is not SQL: its guard cases are mongodb-guard.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import { connectorTypes, getDriver } from '../../src/connectors/index.ts';
import type { ExecutionContext, SqlToolSpec, SavedParam } from '../../src/connectors/types.ts';
import { registry } from '../../src/observability/metrics.ts';
import { COMMON_CASES, INJECTION_VALUES, SAVED_REFUSALS, SQL_TYPES, type SqlType } from './cases.ts';
import { parseTemplate } from '../../src/connectors/shared/saved.ts';
import { isRefusal, prepareCall } from '../../src/connectors/shared/prepare.ts';
import { PG_DIALECT } from '../../src/connectors/postgresql/execute.ts';
import { MYSQL_DIALECT } from '../../src/connectors/mysql/execute.ts';
import { MSSQL_DIALECT } from '../../src/connectors/mssql/driver.ts';
import { ORACLE_DIALECT } from '../../src/connectors/oracle/driver.ts';

let counting: net.Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  counting = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve));
  port = (counting.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const type of SQL_TYPES) await getDriver(type)!.closeAll();
  await new Promise<void>((resolve) => counting.close(() => resolve()));
});

const SCHEMA: Record<SqlType, string> = { postgresql: 'public', mysql: 'shop', mssql: 'dbo', oracle: 'SHOP' };

const tool = (type: SqlType): SqlToolSpec => ({
  name: `query_${type}_items`,
  description: '',
  inputSchema: { type: 'object', properties: {} },
  target: {
    schema: SCHEMA[type],
    table: type === 'oracle' ? 'ITEMS' : 'items',
    kind: 'table',
    columns: [
      { name: 'id', type: 'int' },
      { name: 'name', type: 'text' },
    ],
    defaultSchema: SCHEMA[type],
  },
});

const ctx = (type: SqlType, write: boolean): ExecutionContext => ({
  connectorId: `guardconf-${type}-${write ? 'rw' : 'ro'}`,
  config: { host: '127.0.0.1', port, database: type === 'oracle' ? 'FREEPDB1' : 'shop', user: 'reader' },
  credential: 'Guard-Conf-Pw!',
  allowWrite: write,
  allowDdl: false,
  readOnly: false,
  limits: { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 100, maxResultBytes: 100_000 },
});

async function refusals(type: SqlType): Promise<number> {
  const text = await registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('toolgate_guard_refusals_total{') && l.includes(`dialect="${type}"`) && l.includes('reason="statement"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

for (const type of SQL_TYPES) {
  describe(`${type}: the shared security cases, refused by the guard with no server`, () => {
    for (const c of COMMON_CASES) {
      test(c.name, async () => {
        const before = { connections, counted: await refusals(type) };
        const driver = getDriver(type)!;
        const modes = c.writesToo ? [false, true] : [false];
        for (const write of modes) {
          const result = await driver.execute(tool(type), { sql: c.sql }, ctx(type, write));
          expect({ write, isError: result.isError }).toEqual({ write, isError: true });
          // A refusal, not a failed connection: the answer names no host or port.
          expect(result.content.map((x) => (x as { text: string }).text).join('\n')).not.toMatch(/could not connect|unavailable|127\.0\.0\.1/);
        }
        expect(connections).toBe(before.connections);
        expect(await refusals(type)).toBeGreaterThan(before.counted);
      });
    }
  });
}

test('every SQL type the registry knows is in the shared cases', () => {
  // From the registry, not a list: a type registered tomorrow (its database kind) fails here until SQL_TYPES has it.
  const sql = connectorTypes().filter((t) => t !== 'mongodb' && getDriver(t)!.kind === 'database');
  expect(sql.length).toBeGreaterThanOrEqual(4);
  expect(sql).toEqual([...SQL_TYPES].sort());
});

// Issue 30: saved-statement tools. Every SQL type checks a saved statement with its own guard at save (the shared
// refusals, here without a server) and binds every value as a driver parameter: postgresql `$n`, mysql `?`, mssql
// `@pN`, oracle `:N`. The mssql and oracle guards refuse bind markers, so they check the statement with the literal 0 at each
// marker (a marker stands only where a value can); their runners bind the values (no live server here).
const MARKERS: Record<SqlType, string> = {
  postgresql: 'name = $1::pg_catalog.text OR id = ANY($2::pg_catalog.text::pg_catalog.int8[])',
  mysql: 'name = ? OR id IN (?, ?)',
  mssql: 'name = @p1 OR id IN (@p2, @p3)',
  oracle: 'name = :1 OR id IN (:2, :3)',
};
const savedTarget = (type: SqlType, table: string) => {
  const t = tool(type).target;
  const upper = type === 'oracle';
  return { ...t, table: upper ? table.toUpperCase() : table, columns: t.columns.map((c) => ({ ...c, name: upper ? c.name.toUpperCase() : c.name })) };
};
for (const type of SQL_TYPES) {
  describe(`${type}: saved statements with no server`, () => {
    const tables = () => ['items', 'secrets', 'notes'].map((table) => savedTarget(type, table));
    for (const c of SAVED_REFUSALS) {
      test(`refused at save: ${c.name}`, async () => {
        const driver = getDriver(type)!;
        for (const write of c.writesToo ? [false, true] : [false]) {
          const checked = await driver.checkSaved!(c.statement, c.params, tables(), write);
          expect({ write, ok: checked.ok }).toEqual({ write, ok: false });
          if (!checked.ok) expect(checked.reason).toContain(c.words);
        }
        expect(connections).toBe(0);
      });
    }

    test('accepted for its table, then each call sends the markers with the values apart: no attack text in the statement', async () => {
      const params: SavedParam[] = [
        { name: 'name', type: 'string', description: 'n' },
        { name: 'ids', type: 'array', description: 'i', items: { type: 'integer' } },
      ];
      const statement = `SELECT id FROM items WHERE name = :name OR id ${type === 'postgresql' ? '= ANY(:ids)' : 'IN (:ids)'}`;
      const checked = await getDriver(type)!.checkSaved!(statement, params, tables(), false);
      expect(checked).toMatchObject({ ok: true, write: false, target: { table: type === 'oracle' ? 'ITEMS' : 'items' } });
      const dialect = { postgresql: PG_DIALECT, mysql: MYSQL_DIALECT, mssql: MSSQL_DIALECT, oracle: ORACLE_DIALECT }[type];
      const saved = { statement, parameters: params, version: 1, ...parseTemplate(statement, params, dialect.syntax) };
      const spec = { ...tool(type), target: { ...savedTarget(type, 'items'), saved } };
      for (const attack of INJECTION_VALUES) {
        const prepared = prepareCall(dialect, spec, { name: attack, ids: [1, 2] }, ctx(type, false));
        if (isRefusal(prepared)) throw new Error(JSON.stringify(prepared.content));
        // (`?`, `$1` and `:name` are also the markers' own spelling: the longer attacks cannot be mistaken for one.)
        if (attack.length > 5) expect(prepared.statement).not.toContain(attack);
        expect(prepared.values![0]).toBe(attack);
        expect(prepared.statement).toContain(MARKERS[type]);
      }
      expect(connections).toBe(0);
    });
  });
}
