// Test-wide defaults: quiet logs unless asked for.
import { afterAll } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useInMemoryStoreImages } from '../src/store/pglite-image.ts';
import { runRecordJson, uncoveredAfterRun } from './requirements.ts';

process.env.TOOLGATE_LOG_LEVEL ??= 'silent';

// The suite starts hundreds of in-memory stores: each starts from a migrated image kept in this user's private folder
// (src/store/pglite-image.ts; made by the first start that finds none) instead of running initdb and the migrations.
const storeImages = join(tmpdir(), `toolgate-test-store-images-${process.getuid?.() ?? 'user'}`);
mkdirSync(storeImages, { recursive: true, mode: 0o700 });
useInMemoryStoreImages(storeImages);

// `npm test` runs the whole suite with TOOLGATE_FULL_SUITE=1: then a requirement counts as covered only if a test that
// really ran cited it (a citation in a skipped test does not count). A suite skipped for want of a server declares what
// it would have verified (notVerifiableHere), and those are listed with the reason instead of failing the run.
// Run in parallel (scripts/test-suite.ts), each file runs in a worker of its own: each writes what it cited to
// TOOLGATE_REQUIREMENTS_DIR and the runner checks the union once every file has run.
afterAll(() => {
  const recordDir = process.env.TOOLGATE_REQUIREMENTS_DIR;
  if (recordDir) {
    writeFileSync(join(recordDir, `${process.pid}-${randomUUID()}.json`), JSON.stringify(runRecordJson()));
    return;
  }
  if (process.env.TOOLGATE_FULL_SUITE !== '1') return;
  const { missing, notRunHere } = uncoveredAfterRun();
  for (const [id, reason] of notRunHere) console.warn(`requirement ${id} not verified in this run: ${reason}`);
  if (missing.length > 0) {
    throw new Error(`requirements cited by no test that ran: ${missing.join(', ')}`);
  }
});
