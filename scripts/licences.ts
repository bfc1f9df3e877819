/**
 * The third-party licence report (decision 0310): reads the installed tree (the gateway's runtime closure, as
 * `npm install` of the package brings it) and the vendored files, writes docs/third-party-licences.md, and exits 1
 * when a licence is not compatible with Apache-2.0 (scripts/lib/licences.ts holds the policy and the reviewed list).
 * `--check` writes nothing and also fails when the committed report differs from the tree (test/licences.test.ts, CI).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Entry, installedRuntimePackages, judgeLicence, VENDORED } from './lib/licences.ts';

// `--root DIR` reports on another installed tree (the test's fixtures); the default is this repository.
const rootAt = process.argv.indexOf('--root');
const ROOT = rootAt > 0 ? resolve(process.argv[rootAt + 1]!) : resolve(import.meta.dir, '..');
const REPORT = join(ROOT, 'docs', 'third-party-licences.md');

function render(entries: Entry[]): string {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.licence, (counts.get(e.licence) ?? 0) + 1);
  const lines = [
    '# Third-party licences',
    '',
    '<!-- DO NOT EDIT: written by scripts/licences.ts from the installed tree (node_modules/.bin/bun scripts/licences.ts). -->',
    '',
    "Toolgate is licensed under Apache-2.0 ([LICENSE](../LICENSE)). What it ships with: every package the gateway's",
    '`npm install` brings (its dependencies and optional dependencies, transitively, as installed here: another',
    "platform's Bun binary is not listed) and the files vendored into the repository. Development tools (devDependencies)",
    'are not shipped and not listed. The policy, and the licences that fail the report: [decision 0310](decisions/0310-third-party-licence-policy.md).',
    '',
    '| Licence | Packages |',
    '|:--|--:|',
    ...[...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([licence, n]) => `| ${licence} | ${n} |`),
    '',
    '| Package | Version | Licence | Verdict |',
    '|:--|:--|:--|:--|',
    ...entries.map((e) => `| ${e.name} | ${e.version} | ${e.licence} | ${judgeLicence(e.name, e.licence).why} |`),
    '',
  ];
  return lines.join('\n');
}

/** One row per name and version (a package installed at two paths is one dependency). */
function unique(entries: Entry[]): Entry[] {
  const byKey = new Map<string, Entry>();
  for (const e of entries) if (!byKey.has(`${e.name}@${e.version}`)) byKey.set(`${e.name}@${e.version}`, e);
  return [...byKey.values()];
}

const entries = [...unique(installedRuntimePackages(ROOT)), ...VENDORED];
const refused = entries.filter((e) => !judgeLicence(e.name, e.licence).ok);
const report = render(entries);
let failed = false;
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(REPORT, 'utf8');
  } catch {
    // missing: reported below as stale
  }
  if (committed !== report) {
    console.error('licences: docs/third-party-licences.md is stale: run node_modules/.bin/bun scripts/licences.ts');
    failed = true;
  }
} else {
  writeFileSync(REPORT, report);
}
for (const e of refused) console.error(`licences: ${e.name}@${e.version} (${e.where}): ${e.licence}: ${judgeLicence(e.name, e.licence).why}`);
if (refused.length) failed = true;
console.log(`licences: ${entries.length} packages and files, ${refused.length} refused`);
process.exit(failed ? 1 : 0);
