/**
 * MongoDB guard, issue 38 (docs/decisions/0298): which collections `$lookup`, `$graphLookup` and `$unionWith` may
 * read, and each one's policy turned into the stages that run first on its documents inside the lookup. A collection
 * is read through a lookup as if the agent called its tool: it must be one of the connector's collections whose tool
 * is enabled, its hidden fields are removed and its masked fields replaced before any stage of the agent's sees them.
 * What a pipeline stage cannot express (a row filter, which is SQL text; a `hash` mask, which needs HMAC) refuses
 * the lookup, naming the collection.
 */
import type { ColumnMask, ToolPolicy } from '../../types.ts';

type Doc = Record<string, unknown>;

export class Refusal extends Error {}

/** One collection of the connector as a lookup sees it: its tool row's state and policy. */
export interface LookupCollection {
  enabled: boolean;
  policy?: ToolPolicy;
}

/** The connector's collections by exact name (MongoDB names are case-sensitive). */
export type Lookups = ReadonlyMap<string, LookupCollection>;

const clip = (s: string, max = 60): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * Resolves a collection a stage reads. Without `lookups` (no tables given): the tool's own, as before. With them: a
 * collection of the connector whose tool is enabled; recorded in `touched`. Returns its policy (or undefined).
 */
export function resolveCollection(v: unknown, stage: string, own: string, lookups: Lookups | undefined, touched: Set<string>): ToolPolicy | undefined {
  if (!lookups) {
    if (typeof v !== 'string') throw new Refusal(`${stage} must name this tool's collection "${clip(own)}" as a string (another database is not allowed)`);
    if (v !== own) throw new Refusal(`${stage} reads collection "${clip(v)}", which is not this tool's collection`);
    return undefined;
  }
  if (typeof v !== 'string') throw new Refusal(`${stage} must name a collection of this connector as a string (another database is not allowed)`);
  const c = lookups.get(v);
  if (!c) throw new Refusal(`${stage} reads collection "${clip(v)}", which is not a collection of this connector`);
  if (!c.enabled) throw new Refusal(`${stage} reads collection "${clip(v)}", whose tool is disabled`);
  touched.add(v);
  return c.policy;
}

const hasRules = (p: ToolPolicy | undefined): p is ToolPolicy =>
  p !== undefined && (p.hidden_columns.length > 0 || p.masked_columns.length > 0 || p.row_filter !== null);

/** A policy's field names must be plain paths: no `$` at a segment start, no empty segment, no NUL. */
function checkPath(field: string, collection: string): void {
  if (field === '' || field.includes('\u0000') || field.split('.').some((s) => s === '' || s.startsWith('$'))) {
    throw new Refusal(`the policy of collection "${clip(collection)}" names field "${clip(field)}", which a pipeline cannot address`);
  }
}

/** A masked field's expression: null and missing stay as they are, any other value is transformed. */
function maskExpression(m: ColumnMask, collection: string): Doc {
  const path = `$${m.column}`;
  let masked: unknown;
  if (m.mask === 'fixed') masked = { $literal: m.text ?? '****' };
  else if (m.mask === 'last_n') {
    const n = Math.max(0, Math.trunc(m.n ?? 4));
    const stars = { $reduce: { input: { $range: [0, '$$k'] }, initialValue: '', in: { $concat: ['$$value', '*'] } } };
    masked = {
      $let: {
        vars: { s: { $toString: path } },
        in: { $let: { vars: { k: { $max: [0, { $subtract: [{ $strLenCP: '$$s' }, n] }] } }, in: { $concat: [stars, { $substrCP: ['$$s', '$$k', n] }] } } },
      },
    };
  } else throw new Refusal(`collection "${clip(collection)}" has a hash mask on "${clip(m.column)}", which a MongoDB pipeline cannot apply`);
  return { $cond: [{ $eq: [{ $ifNull: [path, null] }, null] }, path, masked] };
}

/**
 * The stages that apply a collection's policy to its documents, to run before any of the agent's: hidden fields
 * removed (`$unset`), masked ones replaced (`$set`). Empty for a collection without rules.
 */
export function policyStages(collection: string, policy: ToolPolicy | undefined): Doc[] {
  if (!hasRules(policy)) return [];
  if (policy.row_filter !== null) {
    throw new Refusal(`collection "${clip(collection)}" has a row filter, which a MongoDB pipeline cannot apply`);
  }
  const stages: Doc[] = [];
  for (const h of policy.hidden_columns) checkPath(h, collection);
  if (policy.hidden_columns.length > 0) stages.push({ $unset: [...policy.hidden_columns] });
  if (policy.masked_columns.length > 0) {
    const set: Doc = {};
    for (const m of policy.masked_columns) {
      checkPath(m.column, collection);
      set[m.column] = maskExpression(m, collection);
    }
    stages.push({ $set: set });
  }
  return stages;
}

/**
 * A field the server matches on raw documents before any stage runs (`$lookup` foreignField): naming a hidden or
 * masked field, or a path above or below one, would tell its values by which documents match. Refused.
 */
export function checkMatchField(field: unknown, stage: string, collection: string, policy: ToolPolicy | undefined): void {
  if (!hasRules(policy) || typeof field !== 'string') return;
  const guarded = [...policy.hidden_columns, ...policy.masked_columns.map((m) => m.column)];
  const related = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
  const hit = guarded.find((g) => related(field, g));
  if (hit !== undefined) throw new Refusal(`${stage} matches on field "${clip(field)}" of collection "${clip(collection)}", which its policy hides or masks`);
}

/** `$graphLookup` matches and returns raw documents (no stage of ours can run first): refused onto a collection with rules. */
export function checkGraphTarget(collection: string, policy: ToolPolicy | undefined): void {
  if (hasRules(policy)) {
    throw new Refusal(`$graphLookup reads collection "${clip(collection)}" as stored, and its policy cannot be applied there; use $lookup`);
  }
}
