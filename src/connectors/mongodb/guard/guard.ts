/**
 * MongoDB read-only guard: decides whether a find (filter / projection / sort) or an aggregate pipeline may run on
 * a tool bound to one collection. Fail-closed allow-lists, never a deny-list:
 *
 *  - Stages: only those in STAGES. Every stage that writes ($out, $merge), reads server or cluster state
 *    ($collStats, $indexStats, $currentOp, $listSessions, $listLocalSessions, $planCacheStats, $changeStream,
 *    $listSearchIndexes, $shardedDataDistribution, $querySettings, ...), produces documents from nowhere
 *    ($documents: a pipeline that would not read this collection at all) or depends on Atlas ($search...) is
 *    absent, so it is refused.
 *  - Operators: every object key that starts with `$`, at any depth (filter, projection, sort, stage bodies,
 *    expressions) must be on OPERATORS. JavaScript is absent from it: $where, $function, $accumulator (and
 *    mapReduce is not reachable). The arguments are plain JSON, so no BSON Code value can come in; the only
 *    extended-JSON forms read are {"$oid": hex} and {"$date": ISO text}, turned into ObjectId / Date.
 *  - Other collections: $lookup and $graphLookup `from` and $unionWith `coll` name a collection as a plain string
 *    (the object form `{db, coll}` reaches another database and is refused): the tool's own collection, or, when the
 *    call carries the connector's collections (issue 38, lookup.ts), any of them whose tool is enabled, under its
 *    own policy; their nested pipelines are checked as pipelines, recursively ($facet too).
 *  - `$$` variables: the system variables that read data of this pipeline only (ROOT, CURRENT, REMOVE, NOW,
 *    DESCEND, PRUNE, KEEP) and user variables (a lower-case first letter, as MongoDB requires for names bound by
 *    `let`, `$map` `as` ... : `$$this`, `$$value`). Refused: $$USER_ROLES (the login's roles), $$CLUSTER_TIME,
 *    $$SEARCH_META and any other upper-case name.
 *  - Size: at most MAX_DEPTH levels of nesting, MAX_STAGES stages per pipeline, MAX_TEXT characters of JSON.
 *
 * The guard only decides; the driver adds the row cap ($limit, or the find limit), maxTimeMS and allowDiskUse false.
 */
import { ObjectId } from 'mongodb';
import { type Lookups, Refusal, checkGraphTarget, checkMatchField, policyStages, resolveCollection } from './lookup.ts';

export type { Lookups } from './lookup.ts';

export const MAX_DEPTH = 40;
const MAX_STAGES = 50;
const MAX_TEXT = 100_000;

/** Aggregation stages an agent may use. */
const STAGES: ReadonlySet<string> = new Set([
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$sort',
  '$limit',
  '$skip',
  '$group',
  '$count',
  '$unwind',
  '$sortByCount',
  '$bucket',
  '$bucketAuto',
  '$facet',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$lookup',
  '$graphLookup',
  '$unionWith',
  '$setWindowFields',
  '$densify',
  '$fill',
  '$redact',
]);

/** Query, projection and aggregation-expression operators (and accumulators) an agent may use. */
const OPERATORS: ReadonlySet<string> = new Set([
  // query: comparison, logic, element, evaluation (not $where), array, geo, bitwise, misc
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$exists',
  '$type',
  '$expr',
  '$jsonSchema',
  '$mod',
  '$regex',
  '$options',
  '$text',
  '$search',
  '$language',
  '$caseSensitive',
  '$diacriticSensitive',
  '$all',
  '$elemMatch',
  '$size',
  '$geoWithin',
  '$geoIntersects',
  '$near',
  '$nearSphere',
  '$geometry',
  '$maxDistance',
  '$minDistance',
  '$box',
  '$center',
  '$centerSphere',
  '$polygon',
  '$bitsAllClear',
  '$bitsAllSet',
  '$bitsAnyClear',
  '$bitsAnySet',
  '$comment',
  '$slice',
  '$meta',
  // expressions: arithmetic
  '$abs',
  '$add',
  '$ceil',
  '$divide',
  '$exp',
  '$floor',
  '$ln',
  '$log',
  '$log10',
  '$multiply',
  '$pow',
  '$round',
  '$sqrt',
  '$subtract',
  '$trunc',
  // array
  '$arrayElemAt',
  '$arrayToObject',
  '$concatArrays',
  '$filter',
  '$first',
  '$firstN',
  '$indexOfArray',
  '$isArray',
  '$last',
  '$lastN',
  '$map',
  '$maxN',
  '$minN',
  '$objectToArray',
  '$range',
  '$reduce',
  '$reverseArray',
  '$sortArray',
  '$zip',
  // boolean, comparison, conditional
  '$cmp',
  '$cond',
  '$ifNull',
  '$switch',
  // date
  '$dateAdd',
  '$dateDiff',
  '$dateFromParts',
  '$dateFromString',
  '$dateSubtract',
  '$dateToParts',
  '$dateToString',
  '$dateTrunc',
  '$dayOfMonth',
  '$dayOfWeek',
  '$dayOfYear',
  '$hour',
  '$isoDayOfWeek',
  '$isoWeek',
  '$isoWeekYear',
  '$millisecond',
  '$minute',
  '$month',
  '$second',
  '$week',
  '$year',
  '$toDate',
  // literal, object, set
  '$literal',
  '$getField',
  '$mergeObjects',
  '$setField',
  '$unsetField',
  '$allElementsTrue',
  '$anyElementTrue',
  '$setDifference',
  '$setEquals',
  '$setIntersection',
  '$setIsSubset',
  '$setUnion',
  // string
  '$concat',
  '$indexOfBytes',
  '$indexOfCP',
  '$ltrim',
  '$regexFind',
  '$regexFindAll',
  '$regexMatch',
  '$replaceOne',
  '$replaceAll',
  '$rtrim',
  '$split',
  '$strLenBytes',
  '$strLenCP',
  '$strcasecmp',
  '$substr',
  '$substrBytes',
  '$substrCP',
  '$toLower',
  '$toString',
  '$trim',
  '$toUpper',
  // trigonometry
  '$sin',
  '$cos',
  '$tan',
  '$asin',
  '$acos',
  '$atan',
  '$atan2',
  '$asinh',
  '$acosh',
  '$atanh',
  '$sinh',
  '$cosh',
  '$tanh',
  '$degreesToRadians',
  '$radiansToDegrees',
  // type
  '$convert',
  '$isNumber',
  '$toBool',
  '$toDecimal',
  '$toDouble',
  '$toInt',
  '$toLong',
  '$toObjectId',
  // accumulators and window functions (not $accumulator: JavaScript)
  '$avg',
  '$bottom',
  '$bottomN',
  '$count',
  '$max',
  '$min',
  '$push',
  '$addToSet',
  '$stdDevPop',
  '$stdDevSamp',
  '$sum',
  '$top',
  '$topN',
  '$median',
  '$percentile',
  '$covariancePop',
  '$covarianceSamp',
  '$denseRank',
  '$derivative',
  '$documentNumber',
  '$expMovingAvg',
  '$integral',
  '$linearFill',
  '$locf',
  '$rank',
  '$shift',
  '$rand',
  // misc expression operators
  '$let',
  '$binarySize',
  '$bsonSize',
  '$sampleRate',
]);

/** System variables that only read the pipeline's own documents or the clock. */
const SYSTEM_VARIABLES: ReadonlySet<string> = new Set(['ROOT', 'CURRENT', 'REMOVE', 'NOW', 'DESCEND', 'PRUNE', 'KEEP']);

type Doc = Record<string, unknown>;

type MongoCall = { kind: 'find'; filter: Doc; projection?: Doc; sort?: Doc; limit: number } | { kind: 'aggregate'; pipeline: Doc[]; limit: number };

/** `touched`: with lookups, every collection the call reads (its own first), for the audit row. */
export type MongoVerdict = { ok: true; call: MongoCall; touched?: string[] } | { ok: false; reason: string };

/** What one call's check carries down the pipelines: the tool's collection, the connector's (issue 38), what was read. */
interface GuardCtx {
  collection: string;
  lookups?: Lookups;
  touched: Set<string>;
}

const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

const clip = (s: string, max = 60): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * Checks a value at any position: keys starting with `$` must be allowed operators, `$$` strings allowed
 * variables, and the only extended JSON read is $oid / $date (converted). Returns the value to send.
 */
function checkValue(v: unknown, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new Refusal(`the query is nested more than ${MAX_DEPTH} levels deep`);
  if (typeof v === 'string') {
    if (v.startsWith('$$')) checkVariable(v);
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => checkValue(x, depth + 1));
  if (!isDoc(v)) return v;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === '$oid') return toObjectId(v.$oid);
  if (keys.length === 1 && keys[0] === '$date') return toDate(v.$date);
  const out: Doc = {};
  for (const k of keys) {
    if (k.startsWith('$') && !OPERATORS.has(k)) throw new Refusal(operatorRefusal(k));
    if (k.includes('\u0000')) throw new Refusal('a field name contains a NUL character');
    out[k] = checkValue(v[k], depth + 1);
  }
  return out;
}

function operatorRefusal(k: string): string {
  if (k === '$where' || k === '$function' || k === '$accumulator' || k === '$code') return `${k} runs JavaScript on the server, which is not allowed`;
  if (STAGES.has(k) || k === '$out' || k === '$merge') return `${k} is a pipeline stage, not allowed in this position`;
  return `operator ${clip(k)} is not on the list of allowed operators`;
}

function checkVariable(s: string): void {
  const name = /^\$\$([A-Za-z_][A-Za-z0-9_]*)/.exec(s)?.[1];
  if (name === undefined) throw new Refusal(`variable ${clip(s)} could not be understood`);
  if (SYSTEM_VARIABLES.has(name)) return;
  if (/^[a-z]/.test(name)) return; // user variables (let, $map/$filter `as`, $$this, $$value)
  throw new Refusal(`system variable $$${clip(name)} is not allowed`);
}

function toObjectId(v: unknown): ObjectId {
  if (typeof v !== 'string' || !/^[0-9a-fA-F]{24}$/.test(v)) throw new Refusal('{"$oid": ...} takes 24 hexadecimal digits');
  return new ObjectId(v);
}

function toDate(v: unknown): Date {
  const d = typeof v === 'string' || typeof v === 'number' ? new Date(v) : new Date(NaN);
  if (Number.isNaN(d.getTime())) throw new Refusal('{"$date": ...} takes an ISO 8601 date or milliseconds since 1970');
  return d;
}

function checkPipeline(pipeline: unknown, g: GuardCtx, depth: number, where: string): Doc[] {
  if (!Array.isArray(pipeline)) throw new Refusal(`${where} must be an array of stages`);
  if (pipeline.length > MAX_STAGES) throw new Refusal(`${where} has more than ${MAX_STAGES} stages`);
  return pipeline.map((stage) => checkStage(stage, g, depth + 1));
}

/**
 * `$lookup` and `$unionWith` (object form): the collection read resolved (resolveCollection), its policy's stages
 * placed before the agent's own sub-pipeline (a `$lookup` with localField/foreignField then takes the concise form
 * of MongoDB 5.0, whose equality match must not name a hidden or masked field).
 */
function checkJoinStage(name: '$lookup' | '$unionWith', body: Doc, g: GuardCtx, depth: number): Doc {
  const key = name === '$lookup' ? 'from' : 'coll';
  const policy = resolveCollection(body[key], name, g.collection, g.lookups, g.touched);
  const stages = policyStages(body[key] as string, policy);
  if (name === '$lookup') checkMatchField(body.foreignField, '$lookup foreignField', body[key] as string, policy);
  const { pipeline, ...rest } = body;
  const out = checkValue(rest, depth + 1) as Doc;
  const own = pipeline === undefined ? [] : checkPipeline(pipeline, g, depth, `${name} pipeline`);
  if (pipeline !== undefined || stages.length > 0) out.pipeline = [...stages, ...own];
  return { [name]: out };
}

function checkStage(stage: unknown, g: GuardCtx, depth: number): Doc {
  if (depth > MAX_DEPTH) throw new Refusal(`the pipeline is nested more than ${MAX_DEPTH} levels deep`);
  if (!isDoc(stage)) throw new Refusal('each pipeline stage must be an object with one stage name');
  const keys = Object.keys(stage);
  if (keys.length !== 1) throw new Refusal('each pipeline stage must be an object with exactly one stage name');
  const name = keys[0]!;
  if (!STAGES.has(name)) {
    if (name === '$out' || name === '$merge') throw new Refusal(`${name} writes to a collection; this tool is read-only`);
    throw new Refusal(`stage ${clip(name)} is not on the list of allowed stages`);
  }
  const body = stage[name];
  switch (name) {
    case '$lookup':
      if (!isDoc(body)) throw new Refusal('$lookup takes an object');
      return checkJoinStage(name, body, g, depth);
    case '$graphLookup': {
      if (!isDoc(body)) throw new Refusal('$graphLookup takes an object');
      const policy = resolveCollection(body.from, '$graphLookup', g.collection, g.lookups, g.touched);
      checkGraphTarget(body.from as string, policy);
      return { [name]: checkValue(body, depth + 1) };
    }
    case '$unionWith': {
      if (typeof body === 'string') {
        const stages = policyStages(body, resolveCollection(body, '$unionWith', g.collection, g.lookups, g.touched));
        return { [name]: stages.length > 0 ? { coll: body, pipeline: stages } : body };
      }
      if (!isDoc(body)) throw new Refusal('$unionWith takes a collection name or an object');
      return checkJoinStage(name, body, g, depth);
    }
    case '$facet': {
      if (!isDoc(body)) throw new Refusal('$facet takes an object of pipelines');
      const out: Doc = {};
      for (const [k, p] of Object.entries(body)) {
        if (k.startsWith('$')) throw new Refusal('a $facet output name may not start with $');
        out[k] = checkPipeline(p, g, depth, `$facet ${clip(k)}`);
      }
      return { [name]: out };
    }
    default:
      return { [name]: checkValue(body, depth + 1) };
  }
}

const FIND_KEYS = new Set(['filter', 'projection', 'sort', 'limit']);

/** A find's arguments checked: filter, projection and sort as documents with allowed operators. */
function checkFind(args: Record<string, unknown>, limit: number): MongoCall {
  for (const k of Object.keys(args)) {
    if (!FIND_KEYS.has(k)) throw new Refusal(`unknown argument "${clip(k)}": only filter, projection, sort, limit or pipeline are accepted`);
  }
  const part = (key: string): Doc | undefined => {
    const v = args[key];
    if (v === undefined) return undefined;
    if (!isDoc(v)) throw new Refusal(`the argument "${key}" must be an object`);
    return checkValue(v, 0) as Doc;
  };
  const filter = part('filter') ?? {};
  const projection = part('projection');
  const sort = part('sort');
  if (sort) {
    for (const [k, dir] of Object.entries(sort)) {
      if (dir !== 1 && dir !== -1 && !(isDoc(dir) && Object.keys(dir).length === 1 && '$meta' in dir)) {
        throw new Refusal(`sort direction of "${clip(k)}" must be 1 or -1`);
      }
    }
  }
  return { kind: 'find', filter, ...(projection ? { projection } : {}), ...(sort ? { sort } : {}), limit };
}

/**
 * Checks one call's arguments: either `pipeline` (an aggregate) or `filter` / `projection` / `sort` (a find), with
 * `limit` (1..maxLimit) in both. Returns the call to run (extended JSON converted) or the reason it is refused.
 * `lookups` (issue 38, docs/decisions/0298): the connector's collections; `$lookup`, `$graphLookup` and `$unionWith`
 * may then read any of them whose tool is enabled, each under its own policy (lookup.ts), and the tool's own
 * collection's policy runs first in its pipeline. Unset: the tool's own collection alone, as before.
 */
export function guardMongoCall(args: Record<string, unknown>, collection: string, maxLimit: number, defaultLimit: number, lookups?: Lookups): MongoVerdict {
  const g: GuardCtx = { collection, touched: new Set([collection]), ...(lookups ? { lookups } : {}) };
  try {
    let size: number;
    try {
      size = JSON.stringify(args).length;
    } catch {
      throw new Refusal('the arguments are not JSON');
    }
    if (size > MAX_TEXT) throw new Refusal(`the arguments are longer than ${MAX_TEXT} characters`);
    const { limit = defaultLimit } = args;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
      throw new Refusal(`the argument "limit" must be an integer from 1 to ${maxLimit}`);
    }
    const ownStages = policyStages(collection, lookups?.get(collection)?.policy);
    let call: MongoCall;
    if ('pipeline' in args) {
      for (const k of Object.keys(args)) {
        if (k !== 'pipeline' && k !== 'limit')
          throw new Refusal(`"${clip(k)}" cannot be combined with "pipeline": put $match / $project / $sort stages in the pipeline`);
      }
      call = { kind: 'aggregate', pipeline: [...ownStages, ...checkPipeline(args.pipeline, g, 0, 'pipeline')], limit };
    } else {
      if (ownStages.length > 0) throw new Refusal('this collection has a policy, which applies to a pipeline only: send a "pipeline"');
      call = checkFind(args, limit);
    }
    return lookups ? { ok: true, call, touched: [...g.touched] } : { ok: true, call };
  } catch (e) {
    if (e instanceof Refusal) {
      const what = lookups ? " (and, through $lookup, $graphLookup or $unionWith, of this connector's enabled collections)" : '';
      return { ok: false, reason: `Only a read of collection "${clip(collection, 120)}"${what} is allowed (read-only tool): ${e.message}.` };
    }
    if (e instanceof RangeError) return { ok: false, reason: 'The query is nested too deeply.' };
    throw e;
  }
}
