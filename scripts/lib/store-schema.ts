/**
 * Writes the store's Drizzle schema (generated/store-schema.ts) from the migrations: applies src/store/migrations.ts
 * to a fresh in-process PGlite, reads the catalog (tables; columns with type, nullability and default; primary keys,
 * unique constraints, foreign keys with their rules; indexes with method, order and predicate) and prints one
 * `pgTable` per table. The migrations are the one place the schema is written; src/store/schema-notes.ts adds only
 * what the catalog cannot say (jsonb TypeScript types, doc comments). Run by scripts/gen.ts; test/store-schema.test.ts
 * runs the same printer on a migrated PostgreSQL database and compares. A catalog feature the printer does not know
 * (a column type, an INCLUDE index) fails it with the table and column named, rather than being left out.
 */
import { PGlite } from '@electric-sql/pglite';
import { migrations } from '../../src/store/migrations.ts';
import { COLUMN_NOTES, JSONB_TYPES, TABLE_NOTES, TEXT_TYPES } from '../../src/store/schema-notes.ts';

/** Runs one catalog query and returns its rows. */
type CatalogQuery = <T>(text: string) => Promise<T[]>;

interface Column {
  name: string;
  type: string;
  notNull: boolean;
  def: string | null;
}
interface Constraint {
  name: string;
  kind: 'p' | 'u' | 'f';
  cols: string[];
  refTable: string | null;
  refCols: string[];
  onDelete: string;
  onUpdate: string;
}
interface Index {
  name: string;
  def: string;
}
interface Table {
  name: string;
  columns: Column[];
  constraints: Constraint[];
  indexes: Index[];
}

/** The migration runner's own bookkeeping table (store/db.ts): not part of the gateway's schema. */
const BOOKKEEPING = new Set(['toolgate_migrations']);
const PUBLIC_RELATIONS = `FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`;
/** Column names of a constraint's key array, in key order, as JSON text (read the same way by every driver). */
const keyNames = (keys: string, rel: string) =>
  `to_json(array(SELECT a.attname::text FROM unnest(${keys}) WITH ORDINALITY k(num, pos)` +
  ` JOIN pg_attribute a ON a.attrelid = ${rel} AND a.attnum = k.num ORDER BY k.pos))::text`;

/** Reads every table of the public schema with its columns, keys and indexes. */
export async function readCatalog(query: CatalogQuery): Promise<Table[]> {
  const tables = (await query<{ name: string }>(`SELECT c.relname AS name ${PUBLIC_RELATIONS}`)).map((r) => r.name).filter((n) => !BOOKKEEPING.has(n));
  const columns = await query<Column & { t: string }>(`
    SELECT c.relname AS t, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull", pg_get_expr(d.adbin, d.adrelid) AS def
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum`);
  const constraints = await query<Omit<Constraint, 'cols' | 'refCols'> & { t: string; cols: string; refCols: string }>(`
    SELECT c.relname AS t, con.conname AS name, con.contype AS kind, ${keyNames('con.conkey', 'con.conrelid')} AS cols, f.relname AS "refTable",
           ${keyNames('con.confkey', 'con.confrelid')} AS "refCols", con.confdeltype AS "onDelete", con.confupdtype AS "onUpdate"
      FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_class f ON f.oid = con.confrelid
     WHERE n.nspname = 'public' AND con.contype IN ('p', 'u', 'f') ORDER BY c.relname, con.conname`);
  const indexes = await query<Index & { t: string }>(`
    SELECT c.relname AS t, i.relname AS name, pg_get_indexdef(x.indexrelid) AS def
      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = x.indexrelid AND con.contype IN ('p', 'u'))
     ORDER BY c.relname, i.relname`);
  return tables.sort().map((name) => ({
    name,
    columns: columns.filter((c) => c.t === name).map(({ t: _, ...c }) => c),
    constraints: constraints
      .filter((c) => c.t === name)
      .map(({ t: _, ...c }) => ({ ...c, cols: JSON.parse(c.cols) as string[], refCols: JSON.parse(c.refCols) as string[] })),
    indexes: indexes.filter((i) => i.t === name).map(({ t: _, ...i }) => i),
  }));
}

const camel = (snake: string) => snake.replace(/_([a-z0-9])/g, (_, ch: string) => ch.toUpperCase());
const quote = (text: string) => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
/** SQL text as a drizzle `sql` template literal. */
const sqlLiteral = (text: string) => `sql\`${text.replaceAll('\\', '\\\\').replaceAll('`', '\\`').replaceAll('${', '\\${')}\``;
const REF_ACTIONS: Record<string, string | undefined> = { a: undefined, r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };

function fail(message: string): never {
  throw new Error(`store schema: ${message}`);
}

/** A doc comment for a note, or nothing. */
function doc(note: string | undefined, indent: string): string {
  if (!note) return '';
  if (note.includes('*/')) fail(`a note may not contain "*/": ${note}`);
  return `${indent}/** ${note} */\n`;
}

/** The column builder call for a catalog type (without `.array()`), and the builder it imports. */
function builderFor(table: string, column: Column, base: string): { call: string; uses: string } {
  const n = quote(column.name);
  const simple: Record<string, string> = { uuid: 'uuid', text: 'text', boolean: 'boolean', integer: 'integer', smallint: 'smallint', jsonb: 'jsonb' };
  if (simple[base]) return { call: `${simple[base]}(${n})`, uses: simple[base] };
  if (base === 'bigint') return { call: `bigint(${n}, { mode: 'number' })`, uses: 'bigint' };
  if (base === 'timestamp with time zone') return { call: `ts(${n})`, uses: 'timestamp' };
  if (base === 'date') return { call: `date(${n}, { mode: 'string' })`, uses: 'date' };
  if (base === 'double precision') return { call: `doublePrecision(${n})`, uses: 'doublePrecision' };
  return fail(`${table}.${column.name} has type ${column.type}, which scripts/lib/store-schema.ts does not print yet: add it to builderFor`);
}

/** The default as drizzle states it: `.defaultNow()`, a JS value when drizzle prints it back the same, else SQL text. */
function defaultFor(def: string, base: string): { text: string; usesSql: boolean } {
  if (def === 'now()') return { text: '.defaultNow()', usesSql: false };
  if (/^-?\d+$/.test(def) && Number.isSafeInteger(Number(def))) return { text: `.default(${def})`, usesSql: false };
  if (def === 'true' || def === 'false') return { text: `.default(${def})`, usesSql: false };
  const text = /^'((?:[^']|'')*)'::text$/.exec(def);
  if (text && base === 'text') return { text: `.default(${quote(text[1]!.replaceAll("''", "'"))})`, usesSql: false };
  const json = /^'((?:[^']|'')*)'::jsonb$/.exec(def);
  if (json && base === 'jsonb') {
    const raw = json[1]!.replaceAll("''", "'");
    const value: unknown = JSON.parse(raw);
    if (JSON.stringify(value) === raw) return { text: `.default(${raw})`, usesSql: false };
  }
  return { text: `.default(${sqlLiteral(def)})`, usesSql: true };
}

interface Printed {
  text: string;
  uses: Set<string>;
}

/** Which single-column keys each column carries inline: primary key, unique constraint, foreign key. */
function inlineKeys(table: Table) {
  const single = (kind: Constraint['kind']) => new Map(table.constraints.filter((c) => c.kind === kind && c.cols.length === 1).map((c) => [c.cols[0]!, c]));
  return { primary: single('p'), unique: single('u'), foreign: single('f') };
}

/** The reference to another table's column (or this table's: typed, for TypeScript's sake). */
function reference(fk: Constraint, table: Table, uses: Set<string>): string {
  const target = fk.refTable ?? fail(`${table.name}: foreign key ${fk.name} names no table`);
  const self = target === table.name;
  if (self) uses.add('type AnyPgColumn');
  const actions = [
    REF_ACTIONS[fk.onDelete] ? `onDelete: ${quote(REF_ACTIONS[fk.onDelete]!)}` : '',
    REF_ACTIONS[fk.onUpdate] ? `onUpdate: ${quote(REF_ACTIONS[fk.onUpdate]!)}` : '',
  ].filter(Boolean);
  return `.references(()${self ? ': AnyPgColumn' : ''} => ${camel(target)}.${camel(fk.refCols[0]!)}${actions.length ? `, { ${actions.join(', ')} }` : ''})`;
}

function printColumn(table: Table, column: Column, keys: ReturnType<typeof inlineKeys>, out: Printed): string {
  const array = column.type.endsWith('[]');
  const base = array ? column.type.slice(0, -2) : column.type;
  const { call, uses } = builderFor(table.name, column, base);
  out.uses.add(uses);
  const key = `${table.name}.${column.name}`;
  let text = call + (array ? '.array()' : '');
  if (base === 'jsonb' && !array) text += `.$type<${JSONB_TYPES[key] ?? 'Record<string, unknown>'}>()`;
  if (base === 'text' && !array && TEXT_TYPES[key]) text += `.$type<${TEXT_TYPES[key]}>()`;
  const primary = keys.primary.has(column.name);
  if (primary) text += '.primaryKey()';
  if (column.notNull && !primary) text += '.notNull()';
  const unique = keys.unique.get(column.name);
  if (unique) text += `.unique(${quote(unique.name)})`;
  const fk = keys.foreign.get(column.name);
  if (fk) text += reference(fk, table, out.uses);
  if (column.def !== null) {
    const d = defaultFor(column.def, base);
    if (d.usesSql) out.uses.add('sql');
    text += d.text;
  }
  return `${doc(COLUMN_NOTES[key], '  ')}  ${camel(column.name)}: ${text},`;
}

/** Splits an index's column list at its top-level commas. */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === "'") quoted = !quoted;
    else if (!quoted && ch === '(') depth++;
    else if (!quoted && ch === ')') depth--;
    else if (!quoted && depth === 0 && ch === ',') {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(list.slice(start).trim());
  return parts;
}

/** Where a parenthesised group opening at `open` closes. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  let quoted = false;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'") quoted = !quoted;
    else if (!quoted && ch === '(') depth++;
    else if (!quoted && ch === ')' && --depth === 0) return i;
  }
  return -1;
}

/** One index of pg_get_indexdef's text as a drizzle index builder. */
function printIndex(table: Table, index: Index, out: Printed): string {
  const head = /^CREATE (UNIQUE )?INDEX (\S+) ON (?:ONLY )?\S+ USING (\w+) \(/.exec(index.def) ?? fail(`${table.name}: cannot read index ${index.def}`);
  const close = closingParen(index.def, head[0].length - 1);
  const rest = index.def.slice(close + 1);
  const where = /^ WHERE (.+)$/.exec(rest);
  if (rest !== '' && !where)
    fail(`${table.name}: index ${index.name} has a clause the printer does not know (${rest.trim()}): extend scripts/lib/store-schema.ts`);
  const names = new Set(table.columns.map((c) => c.name));
  const cols = splitTopLevel(index.def.slice(head[0].length, close)).map((part) => {
    const plain = /^"?([a-z_][a-z0-9_]*)"?( DESC)?$/.exec(part);
    if (plain && names.has(plain[1]!)) return `t.${camel(plain[1]!)}${plain[2] ? '.desc()' : ''}`;
    out.uses.add('sql');
    return sqlLiteral(part);
  });
  const builder = head[1] ? 'uniqueIndex' : 'index';
  out.uses.add(builder);
  const on = head[3] === 'btree' ? `.on(${cols.join(', ')})` : `.using(${quote(head[3]!)}, ${cols.join(', ')})`;
  let predicate = '';
  if (where) {
    // pg_get_indexdef wraps the predicate in one pair of parentheses; drizzle adds that pair itself.
    const text = where[1]!;
    const wrapped = text.startsWith('(') && closingParen(text, 0) === text.length - 1;
    out.uses.add('sql');
    predicate = `.where(${sqlLiteral(wrapped ? text.slice(1, -1) : text)})`;
  }
  return `  ${builder}(${quote(index.name)})${on}${predicate},`;
}

/** Keys over several columns, as table-level builders. */
function printCompositeKeys(table: Table, out: Printed): string[] {
  const cols = (names: string[]) => names.map((n) => `t.${camel(n)}`).join(', ');
  const lines: string[] = [];
  for (const c of table.constraints.filter((k) => k.cols.length > 1)) {
    out.uses.add(c.kind === 'p' ? 'primaryKey' : c.kind === 'u' ? 'unique' : 'foreignKey');
    if (c.kind === 'p') lines.push(`  primaryKey({ name: ${quote(c.name)}, columns: [${cols(c.cols)}] }),`);
    else if (c.kind === 'u') lines.push(`  unique(${quote(c.name)}).on(${cols(c.cols)}),`);
    else {
      const target = camel(c.refTable ?? fail(`${table.name}: foreign key ${c.name} names no table`));
      const actions = [
        REF_ACTIONS[c.onDelete] && `.onDelete(${quote(REF_ACTIONS[c.onDelete]!)})`,
        REF_ACTIONS[c.onUpdate] && `.onUpdate(${quote(REF_ACTIONS[c.onUpdate]!)})`,
      ];
      const foreign = c.refCols.map((n) => `${target}.${camel(n)}`).join(', ');
      lines.push(`  foreignKey({ name: ${quote(c.name)}, columns: [${cols(c.cols)}], foreignColumns: [${foreign}] })${actions.filter(Boolean).join('')},`);
    }
  }
  return lines;
}

function printTable(table: Table, out: Printed): string {
  const props = table.columns.map((c) => camel(c.name));
  const clash = props.find((p, i) => props.indexOf(p) !== i);
  if (clash) fail(`${table.name}: two columns are both named ${clash} in TypeScript`);
  const keys = inlineKeys(table);
  const columns = table.columns.map((c) => printColumn(table, c, keys, out));
  const extras = [...printCompositeKeys(table, out), ...table.indexes.map((i) => printIndex(table, i, out))];
  const body = `{\n${columns.join('\n')}\n}`;
  const call = extras.length ? `pgTable(${quote(table.name)}, ${body}, (t) => [\n${extras.join('\n')}\n])` : `pgTable(${quote(table.name)}, ${body})`;
  return `${doc(TABLE_NOTES[table.name], '')}export const ${camel(table.name)} = ${call};\n`;
}

/** Tables after the tables they reference (ties by name), so every `references` names a table already declared. */
function inDependencyOrder(tables: Table[]): Table[] {
  const done = new Set<string>();
  const order: Table[] = [];
  while (order.length < tables.length) {
    const next = tables.find((t) => !done.has(t.name) && t.constraints.every((c) => c.kind !== 'f' || c.refTable === t.name || done.has(c.refTable!)));
    if (!next) fail(`foreign keys form a cycle among ${tables.filter((t) => !done.has(t.name)).map((t) => t.name)}`);
    done.add(next.name);
    order.push(next);
  }
  return order;
}

/** Notes naming a table or column the migrations do not create (renamed or dropped since). */
function staleNotes(tables: Table[]): string[] {
  const known = new Set(tables.flatMap((t) => [t.name, ...t.columns.map((c) => `${t.name}.${c.name}`)]));
  return [...Object.keys(TABLE_NOTES), ...Object.keys(COLUMN_NOTES), ...Object.keys(JSONB_TYPES), ...Object.keys(TEXT_TYPES)].filter((k) => !known.has(k));
}

const STORE_SCHEMA_HEADER =
  '// DO NOT EDIT: generated by scripts/gen.ts from src/store/migrations.ts (and src/store/schema-notes.ts). ' +
  'After adding a migration, run `bun scripts/gen.ts` (npm run gen).\n';

/** What gen --check and test/store-schema.test.ts say when generated/store-schema.ts is stale. */
export const STALE_SCHEMA_MESSAGE =
  'generated/store-schema.ts does not match what src/store/migrations.ts creates: after adding a migration, ' +
  'run `bun scripts/gen.ts` (npm run gen) and commit generated/store-schema.ts with it';

/** The generated module's text for a migrated catalog. */
export function schemaModule(tables: Table[]): string {
  const stale = staleNotes(tables);
  if (stale.length) fail(`src/store/schema-notes.ts names what the migrations do not create: ${stale.join(', ')}`);
  const out: Printed = { text: '', uses: new Set(['pgTable']) };
  const declarations = inDependencyOrder(tables).map((t) => printTable(t, out));
  const core = [...out.uses].filter((u) => u !== 'sql').sort((a, b) => a.replace('type ', '').localeCompare(b.replace('type ', '')));
  const imports = [out.uses.has('sql') ? "import { sql } from 'drizzle-orm';" : '', `import { ${core.join(', ')} } from 'drizzle-orm/pg-core';`].filter(
    Boolean,
  );
  const helper = out.uses.has('timestamp') ? "\nconst ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });\n" : '';
  return `${STORE_SCHEMA_HEADER}/**
 * Table definitions of the gateway's own state, for the query layer: what the migrations create, read from the
 * catalog of a freshly migrated database. CHECK constraints are not stated here; they live in the migrations only.
 */
${imports.join('\n')}
${helper}
${declarations.join('\n')}`;
}

/** Applies every migration to a fresh in-memory PGlite and prints the schema it ends with. */
export async function storeSchemaModule(): Promise<string> {
  const pg = new PGlite();
  try {
    for (const migration of migrations) await pg.exec(migration.sql);
    return schemaModule(await readCatalog(async <T>(text: string) => (await pg.query<T>(text)).rows));
  } finally {
    await pg.close();
  }
}
