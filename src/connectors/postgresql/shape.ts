/**
 * Row objects from postgres.js' arrays of values, so that a join's columns of the same name (`o.id`, `c.id`) each
 * keep their value (docs/decisions/0327, as MySQL does in mysql/values.ts): the first keeps its name, a later one is
 * named by its table (`customers.id`), else numbered (`id_2`). A result without a repeated name costs one object per
 * row, as postgres.js' own object rows did; one with a repeated name is held as arrays until its tables' names are
 * read from the catalog (one query, after the read).
 */
import type { Row } from '../shared/result.ts';
import type { PgColumn } from './run.ts';

/** Keys for these columns; `tableName` names a source table by oid (undefined: not known). */
function pgColumnKeys(columns: readonly PgColumn[], tableName: (oid: number) => string | undefined): string[] {
  const taken = new Set<string>();
  return columns.map((c) => {
    let key = c.name;
    if (taken.has(key)) {
      const table = c.table ? tableName(c.table) : undefined;
      if (table !== undefined && !taken.has(`${table}.${c.name}`)) key = `${table}.${c.name}`;
      for (let n = 2; taken.has(key); n++) key = `${c.name}_${n}`;
    }
    taken.add(key);
    return key;
  });
}

function hasRepeatedName(columns: readonly PgColumn[]): boolean {
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) return true;
    seen.add(c.name);
  }
  return false;
}

const toRow = (keys: string[], values: unknown[]): Row => {
  const row: Row = {};
  for (let i = 0; i < keys.length; i++) row[keys[i]!] = values[i];
  return row;
};

/**
 * Feeds `add` (the row collector) from arrays of values. `maxRows`/`maxBytes` bound what is held while names are
 * looked up (the collector applies its own caps again when the rows are handed over).
 */
export class PgRowShaper {
  private keys: string[] | null = null;
  private held: unknown[][] | null = null;
  private heldBytes = 0;
  private columns: readonly PgColumn[] = [];

  constructor(
    private readonly add: (row: Row) => boolean,
    private readonly maxRows: number,
    private readonly maxBytes: number,
  ) {}

  readonly onValues = (values: unknown[], columns: readonly PgColumn[]): boolean => {
    if (this.keys === null && this.held === null) {
      this.columns = columns;
      if (hasRepeatedName(columns)) this.held = [];
      else this.keys = columns.map((c) => c.name);
    }
    if (this.keys) return this.add(toRow(this.keys, values));
    const held = this.held!;
    if (held.length > this.maxRows) return false;
    try {
      this.heldBytes += JSON.stringify(values).length;
    } catch {
      return false;
    }
    held.push(values);
    return held.length <= this.maxRows && this.heldBytes <= this.maxBytes;
  };

  /** The oids whose names the held rows need (empty: nothing held). */
  tablesWanted(): number[] {
    return this.held ? [...new Set(this.columns.map((c) => c.table).filter((t) => t !== 0))] : [];
  }

  /** Hands the held rows to the collector, named with the tables' names. */
  flush(names: ReadonlyMap<number, string>): void {
    if (!this.held) return;
    const keys = pgColumnKeys(this.columns, (oid) => names.get(oid));
    for (const values of this.held) if (!this.add(toRow(keys, values))) break;
    this.held = null;
  }
}
