/**
 * The PostgreSQL guard and its parser (libpg-query's WebAssembly: ~18 MB of RSS, and ~74 MB that JavaScriptCore
 * counts as extra memory when it sizes its collections), loaded with the first call, saved statement or policy check
 * of a postgresql connector rather than with the driver: validating and introspecting a connector need no parser, and
 * `npm start`'s first start validates and introspects the demo's connector without serving a call (decision 0287).
 *
 * The driver waits for `loadPgGuard()` before each call until the guard is loaded (its precheck, `pgGuardReady`), so
 * a call never reaches the database unguarded: it waits for the parser. Called before that, the functions below
 * throw (a call that reached them would fail closed, as an error result, never run).
 */
import type { ParseResult, ScanResult } from 'libpg-query';
import type { GuardOptions, GuardResult } from '../../shared/sqlguard/types.ts';

type Guard = (sql: string, opts: GuardOptions) => GuardResult;

const notLoaded = (): never => {
  throw new Error('the PostgreSQL guard is not loaded yet (loadPgGuard)');
};
let guard: Guard = notLoaded;
let parse: (query: string) => ParseResult = notLoaded;
let scan: (query: string) => ScanResult = notLoaded;
let ready = false;
let loading: Promise<void> | null = null;

/** Loads the guard and its parser once (a failed load is tried again by the next caller). */
export function loadPgGuard(): Promise<void> {
  loading ??= Promise.all([import('./guard.ts'), import('./parser.ts')]).then(
    ([g, p]) => {
      guard = g.guardPostgresSql;
      parse = p.parseSync;
      scan = p.scanSync;
      ready = true;
    },
    (err) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}

/** Before a call: null at once once loaded; else waits for the load (the text when it cannot load). */
export function pgGuardReady(): null | Promise<string | null> {
  if (ready) return null;
  return loadPgGuard().then(
    () => null,
    () => 'The SQL guard for PostgreSQL could not be loaded, so the call was not run.',
  );
}

/** guard.ts's guardPostgresSql, once loaded. */
export const guardPostgresSql: Guard = (sql, opts) => guard(sql, opts);
/** parser.ts's parseSync, once loaded. */
export const parseSync = (query: string): ParseResult => parse(query);
/** parser.ts's scanSync, once loaded. */
export const scanSync = (query: string): ScanResult => scan(query);
