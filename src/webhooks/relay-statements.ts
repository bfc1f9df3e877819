/**
 * The statements of the tool.called relay (relay.ts), typed: cursors are claimed FOR UPDATE SKIP LOCKED, the rows
 * behind them read in one statement, the events and deliveries inserted ON CONFLICT DO NOTHING, the cursors moved.
 */
import { sql, type SQL } from 'drizzle-orm';
import { arrayParam, rowsOf, type Queryable } from '../store/db.ts';

/** Sets the endpoint's cursor to its org's chain head (creation, or when it starts taking a relayed type again). */
export async function resetRelayCursor(tx: Queryable, orgId: string, webhookId: string): Promise<void> {
  await tx.execute(sql`
    INSERT INTO webhook_relay_cursors (webhook_id, org_id, after_seq, since)
    VALUES (${webhookId}, ${orgId}, coalesce((SELECT head_seq FROM audit_chains WHERE org_id = ${orgId}), 0), now())
    ON CONFLICT (webhook_id) DO UPDATE SET after_seq = excluded.after_seq, since = excluded.since`);
}

interface Cursor {
  webhook_id: string;
  org_id: string;
  /** The endpoint's event types: which rows it relays (tool.called: counted calls; tool.refused: refused ones). */
  events: string[];
  after_seq: string | number;
  head_seq: string | number;
  since: string | Date;
}

export interface CallRow {
  webhook_id: string;
  id: string;
  seq: string | number;
  created_at: string | Date;
  actor_type: string;
  actor_id: string | null;
  outcome: string;
  details: Record<string, unknown> | string;
}

/** The event types relayed from tools/call audit rows (the rest are emitted by their writers). */
export const RELAYED_TYPES = ['tool.called', 'tool.refused'];

/** Claims up to `limit` cursors of enabled endpoints taking a relayed type that are behind their org's chain head. */
export async function claimCursors(tx: Queryable, limit: number): Promise<Cursor[]> {
  return rowsOf<Cursor>(
    await tx.execute(sql`
        SELECT c.webhook_id, c.org_id, c.after_seq, c.since, h.head_seq, w.events
        FROM webhook_relay_cursors c
        JOIN webhooks w ON w.id = c.webhook_id AND w.enabled AND w.events && ARRAY['tool.called', 'tool.refused']::text[]
        JOIN audit_chains h ON h.org_id = c.org_id AND h.head_seq > c.after_seq
        ORDER BY c.webhook_id
        LIMIT ${limit}
        FOR UPDATE OF c SKIP LOCKED`),
  );
}

/**
 * The tools/call rows after each cursor that its endpoint takes (counted ones for tool.called, refused ones for
 * tool.refused), up to its head and since its `since`, at most `perCursor` each, in chain order. `cursors` is a JSON
 * array of {webhook_id, org_id, after_seq, head_seq, since, called, refused}.
 */
export async function callsAfterCursors(tx: Queryable, cursors: string, perCursor: number): Promise<CallRow[]> {
  return rowsOf<CallRow>(
    await tx.execute(sql`
        SELECT c.webhook_id, a.id, a.seq, a.created_at, a.actor_type, a.actor_id, a.outcome, a.details
        FROM jsonb_to_recordset(${cursors}::jsonb)
          AS c(webhook_id uuid, org_id uuid, after_seq bigint, head_seq bigint, since timestamptz, called boolean, refused boolean)
        CROSS JOIN LATERAL (
          SELECT e.id, e.seq, e.created_at, e.actor_type, e.actor_id, e.outcome, e.details FROM audit_events e
          WHERE e.org_id = c.org_id AND e.seq > c.after_seq AND e.seq <= c.head_seq AND e.created_at >= c.since
            AND e.action = 'tool.called' AND e.details->>'connector_id' IS NOT NULL
            AND ((c.called AND e.details->>'counted' = 'true') OR (c.refused AND e.outcome = 'refused'))
          ORDER BY e.seq LIMIT ${perCursor}
        ) a`),
  );
}

/** Inserts the events and their deliveries; those already there are left as they are. */
export async function insertEventsAndDeliveries(
  tx: Queryable,
  events: { id: string; org_id: string; type: string; body: string; created_at: string }[],
  deliveries: { event_id: string; webhook_id: string; org_id: string }[],
): Promise<void> {
  await tx.execute(sql`
        INSERT INTO webhook_events (id, org_id, type, body, created_at)
        SELECT id, org_id, type, body, created_at
        FROM jsonb_to_recordset(${JSON.stringify(events)}::jsonb) AS x(id text, org_id uuid, type text, body text, created_at timestamptz)
        ON CONFLICT (id) DO NOTHING`);
  await tx.execute(sql`
        INSERT INTO webhook_deliveries (event_id, webhook_id, org_id)
        SELECT event_id, webhook_id, org_id
        FROM jsonb_to_recordset(${JSON.stringify(deliveries)}::jsonb) AS x(event_id text, webhook_id uuid, org_id uuid)
        ON CONFLICT (event_id, webhook_id) DO NOTHING`);
}

/**
 * Moves relay cursors. The cursors go in as arrays the planner counts (store/db.ts arrayParam): one primary-key probe
 * per moved cursor, not a scan of every endpoint's cursor.
 */
export function moveCursorsStatement(moved: readonly { webhook_id: string; after_seq: number }[]): SQL {
  return sql`
      UPDATE webhook_relay_cursors AS c SET after_seq = v.after_seq
      FROM unnest(${arrayParam(
        'uuid',
        moved.map((m) => m.webhook_id),
      )}::uuid[], ${arrayParam(
        'bigint',
        moved.map((m) => m.after_seq),
      )}::bigint[]) AS v(webhook_id, after_seq)
      WHERE c.webhook_id = v.webhook_id`;
}

export async function moveCursors(tx: Queryable, moved: readonly { webhook_id: string; after_seq: number }[]): Promise<void> {
  await tx.execute(moveCursorsStatement(moved));
}
