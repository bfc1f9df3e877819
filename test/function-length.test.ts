// No function longer than MAX_LINES lines in the project's own code (issue 28): src/, web/, sdk/, scripts/, bench/ and
// test/support/, .ts and .tsx; generated/ is not walked (it is written by scripts/gen.ts). A function's length is
// counted from the line it starts on to the line it ends on, both included; a nested function is counted on its own
// and inside the function that holds it, as written. Parsed with the TypeScript compiler API.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const MAX_LINES = 80;
const ROOT = join(import.meta.dir, '..');
const WALKED = ['src', 'web', 'sdk', 'scripts', 'bench', 'test/support'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'generated' ? [] : sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

interface Found {
  where: string;
  name: string;
  lines: number;
}

function nameOf(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(file);
  return '(anonymous)';
}

/** Every function-like node of `text` with its length in lines. */
function functionLengths(path: string, text: string): Found[] {
  const kind = path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const found: Found[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const start = file.getLineAndCharacterOfPosition(fn.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(fn.getEnd()).line;
      found.push({ where: `${relative(ROOT, path)}:${start + 1}`, name: nameOf(fn, file), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('function length', () => {
  const files = WALKED.flatMap((dir) => sourceFiles(join(ROOT, dir)));
  const all = files.flatMap((path) => functionLengths(path, readFileSync(path, 'utf8')));

  test('the walk sees the code: hundreds of files and functions, .tsx included', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files.some((f) => f.endsWith('.tsx'))).toBe(true);
    expect(all.length).toBeGreaterThan(1000);
  });

  test('the count: start to end, both lines included; nested functions on their own and inside the outer one', () => {
    const text = ['function outer() {', '  const inner = () => {', '    return 1;', '  };', '  return inner();', '}', 'class A {', '  m() {}', '}'].join('\n');
    const lengths = functionLengths(join(ROOT, 'x.ts'), text).map((f) => `${f.name}:${f.lines}`);
    expect(lengths).toEqual(['outer:6', 'inner:3', 'm:1']);
  });

  test(`no function over ${MAX_LINES} lines outside generated/`, () => {
    const long = all.filter((f) => f.lines > MAX_LINES).map((f) => `${f.where} ${f.name} (${f.lines} lines)`);
    expect(long).toEqual([]);
  });
});
