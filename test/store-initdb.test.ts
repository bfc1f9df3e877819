// A fresh embedded data folder is made (initdb) in a child process (decision 0191), and for the store the child also
// applies every migration (decision 0288): the gateway's own migrate() then has nothing left to do, so the first
// start's process does not hold the migrations' garbage. The demo's sample database folder gets no store tables.
import { afterAll, expect, test } from 'bun:test';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initPgliteDataDir, migrate } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';

const root = mkdtempSync(join(tmpdir(), 'toolgate-initdb-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test.skipIf(typeof Bun === 'undefined')(
  "the store's folder comes migrated from the child; a folder without migrate holds no store table",
  async () => {
    const store = join(root, 'store');
    const plain = join(root, 'plain');
    await Promise.all([initPgliteDataDir(store, { migrate: true }), initPgliteDataDir(plain)]);
    const pg = new PGlite(store);
    try {
      const { rows } = await pg.query<{ version: number }>('SELECT version FROM toolgate_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version).sort((a, b) => a - b));
      // In process, nothing is left to apply.
      expect(await migrate({ db: drizzle(pg) as never })).toEqual([]);
    } finally {
      await pg.close();
    }
    const other = new PGlite(plain);
    try {
      const { rows } = await other.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_catalog.pg_class WHERE relname = 'toolgate_migrations'");
      expect(rows).toEqual([{ n: 0 }]);
    } finally {
      await other.close();
    }
  },
  120_000,
);
