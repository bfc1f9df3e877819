/**
 * What a database connector's schema tool and schema resource answer (decision 0313): the connector's tables as the
 * agent may read them, derived from the catalog once per version. A table is described only while its own tool row
 * is enabled; its hidden columns are never named (nor keys over them), masked ones are marked, and a table with a row
 * filter shows no row estimate (the count of rows the caller cannot see is not the caller's to know).
 */
import type { ForeignKey, SqlTarget, ToolResult, ToolPolicy } from '../connectors/types.ts';
import { DEFAULT_DESCRIBED_TABLES } from '../connectors/shared/schema-tool.ts';

interface DescribedColumn {
  name: string;
  type: string;
  /** The mask its values come back under (they are then text). */
  masked?: string;
}

export interface DescribedTable {
  schema: string;
  name: string;
  kind: string;
  /** The tool that queries it. */
  tool: string;
  columns?: DescribedColumn[];
  primaryKey?: string[];
  foreignKeys?: ForeignKey[];
  rowEstimate?: number;
  /** Reads are limited to the rows this caller may see. */
  rowFilter?: true;
}

/** A table tool of the catalog as the description reads it. */
export interface TableSource {
  name: string;
  enabled: boolean;
  target: unknown;
  policy: ToolPolicy | null;
}

interface Located {
  schema: string;
  name: string;
  kind: string;
  target: Partial<SqlTarget>;
}

/** Where a tool's target says its table is: SQL (schema, table) or MongoDB (database, collection); null: not a table. */
function locate(target: unknown): Located | null {
  const t = (target ?? {}) as Partial<SqlTarget> & { database?: string; collection?: string; saved?: unknown };
  if (t.saved !== undefined) return null;
  if (typeof t.table === 'string' && typeof t.schema === 'string') return { schema: t.schema, name: t.table, kind: t.kind ?? 'table', target: t };
  if (typeof t.collection === 'string' && typeof t.database === 'string')
    return { schema: t.database, name: t.collection, kind: t.kind ?? 'collection', target: {} };
  return null;
}

/** The described tables of one connector, from its table tools (disabled ones and saved statements left out). */
export function describeTables(sources: readonly TableSource[]): DescribedTable[] {
  const located = sources
    .filter((s) => s.enabled)
    .flatMap((s) => {
      const at = locate(s.target);
      return at ? [{ source: s, at, hidden: new Set(s.policy?.hidden_columns ?? []) }] : [];
    });
  const visible = new Map(located.map((l) => [`${l.at.schema}\u0000${l.at.name}`, l.hidden]));
  return located
    .map(({ source, at, hidden }) => {
      const masked = new Map((source.policy?.masked_columns ?? []).map((m) => [m.column, m.mask as string]));
      const shown = (c: string) => !hidden.has(c);
      const columns = at.target.columns
        ?.filter((c) => shown(c.name))
        .map((c) => (masked.has(c.name) ? { name: c.name, type: 'text', masked: masked.get(c.name)! } : { ...c }));
      const pk = at.target.primaryKey;
      const fks = (at.target.foreignKeys ?? []).filter((fk) => {
        const refHidden = visible.get(`${fk.references.schema}\u0000${fk.references.table}`);
        return fk.columns.every(shown) && refHidden !== undefined && fk.references.columns.every((c) => !refHidden.has(c));
      });
      const filtered = (source.policy?.row_filter ?? null) !== null;
      const table: DescribedTable = { schema: at.schema, name: at.name, kind: at.kind, tool: source.name };
      if (columns) table.columns = columns;
      if (pk?.length && pk.every(shown)) table.primaryKey = pk;
      if (fks.length) table.foreignKeys = fks;
      if (filtered) table.rowFilter = true;
      else if (typeof at.target.rowEstimate === 'number') table.rowEstimate = at.target.rowEstimate;
      return table;
    })
    .sort((a, b) => (a.schema < b.schema ? -1 : a.schema > b.schema ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The tables whose name holds `search`, case-insensitively; every table without one. */
function matching(tables: readonly DescribedTable[], search: string | undefined): DescribedTable[] {
  const needle = search?.trim().toLowerCase();
  if (!needle) return [...tables];
  return tables.filter((t) => t.name.toLowerCase().includes(needle));
}

/** The JSON of a description with as many of `tables` as fit `maxBytes` (at least none); how many were kept. */
function fitted(head: Record<string, unknown>, tables: DescribedTable[], maxBytes: number): { json: string; kept: number } {
  let kept = tables.length;
  for (;;) {
    const json = JSON.stringify({ ...head, tables: tables.slice(0, kept), returned: kept, truncated: kept < (head.matched as number) });
    if (kept === 0 || Buffer.byteLength(json) <= maxBytes) return { json, kept };
    kept = Math.floor(kept / 2);
  }
}

/** The schema tool's answer: the matching tables (at most `limit`, within the size cap), and a note when more matched. */
export function schemaToolResult(
  connector: { name: string; type: string },
  tables: readonly DescribedTable[],
  args: Record<string, unknown>,
  maxBytes: number,
): ToolResult {
  const search = typeof args.search === 'string' ? args.search : undefined;
  const limit = typeof args.limit === 'number' ? args.limit : DEFAULT_DESCRIBED_TABLES;
  const found = matching(tables, search);
  const head = { connector: connector.name, type: connector.type, ...(search ? { search } : {}), matched: found.length };
  const { json, kept } = fitted(head, found.slice(0, limit), maxBytes);
  const structured = JSON.parse(json) as Record<string, unknown>;
  const lines = [json];
  if (found.length === 0)
    lines.push(
      search ? `No table you may query matches "${search}". Call again without search to list every table.` : 'This connector has no table you may query.',
    );
  else if (kept < found.length)
    lines.push(`${kept} of ${found.length} matching tables described; pass a longer search to narrow, or a higher limit (up to 100).`);
  return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: structured };
}

/** The whole description as the schema resource serves it (every table, within the size cap). */
export function schemaDocument(connector: { name: string; type: string }, tables: readonly DescribedTable[], maxBytes: number): string {
  return fitted({ connector: connector.name, type: connector.type, matched: tables.length }, [...tables], maxBytes).json;
}
