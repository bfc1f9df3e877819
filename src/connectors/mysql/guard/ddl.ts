/** MySQL guard: the DDL statements accepted on the tool's table and the table options they may set. */

import { EMPTY_SCOPE, Refusal, clip } from '../../shared/sqlguard/common.ts';
import { type AnyObj, SKIP_FIELDS, isObj, nameParts, variantOf } from '../../shared/sqlguard/tree.ts';
import { ALTER_OPERATIONS as WALKED_ALTER_OPERATIONS, type WalkState, checkTableName, isOwnSchema, walk, walkQuery } from './walk.ts';

const SAFE_ENGINES: ReadonlySet<string> = new Set(['INNODB', 'MYISAM', 'ARIA', 'MEMORY']);

const SAFE_TABLE_OPTIONS: ReadonlySet<string> = new Set([
  'DEFAULT CHARSET',
  'CHARSET',
  'CHARACTER SET',
  'DEFAULT CHARACTER SET',
  'COLLATE',
  'DEFAULT COLLATE',
  'AUTO_INCREMENT',
  'ROW_FORMAT',
]);

const ALTER_OPERATIONS: ReadonlySet<string> = new Set([...WALKED_ALTER_OPERATIONS, 'RenameTable']);

function checkTableOptions(options: unknown): void {
  if (options === undefined || options === null || options === 'None') return;
  const list = isObj(options) && Array.isArray(options.Plain) ? options.Plain : undefined;
  if (list === undefined) throw new Refusal('its table options could not be understood');
  for (const o of list) {
    const variant = isObj(o) ? variantOf(o) : undefined;
    const body = variant !== undefined ? (o as AnyObj)[variant] : undefined;
    if (variant === 'Comment') continue;
    const key = isObj(body) && isObj(body.key) && typeof body.key.value === 'string' ? body.key.value.toUpperCase() : '?';
    if (variant === 'NamedParenthesizedList' && key === 'ENGINE' && isObj(body) && isObj(body.name)) {
      const engine = String(body.name.value).toUpperCase();
      if (!SAFE_ENGINES.has(engine)) throw new Refusal(`ENGINE=${clip(engine)} is not allowed (use InnoDB)`);
      continue;
    }
    if (variant === 'KeyValue' && SAFE_TABLE_OPTIONS.has(key)) continue;
    throw new Refusal(`table option ${clip(key)} is not allowed`);
  }
}

const CREATE_TABLE_HANDLED: ReadonlySet<string> = new Set(['name', 'table_options', 'query', 'columns', 'constraints']);

export function walkDdl(variant: string, node: AnyObj, st: WalkState): void {
  st.ddl = true;
  switch (variant) {
    case 'CreateTable': {
      if (node.temporary === true) throw new Refusal('temporary tables are not allowed');
      if (node.or_replace === true) throw new Refusal('CREATE OR REPLACE is not allowed');
      for (const k of ['like', 'clone']) if (node[k] !== undefined && node[k] !== null) throw new Refusal(`CREATE TABLE ... ${k.toUpperCase()} is not allowed`);
      checkTableName(node.name, st, EMPTY_SCOPE, 'creates');
      checkTableOptions(node.table_options);
      if (isObj(node.query)) walkQuery(node.query, st, EMPTY_SCOPE);
      walk(node.columns, st, EMPTY_SCOPE, 'columns');
      walk(node.constraints, st, EMPTY_SCOPE, 'constraints');
      // Anything else the parser filled in (partitioning, clustering, ...) is refused.
      for (const k in node) {
        if (CREATE_TABLE_HANDLED.has(k) || SKIP_FIELDS.has(k)) continue;
        const x = node[k];
        if (x === null || x === undefined || x === false || x === 'None' || x === 'NONE' || (Array.isArray(x) && x.length === 0)) continue;
        if (k === 'if_not_exists') continue;
        throw new Refusal(`CREATE TABLE option ${clip(k)} is not allowed`);
      }
      return;
    }
    case 'AlterTable': {
      checkTableName(node.name, st, EMPTY_SCOPE, 'alters');
      const ops = Array.isArray(node.operations) ? node.operations : [];
      if (ops.length === 0) throw new Refusal('the ALTER TABLE statement could not be understood');
      for (const op of ops) {
        const v = isObj(op) ? variantOf(op) : undefined;
        if (v === undefined || !ALTER_OPERATIONS.has(v)) throw new Refusal(`ALTER TABLE operation ${clip(v ?? '?')} is not allowed`);
        const body = (op as AnyObj)[v];
        if (v === 'RenameTable') {
          const to = isObj(body) && isObj(body.table_name) ? (body.table_name.To ?? body.table_name.As) : undefined;
          const parts = nameParts(to);
          if (parts.length !== 1 && !(parts.length === 2 && isOwnSchema(parts[0]!, st))) {
            throw new Refusal('the table may only be renamed within its database');
          }
          continue;
        }
        if (isObj(body) && body.cascade === true) throw new Refusal('CASCADE would touch other objects');
        walk(op, st, EMPTY_SCOPE, 'operations');
      }
      return;
    }
    case 'Drop': {
      if (node.object_type !== 'Table') throw new Refusal(`found DROP ${clip(String(node.object_type).toUpperCase())}`);
      if (node.cascade === true) throw new Refusal('CASCADE would touch other objects');
      const names = Array.isArray(node.names) ? node.names : [];
      if (names.length === 0) throw new Refusal('the DROP statement names no table');
      for (const n of names) checkTableName(n, st, EMPTY_SCOPE, 'drops');
      return;
    }
    case 'Truncate': {
      const tables = Array.isArray(node.table_names) ? node.table_names : [];
      if (tables.length === 0) throw new Refusal('the TRUNCATE statement names no table');
      for (const t of tables) checkTableName(isObj(t) ? t.name : undefined, st, EMPTY_SCOPE, 'truncates');
      if (node.cascade === 'Cascade' || node.cascade === true) throw new Refusal('CASCADE would touch other objects');
      return;
    }
    case 'CreateIndex': {
      checkTableName(node.table_name, st, EMPTY_SCOPE, 'indexes');
      walk(node.columns, st, EMPTY_SCOPE, 'columns');
      if (node.predicate !== undefined && node.predicate !== null) walk(node.predicate, st, EMPTY_SCOPE, 'predicate');
      return;
    }
    case 'RenameTable': {
      const pairs = Array.isArray(node) ? node : [];
      if (pairs.length === 0) throw new Refusal('the RENAME statement could not be understood');
      for (const p of pairs) {
        if (!isObj(p)) throw new Refusal('the RENAME statement could not be understood');
        checkTableName(p.old_name, st, EMPTY_SCOPE, 'renames');
        const parts = nameParts(p.new_name);
        if (parts.length !== 1 && !(parts.length === 2 && isOwnSchema(parts[0]!, st))) {
          throw new Refusal('the table may only be renamed within its database');
        }
      }
      return;
    }
  }
}
