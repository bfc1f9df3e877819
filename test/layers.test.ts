// The import structure of src/: every folder (and top-level file) has a rank (test/support/ranks.ts), imports point
// only to strictly lower ranks, so no folder-level cycle can form; .ts and .tsx alike.
// The graph is parsed from the source text of every file under src/ (test/support/imports.ts).
//
// Where SQL lives (docs/decisions/0160-one-way-to-touch-the-store.md): a file "holds SQL" when it imports drizzle-orm
// or store/schema.ts, or writes SQL text. Only these may: a folder's repository.ts (its tables' queries, drizzle's
// builder first), a typed <name>-statements.ts next to the module it serves (hand-written statements of a hot path or
// set-based pass: each a function with typed parameters and typed rows, so no caller casts a result), store/ (the
// connection, the schema, the migrations) and the connector drivers and SQL guard (SQL against the org's databases,
// not the gateway's store). Everything else calls those functions. A statement that runs prepared uses drizzle's
// `.prepare(name)` when it is a builder query (built once per handle with store/db.ts preparedFor) and store/db.ts
// executePrepared(db, name, sql) when it is SQL text: one path, drizzle's session.prepareQuery, under both.
import { describe, expect, test } from 'bun:test';
import {
  browserImports,
  cycles,
  filesMatching,
  folderGraph,
  holdsSql,
  importGraph,
  importsOf,
  insideGraph,
  rankViolations,
  sqlFiles,
  unitOf,
  unrankedUnits,
} from './support/imports.ts';
import { INNER_RANKS, RANKS } from './support/ranks.ts';
import { operations } from '../generated/operations.ts';
import { buildApp } from '../src/app.ts';

/**
 * Files that hold SQL outside the places for it, each with why. Empty: only a file with a strong reason may enter it
 * (the test compares both ways, so a file that stops holding SQL must leave it).
 */
const SQL_EXCEPTIONS: Record<string, string> = {};

/** Where SQL belongs: repositories, the store, statement files, and the connector drivers and SQL guard. */
function sqlAllowed(file: string): boolean {
  return (
    /(^|\/)repository\.ts$/.test(file) ||
    file.startsWith('store/') ||
    /-statements\.ts$/.test(file) ||
    // connectors/<type>/ (one driver each), connectors/shared/ (their common code, the guards' shared part in shared/sqlguard/)
    /^connectors\/[^/]+\//.test(file)
  );
}

describe('ranks of src/', () => {
  const graph = importGraph();

  test('the graph is read: every file is there, .tsx included, and the entry reaches the gateway', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('main.ts')).toContain('boot.ts');
    expect(graph.get('gateway.ts')).toContain('app.ts');
  });

  test("the browser's code is its own room: web/console imports only itself and generated/, and src/ never imports it", () => {
    const imports = browserImports();
    // The check sees what it looks for: the entry's pages and the generated client.
    expect(imports.some((i) => i.from === 'web/console/main.tsx' && i.to.startsWith('web/console/'))).toBe(true);
    expect(imports.some((i) => i.to.startsWith('generated/client/'))).toBe(true);
    expect(imports.filter((i) => !i.to.startsWith('web/console/') && !i.to.startsWith('generated/'))).toEqual([]);
    expect(filesMatching(/from '(\.\.\/)+web\//)).toEqual([]);
  });

  test('every folder and top-level file of src/ has a rank and a role, and the table names nothing else', () => {
    expect(unrankedUnits(graph)).toEqual([]);
    const units = new Set([...graph.keys()].map(unitOf));
    expect(Object.keys(RANKS).filter((unit) => !units.has(unit))).toEqual([]);
    for (const { rank, role } of Object.values(RANKS)) {
      expect(Number.isInteger(rank) && rank >= 0).toBe(true);
      expect(role.length).toBeGreaterThan(10);
    }
  });

  test('every import across folders points to a strictly lower rank (none upward, none within a rank)', () => {
    expect(rankViolations(graph)).toEqual([]);
  });

  test('no folder-level cycle and no file-level cycle', () => {
    expect(cycles(folderGraph(graph))).toEqual([]);
    expect(cycles(graph)).toEqual([]);
  });

  test('SQL only in repositories, the store, statement files, connector drivers and the guard (exceptions named)', () => {
    const found = sqlFiles();
    expect(found.filter((f) => !sqlAllowed(f)).sort()).toEqual(Object.keys(SQL_EXCEPTIONS).sort());
    // Handlers never hold SQL: a thin handler calls a domain module.
    expect(found.filter((f) => f.startsWith('handlers/') || f.startsWith('http/'))).toEqual([]);
    // The check sees each kind of SQL it looks for.
    expect(found).toContain('connectors/repository.ts');
    expect(found).toContain('limits/quota-statements.ts');
    expect(found).toContain('store/schema.ts');
  });

  test("drizzle's session and dialect are read in store/ only (the prepared path, the handle's identity)", () => {
    // `db._.session` (the prepared path) and a cast to read `dialect` (the handle's identity): store/db.ts's alone.
    const reaching = filesMatching(/\._\.session\b|\bas unknown as \{\s*dialect\s*:/);
    expect(reaching.filter((f) => !f.startsWith('store/'))).toEqual([]);
    // The check sees what it looks for.
    expect(reaching).toContain('store/db.ts');
  });

  test('the dependency container lives outside http/ and handlers/', () => {
    expect(graph.has('deps.ts')).toBe(true);
    expect(RANKS['deps.ts']!.rank).toBeLessThan(RANKS['handlers/']!.rank);
    expect([...graph.keys()].filter((f) => f.startsWith('http/') && f !== 'http/router.ts')).toEqual([]);
  });
});

describe('ranks one level down (connectors/: the type folders stand on shared/, never the reverse)', () => {
  const graph = importGraph();
  for (const [folder, ranks] of Object.entries(INNER_RANKS)) {
    const inside = insideGraph(graph, folder);

    test(`${folder}: every subfolder and file has a rank and a role, and the table names nothing else`, () => {
      expect(unrankedUnits(inside, ranks)).toEqual([]);
      const units = new Set([...inside.keys()].map(unitOf));
      expect(Object.keys(ranks).filter((unit) => !units.has(unit))).toEqual([]);
      for (const { rank, role } of Object.values(ranks)) {
        expect(Number.isInteger(rank) && rank >= 0).toBe(true);
        expect(role.length).toBeGreaterThan(10);
      }
    });

    test(`${folder}: every import between its units points to a strictly lower rank; no unit-level cycle`, () => {
      expect(rankViolations(inside, ranks)).toEqual([]);
      expect(cycles(folderGraph(inside))).toEqual([]);
    });
  }

  test('the graph inside a folder keeps its own imports, relative to it, and drops the rest', () => {
    const graph = new Map([
      ['connectors/shared/walk.ts', ['connectors/mysql/walk.ts', 'util/log.ts']],
      ['connectors/mysql/walk.ts', ['connectors/shared/walk.ts']],
      ['tools/catalog.ts', ['connectors/types.ts']],
    ]);
    const inside = insideGraph(graph, 'connectors/');
    expect(inside).toEqual(
      new Map([
        ['shared/walk.ts', ['mysql/walk.ts']],
        ['mysql/walk.ts', ['shared/walk.ts']],
      ]),
    );
    // The import that shared/sqlguard/readonly-walk.ts made of mysql/guard/walk.ts: upward, and a unit cycle.
    const ranks = { 'shared/': { rank: 1, role: 'common code' }, 'mysql/': { rank: 2, role: 'one type' } };
    expect(rankViolations(inside, ranks)).toEqual(['shared/walk.ts (1) -> mysql/walk.ts (2)']);
    expect(cycles(folderGraph(inside))).toEqual([['mysql/', 'shared/']]);
  });
});

/**
 * Where src/ may build a Request of its own, each with why (decision 0317): a request is the caller's, and what the
 * gateway does for itself is a function call, not a walk back in through its own front door.
 */
const SYNTHETIC_REQUEST_EXCEPTIONS: Record<string, string> = {
  'docs/explorer.ts': "renders the API explorer's page once, inside the swagger plugin's own app; never a caller's request",
};

/**
 * Where src/ creates routes besides the router, each with why. Empty: the console's pages, assets, session and
 * sign-in are operations of the contract (tag `console`, decision 0353), bound by http/router.ts like every other.
 */
const ROUTE_EXCEPTIONS: Record<string, string> = {};

/** Routes of the built app that are no operation of the contract, each with why (method and path). */
const NON_CONTRACT_ROUTES: Record<string, string> = {};

/** A route made: an Elysia app, a route on one, or a table keyed by method and path. */
const ROUTE_MADE = /\bnew Elysia\b|\.route\(|\.(?:all|options|get|post|put|patch|delete)\(\s*['"`]\/|['"`](?:GET|POST|PUT|PATCH|DELETE) \//;

describe('one front door', () => {
  test('new Request( appears in src/ only where an exception says why', () => {
    expect(filesMatching(/\bnew Request\(/)).toEqual(Object.keys(SYNTHETIC_REQUEST_EXCEPTIONS).sort());
  });

  test('only the router creates routes', () => {
    expect(filesMatching(ROUTE_MADE)).toEqual(['http/router.ts', ...Object.keys(ROUTE_EXCEPTIONS)].sort());
  });

  test("the app's one route table is the contract's: every route an operation, its path's 405 or a preflight", () => {
    // Nothing but the route table is built here: no request is answered, so the container needs no more than this.
    const app = buildApp({ config: { publicUrl: 'http://localhost:8080' } } as never);
    const elysiaPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');
    const declared = new Set(operations.map((op) => `${op.method} ${elysiaPath(op.path)}`));
    const paths = new Set(operations.map((op) => elysiaPath(op.path)));
    const routes = app.routes.map((r) => ({ method: r.method, path: r.path }));
    const stray = routes.filter((r) => !declared.has(`${r.method} ${r.path}`) && !(['ALL', 'OPTIONS'].includes(r.method) && paths.has(r.path)));
    expect(stray.map((r) => `${r.method} ${r.path}`).sort()).toEqual(Object.keys(NON_CONTRACT_ROUTES).sort());
    // The check sees what it looks for: the console's page, an operation with a parameter, the MCP transport.
    for (const route of ['GET /console', 'GET /console/assets/:asset', 'POST /mcp/:orgSlug'])
      expect(routes.map((r) => `${r.method} ${r.path}`)).toContain(route);
  });

  test('the route pattern sees an app, a route and a route table, not a path in a string', () => {
    for (const made of ['const app = new Elysia();', "app.all('/console/*', h)", "app.route('GET', path)", "{ 'POST /console/auth/logout': signOut }"]) {
      expect([made, ROUTE_MADE.test(made)]).toEqual([made, true]);
    }
    expect(ROUTE_MADE.test("fetch('/api/org')")).toBe(false);
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

  test('a folder cycle made of files that form no file cycle is reported at folder level', () => {
    // tools/runtime -> mcp/protocol and mcp/server -> tools/runtime: no file imports itself back, the folders do.
    const graph = new Map([
      ['tools/runtime.ts', ['mcp/protocol.ts']],
      ['mcp/protocol.ts', []],
      ['mcp/server.ts', ['tools/runtime.ts', 'mcp/protocol.ts']],
    ]);
    expect(cycles(graph)).toEqual([]);
    expect(folderGraph(graph)).toEqual(
      new Map([
        ['tools/', ['mcp/']],
        ['mcp/', ['tools/']],
      ]),
    );
    expect(cycles(folderGraph(graph))).toEqual([['mcp/', 'tools/']]);
  });

  test('an upward import, an import within one rank and an unranked unit are reported; a downward one is not', () => {
    const ranks = {
      'util/': { rank: 0, role: 'low' },
      'tools/': { rank: 1, role: 'middle' },
      'orgs/': { rank: 1, role: 'middle too' },
      'mcp/': { rank: 2, role: 'high' },
    };
    const graph = new Map([
      ['util/log.ts', ['tools/catalog.ts']],
      ['tools/catalog.ts', ['util/log.ts', 'tools/runtime.ts', 'orgs/repository.ts']],
      ['mcp/server.ts', ['tools/catalog.ts', 'util/log.ts', 'stray/x.tsx']],
    ]);
    expect(rankViolations(graph, ranks)).toEqual([
      'mcp/server.ts (2) -> stray/x.tsx (no rank)',
      'tools/catalog.ts (1) -> orgs/repository.ts (1)',
      'util/log.ts (0) -> tools/catalog.ts (1)',
    ]);
    expect(unrankedUnits(new Map([...graph, ['stray/x.tsx', []]]), ranks)).toEqual(['stray/']);
  });

  test('SQL is seen through drizzle-orm, the store schema and written-out statements, not in comments', () => {
    expect(holdsSql('', ['drizzle-orm'], [])).toBe(true);
    expect(holdsSql('', ['drizzle-orm/pg-core'], [])).toBe(true);
    expect(holdsSql('', [], ['store/schema.ts'])).toBe(true);
    expect(holdsSql("export * from '../../generated/store-schema.ts';", [], [])).toBe(true);
    expect(holdsSql('const q = `WITH x AS (SELECT 1) SELECT * FROM x`;', [], [])).toBe(true);
    expect(holdsSql("run('DELETE FROM t')", [], [])).toBe(true);
    expect(holdsSql('// SELECT nothing\nconst label = "Selected";', ['elysia'], ['store/db.ts'])).toBe(false);
  });
});
