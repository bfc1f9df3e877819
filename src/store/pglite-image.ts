/**
 * In-memory stores started from an image of a migrated data folder instead of initdb and every migration.
 *
 * An in-memory store (tests only: `GatewayOptions.inMemory`, `openStore({ dataDir: null })`) ran initdb and the
 * migrations at each start: ~4-6 s of CPU on an idle machine and 20 s under load, for each of the hundreds of stores
 * the test suite starts. Loading the same data folder from a tar image (PGlite's `dumpDataDir` / `loadDataDir`) takes
 * about a second. The image is made once by the first start that finds none, and kept in a folder the caller names
 * (test/setup.ts: a private folder per user in the system's temp folder), under a key over everything that shapes it:
 * PGlite's version, its start parameters and every migration's text. A gateway never uses images unless told.
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrations } from './migrations.ts';

let imageDir: string | null = null;

/**
 * Lets in-memory stores of this process start from (and leave) images in `dir`. The folder must be this user's and
 * closed to others (an image is the store's whole content): otherwise images are not used.
 */
export function useInMemoryStoreImages(dir: string): boolean {
  const stat = existsSync(dir) ? lstatSync(dir) : null;
  const uid = process.getuid?.();
  const privateDir = stat?.isDirectory() === true && (stat.mode & 0o077) === 0 && (uid === undefined || stat.uid === uid);
  imageDir = privateDir ? dir : null;
  return privateDir;
}

/** PGlite's own version, read from its package.json next to the module that was loaded. */
function pgliteVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite')));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === '@electric-sql/pglite') return pkg.version ?? 'unknown';
  }
  return 'unknown';
}

function imageFile(dir: string, startParams: string[] | undefined): string {
  const key = createHash('sha256')
    .update(JSON.stringify({ pglite: pgliteVersion(), startParams, migrations: migrations.map((m) => [m.version, m.name, m.sql]) }))
    .digest('hex')
    .slice(0, 24);
  return join(dir, `store-${key}.tar`);
}

/**
 * An in-memory PGlite: from the image when there is one (its migrations done), else a fresh one. With images on, a
 * missing image is made from that fresh instance once `migrate` has applied the store's migrations to it.
 */
export async function openInMemoryPglite(options: PGliteOptions, migrate: (pg: PGlite) => Promise<void>): Promise<PGlite> {
  const dir = imageDir;
  const file = dir ? imageFile(dir, options.startParams) : null;
  if (file && existsSync(file)) {
    try {
      const pg = new PGlite({ ...options, loadDataDir: new Blob([readFileSync(file)]) });
      await pg.waitReady;
      return pg;
    } catch {
      // A damaged or unreadable image: start as without one, and make it again below.
      rmSync(file, { force: true });
    }
  }
  const pg = new PGlite(options);
  await pg.waitReady;
  if (file) {
    await migrate(pg);
    // Written beside and renamed into place: a start reading it never sees half an image.
    const partial = `${file}.${process.pid}.${Date.now()}`;
    try {
      writeFileSync(partial, new Uint8Array(await (await pg.dumpDataDir('none')).arrayBuffer()), { mode: 0o600 });
      renameSync(partial, file);
    } catch {
      rmSync(partial, { force: true });
    }
  }
  return pg;
}
