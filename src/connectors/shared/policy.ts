/**
 * Column and row policies of a SQL tool (issue 30, items 3 and 4): hidden columns, masked columns and a row filter
 * bound to the caller. Defence (docs/tool-policies.md, docs/decisions/0270-tool-policies-by-rewrite.md): the guard
 * finds every reference to the tool's table in the statement (CTEs of the same name are not the table) and each one
 * is replaced by a derived table,
 *
 *   (SELECT <visible columns, masked ones transformed> FROM <schema>.<table> WHERE (<row filter>) <fence>) AS <name>
 *
 * so the server itself resolves every name, `*`, `t.*`, whole-row value and function over the table against that
 * derived table: a hidden column does not exist there, a masked one exists only transformed, and filtered-out rows
 * are never produced. The fence (`OFFSET 0` on PostgreSQL, `LIMIT <max>` on MariaDB) keeps the planner from pulling
 * the derived table up or pushing the statement's own conditions below the row filter, so an expression that fails
 * (division by zero, a bad cast) is only ever evaluated on rows the caller may see: no error side channel. Caller
 * attributes, mask texts and the per-org hash key are driver parameters, never text. A call whose caller lacks an
 * attribute of the filter is refused before it runs (missingCallerAttribute); the filter would be FALSE: no rows, never all.
 */
import type { CallPolicy, ColumnMask, ToolPolicy } from '../types.ts';

/** A reference to the tool's table in the statement text, as the guard found it (UTF-16 offsets). */
export interface TableRef {
  start: number;
  end: number;
  /** The alias to add (the reference's own last name part, as written), or null when it already has one. */
  alias: string | null;
  /** With GuardOptions.tables: which listed table this reference is (its index); unset: the tool's own table. */
  table?: number;
}

/** What a dialect contributes to the derived table. */
export interface PolicyDialect {
  quote(name: string): string;
  /** A bound parameter of SQL type text or bytea; `resolution`: the text the server-side check analyses instead. */
  param(index: number, type: 'text' | 'bytea', resolution: boolean): string;
  /** PostgreSQL numbers parameters ($n, reused); MariaDB binds `?` by position (one value per occurrence). */
  numbered: boolean;
  /** A masked column's expression; `pads`: the HMAC pads of the org key (hash masks), bound as bytea. */
  mask(
    column: string,
    m: ColumnMask,
    bind: (value: string | Uint8Array, type: 'text' | 'bytea') => string,
    pads: { ipad: Uint8Array; opad: Uint8Array } | null,
  ): string;
  falseSql: string;
  fence: string;
}

/** `:caller.<attr>` in a row filter. */
const CALLER_ATTRIBUTE = /(?<!:):caller\.([A-Za-z_][A-Za-z0-9_]{0,63})\b/g;

/** The attribute names a row filter uses. */
function filterAttributes(filter: string): string[] {
  return [...new Set([...filter.matchAll(CALLER_ATTRIBUTE)].map((m) => m[1]!))];
}

/**
 * The first attribute a policy's row filter binds that the caller lacks, or null. A call that needs one is refused
 * naming it (decision 0307): the rows stay unseen, and the agent learns why rather than reading an empty result.
 */
export function missingCallerAttribute(policy: ToolPolicy, attributes: Readonly<Record<string, string>>): string | null {
  if (policy.row_filter === null) return null;
  return filterAttributes(policy.row_filter).find((a) => typeof attributes[a] !== 'string') ?? null;
}

/**
 * What keys a policy call's server-side resolution verdict besides the statement's shape: the policy, and whether the
 * row filter applies or became FALSE (a caller without an attribute), since the two texts resolve differently.
 */
export function resolutionKey(cp: CallPolicy): string {
  const filter = cp.policy.row_filter;
  const missing = filter !== null && filterAttributes(filter).some((a) => typeof cp.caller[a] !== 'string');
  return `${cp.key}${missing ? '\u0001none' : ''}`;
}

/** A stable text naming a policy (verdict and resolution caches). */
export function policyKey(p: ToolPolicy): string {
  return JSON.stringify([p.hidden_columns, p.masked_columns, p.row_filter]);
}

/** The HMAC pads of a 32-byte key, so the server computes HMAC-SHA256 with two sha256 calls. */
function hmacPads(key: Uint8Array): { ipad: Buffer; opad: Buffer } {
  const k = Buffer.alloc(64);
  Buffer.from(key).copy(k);
  return { ipad: Buffer.from(k.map((b) => b ^ 0x36)), opad: Buffer.from(k.map((b) => b ^ 0x5c)) };
}

/**
 * Binds values for one statement: numbered dialects reuse a value's number, positional ones add one per use.
 * `after`: how many numbered parameters the statement already has (a saved tool's arguments); ours follow them.
 */
class Binder {
  readonly params: (string | Uint8Array)[] = [];
  private readonly numbers = new Map<string | Uint8Array, number>();
  constructor(
    private readonly d: PolicyDialect,
    private readonly resolution: boolean,
    private readonly after = 0,
  ) {}
  bind = (value: string | Uint8Array, type: 'text' | 'bytea'): string => {
    if (this.d.numbered) {
      let n = this.numbers.get(value);
      if (n === undefined) {
        this.params.push(value);
        this.numbers.set(value, (n = this.after + this.params.length));
      }
      return this.d.param(n, type, this.resolution);
    }
    this.params.push(value);
    return this.d.param(this.params.length, type, this.resolution);
  };
}

/** A saved tool's statement as bound (shared/saved.ts BoundStatement): its values, and where each `?` is (positional). */
interface OwnParams {
  values: readonly unknown[];
  offsets?: readonly number[];
}

type Pads = { ipad: Buffer; opad: Buffer } | null;

/** The derived table's text for one reference. */
function derivedTable(d: PolicyDialect, qualified: string, columns: readonly string[], cp: CallPolicy, pads: Pads, b: Binder): string {
  const { policy } = cp;
  const hidden = new Set(policy.hidden_columns);
  const masks = new Map(policy.masked_columns.map((m) => [m.column, m]));
  const select = columns
    .filter((c) => !hidden.has(c))
    .map((c) => {
      const m = masks.get(c);
      return m ? `${d.mask(d.quote(c), m, b.bind, pads)} AS ${d.quote(c)}` : d.quote(c);
    });
  // A table whose every column is hidden still has rows: a constant keeps the derived table valid.
  if (select.length === 0) select.push(`NULL AS ${d.quote('_')}`);
  return `(SELECT ${select.join(', ')} FROM ${qualified} WHERE ${rowFilter(d, cp, b.bind)}${d.fence})`;
}

/** The row filter with each `:caller.<attr>` bound; FALSE when the caller lacks one of them (no rows, never all). */
function rowFilter(d: PolicyDialect, cp: CallPolicy, bind: (value: string, type: 'text') => string): string {
  const filter = cp.policy.row_filter;
  if (filter === null) return 'TRUE';
  for (const a of filterAttributes(filter)) if (typeof cp.caller[a] !== 'string') return d.falseSql;
  return `(${filter.replace(CALLER_ATTRIBUTE, (_m, a: string) => bind(cp.caller[a]!, 'text'))})`;
}

/** One table's part in a rewrite: its qualified name, its columns (as last introspected) and its policy for this call. */
export interface PolicyTable {
  qualified: string;
  columns: readonly string[];
  cp: CallPolicy;
}

/**
 * The statement with every reference to the tool's table replaced by the policy's derived table, every value to bind,
 * and (numbered dialects) the same text with typed NULLs in place of the policy's parameters, for the resolution
 * check. `own`: a saved tool's statement has parameters of its own; numbered ones keep `$1..$k` (the policy's are
 * numbered after), positional ones are merged with the policy's by where each marker stands in the text.
 */
export function applyPolicy(
  d: PolicyDialect,
  sql: string,
  refs: readonly TableRef[],
  qualified: string,
  columns: readonly string[],
  cp: CallPolicy,
  own: OwnParams | null = null,
): { statement: string; values: unknown[]; resolution: string } {
  const table: PolicyTable = { qualified, columns, cp };
  return applyPolicies(d, sql, refs, () => table, own);
}

/**
 * Issue 38 (docs/decisions/0292): the same over several tables. Each reference is replaced by ITS table's derived
 * table (`tableOf`, by the reference's `table` index; unset: the tool's own), so a join of two governed tables applies
 * both policies, each at every reference of its table. The caller-attribute values of all of them are bound after the
 * statement's own parameters (numbered) or in the text order of their markers (positional).
 */
export function applyPolicies(
  d: PolicyDialect,
  sql: string,
  refs: readonly TableRef[],
  tableOf: (ref: TableRef) => PolicyTable,
  own: OwnParams | null = null,
): { statement: string; values: unknown[]; resolution: string } {
  const after = own?.values.length ?? 0;
  const run = new Binder(d, false, after);
  const check = new Binder(d, true, after);
  const padsOf = new Map<PolicyTable, Pads>();
  const pads = (t: PolicyTable): Pads => {
    if (!padsOf.has(t)) padsOf.set(t, t.cp.maskKey ? hmacPads(t.cp.maskKey) : null);
    return padsOf.get(t)!;
  };
  let statement = sql;
  let resolution = sql;
  // From the end, so earlier offsets stay valid.
  const sorted = [...refs].sort((a, b) => b.start - a.start);
  for (const r of sorted) {
    const t = tableOf(r);
    const tail = r.alias === null ? '' : ` AS ${r.alias}`;
    statement = `${statement.slice(0, r.start)}${derivedTable(d, t.qualified, t.columns, t.cp, pads(t), run)}${tail}${statement.slice(r.end)}`;
    resolution = `${resolution.slice(0, r.start)}${derivedTable(d, t.qualified, t.columns, t.cp, pads(t), check)}${tail}${resolution.slice(r.end)}`;
  }
  // Positional binding follows the text order: the references were bound from the end, so each reference's values
  // are placed by its position, among the statement's own markers.
  const values = d.numbered ? [...(own?.values ?? []), ...run.params] : positional(d, refs, tableOf, pads, own);
  return { statement, values, resolution };
}

/**
 * Positional parameters in text order: each reference's derived table (all of one table alike) where the reference
 * stands, and a saved tool's own `?` where each stands (a marker is never inside a table name, so the two never overlap).
 */
function positional(
  d: PolicyDialect,
  refs: readonly TableRef[],
  tableOf: (ref: TableRef) => PolicyTable,
  pads: (t: PolicyTable) => Pads,
  own: OwnParams | null,
): unknown[] {
  const paramsOf = new Map<PolicyTable, readonly unknown[]>();
  const params = (t: PolicyTable): readonly unknown[] => {
    let p = paramsOf.get(t);
    if (p === undefined) {
      const one = new Binder(d, false);
      derivedTable(d, t.qualified, t.columns, t.cp, pads(t), one);
      paramsOf.set(t, (p = one.params));
    }
    return p;
  };
  if (own && own.values.length > 0 && own.offsets?.length !== own.values.length) throw new Error('positional parameters without their offsets');
  const marks: { at: number; values: readonly unknown[] }[] = refs.map((r) => ({ at: r.start, values: params(tableOf(r)) }));
  for (const [i, at] of (own?.offsets ?? []).entries()) marks.push({ at, values: [own!.values[i]] });
  return marks.sort((a, b) => a.at - b.at).flatMap((m) => m.values);
}

/** The columns an agent sees of a tool under `policy`, with a note on masked ones (tools/list descriptions). */
export function describedColumns(columns: readonly { name: string; type: string }[], policy: ToolPolicy): string[] {
  const hidden = new Set(policy.hidden_columns);
  const masked = new Map(policy.masked_columns.map((m) => [m.column, m.mask]));
  return columns
    .filter((c) => !hidden.has(c.name))
    .map((c) => (masked.has(c.name) ? `${c.name} text (masked: ${masked.get(c.name)!.replace('_', '-')})` : `${c.name} ${c.type}`));
}

/** Words that would give a row filter a structure of its own (a subquery, a set operation, a clause after WHERE). */
const FILTER_WORDS =
  /\b(select|union|intersect|except|minus|from|where|group|having|window|order|limit|offset|fetch|into|for|lateral|returning|values|table|with)\b/i;

/**
 * Whether a policy fits a table tool: its columns exist, none is both hidden and masked, and the row filter is one
 * condition on the table's own row (no subquery, clause, comment or statement of its own). Answers the problem or null.
 * `filterGuard` runs the dialect's guard over `SELECT 1 FROM <table> WHERE (<filter>)`.
 */
export function checkPolicyShape(columns: readonly string[], policy: ToolPolicy, filterGuard: ((filter: string) => string | null) | null): string | null {
  const names = new Set(columns);
  const masked = policy.masked_columns.map((m) => m.column);
  for (const c of [...policy.hidden_columns, ...masked]) if (!names.has(c)) return `"${c}" is not a column of this tool's table`;
  if (new Set(masked).size !== masked.length) return 'a column is masked twice';
  if (masked.some((c) => policy.hidden_columns.includes(c))) return 'a column cannot be both hidden and masked';
  if (!filterGuard && (masked.length > 0 || policy.row_filter !== null)) {
    return 'this connector type applies hidden columns only (masks and row filters need a postgresql or mysql connector)';
  }
  const filter = policy.row_filter;
  if (filter === null || !filterGuard) return null;
  // A backslash's meaning in a literal depends on the dialect and its settings: none at all.
  if (filter.includes('\\')) return 'the row filter may not hold backslashes';
  // Outside literals and quoted names: no comment, statement end or clause word. Those are blanked first.
  const bare = filter.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`/g, "''");
  if (/--|\/\*|#|;|\$/.test(bare)) return 'the row filter may not hold comments, semicolons or dollar signs';
  const word = FILTER_WORDS.exec(bare);
  if (word) return `the row filter is one condition on the table's columns; "${word[1]}" is not allowed in it`;
  if (!balanced(bare)) return 'the row filter has unbalanced parentheses';
  return filterGuard(filter.replace(CALLER_ATTRIBUTE, "'x'"));
}

function balanced(text: string): boolean {
  let depth = 0;
  for (const c of text) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}
