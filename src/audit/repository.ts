/** Writes and reads audit events; every row is scoped to its org. */
import type { Queryable } from '../store/db.ts';
import { auditEvents } from '../store/schema.ts';

export interface Actor {
  type: 'api_key' | 'oauth_client' | 'user' | 'operator' | 'system' | 'anonymous';
  id: string | null;
}

export interface AuditInput {
  orgId: string;
  action: string;
  actor: Actor;
  targetType?: string;
  targetId?: string;
  outcome?: 'success' | 'denied' | 'error';
  details?: Record<string, unknown>;
}

export async function recordAudit(db: Queryable, event: AuditInput): Promise<void> {
  await db.insert(auditEvents).values({
    orgId: event.orgId,
    action: event.action,
    actorType: event.actor.type,
    actorId: event.actor.id,
    targetType: event.targetType ?? null,
    targetId: event.targetId ?? null,
    outcome: event.outcome ?? 'success',
    details: event.details ?? {},
  });
}
