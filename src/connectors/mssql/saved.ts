/** SQL Server's saved-statement facts (shared/saved.ts): how its text is lexed, and its `@p1`, `@p2`, ... markers. */
import type { PositionalMarkers } from '../shared/saved.ts';
import type { SqlSyntax } from '../shared/sqltext.ts';

/** `--` and nesting `/* *\/` comments, `[bracketed]` names, quotes without backslash escapes. */
export const MSSQL_SYNTAX: SqlSyntax = {
  hashComments: false,
  dashCommentNeedsSpace: false,
  nestedComments: true,
  executableComments: false,
  backslash: 'none',
  backtickNames: false,
  bracketNames: true,
  qQuotes: false,
  dollarQuotes: false,
  positional: null,
};

/** `@p1`, `@p2`, ...; values as they are (tedious types them). */
export const MSSQL_MARKERS: PositionalMarkers = { marker: (n) => `@p${n}`, value: (_type, v) => v };
