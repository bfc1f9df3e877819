/** Wire form of audit rows (AuditEvent in openapi.yaml), plain or redacted for export. */
import type { AuditRow } from './repository.ts';

/**
 * Detail fields that can never hold argument values, SQL, secrets, e-mail or IP addresses: ids, names the gateway
 * generated, counts and codes. A redacted export keeps only these (an allow-list, so a field added later is
 * redacted until someone decides it is safe).
 */
const SAFE_DETAIL_KEYS = new Set([
  'tool_name',
  'connector_id',
  'connector_type',
  'outcome',
  'duration_ms',
  'row_count',
  'tables',
  'held_for_approval',
  'abandoned',
  'counted',
  'code',
  'status',
  'count',
  'fields',
  'tools',
  'through_seq',
  'deleted',
  'plan',
  'type',
  'credential',
  'method',
  // Refused calls (issue 41): a class of a closed list and a digest of the fingerprint, never the statement.
  'reason_class',
  'fingerprint_id',
]);

const EMAIL = /[^\s@"]+@[^\s@"]+/;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/;
const IPV6 = /\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\b/i;

function redactText(value: string | null): string | null {
  if (value === null) return null;
  return EMAIL.test(value) || IPV4.test(value) || IPV6.test(value) ? '[redacted]' : value;
}

function redactDetails(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (!SAFE_DETAIL_KEYS.has(key)) continue;
    out[key] = typeof value === 'string' ? redactText(value) : Array.isArray(value) ? value.map((v) => (typeof v === 'string' ? redactText(v) : v)) : value;
  }
  return out;
}

export function auditEventView(row: AuditRow, redact = false) {
  return {
    id: row.id,
    seq: row.seq,
    action: row.action,
    actor: { type: row.actorType, id: redact ? redactText(row.actorId) : row.actorId },
    target_type: row.targetType,
    target_id: redact ? redactText(row.targetId) : row.targetId,
    outcome: row.outcome,
    details: redact ? redactDetails(row.details) : row.details,
    created_at: row.createdAt.toISOString(),
    prev_hash: row.prevHash,
    hash: row.hash,
  };
}
