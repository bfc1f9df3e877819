/**
 * One audit row as both writers send it (repository.ts's unsealed batch and sealed-insert.ts's sealed one): its id, its
 * chain tail, its MAC and the JSON members of its fields, serialised once, canonically, for the store and for the
 * row's hash alike. The writers add the org and, when sealed, the chain position around them.
 */
import { rowTail } from './chain.ts';
import { type AuditMacKey, rowMac } from './mac.ts';
import { storableJson } from './storable.ts';

/** The fields of an audit input (repository.ts AuditInput) a row is made of; named here so this file imports nothing back. */
interface RowInput {
  action: string;
  actor: { type: string; id?: string | null };
  targetType?: string;
  targetId?: string;
  outcome?: string;
  details?: Record<string, unknown>;
}

const textOrNull = (value: string | null | undefined) => (value == null ? null : String(value));

export interface RowText {
  id: string;
  /** The chained fields after the chain position (chain.ts rowTail). */
  tail: string;
  mac: string;
  /** `"action":…,"actor_type":…,…,"details":{…}` — the members after id, mac, org and chain position. */
  members: string;
}

/** The row of `event` at `now`; `macOrgId` is the org id as the MAC covers it (as the store prints it). */
export function rowText(key: AuditMacKey, event: RowInput, now: Date, macOrgId: string): RowText {
  const id = crypto.randomUUID();
  const fields = {
    createdAt: now,
    action: String(event.action),
    actorType: String(event.actor.type),
    actorId: textOrNull(event.actor.id),
    targetType: textOrNull(event.targetType),
    targetId: textOrNull(event.targetId),
    outcome: event.outcome ?? 'success',
  };
  const details = storableJson(event.details ?? {});
  const tail = rowTail({ ...fields, details: {} }, details);
  const members = `"action":${JSON.stringify(fields.action)},"actor_type":${JSON.stringify(fields.actorType)},"actor_id":${JSON.stringify(fields.actorId)},"target_type":${JSON.stringify(fields.targetType)},"target_id":${JSON.stringify(fields.targetId)},"outcome":${JSON.stringify(fields.outcome)},"details":${details}`;
  return { id, tail, mac: rowMac(key, id, macOrgId, tail), members };
}
