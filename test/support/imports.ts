/**
 * The import graph of src/: every relative `import`/`export ... from`/`import()` of every .ts file, resolved to the
 * file it names (type-only imports included: they couple modules just the same), plus its cycles and the layer
 * violations. Used by test/layers.test.ts and runnable alone (`bun test/support/imports.ts`) to draw the graph.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dir, '../../src');

/** The layers, top to bottom; a module may import only from its own layer or one below it. */
const LAYERS = ['entry', 'http', 'handlers', 'domain'] as const;
export type Layer = (typeof LAYERS)[number];

/** Which layer a file (path relative to src/, with forward slashes) belongs to. */
export function layerOf(file: string): Layer {
  if (file.startsWith('http/')) return 'http';
  if (file.startsWith('handlers/')) return 'handlers';
  // The files at the top of src/ assemble and serve the app; config.ts, deps.ts and errors.ts are shared below it.
  if (!file.includes('/') && !['config.ts', 'deps.ts', 'errors.ts'].includes(file)) return 'entry';
  if (file.startsWith('demo/')) return 'entry';
  return 'domain';
}

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listTs(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

// `from '...'` of import/export statements (single or multi-line) and dynamic `import('...')`.
const IMPORT_RE = /(?:^|[\s;}])(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[\s;}])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Strips comments so that an example import in a comment is not taken for a real one. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** Every specifier a source text imports, relative or package. */
function allImportsOf(text: string): string[] {
  return [...stripComments(text).matchAll(IMPORT_RE)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Relative specifiers of a source text (package imports are not part of the graph). */
export function importsOf(text: string): string[] {
  return allImportsOf(text).filter((spec) => spec.startsWith('.'));
}

/** file (relative to src/) -> packages it imports (bare specifiers, node: builtins excluded). */
export function packageImports(root = SRC): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const path of listTs(root)) {
    const from = relative(root, path).split('\\').join('/');
    out.set(
      from,
      allImportsOf(readFileSync(path, 'utf8')).filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:')),
    );
  }
  return out;
}

/** file (relative to src/) -> files it imports inside src/. */
export function importGraph(root = SRC): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const path of listTs(root)) {
    const from = relative(root, path).split('\\').join('/');
    const targets = importsOf(readFileSync(path, 'utf8'))
      .map((spec) =>
        relative(root, resolve(dirname(path), spec))
          .split('\\')
          .join('/'),
      )
      .filter((to) => !to.startsWith('..'));
    graph.set(from, [...new Set(targets)]);
  }
  return graph;
}

/** Strongly connected components with more than one file (or a file importing itself): the import cycles. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)!.includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return found;
}

/** Imports that point up the layers (e.g. a domain module importing from http/ or handlers/). */
export function upwardImports(graph: Map<string, string[]>): string[] {
  const rank = (file: string) => LAYERS.indexOf(layerOf(file));
  const out: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) if (rank(to) < rank(from)) out.push(`${from} (${layerOf(from)}) -> ${to} (${layerOf(to)})`);
  }
  return out.sort();
}

/** Files that import nothing and that nothing imports, or that the given roots do not reach. */
function unreachable(graph: Map<string, string[]>, roots: string[]): string[] {
  const seen = new Set<string>();
  const walk = (v: string): void => {
    if (seen.has(v)) return;
    seen.add(v);
    for (const w of graph.get(v) ?? []) walk(w);
  };
  roots.forEach(walk);
  return [...graph.keys()].filter((f) => !seen.has(f)).sort();
}

if (import.meta.main) {
  const graph = importGraph();
  let edges = 0;
  for (const targets of graph.values()) edges += targets.length;
  console.log(`${graph.size} files, ${edges} imports`);
  console.log('cycles:', JSON.stringify(cycles(graph), null, 1));
  console.log('upward imports:', JSON.stringify(upwardImports(graph), null, 1));
  console.log('not reached from the entries:', JSON.stringify(unreachable(graph, ['main.ts', 'deno.ts', 'cli.ts']), null, 1));
}
