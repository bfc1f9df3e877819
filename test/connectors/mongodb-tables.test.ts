// Issue 38 on MongoDB (docs/decisions/0328): the runtime's table list (src/tools/tables.ts) built for a mongodb
// connector's collections, as the catalog builds it, handed to the driver as a call's ctx.tables: a $lookup onto another
// enabled collection passes and is reported touched (approvals, audit `tables`), a disabled one is refused, each
// collection's own policy applies. No MongoDB server here: touchedTables runs the same guard execute runs, nothing sent.
import { describe, expect, test } from 'bun:test';
import { mongodbDriver, type MongoExecutionContext, type MongoTarget, type MongoToolSpec } from '../../src/connectors/mongodb/driver.ts';
import type { ToolResult, ToolPolicy } from '../../src/connectors/types.ts';
import { approvalOf, callTables, connectorTables, isCollection, isSqlTable, touchedIndexes, touchedNames, type TableSource } from '../../src/tools/tables.ts';

const target = (collection: string): MongoTarget => ({ database: 'shop', collection, kind: 'collection' });
const none: ToolPolicy = { hidden_columns: [], masked_columns: [], row_filter: null };
const source = (collection: string, o: Partial<TableSource> = {}): TableSource => ({
  toolId: `tool-${collection}`,
  target: target(collection),
  enabled: true,
  policy: null,
  requiresApproval: false,
  approvalEmails: [],
  approvalTtlSeconds: 3600,
  ...o,
});
const tables = connectorTables('7:conn-mongo', [
  source('orders'),
  source('notes', { requiresApproval: true, approvalEmails: ['boss@example.com'], approvalTtlSeconds: 600 }),
  source('payroll', { enabled: false }),
  source('filtered', { policy: { policy: { ...none, row_filter: "region = 'eu'" }, key: 'k1', maskKey: null } }),
  source('customers', { policy: { policy: { ...none, hidden_columns: ['ssn'] }, key: 'k2', maskKey: null } }),
]);
const tool: MongoToolSpec = { name: 'mongodb_shop_orders', description: '', inputSchema: { type: 'object' }, target: target('orders') } as MongoToolSpec;
const ctx = (): MongoExecutionContext => ({
  connectorId: 'conn-mongo',
  config: { host: '127.0.0.1', database: 'shop', user: 'u' },
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: true,
  tables: callTables(tables, { region: 'eu' }) as unknown as MongoExecutionContext['tables'],
  limits: { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows: 10, maxResultBytes: 100_000 },
});
const lookup = (from: string) => ({ pipeline: [{ $lookup: { from, localField: 'id', foreignField: 'order_id', as: 'x' } }] });
const touched = async (args: Record<string, unknown>): Promise<MongoTarget[] | ToolResult> => mongodbDriver.touchedTables!(tool, args, ctx());
const textOf = (r: MongoTarget[] | ToolResult): string => (Array.isArray(r) ? '' : r.content.map((c) => (c as { text?: string }).text ?? '').join('\n'));

describe('mongodb: the connector’s collections as a call’s table list (issue 38)', () => {
  test('a collection target is a table source, not a SQL table; the list is keyed by database.collection', () => {
    expect(isCollection(target('orders'))).toBe(true);
    expect(isSqlTable(target('orders'))).toBe(false);
    expect(isCollection({ ...target('orders'), saved: { statement: '[]' } })).toBe(false);
    expect(tables.rows.map((r) => r.name)).toEqual(['shop.customers', 'shop.filtered', 'shop.notes', 'shop.orders', 'shop.payroll']);
  });

  test('a $lookup onto another enabled collection passes; both are touched, named for the audit row', async () => {
    const r = await touched(lookup('notes'));
    expect(Array.isArray(r), textOf(r)).toBe(true);
    expect((r as MongoTarget[]).map((t) => t.collection)).toEqual(['orders', 'notes']);
    const idx = touchedIndexes(tables, r as MongoTarget[]);
    expect(touchedNames(tables, idx)).toEqual(['shop.notes', 'shop.orders']);
    // notes requires approval: the call is held for its approvers, as a SQL join would be.
    expect(approvalOf(tables, idx, { toolId: 'tool-orders', requiresApproval: false, approvalEmails: [], approvalTtlSeconds: 3600 })).toEqual({
      approvalEmails: ['boss@example.com'],
      approvalTtlSeconds: 600,
      toolIds: ['tool-notes'],
    });
  });

  test('a plain find touches only the tool’s own collection', async () => {
    const r = await touched({ filter: { id: 1 } });
    expect((r as MongoTarget[]).map((t) => t.collection)).toEqual(['orders']);
  });

  test('a disabled collection, one not of the connector, and one whose policy a pipeline cannot apply are refused by name', async () => {
    expect(textOf(await touched(lookup('payroll')))).toContain('"payroll", whose tool is disabled');
    expect(textOf(await touched(lookup('elsewhere')))).toContain('"elsewhere", which is not a collection of this connector');
    expect(textOf(await touched(lookup('filtered')))).toContain('"filtered" has a row filter');
  });

  test('a collection with a pipeline-expressible policy is read through it', async () => {
    const r = await touched(lookup('customers'));
    expect((r as MongoTarget[]).map((t) => t.collection)).toEqual(['orders', 'customers']);
  });
});
