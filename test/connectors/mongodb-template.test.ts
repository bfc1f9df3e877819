// Issue 30, MongoDB: saved pipeline templates whose typed placeholders can only stand for values (guard level: no
// MongoDB server here). Each case fails if a placeholder could become a stage, an operator, a name or a field path.
import { describe, expect, test } from 'bun:test';
import { bindMongoTemplate, checkMongoTemplate } from '../../src/connectors/mongodb/template.ts';
import { guardMongoCall } from '../../src/connectors/mongodb/guard/guard.ts';
import type { SavedParam } from '../../src/connectors/types.ts';
import type { MongoClient } from 'mongodb';
import { executeMongo, mongodbDriver } from '../../src/connectors/mongodb/driver.ts';

const OWN = 'orders';
const p = (name: string, type: SavedParam['type'] = 'string', extra: Partial<SavedParam> = {}): SavedParam => ({ name, type, description: name, ...extra });
const PARAMS = [p('status'), p('min_total', 'number'), p('since', 'date'), p('tags', 'array', { items: { type: 'string' } })];
const TEMPLATE = [
  { $match: { status: { $param: 'status' }, total: { $gte: { $param: 'min_total' } }, created: { $gte: { $param: 'since' } } } },
  { $match: { $expr: { $in: [{ $param: 'status' }, { $param: 'tags' }] } } },
  { $project: { _id: 0, status: 1, label: { $concat: ['status: ', { $param: 'status' }] } } },
];

describe('MongoDB pipeline templates', () => {
  test('a template binds typed values; the bound pipeline passes the guard', () => {
    expect(checkMongoTemplate(TEMPLATE, PARAMS, OWN)).toBeNull();
    const bound = bindMongoTemplate(TEMPLATE, PARAMS, { status: 'paid', min_total: 10, since: '2024-01-01', tags: ['paid', 'sent'] });
    expect(bound[0]).toEqual({ $match: { status: 'paid', total: { $gte: 10 }, created: { $gte: { $date: '2024-01-01' } } } });
    expect(bound[1]).toEqual({ $match: { $expr: { $in: ['paid', ['paid', 'sent']] } } });
    const verdict = guardMongoCall({ pipeline: bound }, OWN, 1000, 100);
    expect(verdict.ok).toBe(true);
  });

  test('a string that looks like a field path or variable stays a value: $literal in expressions, plain in queries', () => {
    for (const attack of ['$secret', '$$ROOT', '$$USER_ROLES', '$where']) {
      const bound = bindMongoTemplate(TEMPLATE, PARAMS, { status: attack, min_total: 0, since: '2024-01-01', tags: [attack] });
      expect((bound[0] as { $match: { status: unknown } }).$match.status).toBe(attack);
      expect(bound[1]).toEqual({ $match: { $expr: { $in: [{ $literal: attack }, [{ $literal: attack }]] } } });
      expect((bound[2] as { $project: { label: unknown } }).$project.label).toEqual({ $concat: ['status: ', { $literal: attack }] });
      // $$USER_ROLES is refused by the guard wherever it stands, even as a literal (fail-closed): never read as a variable.
      expect([attack, guardMongoCall({ pipeline: bound }, OWN, 1000, 100).ok]).toEqual([attack, attack !== '$$USER_ROLES']);
    }
  });

  test('an argument is never an object: no operator or stage can come in through one', () => {
    for (const attack of [{ $ne: null }, { $where: 'sleep(1000)' }, [{ $gt: '' }]]) {
      expect(() => bindMongoTemplate(TEMPLATE, PARAMS, { status: attack, min_total: 0, since: '2024-01-01', tags: ['x'] })).toThrow('must be');
    }
    expect(() => bindMongoTemplate(TEMPLATE, PARAMS, { status: 'x', min_total: '1', since: '2024-01-01', tags: ['x'] })).toThrow('min_total');
  });

  test('refused at save: a placeholder for a stage, a stage body, a name, with extra keys; unknown or unused names; what the guard refuses', () => {
    const cases: [unknown, SavedParam[], string][] = [
      [[{ $param: 'stage' }], [p('stage')], 'cannot stand for a stage'],
      [[{ $match: { $param: 'filter' } }], [p('filter')], 'body of $match'],
      [[{ $lookup: { from: { $param: 'coll' }, localField: 'a', foreignField: 'b', as: 'c' } }], [p('coll')], 'cannot stand for "from"'],
      [[{ $unionWith: { coll: { $param: 'coll' } } }], [p('coll')], 'cannot stand for "coll"'],
      [[{ $unwind: { path: { $param: 'field' } } }], [p('field')], 'cannot stand for "path"'],
      [[{ $match: { a: { $param: 'x', $ne: 1 } } }], [p('x')], 'one key'],
      [[{ $match: { a: { $param: 'y' } } }], [p('x')], 'y names no declared parameter'],
      [[{ $match: { a: 1 } }], [p('x')], 'x is declared'],
      [[{ $out: 'stolen' }], [], '$out'],
      [[{ $match: { $where: 'true' } }], [], '$where'],
      [[{ $lookup: { from: 'users', pipeline: [{ $match: { a: { $param: 'x' } } }], as: 'u' } }], [p('x')], 'users'],
      [{ $match: {} }, [], 'array of stages'],
    ];
    for (const [template, params, words] of cases) {
      const reason = checkMongoTemplate(template, params, OWN);
      expect([JSON.stringify(template), reason]).toEqual([JSON.stringify(template), expect.stringContaining(words)]);
    }
  });
});

describe('MongoDB saved pipeline tools in the driver (no server: a stand-in client records what it is sent)', () => {
  const targets = [
    { database: 'shop', collection: 'customers', kind: 'collection' as const },
    { database: 'shop', collection: OWN, kind: 'collection' as const },
  ];
  const statement = JSON.stringify([{ $match: { status: { $param: 'status' } } }, { $unionWith: { coll: OWN, pipeline: [{ $match: { a: 1 } }] } }]);

  test('checkSaved picks the collection the template may run on, and refuses what no collection accepts', async () => {
    const checked = await mongodbDriver.checkSaved!(statement, [p('status')], targets, false);
    expect(checked).toMatchObject({ ok: true, write: false, target: { collection: OWN } });
    const bad = await mongodbDriver.checkSaved!('[{"$out": "x"}]', [], targets, false);
    expect(bad).toMatchObject({ ok: false, reason: expect.stringContaining('$out') });
    expect(await mongodbDriver.checkSaved!('not json', [], targets, false)).toMatchObject({ ok: false, reason: expect.stringContaining('JSON pipeline') });
  });

  test('a call binds the arguments into the pipeline the driver sends; a wrong type sends nothing', async () => {
    const sent: unknown[] = [];
    const client = {
      db: () => ({
        collection: () => ({
          aggregate: (pipeline: unknown) => {
            sent.push(pipeline);
            return { close: async () => undefined, async *[Symbol.asyncIterator]() {} };
          },
        }),
      }),
    } as unknown as MongoClient;
    const saved = { statement, parameters: [p('status')], version: 1, parts: [statement], slots: [] };
    const tool = { name: 's', description: '', inputSchema: { type: 'object' as const, properties: {} }, target: { ...targets[1]!, saved } };
    const ctx = {
      connectorId: 'c',
      config: {} as never,
      credential: null,
      allowWrite: false,
      allowDdl: false,
      readOnly: true,
      limits: { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 10, maxResultBytes: 10_000 },
    };
    const result = await executeMongo(client, tool, { status: '$secret' }, ctx);
    expect(result.isError).toBeFalsy();
    expect(sent).toEqual([[{ $match: { status: '$secret' } }, { $unionWith: { coll: OWN, pipeline: [{ $match: { a: 1 } }] } }, { $limit: 11 }]]);
    const refused = await executeMongo(client, tool, { status: { $ne: null } }, ctx);
    expect([refused.isError, sent.length]).toEqual([true, 1]);
  });
});
