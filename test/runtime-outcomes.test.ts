// The tool runtime is protocol-free (docs/decisions/0143-runtime-outcomes.md): tools/ imports nothing from mcp/ and
// never names RpcError, RpcCode or checkParams; a refused call resolves to a domain outcome (it does not throw), and
// mcp/server.ts alone words it as JSON-RPC. Unit level: fake deps, no database.
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import type { ToolResult } from '../src/connectors/types.ts';
import { RpcCode, RpcError } from '../src/errors.ts';
import { toolCallError } from '../src/mcp/server.ts';
import type { Principal } from '../src/principal.ts';
import type { CatalogTool, OrgCatalog } from '../src/tools/catalog.ts';
import { type CallOutcome, callTool, type RuntimeOrg, recordRefusal, type ToolRuntimeDeps } from '../src/tools/runtime.ts';
import { registry } from '../src/observability/metrics.ts';
import { importGraph } from './support/imports.ts';
import { RANKS } from './support/ranks.ts';

const SRC = join(import.meta.dir, '..', 'src');

describe('the tool runtime knows nothing of JSON-RPC', () => {
  const graph = importGraph();
  const toolFiles = [...graph.keys()].filter((f) => f.startsWith('tools/'));

  test('tools/ ranks below mcp/ and imports no file of mcp/', () => {
    expect(RANKS['tools/']!.rank).toBeLessThan(RANKS['mcp/']!.rank);
    expect(toolFiles).toContain('tools/runtime.ts');
    expect(
      toolFiles.flatMap((f) =>
        graph
          .get(f)!
          .filter((to) => to.startsWith('mcp/'))
          .map((to) => `${f} -> ${to}`),
      ),
    ).toEqual([]);
  });

  test('no file of tools/ names the wire-level errors or the params check that throws them', () => {
    const wire = /\b(RpcError|RpcCode|checkParams|rpcErrorObject)\b/;
    expect(toolFiles.filter((f) => wire.test(readFileSync(join(SRC, f), 'utf8')))).toEqual([]);
    // The pattern does find them where they are.
    expect(wire.test(readFileSync(join(SRC, 'mcp/server.ts'), 'utf8'))).toBe(true);
  });
});

const ajv = new Ajv({ strict: false, useDefaults: true });
const principal: Principal = { orgId: 'o1', kind: 'api_key', actorId: 'k1', email: null, roles: [], orgLevel: false, connectorIds: null };
const org: RuntimeOrg = { id: 'o1', catalogVersion: 1, plan: 'starter', subscriptionStatus: 'active', trialExpiresAt: null };

function tool(name: string, over: Partial<CatalogTool> = {}): CatalogTool {
  const inputSchema: CatalogTool['inputSchema'] = { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'], additionalProperties: false };
  return {
    id: `id-${name}`,
    kind: 'tool',
    name,
    description: name,
    inputSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    enabled: true,
    readOnly: true,
    requiresApproval: false,
    approvalTtlSeconds: 60,
    approvalEmails: [],
    // No driver serves this type: a call that passes every check is stopped before any connector (not_run).
    connector: { id: 'c1', type: 'nothing_here', config: {}, credential: null, allowWrite: false, allowDdl: false } as CatalogTool['connector'],
    spec: {} as CatalogTool['spec'],
    validate: ajv.compile(inputSchema),
    ...over,
  };
}

interface Fake {
  deps: ToolRuntimeDeps;
  denials: unknown[];
  rows: Array<{ outcome: string; details: Record<string, unknown> }>;
  refunds: number;
}

function fake(opts: { quotaLeft?: boolean; accepting?: boolean; auditFails?: boolean } = {}): Fake {
  const tools = [tool('items'), tool('off', { enabled: false }), tool('flagged', { requiresApproval: true })];
  const catalog: OrgCatalog = { version: 1, tools, byName: new Map(tools.map((t) => [t.name, t])), items: [] };
  const f: Fake = { denials: [], rows: [], refunds: 0, deps: undefined as unknown as ToolRuntimeDeps };
  const pending: ToolResult = { content: [{ type: 'text', text: 'held' }], structuredContent: { status: 'pending_approval' } };
  f.deps = {
    catalog: { get: async () => catalog },
    approvals: { hold: async () => pending, status: async () => ({ content: [{ type: 'text', text: 'pending' }] }) },
    audit: {
      toolCall: async (row) => {
        if (opts.auditFails) throw new Error('disk full');
        f.rows.push(row as (typeof f.rows)[number]);
      },
      denial: (row) => void f.denials.push(row),
      accepting: () => opts.accepting ?? true,
    },
    usage: {
      reserve: async () => (opts.quotaLeft === false ? null : ({ orgId: 'o1' } as never)),
      refund: () => void f.refunds++,
    },
    outbound: {} as ToolRuntimeDeps['outbound'],
    config: {} as ToolRuntimeDeps['config'],
  };
  return f;
}

/** The call resolves (a refusal is not thrown) to an outcome of `kind`; nothing is recorded as a refusal by the runtime. */
async function outcomeOf(f: Fake, name: string, args: Record<string, unknown>, kind: CallOutcome['kind'], o: RuntimeOrg = org): Promise<CallOutcome> {
  const outcome = await callTool(f.deps, o, principal, name, args);
  expect(outcome.kind).toBe(kind);
  expect(f.denials).toEqual([]);
  return outcome;
}

function wire(outcome: CallOutcome): { code: number; message: string } {
  if ('result' in outcome) throw new Error(`${outcome.kind} is an answer`);
  const err = toolCallError(outcome);
  expect(err).toBeInstanceOf(RpcError);
  return { code: err.code, message: err.message };
}

describe('a refused call is a domain outcome, worded by mcp/server.ts', () => {
  test('not found and disabled: one wording, so a disabled tool stays hidden', async () => {
    const f = fake();
    const unknown = wire(await outcomeOf(f, 'nope', { sql: 'x' }, 'not_found'));
    expect(unknown).toEqual({ code: RpcCode.InvalidParams, message: 'Unknown tool: nope. Call tools/list for the available tools.' });
    expect(wire(await outcomeOf(f, 'off', { sql: 'x' }, 'disabled'))).toEqual({ ...unknown, message: unknown.message.replace('nope', 'off') });
  });

  test('out of scope, invalid arguments (catalog and built-in tools), ended trial, used-up quota, busy audit log', async () => {
    const f = fake();
    const scoped = await callTool(f.deps, org, { ...principal, connectorIds: ['other'] }, 'items', { sql: 'x' });
    expect(scoped.kind).toBe('scope');
    expect(wire(scoped)).toEqual({ code: RpcCode.InsufficientScope, message: 'This credential may not call items.' });
    expect(wire(await outcomeOf(f, 'items', { sql: 1 }, 'invalid_arguments'))).toEqual({
      code: RpcCode.InvalidParams,
      message: 'Invalid arguments for items: arguments.sql must be string',
    });
    expect(wire(await outcomeOf(f, 'check_approval_status', {}, 'invalid_arguments'))).toEqual({
      code: RpcCode.InvalidParams,
      message: 'Invalid params: params.arguments.approvalId is required',
    });
    const ended = { ...org, subscriptionStatus: 'trialing', trialExpiresAt: new Date('2026-01-02T03:04:05.000Z') };
    expect(wire(await outcomeOf(f, 'items', { sql: 'x' }, 'trial_ended', ended))).toEqual({
      code: RpcCode.QuotaExceeded,
      message: 'The trial of this org ended at 2026-01-02T03:04:05.000Z: tool calls are paused until the org subscribes to a plan.',
    });
    expect(wire(await outcomeOf(fake({ quotaLeft: false }), 'items', { sql: 'x' }, 'quota_exceeded'))).toEqual({
      code: RpcCode.QuotaExceeded,
      message: 'Monthly tool-call quota exceeded: the starter plan includes 20000 tool calls per month. Upgrade the plan to continue.',
    });
    expect(wire(await outcomeOf(fake({ accepting: false }), 'items', { sql: 'x' }, 'audit_busy')).code).toBe(RpcCode.InternalError);
  });

  test('answers carry their result and their tool.called row; an unwritable row withholds the answer', async () => {
    const f = fake();
    const notRun = await outcomeOf(f, 'items', { sql: 'x' }, 'not_run');
    expect('result' in notRun && notRun.result.isError).toBe(true);
    expect(f.refunds).toBe(1);
    const held = await outcomeOf(f, 'flagged', { sql: 'x' }, 'held');
    expect('result' in held && held.result.structuredContent).toEqual({ status: 'pending_approval' });
    await outcomeOf(f, 'check_approval_status', { approvalId: 'a1' }, 'answered');
    expect(f.rows.map((r) => [r.outcome, r.details.counted])).toEqual([
      ['error', false],
      ['held', false],
      ['success', false],
    ]);
    const lost = await outcomeOf(fake({ auditFails: true }), 'items', { sql: 'x' }, 'unrecorded');
    expect(wire(lost)).toEqual({ code: RpcCode.InternalError, message: 'The call ran, but its audit record could not be written, so its result is withheld.' });
  });

  test('recordRefusal writes the row by its kind, with the code and message the server answered', async () => {
    const f = fake();
    const outcome = await callTool(f.deps, { ...org }, { ...principal, connectorIds: [] }, 'items', { sql: 'x' });
    if (outcome.kind !== 'scope') throw new Error(`expected scope, got ${outcome.kind}`);
    recordRefusal(f.deps, org, principal, outcome, wire(outcome), performance.now());
    expect(f.denials).toEqual([
      expect.objectContaining({
        action: 'tool.call_refused',
        targetId: 'items',
        outcome: 'denied',
        details: { kind: 'scope', code: RpcCode.InsufficientScope, reason: 'This credential may not call items.', connector_id: 'c1' },
      }),
    ]);
  });

  test('a refusal counts as the quota by its kind, never by the code it was answered with (decision 0337)', async () => {
    const quotaRefusals = async () => {
      const text = await registry.getSingleMetricAsString('toolgate_limit_refusals_total');
      return Number(/limit="quota"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const f = fake();
    const before = await quotaRefusals();
    // The quota's code on a scope refusal counts nothing; an ended trial and a used-up quota count, whatever the code.
    recordRefusal(f.deps, org, principal, { kind: 'scope', name: 'items' }, { code: RpcCode.QuotaExceeded, message: 'x' }, performance.now());
    expect(await quotaRefusals()).toBe(before);
    recordRefusal(f.deps, org, principal, { kind: 'trial_ended', name: 'items' }, { code: RpcCode.InternalError, message: 'x' }, performance.now());
    recordRefusal(f.deps, org, principal, { kind: 'quota_exceeded', name: 'items' }, { code: 0, message: 'x' }, performance.now());
    expect(await quotaRefusals()).toBe(before + 2);
    expect(f.denials.map((d) => (d as { details: { kind: string } }).details.kind)).toEqual(['scope', 'trial_ended', 'quota_exceeded']);
  });
});
