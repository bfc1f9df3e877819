// The shared security cases (cases.ts COMMON_CASES) through every SQL type's own execute path, without a server:
// each call is refused by the type's guard before any connection is made (a counting listener sees none), and the
// refusal is counted under the type's name (toolgate_guard_refusals_total), whatever the type. postgresql and mysql
// also run every case live in their conformance suites; mssql and oracle run live only where a server is configured
// (new-types-live.test.ts skips with its reason). mongodb is not SQL: its guard cases are mongodb-guard.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import { getDriver } from '../../src/connectors/index.ts';
import type { ExecutionContext, SqlToolSpec } from '../../src/connectors/types.ts';
import { registry } from '../../src/observability/metrics.ts';
import { COMMON_CASES, INJECTION_VALUES, SAVED_REFUSALS, SQL_TYPES, type SqlType } from './cases.ts';
import { parseTemplate, type SavedParam } from '../../src/connectors/shared/saved.ts';
import { isRefusal, prepareCall } from '../../src/connectors/shared/prepare.ts';
import { PG_DIALECT } from '../../src/connectors/postgresql/execute.ts';
import { MYSQL_DIALECT } from '../../src/connectors/mysql/execute.ts';

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
  const registered = ['postgresql', 'mysql', 'mssql', 'oracle', 'mongodb', 'mcp'].filter((t) => getDriver(t));
  expect(registered.filter((t) => t !== 'mongodb' && t !== 'mcp').sort()).toEqual([...SQL_TYPES].sort());
});

// Issue 30: saved-statement tools. postgresql and mysql check a saved statement with the same guard at save (the
// shared refusals, here without a server) and bind every value as a driver parameter; mssql and oracle serve none
// yet (their guards refuse bind markers), which the API answers with 422 saved_tools_unsupported.
const SAVED_TYPES = ['postgresql', 'mysql'] as const;
for (const type of SAVED_TYPES) {
  describe(`${type}: saved statements refused at save with no server`, () => {
    for (const c of SAVED_REFUSALS) {
      test(c.name, async () => {
        const driver = getDriver(type)!;
        for (const write of c.writesToo ? [false, true] : [false]) {
          const checked = await driver.checkSaved!(
            c.statement,
            c.params,
            ['items', 'secrets', 'notes'].map((table) => ({ ...tool(type).target, table })),
            write,
          );
          expect({ write, ok: checked.ok }).toEqual({ write, ok: false });
          if (!checked.ok) expect(checked.reason).toContain(c.words);
        }
        expect(connections).toBe(0);
      });
    }

    test('a saved call sends the statement with markers and the values apart: no attack text is ever in the statement', async () => {
      const dialect = type === 'postgresql' ? PG_DIALECT : MYSQL_DIALECT;
      await dialect.ready?.();
      const params: SavedParam[] = [
        { name: 'name', type: 'string', description: 'n' },
        { name: 'ids', type: 'array', description: 'i', items: { type: 'integer' } },
      ];
      const statement =
        type === 'postgresql' ? 'SELECT id FROM items WHERE name = :name OR id = ANY(:ids)' : 'SELECT id FROM items WHERE name = :name OR id IN (:ids)';
      const saved = { statement, parameters: params, version: 1, ...parseTemplate(statement, params, type) };
      const spec = { ...tool(type), target: { ...tool(type).target, saved } };
      for (const attack of INJECTION_VALUES) {
        const prepared = prepareCall(dialect, spec, { name: attack, ids: [1, 2] }, ctx(type, false));
        if (isRefusal(prepared)) throw new Error(JSON.stringify(prepared.content));
        // (`?`, `$1` and `:name` are also the markers' own spelling: the longer attacks cannot be mistaken for one.)
        if (attack.length > 5) expect(prepared.statement).not.toContain(attack);
        expect(prepared.values![0]).toBe(attack);
        expect(prepared.statement).toContain(type === 'postgresql' ? '$1::pg_catalog.text' : 'name = ? OR id IN (?, ?)');
      }
    });
  });
}

for (const type of ['mssql', 'oracle'] as const) {
  test(`${type}: saved-statement tools are refused with 422 saved_tools_unsupported`, async () => {
    const err = await getDriver(type)!.checkSaved!(
      'SELECT id FROM items WHERE id = :n',
      [{ name: 'n', type: 'integer', description: 'n' }],
      [tool(type).target],
      false,
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 422, code: 'saved_tools_unsupported' });
  });
}
