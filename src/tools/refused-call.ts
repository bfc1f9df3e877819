/**
 * What the audit row of a refused tools/call keeps (issue 41; docs/decisions/0320, 0321): outcome `refused`, the
 * reason class the guard or policy gave, the reason the agent got, and the statement's fingerprint. The statement
 * itself only when the org keeps statements in `full`; with `none`, not even the fingerprint text (its id stays,
 * which tells nothing of the statement but groups rows). Unless `full`, string literals quoted in the reason (a
 * parser's "at or near '...'") are replaced by `?`, so no value the agent sent is kept.
 */
import type { RefusalClass } from '../connectors/shared/sqlguard/types.ts';
import { fingerprintId, statementFingerprint } from '../audit/fingerprint.ts';

/** How much of a refused statement an org keeps in its audit log (`audit_statements`; decision 0321). */
export type AuditStatements = 'none' | 'fingerprint' | 'full';

/** Longest reason and statement kept. */
const REASON_MAX = 1000;
const STATEMENT_MAX = 10_000;

function scrubbed(reason: string): string {
  return reason.replace(/'(?:[^'\\]|\\.|'')*'?/g, '?');
}

/** The `details` fields a refused call's row adds. */
export function refusedCallDetails(
  reasonClass: RefusalClass,
  reason: string,
  args: Record<string, unknown>,
  keep: AuditStatements = 'fingerprint',
): Record<string, unknown> {
  const text = typeof args.sql === 'string' ? args.sql : null;
  const fingerprint = text === null ? null : statementFingerprint(text);
  return {
    reason_class: reasonClass,
    reason: (keep === 'full' ? reason : scrubbed(reason)).slice(0, REASON_MAX),
    ...(fingerprint === null ? {} : { fingerprint_id: fingerprintId(fingerprint) }),
    ...(fingerprint !== null && keep !== 'none' ? { fingerprint } : {}),
    ...(text !== null && keep === 'full' ? { statement: text.slice(0, STATEMENT_MAX) } : {}),
  };
}
