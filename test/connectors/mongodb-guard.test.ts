// Unit tests of the MongoDB read-only guard and the BSON-to-JSON rules (no server: the guard only inspects the
// arguments; the values are built with the driver's own BSON classes).
import { describe, expect, test } from 'bun:test';
import { Binary, Decimal128, Long, ObjectId, Timestamp, UUID } from 'mongodb';
import { guardMongoCall, MAX_DEPTH, type MongoVerdict } from '../../src/connectors/mongodb/guard/guard.ts';
import { bsonToJson } from '../../src/connectors/mongodb/values.ts';
import { verifies } from '../requirements.ts';

const OWN = 'orders';
const guard = (args: Record<string, unknown>): MongoVerdict => guardMongoCall(args, OWN, 1000, 100);

function allowed(args: Record<string, unknown>): MongoVerdict & { ok: true } {
  const v = guard(args);
  if (!v.ok) throw new Error(`expected ${JSON.stringify(args)} to be allowed, got: ${v.reason}`);
  return v;
}

function refused(args: Record<string, unknown>, fragment?: RegExp): string {
  const v = guard(args);
  if (v.ok) throw new Error(`expected ${JSON.stringify(args)} to be refused`);
  expect(v.reason).toContain('read-only');
  if (fragment) expect(v.reason).toMatch(fragment);
  return v.reason;
}

describe('mongodb guard: find', () => {
  test('filter, projection, sort and limit are accepted with allowed operators', () => {
    verifies('CONN-MONGODB-GUARD');
    const v = allowed({
      filter: { status: 'open', total: { $gt: 10, $lte: 99 }, $or: [{ tag: { $in: ['a', 'b'] } }, { note: { $regex: '^x', $options: 'i' } }] },
      projection: { name: 1, _id: 0 },
      sort: { created: -1 },
      limit: 5,
    });
    expect(v.call).toEqual({
      kind: 'find',
      filter: { status: 'open', total: { $gt: 10, $lte: 99 }, $or: [{ tag: { $in: ['a', 'b'] } }, { note: { $regex: '^x', $options: 'i' } }] },
      projection: { name: 1, _id: 0 },
      sort: { created: -1 },
      limit: 5,
    });
    expect(allowed({}).call).toEqual({ kind: 'find', filter: {}, limit: 100 });
    allowed({ filter: { $expr: { $gt: ['$spent', '$budget'] } } });
    allowed({ filter: { items: { $elemMatch: { qty: { $gte: 2 } } } }, projection: { total: { $add: ['$a', '$b'] } } });
  });

  test('{"$oid"} and {"$date"} become an ObjectId and a Date; nothing else of extended JSON is read', () => {
    verifies('CONN-MONGODB-GUARD');
    const v = allowed({ filter: { _id: { $oid: '65a1b2c3d4e5f60718293a4b' }, at: { $gte: { $date: '2024-05-01T00:00:00Z' } } } });
    const filter = (v.call as { filter: Record<string, any> }).filter;
    expect(filter._id).toBeInstanceOf(ObjectId);
    expect(filter._id.toHexString()).toBe('65a1b2c3d4e5f60718293a4b');
    expect(filter.at.$gte).toEqual(new Date('2024-05-01T00:00:00Z'));
    refused({ filter: { _id: { $oid: 'nothex' } } }, /24 hexadecimal/);
    refused({ filter: { at: { $date: 'soon' } } }, /ISO 8601/);
    refused({ filter: { code: { $code: 'function () { return 1 }' } } }, /JavaScript/);
    refused({ filter: { n: { $numberLong: '1' } } }, /not on the list/);
  });

  test('JavaScript and unknown operators are refused at any depth', () => {
    verifies('CONN-MONGODB-GUARD');
    refused({ filter: { $where: 'sleep(10000) || true' } }, /\$where runs JavaScript/);
    refused({ filter: { $expr: { $function: { body: 'function () { return true }', args: [], lang: 'js' } } } }, /\$function runs JavaScript/);
    refused({ filter: { $and: [{ a: 1 }, { $or: [{ $where: 'true' }] }] } }, /\$where/);
    refused({ projection: { x: { $function: { body: 'f', args: [], lang: 'js' } } } }, /\$function/);
    refused({ filter: { a: { $unknownOp: 1 } } }, /not on the list/);
    refused({ sort: { a: 2 } }, /sort direction/);
    refused({ filter: 'x' as unknown as object }, /must be an object/);
  });

  test('arguments: limit range, unknown keys, size and depth', () => {
    verifies('CONN-MONGODB-GUARD');
    refused({ limit: 0 }, /limit/);
    refused({ limit: 1001 }, /limit/);
    refused({ limit: 1.5 }, /limit/);
    refused({ hint: { a: 1 } }, /unknown argument/);
    refused({ filter: { a: 'x'.repeat(100_001) } }, /longer/);
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < MAX_DEPTH + 2; i++) deep = { $and: [deep] };
    refused({ filter: deep }, /nested/);
  });
});

describe('mongodb guard: aggregate', () => {
  test('allowed stages and expressions pass; the pipeline is returned as checked', () => {
    verifies('CONN-MONGODB-GUARD');
    const pipeline = [
      { $match: { status: 'open' } },
      { $group: { _id: '$customer', total: { $sum: '$amount' }, n: { $count: {} } } },
      { $sort: { total: -1 } },
      { $project: { customer: '$_id', total: 1, big: { $cond: [{ $gt: ['$total', 100] }, true, false] } } },
      { $limit: 10 },
    ];
    expect(allowed({ pipeline, limit: 10 }).call).toEqual({ kind: 'aggregate', pipeline, limit: 10 });
    allowed({ pipeline: [{ $facet: { a: [{ $count: 'n' }], b: [{ $sortByCount: '$tag' }] } }] });
    allowed({ pipeline: [{ $set: { all: { $map: { input: '$items', as: 'it', in: { $multiply: ['$$it.qty', 2] } } } } }] });
    allowed({ pipeline: [{ $project: { r: '$$ROOT', now: '$$NOW', x: { $reduce: { input: '$a', initialValue: 0, in: { $add: ['$$value', '$$this'] } } } } }] });
    allowed({ pipeline: [{ $setWindowFields: { sortBy: { at: 1 }, output: { running: { $sum: '$v', window: { documents: ['unbounded', 'current'] } } } } }] });
  });

  test('stages that write, read server state, make documents from nothing or run JavaScript are refused', () => {
    verifies('CONN-MONGODB-GUARD');
    for (const [stage, fragment] of [
      [{ $out: 'stolen' }, /writes to a collection/],
      [{ $merge: { into: 'orders' } }, /writes to a collection/],
      [{ $collStats: { storageStats: {} } }, /not on the list of allowed stages/],
      [{ $indexStats: {} }, /allowed stages/],
      [{ $currentOp: { allUsers: true } }, /allowed stages/],
      [{ $listSessions: {} }, /allowed stages/],
      [{ $listLocalSessions: {} }, /allowed stages/],
      [{ $planCacheStats: {} }, /allowed stages/],
      [{ $changeStream: {} }, /allowed stages/],
      [{ $documents: [{ a: 1 }] }, /allowed stages/],
      [{ $listSearchIndexes: {} }, /allowed stages/],
      [{ $search: { text: { query: 'x', path: 'a' } } }, /allowed stages/],
      [
        { $group: { _id: null, x: { $accumulator: { init: 'function(){}', accumulate: 'f', accumulateArgs: [], merge: 'f', lang: 'js' } } } },
        /\$accumulator runs JavaScript/,
      ],
      [{ $addFields: { x: { $function: { body: 'f', args: [], lang: 'js' } } } }, /\$function runs JavaScript/],
      [{ $match: { $where: 'true' } }, /\$where/],
      [{ $project: { roles: '$$USER_ROLES' } }, /USER_ROLES/],
      [{ $project: { t: '$$CLUSTER_TIME' } }, /CLUSTER_TIME/],
      [{ $project: { t: '$$SEARCH_META' } }, /SEARCH_META/],
      [{ $match: {}, $limit: 1 }, /exactly one stage/],
    ] as const)
      refused({ pipeline: [stage] }, fragment);
    refused({ pipeline: [{ $facet: { a: [{ $out: 'x' }] } }] }, /writes/);
    refused({ pipeline: 'x' as unknown as unknown[] }, /array/);
    refused({ pipeline: [], filter: {} }, /cannot be combined/);
    refused({ pipeline: Array.from({ length: 51 }, () => ({ $match: {} })) }, /more than 50 stages/);
  });

  test("$lookup, $graphLookup and $unionWith only reach the tool's own collection, recursively", () => {
    verifies('CONN-MONGODB-GUARD');
    allowed({ pipeline: [{ $lookup: { from: OWN, localField: 'parent', foreignField: '_id', as: 'p' } }] });
    allowed({ pipeline: [{ $lookup: { from: OWN, let: { id: '$_id' }, pipeline: [{ $match: { $expr: { $eq: ['$parent', '$$id'] } } }], as: 'kids' } }] });
    allowed({ pipeline: [{ $graphLookup: { from: OWN, startWith: '$parent', connectFromField: 'parent', connectToField: '_id', as: 'chain' } }] });
    allowed({ pipeline: [{ $unionWith: OWN }, { $unionWith: { coll: OWN, pipeline: [{ $match: { a: 1 } }] } }] });
    for (const [stage, fragment] of [
      [{ $lookup: { from: 'users', localField: 'u', foreignField: '_id', as: 'u' } }, /"users", which is not/],
      [{ $lookup: { from: { db: 'admin', coll: 'system.users' }, localField: 'a', foreignField: 'b', as: 'x' } }, /as a string/],
      [{ $lookup: { pipeline: [{ $documents: [{ a: 1 }] }], as: 'x' } }, /as a string/],
      [{ $lookup: { from: OWN, pipeline: [{ $unionWith: 'secrets' }], as: 'x' } }, /"secrets"/],
      [{ $lookup: { from: OWN, pipeline: [{ $lookup: { from: 'secrets', pipeline: [], as: 'y' } }], as: 'x' } }, /"secrets"/],
      [{ $graphLookup: { from: 'secrets', startWith: '$a', connectFromField: 'a', connectToField: 'b', as: 'x' } }, /"secrets"/],
      [{ $unionWith: 'secrets' }, /"secrets"/],
      [{ $unionWith: { coll: 'secrets' } }, /"secrets"/],
      [{ $unionWith: { pipeline: [{ $documents: [] }] } }, /as a string/],
      [{ $unionWith: { coll: OWN, pipeline: [{ $out: 'x' }] } }, /writes/],
      [{ $facet: { a: [{ $lookup: { from: 'secrets', localField: 'a', foreignField: 'b', as: 'x' } }] } }, /"secrets"/],
    ] as const)
      refused({ pipeline: [stage] }, fragment);
  });
});

describe('mongodb values as JSON', () => {
  test('BSON types follow the JSON rules of every database type', () => {
    verifies('CONN-MONGODB-GUARD');
    const id = new ObjectId('65a1b2c3d4e5f60718293a4b');
    const doc = {
      _id: id,
      small: 42n,
      huge: 9007199254740993n,
      long: Long.fromString('123'),
      price: Decimal128.fromString('19.99'),
      precise: Decimal128.fromString('12345678901234567.89'),
      at: new Date('2024-05-01T12:30:00.123Z'),
      bytes: new Binary(Buffer.from([0, 255])),
      uuid: new UUID('0e6f8a52-3c1d-4b8e-9f00-1a2b3c4d5e6f'),
      ts: new Timestamp({ t: 10, i: 2 }),
      re: /ab+c/i,
      nested: [{ n: 1.5, inf: Infinity }],
      nothing: null,
    };
    expect(bsonToJson(doc)).toEqual({
      _id: '65a1b2c3d4e5f60718293a4b',
      small: 42,
      huge: '9007199254740993',
      long: 123,
      price: 19.99,
      precise: '12345678901234567.89',
      at: '2024-05-01T12:30:00.123Z',
      bytes: 'AP8=',
      uuid: '0e6f8a52-3c1d-4b8e-9f00-1a2b3c4d5e6f',
      ts: 'Timestamp(10, 2)',
      re: '/ab+c/i',
      nested: [{ n: 1.5, inf: 'Infinity' }],
      nothing: null,
    });
  });
});
