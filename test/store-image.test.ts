/**
 * In-memory stores start from an image of a migrated data folder (src/store/pglite-image.ts): made once, loaded after,
 * never taken from a folder others can write, and made again when damaged.
 */
import { afterAll, expect, test } from 'bun:test';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { openStore, rowsOf } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';
import { useInMemoryStoreImages } from '../src/store/pglite-image.ts';

const dirs: string[] = [];
function privateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-image-test-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  // Back to the suite's own folder for whatever runs next in this process.
  useInMemoryStoreImages(join(tmpdir(), `toolgate-test-store-images-${process.getuid?.() ?? 'user'}`));
});

async function appliedVersions(): Promise<number[]> {
  const store = await openStore({ dataDir: null });
  try {
    // A row written by one store must not reach the image, nor another store started from it.
    const [probe] = rowsOf<{ absent: boolean }>(await store.db.execute(sql`SELECT to_regclass('image_probe') IS NULL AS absent`));
    expect(probe?.absent).toBe(true);
    await store.db.execute(sql`CREATE TABLE image_probe (n int)`);
    return rowsOf<{ version: number }>(await store.db.execute(sql`SELECT version FROM toolgate_migrations ORDER BY version`)).map((r) => Number(r.version));
  } finally {
    await store.close();
  }
}

const ALL = migrations.map((m) => m.version).sort((a, b) => a - b);

test('the first in-memory store makes the image; the next starts from it, migrated and empty', async () => {
  const dir = privateDir();
  expect(useInMemoryStoreImages(dir)).toBe(true);
  expect(await appliedVersions()).toEqual(ALL);
  const images = readdirSync(dir);
  expect(images).toHaveLength(1);
  expect(images[0]).toMatch(/^store-[0-9a-f]{24}\.tar$/);
  expect(await appliedVersions()).toEqual(ALL);
  expect(readdirSync(dir)).toEqual(images);
}, 120_000);

test('a folder others can write or read is not used', async () => {
  const dir = privateDir();
  chmodSync(dir, 0o755);
  expect(useInMemoryStoreImages(dir)).toBe(false);
  expect(await appliedVersions()).toEqual(ALL);
  expect(readdirSync(dir)).toEqual([]);
}, 120_000);

test('a damaged image is replaced by a good one', async () => {
  const dir = privateDir();
  expect(useInMemoryStoreImages(dir)).toBe(true);
  await appliedVersions();
  const [name] = readdirSync(dir);
  writeFileSync(join(dir, name!), 'not a tar file');
  expect(await appliedVersions()).toEqual(ALL);
  expect(readdirSync(dir)).toEqual([name!]);
  expect(await appliedVersions()).toEqual(ALL);
}, 120_000);
