/**
 * MongoDB saved-pipeline templates (issue 30): an aggregation pipeline in which `{"$param": "name"}` stands for the
 * value of a typed parameter. A placeholder can only ever be a value: it is never a stage, a stage's body, an
 * operator, a field name or a name a stage resolves (`from`, `as`, `localField`, ...), and what replaces it is a
 * scalar, or an array of scalars, of its declared type: never an object, so no operator or stage can come in
 * through an argument. A string that starts with `$` would be a field path or a variable inside an aggregation
 * expression, so there it is wrapped as `{"$literal": ...}`; in a query (`$match` outside `$expr`) it is a plain value
 * already. The bound pipeline then passes the guard (guard/guard.ts) like an agent's own.
 */
import { guardMongoCall } from './guard/guard.ts';
import type { SavedCheck, SavedParam, SavedStatement } from '../types.ts';
import { paramValueProblem } from '../shared/param-values.ts';

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys whose value names something (a collection, a field, an output) rather than being a value. */
const NAME_KEYS: ReadonlySet<string> = new Set([
  'from',
  'coll',
  'db',
  'as',
  'localField',
  'foreignField',
  'connectFromField',
  'connectToField',
  'depthField',
  'path',
  'includeArrayIndex',
  'into',
  'let',
]);

class MongoTemplateError extends Error {}

/** The parameter a placeholder object names, or null when `v` is not a placeholder. */
function placeholderName(v: unknown): string | null {
  if (!isDoc(v) || !('$param' in v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1 || typeof v.$param !== 'string')
    throw new MongoTemplateError('A placeholder is an object with the one key "$param" naming a parameter.');
  return v.$param;
}

type Context = 'expression' | 'query';

/** Walks a template, replacing each placeholder with `value(name, context)`; refuses placeholders out of value position. */
function walk(v: unknown, ctx: Context, key: string | null, value: (name: string, ctx: Context) => unknown, depth: number): unknown {
  if (depth > 60) throw new MongoTemplateError('The template is nested too deeply.');
  const name = placeholderName(v);
  if (name !== null) {
    if (key !== null && NAME_KEYS.has(key)) throw new MongoTemplateError(`A placeholder cannot stand for "${key}": it can only stand for a value.`);
    return value(name, ctx);
  }
  if (Array.isArray(v)) return v.map((x) => walk(x, ctx, key, value, depth + 1));
  if (!isDoc(v)) return v;
  const out: Doc = {};
  for (const [k, x] of Object.entries(v)) out[k] = walk(x, k === '$expr' ? 'expression' : ctx, k, value, depth + 1);
  return out;
}

/** Walks a pipeline: each stage must be an object; a stage's body may not be a placeholder; `$match` bodies are queries. */
function walkPipeline(pipeline: unknown, value: (name: string, ctx: Context) => unknown): Doc[] {
  if (!Array.isArray(pipeline)) throw new MongoTemplateError('The template must be a pipeline: an array of stages.');
  return pipeline.map((stage) => {
    if (placeholderName(stage) !== null || !isDoc(stage))
      throw new MongoTemplateError('A placeholder cannot stand for a stage: it can only stand for a value.');
    const out: Doc = {};
    for (const [op, body] of Object.entries(stage)) {
      if (placeholderName(body) !== null) throw new MongoTemplateError(`A placeholder cannot stand for the body of ${op}: it can only stand for a value.`);
      // Sub-pipelines ($lookup.pipeline, $facet, $unionWith.pipeline) are walked as values: their $match bodies
      // count as expressions here, so a `$` string is wrapped there too (stricter, never looser).
      out[op] = walk(body, op === '$match' ? 'query' : 'expression', op, value, 1);
    }
    return out;
  });
}

/** One argument as it goes into the pipeline: checked against its type (defence in depth: the inputSchema ran first). */
function bindValue(p: SavedParam, v: unknown, ctx: Context): unknown {
  if (p.type === 'array') {
    if (!Array.isArray(v)) throw new MongoTemplateError(`The argument ${p.name} must be an array.`);
    return v.map((x) => bindValue({ ...p, ...p.items!, type: p.items!.type }, x, ctx));
  }
  if (v === null) return null;
  // The same checks as every SQL type's (shared/param-values.ts): a real calendar date, an exact integer...
  const invalid = paramValueProblem(p, v);
  if (invalid) throw new MongoTemplateError(invalid);
  if (p.type === 'date' || p.type === 'timestamp') return { $date: v };
  if (typeof v === 'string' && ctx === 'expression' && v.startsWith('$')) return { $literal: v };
  return v;
}

/** The pipeline with every placeholder replaced by its argument; throws MongoTemplateError. */
export function bindMongoTemplate(template: unknown, params: readonly SavedParam[], args: Record<string, unknown>): Doc[] {
  const byName = new Map(params.map((p) => [p.name, p]));
  return walkPipeline(template, (name, ctx) => {
    const p = byName.get(name);
    if (!p) throw new MongoTemplateError(`The placeholder ${name} names no declared parameter.`);
    return bindValue(p, args[name] ?? p.default ?? null, ctx);
  });
}

const SAMPLE: Record<string, unknown> = { string: 'x', enum: 'x', integer: 0, number: 0, boolean: true, date: '2000-01-01', timestamp: '2000-01-01T00:00:00Z' };

/**
 * Save-time check of a template on a collection: placeholders only in value positions, every parameter used, and the
 * pipeline (with sample values) accepted by the guard. Returns the refusal, or null.
 */
export function checkMongoTemplate(template: unknown, params: readonly SavedParam[], collection: string): string | null {
  const used = new Set<string>();
  const sample = Object.fromEntries(params.map((p) => [p.name, p.type === 'array' ? [SAMPLE[p.items?.type ?? 'string']] : SAMPLE[p.type]]));
  try {
    walkPipeline(template, (name) => {
      if (!params.some((x) => x.name === name)) throw new MongoTemplateError(`The placeholder ${name} names no declared parameter.`);
      used.add(name);
      return null;
    });
    const unused = params.find((p) => !used.has(p.name));
    if (unused) return `The parameter ${unused.name} is declared but the pipeline does not use it.`;
    const pipeline = bindMongoTemplate(template, params, sample);
    const verdict = guardMongoCall({ pipeline }, collection, 1000, 100);
    return verdict.ok ? null : verdict.reason;
  } catch (err) {
    if (err instanceof MongoTemplateError) return err.message;
    throw err;
  }
}

/** Parsed templates per saved definition (a catalog's spec objects live as long as its version). */
const parsed = new WeakMap<SavedStatement, unknown>();

function templateOf(saved: SavedStatement): unknown {
  if (!parsed.has(saved)) parsed.set(saved, JSON.parse(saved.statement));
  return parsed.get(saved);
}

/** A saved pipeline tool's call: `{pipeline}` with the arguments bound, for the guard and the driver; or the refusal. */
export function savedPipelineArgs(saved: SavedStatement, args: Record<string, unknown>): { pipeline: Doc[] } | string {
  try {
    return { pipeline: bindMongoTemplate(templateOf(saved), saved.parameters, args) };
  } catch (err) {
    if (err instanceof MongoTemplateError || err instanceof SyntaxError) return err.message;
    throw err;
  }
}

/** Save-time check (ConnectorDriver.checkSaved): the statement is a JSON pipeline template; the first collection whose check passes is the tool's. */
export function checkSavedPipeline<T extends { collection: string }>(statement: string, params: SavedParam[], tables: T[]): SavedCheck<T> {
  let template: unknown;
  try {
    template = JSON.parse(statement);
  } catch {
    return { ok: false, reason: "A MongoDB saved tool's statement is a JSON pipeline: an array of stages." };
  }
  let first: string | null = null;
  for (const t of tables) {
    const reason = checkMongoTemplate(template, params, t.collection);
    if (reason === null) return { ok: true, target: t, write: false };
    first ??= reason;
  }
  return { ok: false, reason: first ?? 'The connector has no collection to run a pipeline on.' };
}
