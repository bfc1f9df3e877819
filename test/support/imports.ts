/**
 * The import graph of src/: every relative `import`/`export ... from`/`import()` of every .ts and .tsx file, resolved to the
 * file it names (type-only imports included: they couple modules just the same), the folder graph it draws, its
 * cycles and the imports that break the ranks. Used by test/layers.test.ts and runnable alone (`bun test/support/imports.ts`) to draw the graph.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { INNER_RANKS, RANKS } from './ranks.ts';

const SRC = resolve(import.meta.dir, '../../src');

/** The unit a file (path relative to src/, forward slashes) belongs to: its top folder (`tools/`), or the file itself at the top of src/. */
export function unitOf(file: string): string {
  const slash = file.indexOf('/');
  return slash < 0 ? file : file.slice(0, slash + 1);
}

/** The rank of a file's unit (test/support/ranks.ts); undefined when the unit has none. */
function rankOf(file: string, ranks: typeof RANKS): number | undefined {
  return ranks[unitOf(file)]?.rank;
}

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listTs(path));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
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
function packageImports(root = SRC): Map<string, string[]> {
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

// A string or template literal that opens with an SQL statement keyword (upper case, as this codebase writes SQL).
const SQL_TEXT_RE = /['"`]\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\s/;

/** Whether a source text holds SQL: drizzle-orm or the store schema imported (store/schema.ts, or the generated module
 * it re-exports, generated/store-schema.ts, outside src/), or SQL text written out. */
export function holdsSql(text: string, packages: string[], imports: string[]): boolean {
  return (
    packages.some((p) => p === 'drizzle-orm' || p.startsWith('drizzle-orm/')) ||
    imports.includes('store/schema.ts') ||
    importsOf(text).some((spec) => spec.endsWith('/generated/store-schema.ts')) ||
    SQL_TEXT_RE.test(stripComments(text))
  );
}

/** Files (relative to src/) whose text, comments left out, matches `pattern`. */
export function filesMatching(pattern: RegExp, root = SRC): string[] {
  return listTs(root)
    .filter((path) => pattern.test(stripComments(readFileSync(path, 'utf8'))))
    .map((path) => relative(root, path).split('\\').join('/'))
    .sort();
}

/** Files (relative to src/) that hold SQL (see holdsSql). */
export function sqlFiles(root = SRC): string[] {
  const graph = importGraph(root);
  const packages = packageImports(root);
  return listTs(root)
    .map((path) => relative(root, path).split('\\').join('/'))
    .filter((file) => holdsSql(readFileSync(join(root, file), 'utf8'), packages.get(file)!, graph.get(file)!))
    .sort();
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

/**
 * The browser's room (web/console, issue 39 item 3): every relative import of its files, resolved from the
 * repository's root, with the file that makes it. Package imports (preact, ...) are not relative and not listed.
 */
export function browserImports(): { from: string; to: string }[] {
  const root = resolve(SRC, '..');
  const web = join(root, 'web', 'console');
  const found: { from: string; to: string }[] = [];
  for (const path of listTs(web))
    for (const spec of importsOf(readFileSync(path, 'utf8')).filter((s) => s.startsWith('.')))
      found.push({
        from: relative(root, path).split('\\').join('/'),
        to: relative(root, resolve(dirname(path), spec))
          .split('\\')
          .join('/'),
      });
  return found;
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

/** unit -> units it imports (test/support/ranks.ts names the units): the file graph drawn at folder level. */
export function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [from, targets] of graph) {
    const edges = folders.get(unitOf(from)) ?? new Set<string>();
    folders.set(unitOf(from), edges);
    for (const to of targets) if (unitOf(to) !== unitOf(from)) edges.add(unitOf(to));
  }
  return new Map([...folders].map(([unit, edges]) => [unit, [...edges].sort()]));
}

/**
 * The graph inside one folder (`connectors/`), paths relative to it: its files, and their imports of each other. With
 * it, the unit, rank and cycle checks apply one level down (test/support/ranks.ts INNER_RANKS).
 */
export function insideGraph(graph: Map<string, string[]>, folder: string): Map<string, string[]> {
  const inside = new Map<string, string[]>();
  for (const [from, targets] of graph) {
    if (!from.startsWith(folder)) continue;
    const local = targets.filter((to) => to.startsWith(folder)).map((to) => to.slice(folder.length));
    inside.set(from.slice(folder.length), local);
  }
  return inside;
}

/** Imports across units that do not point to a strictly lower rank (upward, or sideways within one rank). */
export function rankViolations(graph: Map<string, string[]>, ranks = RANKS): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (unitOf(to) === unitOf(from)) continue;
      const [a, b] = [rankOf(from, ranks), rankOf(to, ranks)];
      if (a === undefined || b === undefined || b >= a) out.push(`${from} (${a ?? 'no rank'}) -> ${to} (${b ?? 'no rank'})`);
    }
  }
  return out.sort();
}

/** Units of the graph that the ranks table does not name. */
export function unrankedUnits(graph: Map<string, string[]>, ranks = RANKS): string[] {
  return [...new Set([...graph.keys()].map(unitOf))].filter((unit) => !(unit in ranks)).sort();
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
  const folders = folderGraph(graph);
  for (const [unit, targets] of [...folders].sort(([a], [b]) => (RANKS[a]?.rank ?? -1) - (RANKS[b]?.rank ?? -1)))
    console.log(`${RANKS[unit]?.rank ?? '?'} ${unit} -> ${targets.join(' ')}`);
  console.log('folder cycles:', JSON.stringify(cycles(folders), null, 1));
  console.log('rank violations:', JSON.stringify(rankViolations(graph), null, 1));
  console.log('units without a rank:', JSON.stringify(unrankedUnits(graph)));
  for (const [folder, ranks] of Object.entries(INNER_RANKS)) {
    const inside = insideGraph(graph, folder);
    const units = folderGraph(inside);
    for (const [unit, targets] of [...units].sort(([a], [b]) => (ranks[a]?.rank ?? -1) - (ranks[b]?.rank ?? -1)))
      console.log(`  ${folder} ${ranks[unit]?.rank ?? '?'} ${unit} -> ${targets.join(' ')}`);
    console.log(`${folder} cycles:`, JSON.stringify([...cycles(units), ...cycles(inside)]));
    console.log(`${folder} rank violations:`, JSON.stringify(rankViolations(inside, ranks), null, 1));
    console.log(`${folder} units without a rank:`, JSON.stringify(unrankedUnits(inside, ranks)));
  }
  console.log('not reached from the entries:', JSON.stringify(unreachable(graph, ['main.ts', 'deno.ts', 'cli.ts']), null, 1));
}
