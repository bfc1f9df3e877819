// Issue 43 item 3: the third-party licence report. The policy (scripts/lib/licences.ts) judged on SPDX expressions,
// the closure walked on a made-up installed tree, the script failing on a GPL package in it, and the script run on
// this repository's installed tree in check mode: no refused licence, and docs/third-party-licences.md up to date.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installedRuntimePackages, judgeLicence } from '../scripts/lib/licences.ts';

const ROOT = resolve(import.meta.dir, '..');
const BUN = join(ROOT, 'node_modules', '.bin', 'bun');

async function licences(...args: string[]) {
  const proc = Bun.spawn([BUN, join(ROOT, 'scripts', 'licences.ts'), ...args], { stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

const scratch = mkdtempSync(join(tmpdir(), 'toolgate-licences-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A package.json at `dir` (created). */
function manifest(dir: string, fields: Record<string, unknown>) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify(fields));
}

describe('the policy', () => {
  test('permissive licences pass; copyleft, source-available, missing and unknown ones fail', () => {
    for (const ok of ['MIT', 'Apache-2.0', 'ISC', 'BSD-3-Clause', '0BSD', '(MIT OR CC0-1.0)', '(Apache-2.0 OR UPL-1.0)', 'Apache-2.0 WITH LLVM-exception']) {
      expect(judgeLicence('x', ok).ok, ok).toBe(true);
    }
    for (const bad of [
      'GPL-3.0-only',
      'GPL-2.0-or-later',
      'AGPL-3.0-only',
      'LGPL-2.1-only',
      'SSPL-1.0',
      'BUSL-1.1',
      'CC-BY-NC-4.0',
      'UNKNOWN',
      '',
      'SEE LICENSE IN LICENSE.txt',
      'UNLICENSED',
    ]) {
      expect(judgeLicence('x', bad).ok, bad).toBe(false);
    }
  });

  test('OR takes any accepted side; AND needs every side', () => {
    expect(judgeLicence('x', '(MIT OR GPL-3.0-only)')).toEqual({ ok: true, why: 'chosen from MIT OR GPL-3.0-only' });
    expect(judgeLicence('x', '(MIT AND GPL-3.0-only)').ok).toBe(false);
    expect(judgeLicence('x', '(GPL-2.0-only OR AGPL-3.0-only)').ok).toBe(false);
  });
});

describe('the installed tree', () => {
  const tree = join(scratch, 'tree');
  manifest(tree, { name: 'app', dependencies: { a: '1' }, optionalDependencies: { 'not-here': '1' }, devDependencies: { dev: '1' } });
  manifest(join(tree, 'node_modules', 'a'), { name: 'a', version: '1.0.0', license: 'MIT', dependencies: { b: '1' } });
  manifest(join(tree, 'node_modules', 'a', 'node_modules', 'b'), { name: 'b', version: '2.0.0', licenses: [{ type: 'GPL-3.0-only' }] });
  manifest(join(tree, 'node_modules', 'dev'), { name: 'dev', version: '1.0.0', license: 'AGPL-3.0-only' });

  test('is the runtime closure: nested dependencies found, dev tools and absent optional packages left out', () => {
    expect(installedRuntimePackages(tree).map((e) => [e.name, e.licence, e.where])).toEqual([
      ['a', 'MIT', 'node_modules/a'],
      ['b', 'GPL-3.0-only', 'node_modules/a/node_modules/b'],
    ]);
  });

  test('the script fails on it, naming the GPL package', async () => {
    mkdirSync(join(tree, 'docs'), { recursive: true });
    const result = await licences('--root', tree);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('b@2.0.0 (node_modules/a/node_modules/b): GPL-3.0-only: GPL-3.0-only is not accepted with Apache-2.0');
    expect(readFileSync(join(tree, 'docs', 'third-party-licences.md'), 'utf8')).toContain('| b | 2.0.0 | GPL-3.0-only |');
  });

  test('a missing required dependency is an error, not a shorter report', () => {
    const broken = join(scratch, 'broken');
    manifest(broken, { name: 'app', dependencies: { gone: '1' } });
    expect(() => installedRuntimePackages(broken)).toThrow('gone (a dependency of app) is not installed');
  });
});

test("this repository's runtime tree: every licence accepted, and docs/third-party-licences.md up to date", async () => {
  const result = await licences('--check');
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(result.stdout).toMatch(/licences: \d+ packages and files, 0 refused/);
  const report = readFileSync(join(ROOT, 'docs', 'third-party-licences.md'), 'utf8');
  // The runtime the package brings is listed, with its licence.
  expect(report).toContain('| bun | 1.4.5 | MIT |');
});
