// Which tables become tools (src/connectors/table-filter.ts, decision 0303): glob matching over `schema.table`, the
// include/exclude rule, the 400 checks, and a pattern of many stars that must not take unbounded time.
import { describe, expect, test } from 'bun:test';
import { applyTableFilter, checkDescription, checkTablePatterns, globMatches } from '../src/connectors/table-filter.ts';
import type { ToolSpec } from '../src/connectors/types.ts';
import { verifies } from './requirements.ts';

const spec = (name: string, target: unknown): ToolSpec => ({ name, description: '', inputSchema: { type: 'object', properties: {} }, target });
const table = (schema: string, t: string) => spec(`query_pg_${t}`, { schema, table: t, kind: 'table', columns: [] });
const names = (specs: ToolSpec[]) => specs.map((s) => s.name);

describe('glob matching', () => {
  test('* any run, ? one character, the rest literal, whole name, case-insensitive', () => {
    verifies('CONN-TABLE-FILTER');
    expect(globMatches('public.order*', 'public.orders')).toBe(true);
    expect(globMatches('public.order*', 'public.order')).toBe(true);
    expect(globMatches('public.order*', 'sales.orders')).toBe(false);
    expect(globMatches('*.orders', 'sales.orders')).toBe(true);
    expect(globMatches('public.audit_?', 'public.audit_1')).toBe(true);
    expect(globMatches('public.audit_?', 'public.audit_12')).toBe(false);
    expect(globMatches('PUBLIC.Orders', 'public.orders')).toBe(true);
    // Regular-expression characters are literal: `.` is a dot, `+` a plus.
    expect(globMatches('public.a+b', 'public.a+b')).toBe(true);
    expect(globMatches('public.a+b', 'public.aab')).toBe(false);
    expect(globMatches('public.x', 'publicax')).toBe(false);
    expect(globMatches('public.orders', 'public.orders_old')).toBe(false);
  });

  test('a pattern of many stars against a long name that does not match answers at once', () => {
    const pattern = `${'a*'.repeat(120)}b`;
    const name = 'a'.repeat(250);
    const started = performance.now();
    expect(globMatches(pattern, name)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('include and exclude', () => {
  const specs = [table('public', 'orders'), table('public', 'order_lines'), table('public', 'customers'), table('archive', 'orders')];

  test('no pattern: every table; include: only matches; exclude wins', () => {
    verifies('CONN-TABLE-FILTER');
    expect(names(applyTableFilter(specs, { include: [], exclude: [] }))).toEqual(names(specs));
    expect(names(applyTableFilter(specs, { include: ['public.order*'], exclude: [] }))).toEqual(['query_pg_orders', 'query_pg_order_lines']);
    expect(names(applyTableFilter(specs, { include: ['*.orders'], exclude: ['archive.*'] }))).toEqual(['query_pg_orders']);
    expect(names(applyTableFilter(specs, { include: [], exclude: ['public.*'] }))).toEqual(['query_pg_orders']);
  });

  test('mongodb targets are database.collection; a tool without a table (an upstream MCP tool) is kept', () => {
    const mongo = spec('query_mongodb_events', { database: 'app', collection: 'events' });
    const upstream = spec('up__search', { upstreamName: 'search' });
    expect(names(applyTableFilter([mongo, upstream], { include: ['app.users'], exclude: [] }))).toEqual(['up__search']);
    expect(names(applyTableFilter([mongo], { include: ['app.ev*'], exclude: [] }))).toEqual(['query_mongodb_events']);
  });
});

describe('the 400 checks', () => {
  test('a pattern without schema.table, an empty side, a control character; a description of two lines', () => {
    verifies('CONN-TABLE-FILTER');
    expect(() => checkTablePatterns('include_tables', ['orders'])).toThrow(/body\.include_tables\[0\] "orders" must have the form schema\.table/);
    expect(() => checkTablePatterns('exclude_tables', ['public.ok', '.orders'])).toThrow(/exclude_tables\[1\]/);
    expect(() => checkTablePatterns('exclude_tables', ['public.'])).toThrow(/schema\.table/);
    expect(() => checkTablePatterns('include_tables', ['public.a\u0000'])).toThrow(/control character/);
    expect(() => checkTablePatterns('include_tables', ['public.*', '*.orders', 'a.b.c'])).not.toThrow();
    expect(() => checkDescription('production\nEU')).toThrow(/one line/);
    expect(() => checkDescription('production, EU')).not.toThrow();
    expect(() => checkDescription(null)).not.toThrow();
  });
});
