// Issue 38 on MongoDB (docs/decisions/0298): $lookup, $graphLookup and $unionWith read only the connector's
// collections whose tools are enabled, each under its own policy, applied inside the lookup before any stage of the
// agent's. No MongoDB server here: the guard's verdict (the pipeline the driver would send) is what is checked, as in
// mongodb-guard.test.ts; the policy stages' expressions are then evaluated by a small interpreter of the operators
// they use, so a masked value is proved masked, not just present.
import { describe, expect, test } from 'bun:test';
import { guardMongoCall, type Lookups, type MongoVerdict } from '../../src/connectors/mongodb/guard/guard.ts';
import { policyStages } from '../../src/connectors/mongodb/guard/lookup.ts';
import type { ToolPolicy } from '../../src/connectors/types.ts';

const none: ToolPolicy = { hidden_columns: [], masked_columns: [], row_filter: null };
const customersPolicy: ToolPolicy = {
  hidden_columns: ['national_id', 'address.street'],
  masked_columns: [
    { column: 'email', mask: 'fixed', text: '$redacted' },
    { column: 'phone', mask: 'last_n', n: 2 },
  ],
  row_filter: null,
};
const lookups: Lookups = new Map([
  ['orders', { enabled: true }],
  ['customers', { enabled: true, policy: customersPolicy }],
  ['notes', { enabled: true, policy: none }],
  ['payroll', { enabled: false }],
  ['filtered', { enabled: true, policy: { ...none, row_filter: 'region = :caller.region' } }],
  ['hashed', { enabled: true, policy: { ...none, masked_columns: [{ column: 'email', mask: 'hash' }] } }],
]);

type Doc = Record<string, unknown>;
const guard = (args: Doc, l: Lookups | undefined = lookups): MongoVerdict => guardMongoCall(args, 'orders', 1000, 100, l);
function allowed(args: Doc, l?: Lookups): MongoVerdict & { ok: true } {
  const v = guard(args, l);
  if (!v.ok) throw new Error(`expected ${JSON.stringify(args)} to be allowed, got: ${v.reason}`);
  return v;
}
function refused(args: Doc, l?: Lookups): string {
  const v = guard(args, l);
  if (v.ok) throw new Error(`expected ${JSON.stringify(args)} to be refused, got ${JSON.stringify(v)}`);
  return v.reason;
}
const pipelineOf = (v: MongoVerdict & { ok: true }): Doc[] => {
  if (v.call.kind !== 'aggregate') throw new Error('not an aggregate');
  return v.call.pipeline;
};
const POLICY_STAGES = policyStages('customers', customersPolicy);

describe('mongodb $lookup across the connector: which collections', () => {
  test('a $lookup onto an enabled collection without rules is sent as written, and both are touched', () => {
    const stage = { $lookup: { from: 'notes', localField: 'id', foreignField: 'order_id', as: 'notes' } };
    const v = allowed({ pipeline: [stage] });
    expect(pipelineOf(v)).toEqual([{ $lookup: { from: 'notes', localField: 'id', foreignField: 'order_id', as: 'notes' } }]);
    expect(v.touched).toEqual(['orders', 'notes']);
  });

  test('a disabled collection is refused by name through every stage that reads one', () => {
    for (const stage of [
      { $lookup: { from: 'payroll', localField: 'id', foreignField: 'id', as: 'p' } },
      { $lookup: { from: 'payroll', pipeline: [], as: 'p' } },
      { $graphLookup: { from: 'payroll', startWith: '$id', connectFromField: 'id', connectToField: 'id', as: 'p' } },
      { $unionWith: 'payroll' },
      { $unionWith: { coll: 'payroll', pipeline: [] } },
      { $facet: { a: [{ $lookup: { from: 'orders', as: 'x', pipeline: [{ $unionWith: 'payroll' }] } }] } },
    ]) {
      expect(refused({ pipeline: [stage] })).toContain('"payroll", whose tool is disabled');
    }
  });

  test("a collection that is not the connector's, another database, or a non-string is refused", () => {
    expect(refused({ pipeline: [{ $lookup: { from: 'system.users', pipeline: [], as: 'x' } }] })).toContain('not a collection of this connector');
    expect(refused({ pipeline: [{ $lookup: { from: { db: 'admin', coll: 'system.users' }, pipeline: [], as: 'x' } }] })).toContain('another database');
    expect(refused({ pipeline: [{ $unionWith: { coll: 'Customers' } }] })).toContain('"Customers"');
  });

  test("without the connector's collections only the tool's own is read, as before", () => {
    const v = guardMongoCall({ pipeline: [{ $lookup: { from: 'notes', pipeline: [], as: 'x' } }] }, 'orders', 1000, 100);
    expect(v.ok ? 'allowed' : v.reason).toContain("not this tool's collection");
    expect(guardMongoCall({ pipeline: [{ $unionWith: 'orders' }] }, 'orders', 1000, 100)).toEqual({
      ok: true,
      call: { kind: 'aggregate', pipeline: [{ $unionWith: 'orders' }], limit: 100 },
    });
  });
});

describe("mongodb $lookup across the connector: the looked-up collection's policy", () => {
  test("its hidden fields are removed and masks applied before the agent's own sub-pipeline", () => {
    const own = [{ $match: { national_id: { $regex: '^1' } } }, { $project: { national_id: 1, email: 1 } }];
    const v = allowed({ pipeline: [{ $lookup: { from: 'customers', let: { c: '$customer_id' }, pipeline: own, as: 'c' } }] });
    const lookup = (pipelineOf(v)[0] as { $lookup: { pipeline: Doc[] } }).$lookup;
    expect(lookup.pipeline).toEqual([...POLICY_STAGES, ...own]);
    expect(POLICY_STAGES[0]).toEqual({ $unset: ['national_id', 'address.street'] });
    expect(v.touched).toEqual(['orders', 'customers']);
  });

  test('a localField/foreignField lookup gets the policy as its pipeline (the concise form)', () => {
    const v = allowed({ pipeline: [{ $lookup: { from: 'customers', localField: 'customer_id', foreignField: 'id', as: 'c' } }] });
    expect(pipelineOf(v)).toEqual([{ $lookup: { from: 'customers', localField: 'customer_id', foreignField: 'id', as: 'c', pipeline: POLICY_STAGES } }]);
  });

  test('matching on a hidden or masked field, or a path above or below one, is refused (no oracle by matching)', () => {
    for (const foreignField of ['national_id', 'email', 'address', 'address.street', 'address.street.no', 'phone']) {
      expect(refused({ pipeline: [{ $lookup: { from: 'customers', localField: 'x', foreignField, as: 'c' } }] })).toContain('its policy hides or masks');
    }
    allowed({ pipeline: [{ $lookup: { from: 'customers', localField: 'x', foreignField: 'address.city', as: 'c' } }] });
  });

  test('$unionWith in both forms gets the policy first', () => {
    expect(pipelineOf(allowed({ pipeline: [{ $unionWith: 'customers' }] }))).toEqual([{ $unionWith: { coll: 'customers', pipeline: POLICY_STAGES } }]);
    const own = [{ $match: { email: { $exists: true } } }];
    expect(pipelineOf(allowed({ pipeline: [{ $unionWith: { coll: 'customers', pipeline: own } }] }))).toEqual([
      { $unionWith: { coll: 'customers', pipeline: [...POLICY_STAGES, ...own] } },
    ]);
  });

  test('nested lookups (inside a lookup, a union, a facet) are governed the same way', () => {
    const v = allowed({
      pipeline: [{ $facet: { a: [{ $lookup: { from: 'notes', as: 'n', pipeline: [{ $lookup: { from: 'customers', as: 'c', pipeline: [] } }] } }] } }],
    });
    const facet = (pipelineOf(v)[0] as { $facet: { a: { $lookup: { pipeline: { $lookup: { pipeline: Doc[] } }[] } }[] } }).$facet;
    expect(facet.a[0]!.$lookup.pipeline[0]!.$lookup.pipeline).toEqual(POLICY_STAGES);
  });

  test('$graphLookup onto a collection with rules is refused (it returns stored documents); without rules it runs', () => {
    const g = (from: string) => ({ $graphLookup: { from, startWith: '$id', connectFromField: 'id', connectToField: 'parent', as: 'tree' } });
    expect(refused({ pipeline: [g('customers')] })).toContain('$graphLookup reads collection "customers" as stored');
    expect(pipelineOf(allowed({ pipeline: [g('notes')] }))).toEqual([g('notes')]);
  });

  test('what a pipeline cannot apply (a row filter, a hash mask) refuses the lookup, naming the collection', () => {
    expect(refused({ pipeline: [{ $lookup: { from: 'filtered', pipeline: [], as: 'f' } }] })).toContain('collection "filtered" has a row filter');
    expect(refused({ pipeline: [{ $unionWith: 'hashed' }] })).toContain('collection "hashed" has a hash mask');
  });

  test("the tool's own collection's policy runs first in its pipeline; a find under it is refused", () => {
    const own: Lookups = new Map([['orders', { enabled: true, policy: { ...none, hidden_columns: ['cost'] } }]]);
    expect(pipelineOf(allowed({ pipeline: [{ $match: { cost: 1 } }] }, own))).toEqual([{ $unset: ['cost'] }, { $match: { cost: 1 } }]);
    expect(refused({ filter: { cost: 1 } }, own)).toContain('send a "pipeline"');
  });

  test('a policy field a pipeline cannot address is refused, never guessed', () => {
    expect(() => policyStages('c', { ...none, hidden_columns: ['$where'] })).toThrow('cannot address');
    expect(() => policyStages('c', { ...none, hidden_columns: ['a..b'] })).toThrow('cannot address');
  });
});

// The mask stages' expressions evaluated: only the operators policyStages emits, as MongoDB defines them.
function evaluate(e: unknown, doc: Doc, vars: Doc): unknown {
  if (typeof e === 'string') {
    if (e.startsWith('$$')) return vars[e.slice(2)];
    if (e.startsWith('$'))
      return e
        .slice(1)
        .split('.')
        .reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Doc)[k] : undefined), doc);
    return e;
  }
  if (Array.isArray(e)) return e.map((x) => evaluate(x, doc, vars));
  if (!e || typeof e !== 'object') return e;
  const [op, arg] = Object.entries(e as Doc)[0]!;
  const a = (x: unknown) => evaluate(x, doc, vars);
  const args = Array.isArray(arg) ? arg : [arg];
  switch (op) {
    case '$literal':
      return arg;
    case '$cond':
      return a(args[0]) ? a(args[1]) : a(args[2]);
    case '$eq':
      return a(args[0]) === a(args[1]);
    case '$ifNull':
      return a(args[0]) ?? a(args[1]);
    case '$toString':
      return String(a(arg));
    case '$strLenCP':
      return [...String(a(arg))].length;
    case '$subtract':
      return (a(args[0]) as number) - (a(args[1]) as number);
    case '$max':
      return Math.max(...(args.map(a) as number[]));
    case '$range':
      return Array.from({ length: Math.max(0, (a(args[1]) as number) - (a(args[0]) as number)) }, (_, i) => i);
    case '$concat':
      return (args.map(a) as string[]).join('');
    case '$substrCP':
      return [...String(a(args[0]))].slice(a(args[1]) as number, (a(args[1]) as number) + (a(args[2]) as number)).join('');
    case '$reduce': {
      const r = arg as { input: unknown; initialValue: unknown; in: unknown };
      return (a(r.input) as unknown[]).reduce((value, this_) => evaluate(r.in, doc, { ...vars, value, this: this_ }), a(r.initialValue));
    }
    case '$let': {
      const l = arg as { vars: Doc; in: unknown };
      const bound = { ...vars };
      for (const [k, v] of Object.entries(l.vars)) bound[k] = a(v);
      return evaluate(l.in, doc, bound);
    }
    default:
      throw new Error(`operator ${op} not modelled`);
  }
}

describe('mongodb lookup policy stages: the values they produce', () => {
  const set = (POLICY_STAGES[1] as { $set: Doc }).$set;
  test('fixed masks replace every non-null value with the text, even one that looks like a field path', () => {
    expect(evaluate(set.email, { email: 'a@b.c' }, {})).toBe('$redacted');
    expect(evaluate(set.email, { email: null }, {})).toBe(null);
    expect(evaluate(set.email, {}, {})).toBe(undefined);
  });
  test('last_n masks keep the last n characters only', () => {
    expect(evaluate(set.phone, { phone: '+33 612345678' }, {})).toBe('***********78');
    expect(evaluate(set.phone, { phone: 'x' }, {})).toBe('x');
    expect(evaluate(set.phone, { phone: 12345 }, {})).toBe('***45');
  });
});
