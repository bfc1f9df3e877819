/** The SQL guards: per-dialect checks that one SQL text only does what a single-table tool may do. */

export type { GuardOptions, GuardResult, StatementKind } from './types.ts';
export { guardPostgresSql, initPostgresGuard, clearPostgresGuardCache } from './postgres.ts';
export { guardMysqlSql, initMysqlGuard, clearMysqlGuardCache } from './mysql.ts';
