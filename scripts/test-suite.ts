/**
 * The whole suite, as `npm test` runs it: test files in parallel worker processes (`bun test --parallel`), slowest first
 * by the per-file durations in test/timings.json, then one check over every worker's record that each requirement was
 * cited by a test that really ran (test/setup.ts writes one record per file; a worker cannot see the others').
 *
 *   bun scripts/test-suite.ts [--workers=N] [--update-timings] [bun test arguments...]
 *
 * Workers default to TOOLGATE_TEST_WORKERS or 2, one per core of the CI machine: most files wait on PostgreSQL,
 * MariaDB, Redis, Chromium or a child process, so two workers overlap those waits; three starved the suites that start
 * several embedded stores at once (PGlite's start is CPU-bound) on a loaded 2-core machine.
 *
 * A worker keeps its module registry from file to file (`--no-isolate`): loading src/ and compiling PGlite's
 * WebAssembly once per worker instead of once per file (164 files) took minutes of CPU off a run. The suite ran in one
 * shared registry for its whole life before it ran in parallel, so files already clean up after themselves;
 * TOOLGATE_TEST_ISOLATE=1 gives each file a fresh registry again. Every run measures each file's duration;
 * `--update-timings` (or TOOLGATE_UPDATE_TIMINGS=1) writes them to test/timings.json, which orders the next runs.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunRecordJson, uncoveredAcross } from '../test/requirements.ts';

const args = process.argv.slice(2);
const workersArg = args.find((arg) => arg.startsWith('--workers='));
const workers = Number(workersArg?.slice('--workers='.length) ?? process.env.TOOLGATE_TEST_WORKERS ?? 2);
const updateTimings = args.includes('--update-timings') || process.env.TOOLGATE_UPDATE_TIMINGS === '1';
const passThrough = args.filter((arg) => arg !== workersArg && arg !== '--update-timings');
if (!Number.isInteger(workers) || workers < 1) {
  console.error(`--workers must be a whole number of at least 1, not ${workersArg}`);
  process.exit(2);
}

const recordDir = mkdtempSync(join(tmpdir(), 'toolgate-requirements-'));
const timings = join(import.meta.dir, '..', 'test', 'timings.json');
// This run's durations go to a file of their own (bun writes the first --timings file and reads them all).
const measuredDir = mkdtempSync(join(tmpdir(), 'toolgate-timings-'));
const measured = join(measuredDir, 'timings.json');
const command = [
  process.execPath,
  'test',
  `--parallel=${workers}`,
  ...(process.env.TOOLGATE_TEST_ISOLATE === '1' ? [] : ['--no-isolate']),
  // bunfig.toml's [test] timeout does not reach --parallel workers (they start with bun's 5 s default): restate it.
  '--timeout=30000',
  `--timings=${measured}`,
  ...(existsSync(timings) ? [`--timings=${timings}`] : []),
  '--update-timings',
  ...passThrough,
];
const child = Bun.spawn(command, {
  stdio: ['inherit', 'inherit', 'inherit'],
  env: { ...process.env, TOOLGATE_FULL_SUITE: '1', TOOLGATE_REQUIREMENTS_DIR: recordDir },
});
const status = await child.exited;
if (updateTimings && existsSync(measured)) copyFileSync(measured, timings);
rmSync(measuredDir, { recursive: true, force: true });

const records = readdirSync(recordDir).map((name) => JSON.parse(readFileSync(join(recordDir, name), 'utf8')) as RunRecordJson);
rmSync(recordDir, { recursive: true, force: true });
// A run of some files only (arguments name them) is not asked to cover every requirement.
const wholeSuite = passThrough.every((arg) => arg.startsWith('-'));
let missingCount = 0;
if (wholeSuite) {
  const { missing, notRunHere } = uncoveredAcross(records);
  for (const [id, reason] of notRunHere) console.warn(`requirement ${id} not verified in this run: ${reason}`);
  if (missing.length > 0) console.error(`requirements cited by no test that ran: ${missing.join(', ')}`);
  missingCount = missing.length;
}
process.exit(status !== 0 ? status : missingCount > 0 ? 1 : 0);
