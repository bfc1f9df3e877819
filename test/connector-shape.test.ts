// Connectors that look alike (issue 28, docs/decisions/0284-a-type-is-its-folder.md): everything a connector type
// is lives in its folder (src/connectors/<type>/), which registers itself in src/connectors/index.ts, and in the
// contract (openapi.yaml: the ConnectorType enum, its config schema and the `x-toolgate-types` lists). No other code
// under src/ names a type, so adding one changes nothing shared:
//  - a type's name as a string literal ('mysql') or as a property key (`{ mysql: ... }`, a map keyed by type) is
//    refused outside its own folder, read from the TypeScript AST (comments and prose inside strings do not count);
//  - the contract's `x-toolgate-types` lists, which the console reads instead of naming types, must say what the
//    registered drivers do (the console's "can this type write" comes from there, not from a hand-kept table).
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { connectorTypes, getDriver } from '../src/connectors/index.ts';
import type { SqlToolSpec } from '../src/connectors/types.ts';
import openapi from '../generated/openapi.json';

const ROOT = join(import.meta.dir, '..');
const SRC = join(ROOT, 'src');
/** The console's pages (decision 0329): browser code, held to the same rule. */
const WEB = join(ROOT, 'web', 'console');
const TYPES = ['postgresql', 'mysql', 'mongodb', 'mssql', 'oracle', 'mcp'] as const;

/**
 * The only places outside a type's folder that may name it, each with why; none of them branches on a connector's type.
 * The test compares both ways: an entry that no longer matches anything must leave.
 */
const ALLOWED: Record<string, string> = {
  // The demo (`npm run demo`) creates one PostgreSQL connector: data it sends, like a REST client's body.
  'demo/demo.ts postgresql': 'the demo connector it creates',
  // A driver's kind ('database' | 'mcp'), which the gateway branches on, is not its type.
  'connectors/types.ts mcp': 'ConnectorDriver.kind',
  // The MCP endpoint's credentials (`x-toolgate-auth: mcp`) and its sign-in audience: the protocol, not a connector type.
  'http/router.ts mcp': 'the MCP endpoint auth door',
  'handlers/oauth-signin.ts mcp': 'the MCP sign-in audience',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

type Key = (ts.PropertyAssignment | ts.PropertySignature | ts.ShorthandPropertyAssignment) & { name: ts.Identifier };
const isKey = (n: ts.Node): n is Key =>
  (ts.isPropertyAssignment(n) || ts.isPropertySignature(n) || ts.isShorthandPropertyAssignment(n)) && ts.isIdentifier(n.name);
/** How many of an object's keys are type names: a map keyed by type has several. */
const typeKeys = (parent: ts.Node): number =>
  (ts.isObjectLiteralExpression(parent) ? parent.properties : ts.isTypeLiteralNode(parent) || ts.isInterfaceDeclaration(parent) ? parent.members : []).filter(
    (m) => isKey(m) && (TYPES as readonly string[]).includes(m.name.text),
  ).length;

/**
 * Every type name written as a string literal or a property key, with where: `<file> <type>` and its line. A key
 * `mcp` alone is the protocol (`deps.mcp`, an OAuth scope's switch), so it counts only among other type-name keys.
 */
function typeMentions(src: string, base = src): { key: string; line: number }[] {
  const found: { key: string; line: number }[] = [];
  for (const path of sourceFiles(src)) {
    const file = relative(base, path);
    const text = readFileSync(path, 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
    const visit = (node: ts.Node): void => {
      let name: string | undefined;
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) name = node.text;
      else if (isKey(node) && (node.name.text !== 'mcp' || typeKeys(node.parent) > 1)) name = node.name.text;
      const type = TYPES.find((t) => t === name);
      // Its own folder (and what lies under it, its guard) may name it; another type's folder may not.
      if (type && !file.startsWith(join('connectors', type) + '/')) {
        found.push({ key: `${file} ${type}`, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

describe('a connector type is its folder', () => {
  // Keys of src/ are relative to it (`demo/demo.ts`), those of the console's pages to the root (`web/console/...`).
  const mentions = [...typeMentions(SRC), ...typeMentions(WEB, ROOT)];

  test('the scan reads the source: each type folder names its own type, and the allowed places are found', () => {
    const own = sourceFiles(SRC).filter((f) => /connectors\/(postgresql|mysql|mssql|oracle)\/[^/]+\.ts$/.test(relative(SRC, f)));
    expect(own.length).toBeGreaterThan(20);
    expect(mentions.some((m) => m.key === 'demo/demo.ts postgresql')).toBe(true);
  });

  test('no code outside its folder and the registration names a type (literal or key)', () => {
    const stray = mentions.filter((m) => !(m.key in ALLOWED)).map((m) => `${m.key.startsWith('web/') ? '' : 'src/'}${m.key.replace(' ', `:${m.line} '`)}'`);
    expect(stray).toEqual([]);
  });

  test('every allowed place still names the type (a stale entry leaves the list)', () => {
    const seen = new Set(mentions.map((m) => m.key));
    expect(Object.keys(ALLOWED).filter((k) => !seen.has(k))).toEqual([]);
  });
});

type Schema = { 'x-toolgate-types'?: string[]; properties?: Record<string, Schema> };
const schemas = openapi.components.schemas as unknown as Record<string, Schema>;
const listed = (s: Schema | undefined): string[] => [...(s?.['x-toolgate-types'] ?? [])].sort();

describe("the contract's x-toolgate-types say what the drivers do", () => {
  const drivers = connectorTypes().map((type) => ({ type, d: getDriver(type)! }));
  const where = (ok: (d: (typeof drivers)[number]['d']) => boolean) => drivers.filter(({ d }) => ok(d)).map(({ type }) => type);

  test('every type has one config schema: DatabaseConfig for the database kind, McpConfig for MCP servers', () => {
    expect(listed(schemas.DatabaseConfig)).toEqual(where((d) => d.kind === 'database'));
    expect(listed(schemas.McpConfig)).toEqual(where((d) => d.kind === 'mcp'));
    expect([...listed(schemas.DatabaseConfig), ...listed(schemas.McpConfig)].sort()).toEqual([...openapi.components.schemas.ConnectorType.enum].sort());
  });

  test('allow_write lists the types that can write (a database type that is not read-only, decision 0116)', () => {
    expect(listed(schemas.CreateConnectorRequest!.properties!.allow_write)).toEqual(where((d) => d.kind === 'database' && d.readOnly !== true));
  });

  test('ToolPolicy lists the types that take a policy; its masks and row filter the types that apply them', async () => {
    const columns = [
      { name: 'id', type: 'int' },
      { name: 'ssn', type: 'text' },
    ];
    const tool = { name: 't', description: '', inputSchema: {}, target: { schema: 's', table: 't', kind: 'table', columns } } as unknown as SqlToolSpec;
    const hidden = { hidden_columns: ['ssn'], masked_columns: [], row_filter: null };
    const masked = { hidden_columns: [], masked_columns: [{ column: 'ssn', mask: 'hash' as const }], row_filter: null };
    const takes: string[] = [];
    const full: string[] = [];
    for (const { type, d } of drivers) {
      if (d.checkPolicy && (await d.checkPolicy(tool, hidden)) === null) takes.push(type);
      if (d.checkPolicy && (await d.checkPolicy(tool, masked)) === null) full.push(type);
    }
    expect(listed(schemas.ToolPolicy)).toEqual(takes);
    expect(listed(schemas.ToolPolicy!.properties!.masked_columns)).toEqual(full);
    expect(listed(schemas.ToolPolicy!.properties!.row_filter)).toEqual(full);
    // The check can fail: the read-only types refuse a mask.
    expect(full.length).toBeLessThan(listed(schemas.ToolPolicy).length);
  });
});
