// The import structure of src/: no cycles, and no import pointing up the layers (entry -> http -> handlers -> domain).
// The graph is parsed from the source text of every file under src/ (test/support/imports.ts).
import { describe, expect, test } from 'bun:test';
import { cycles, importGraph, importsOf, layerOf, packageImports, upwardImports } from './support/imports.ts';

describe('layers of src/', () => {
  const graph = importGraph();

  test('the graph is read: every file is there and the entry reaches the gateway', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('main.ts')).toContain('boot.ts');
    expect(graph.get('gateway.ts')).toContain('app.ts');
  });

  test('no import cycles', () => {
    expect(cycles(graph)).toEqual([]);
  });

  test('no upward imports: domain modules never import http/ or handlers/, handlers never import http/', () => {
    expect(upwardImports(graph)).toEqual([]);
  });

  test('handlers hold no SQL: no handler imports drizzle-orm or the store schema (queries live in repositories)', () => {
    const packages = packageImports();
    const offenders = [...graph.keys()]
      .filter((f) => layerOf(f) === 'handlers')
      .filter((f) => packages.get(f)!.some((p) => p.startsWith('drizzle-orm')) || graph.get(f)!.includes('store/schema.ts'));
    expect(offenders).toEqual([]);
    // The check sees package imports at all: the repositories do import drizzle-orm.
    expect(packages.get('connectors/repository.ts')).toContain('drizzle-orm');
  });

  test('the dependency container lives outside http/ and handlers/', () => {
    expect(layerOf('deps.ts')).toBe('domain');
    expect(graph.has('deps.ts')).toBe(true);
    expect([...graph.keys()].filter((f) => f.startsWith('http/') && f !== 'http/router.ts')).toEqual([]);
  });
});

describe('the checker itself finds what it must', () => {
  test('imports: static, type-only, multi-line, re-exports and dynamic; comments and packages ignored', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      'import {\n  c,\n  d,\n} from "./cd.ts";',
      "export { e } from './e.ts';",
      "export * from './f.ts';",
      "import './side-effect.ts';",
      "const g = await import('./g.ts');",
      "import { Elysia } from 'elysia';",
      "// import { no } from './commented.ts';",
      "/* import { no } from './block.ts'; */",
    ].join('\n');
    expect(importsOf(text)).toEqual(['./a.ts', '../b.ts', './cd.ts', './e.ts', './f.ts', './side-effect.ts', './g.ts']);
  });

  test('a cycle of two and of three files is reported', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
      ['c/x.ts', ['c/y.ts']],
      ['c/y.ts', ['c/z.ts']],
      ['c/z.ts', ['c/x.ts']],
      ['d.ts', []],
    ]);
    expect(cycles(graph)).toEqual(
      expect.arrayContaining([
        ['a.ts', 'b.ts'],
        ['c/x.ts', 'c/y.ts', 'c/z.ts'],
      ]),
    );
    expect(cycles(graph)).toHaveLength(2);
  });

  test('a domain module importing http/ or handlers/ is reported, a handler importing domain code is not', () => {
    const graph = new Map([
      ['tools/catalog.ts', ['http/router.ts']],
      ['mcp/tools.ts', ['handlers/mcp.ts']],
      ['handlers/mcp.ts', ['mcp/tools.ts', 'http/router.ts']],
      ['http/router.ts', ['handlers/context.ts']],
    ]);
    expect(upwardImports(graph)).toEqual([
      'handlers/mcp.ts (handlers) -> http/router.ts (http)',
      'mcp/tools.ts (domain) -> handlers/mcp.ts (handlers)',
      'tools/catalog.ts (domain) -> http/router.ts (http)',
    ]);
  });
});
