// Every requirement of test/requirements.ts is cited by at least one test through `verifies(...)`, and every cited id is
// in the manifest. This file finds the citations in the test sources as text; whether the citing test really ran is
// checked after a full run by test/setup.ts (a citation in a skipped test does not count there).
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REQUIREMENTS } from './requirements.ts';

const TEST_DIR = import.meta.dir;
const SELF = join(TEST_DIR, 'requirements.test.ts');

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** test/**\/*.test.ts and test/connectors/*.ts (the conformance suite lives in a plain module), minus this file. */
function sources(): string[] {
  const all = walk(TEST_DIR);
  const tests = all.filter((f) => f.endsWith('.test.ts'));
  const connectors = all.filter((f) => f.startsWith(`${join(TEST_DIR, 'connectors')}/`) && f.endsWith('.ts'));
  return [...new Set([...tests, ...connectors])].filter((f) => f !== SELF).sort();
}

/** id -> files citing it. */
function citations(): Map<string, Set<string>> {
  const cited = new Map<string, Set<string>>();
  // A call as a statement of its own: a citation in a comment does not count.
  const call = /^[ \t]*verifies\(([^)]*)\);/gm;
  const id = /(['"`])([^'"`]+)\1/g;
  for (const file of sources()) {
    const text = readFileSync(file, 'utf8');
    for (const [, args] of text.matchAll(call)) {
      const ids = [...args!.matchAll(id)].map((m) => m[2]!);
      if (ids.length === 0) throw new Error(`${relative(TEST_DIR, file)}: verifies(${args}) cites no literal id`);
      for (const one of ids) {
        if (!cited.has(one)) cited.set(one, new Set());
        cited.get(one)!.add(relative(TEST_DIR, file));
      }
    }
  }
  return cited;
}

describe('spec requirements', () => {
  const manifest = Object.keys(REQUIREMENTS);
  const cited = citations();

  test('the manifest is well formed', () => {
    expect(manifest.length).toBeGreaterThan(50);
    for (const [id, statement] of Object.entries(REQUIREMENTS)) {
      expect({ id, ok: /^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$/.test(id) }).toEqual({ id, ok: true });
      // One line, with its source in brackets.
      expect({ id, ok: !statement.includes('\n') && /\[[^\]]+\]$/.test(statement) }).toEqual({ id, ok: true });
    }
  });

  test('the scan finds the test sources and their citations', () => {
    const files = sources().map((f) => relative(TEST_DIR, f));
    expect(files).toContain('mcp-endpoint.test.ts');
    expect(files).toContain(join('connectors', 'conformance.ts'));
    expect(files).not.toContain('requirements.test.ts');
    expect(cited.size).toBeGreaterThan(0);
  });

  test('every requirement is cited by at least one test', () => {
    const uncited = manifest.filter((id) => !cited.has(id));
    expect(uncited).toEqual([]);
  });

  test('every cited id is in the manifest', () => {
    const unknown = [...cited].filter(([id]) => !Object.hasOwn(REQUIREMENTS, id)).map(([id, files]) => `${id} (${[...files].join(', ')})`);
    expect(unknown).toEqual([]);
  });
});
