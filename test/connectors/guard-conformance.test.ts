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
import { COMMON_CASES, SQL_TYPES, type SqlType } from './cases.ts';

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
