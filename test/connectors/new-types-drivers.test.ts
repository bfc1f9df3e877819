// The mongodb, mssql and oracle drivers' call step without a server of their kind (none can run here): a refused call
// is answered by the guard before any connection is made, and a call to an unreachable server is a tool error in plain
// words that never carries the password. Real sockets (a port nothing listens on), real client packages.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import { getDriver } from '../../src/connectors/index.ts';
import { configureMongodbPools } from '../../src/connectors/mongodb/driver.ts';
import { configureMssqlPools } from '../../src/connectors/mssql/driver.ts';
import { configureOraclePools } from '../../src/connectors/oracle/driver.ts';
import type { ExecutionContext, ToolResult, ToolSpec } from '../../src/connectors/types.ts';
import { verifies } from '../requirements.ts';
import { deadPort } from '../support/targets.ts';

const PASSWORD = 'Dr1ver-Secret-Pw!';
let port: number;
/** A listener that counts the connections made to it (and drops them): the guard's refusals must make none. */
let counting: net.Server;
let countingPort: number;
let connections = 0;

beforeAll(async () => {
  port = await deadPort();
  counting = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve));
  countingPort = (counting.address() as net.AddressInfo).port;
  for (const configure of [configureMongodbPools, configureMssqlPools, configureOraclePools]) configure({ connectTimeoutMs: 1500 });
});
afterAll(async () => {
  await new Promise<void>((resolve) => counting.close(() => resolve()));
  for (const type of ['mongodb', 'mssql', 'oracle']) await getDriver(type)!.closeAll();
});

const ctx = (type: string, to = port): ExecutionContext => ({
  connectorId: `drv-${type}-${to}`,
  config: { host: '127.0.0.1', port: to, database: type === 'oracle' ? 'FREEPDB1' : 'shop', user: 'reader' },
  credential: PASSWORD,
  allowWrite: true,
  allowDdl: true,
  readOnly: false,
  limits: { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 100_000 },
});

const sqlTool = (type: string, schema: string, table: string): ToolSpec => ({
  name: `query_${type}_${table.toLowerCase()}`,
  description: '',
  inputSchema: { type: 'object', properties: {} },
  target: { schema, table, kind: 'table', columns: [{ name: 'ID', type: 'NUMBER' }], defaultSchema: schema },
});
const mongoTool: ToolSpec = {
  name: 'query_mongodb_orders',
  description: '',
  inputSchema: { type: 'object', properties: {} },
  target: { database: 'shop', collection: 'orders', kind: 'collection' },
};

const cases: { type: string; tool: () => ToolSpec; read: Record<string, unknown>; write: Record<string, unknown>; refusal: RegExp }[] = [
  { type: 'mongodb', tool: () => mongoTool, read: { filter: { a: 1 } }, write: { pipeline: [{ $out: 'stolen' }] }, refusal: /\$out writes to a collection/ },
  {
    type: 'mssql',
    tool: () => sqlTool('mssql', 'dbo', 'items'),
    read: { sql: 'SELECT * FROM dbo.items' },
    write: { sql: 'DELETE FROM dbo.items' },
    refusal: /found DELETE/,
  },
  {
    type: 'oracle',
    tool: () => sqlTool('oracle', 'APP', 'ITEMS'),
    read: { sql: 'SELECT id FROM items' },
    write: { sql: 'DROP TABLE items' },
    refusal: /found DROP/,
  },
];

const text = (r: ToolResult): string => r.content.map((c) => ('text' in c ? String(c.text) : '')).join('\n');

describe('mongodb, mssql and oracle calls without a server', () => {
  for (const c of cases) {
    test(`${c.type}: a write is refused by the guard before any connection, even on a connector allowing writes`, async () => {
      verifies('CONN-NEW-TYPES-REST', 'RPC-TOOL-ERROR-RESULT');
      const before = connections;
      const r = await getDriver(c.type)!.execute(c.tool(), c.write, ctx(c.type, countingPort));
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(c.refusal);
      expect(text(r)).toContain('read-only');
      await Bun.sleep(50);
      expect(connections).toBe(before);
      // The counter does see this driver's connections: a read goes to the listener (and fails there).
      const read = await getDriver(c.type)!.execute(c.tool(), c.read, ctx(c.type, countingPort));
      expect(read.isError).toBe(true);
      expect(connections).toBeGreaterThan(before);
      expect(JSON.stringify(read)).not.toContain(PASSWORD);
    }, 20_000);

    test(`${c.type}: a read on an unreachable server is a plain tool error without the password`, async () => {
      verifies('CONN-NEW-TYPES-REST', 'RPC-TOOL-ERROR-RESULT');
      const r = await getDriver(c.type)!.execute(c.tool(), c.read, ctx(c.type));
      expect(r.isError).toBe(true);
      expect(text(r)).toBe(`The database is unavailable: could not connect to 127.0.0.1:${port}: connection refused.`);
      expect(JSON.stringify(r)).not.toContain(PASSWORD);
    }, 20_000);
  }

  test('bad arguments are refused with the accepted shape named', async () => {
    verifies('CONN-NEW-TYPES-REST');
    const ms = await getDriver('mssql')!.execute(sqlTool('mssql', 'dbo', 'items'), { sql: 'SELECT 1 FROM items', limit: 0 }, ctx('mssql'));
    expect(text(ms)).toContain('"limit" must be an integer from 1 to 1000');
    const mongo = await getDriver('mongodb')!.execute(mongoTool, { filter: {}, pipeline: [] }, ctx('mongodb'));
    expect(text(mongo)).toContain('cannot be combined with "pipeline"');
  });
});
