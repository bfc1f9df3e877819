/**
 * The tool.called relay: the tool call's audit row IS the outbox record of its `tool.called` event. The hot path
 * writes only that row (committed before the answer, by group commit) and pays nothing for webhooks; once the row is
 * sealed into its org's chain (audit/recorder.ts: by its own INSERT, or ~100 ms later on the fallback) the relay
 * turns it into a webhook_events row and one webhook_deliveries row per subscribed endpoint, for the delivery worker.
 *
 * - One cursor per endpoint (webhook_relay_cursors.after_seq, a position in the org's audit chain): rows after it
 *   and up to the chain head are relayed and the cursor moved in ONE transaction, the cursors locked FOR UPDATE SKIP
 *   LOCKED, so relays on several instances take different endpoints and never relay a row twice.
 * - The event id is derived from the audit row (`evt_<audit row uuid>`) and the inserts are ON CONFLICT DO NOTHING:
 *   a retried or repeated relay writes nothing new, and a receiver sees the same id on every attempt.
 * - The body's `data` is built from the row (audit details of tools/call, runtime.ts), exactly the documented
 *   ToolCalledData. Only calls that ran a connector tool (`counted`) are events, as before. An endpoint that takes
 *   `tool.refused` (opt-in, issue 41) also gets the refused rows (outcome `refused`) as ToolRefusedData.
 * - An endpoint's cursor starts at the chain head when it is created or starts taking tool.called (enabled again,
 *   or the type added), with `since` = that time: no backfill of earlier calls, including calls committed just before
 *   but sealed just after (their row's created_at is earlier; the clocks of gateway and database are assumed close). Disabled endpoints are skipped (their cursor stays, and is
 *   moved to the head when they are enabled again), deleted ones lose their cursor with them.
 */
import type { Queryable } from '../store/db.ts';
import type { DomainEvent } from '../events/index.ts';
import { deliveryBody } from './outbox.ts';
import { callsAfterCursors, claimCursors, insertEventsAndDeliveries, moveCursors, type CallRow } from './relay-statements.ts';

/** Cursors (endpoints) taken per relay transaction, and rows per cursor. */
const CURSORS_PER_ROUND = 50;
const ROWS_PER_CURSOR = 1000;

/** The documented tool.refused event of one sealed refused tools/call row: never the statement, only what the row keeps. */
function toolRefusedEvent(row: Omit<CallRow, 'webhook_id' | 'seq'>, d: Record<string, unknown>, orgId: string): DomainEvent {
  return {
    id: `evt_${row.id}`,
    type: 'tool.refused',
    orgId,
    createdAt: new Date(row.created_at),
    data: {
      tool_name: d.tool_name,
      connector_id: d.connector_id,
      connector_type: d.connector_type,
      reason_class: d.reason_class,
      reason: d.reason,
      ...(typeof d.fingerprint_id === 'string' ? { fingerprint_id: d.fingerprint_id } : {}),
      ...(typeof d.fingerprint === 'string' ? { fingerprint: d.fingerprint } : {}),
      caller: { type: row.actor_type, id: row.actor_id },
    },
  };
}

/** The documented event of one sealed tools/call audit row: tool.called (a counted call) or tool.refused. */
function toolCallEvent(row: Omit<CallRow, 'webhook_id' | 'seq'>, orgId: string): DomainEvent {
  const d = (typeof row.details === 'string' ? JSON.parse(row.details) : row.details) as Record<string, unknown>;
  if (row.outcome === 'refused') return toolRefusedEvent(row, d, orgId);
  return {
    id: `evt_${row.id}`,
    type: 'tool.called',
    orgId,
    createdAt: new Date(row.created_at),
    data: {
      tool_name: d.tool_name,
      connector_id: d.connector_id,
      connector_type: d.connector_type,
      is_error: d.outcome === 'error',
      duration_ms: Math.max(0, Math.round(Number(d.duration_ms) || 0)),
      caller: { type: row.actor_type, id: row.actor_id },
      // Every table the statement read (a SQL connector's call; decision 0292).
      ...(Array.isArray(d.tables) ? { tables: d.tables } : {}),
    },
  };
}

/**
 * One relay round: up to CURSORS_PER_ROUND endpoints behind their org's chain head, each moved over at most
 * ROWS_PER_CURSOR tool-call rows, in one transaction. Returns the deliveries queued and whether work is left.
 */
async function relayRound(db: Queryable): Promise<{ queued: number; more: boolean }> {
  return db.transaction(async (tx) => {
    const cursors = await claimCursors(tx, CURSORS_PER_ROUND);
    if (cursors.length === 0) return { queued: 0, more: false };
    const input = JSON.stringify(
      cursors.map((c) => ({
        webhook_id: c.webhook_id,
        org_id: c.org_id,
        after_seq: Number(c.after_seq),
        head_seq: Number(c.head_seq),
        since: new Date(c.since).toISOString(),
        called: c.events.includes('tool.called'),
        refused: c.events.includes('tool.refused'),
      })),
    );
    // Rows up to the head read above are sealed and committed (the sealer moves the head in the rows' transaction).
    const rows = await callsAfterCursors(tx, input, ROWS_PER_CURSOR);
    const byWebhook = new Map<string, CallRow[]>();
    for (const row of rows) {
      const list = byWebhook.get(row.webhook_id) ?? [];
      list.push(row);
      byWebhook.set(row.webhook_id, list);
    }
    const events = new Map<string, { id: string; org_id: string; type: string; body: string; created_at: string }>();
    const deliveries: { event_id: string; webhook_id: string; org_id: string }[] = [];
    const moved: { webhook_id: string; after_seq: number }[] = [];
    let more = false;
    for (const c of cursors) {
      const mine = byWebhook.get(c.webhook_id) ?? [];
      const full = mine.length === ROWS_PER_CURSOR;
      if (full) more = true;
      moved.push({ webhook_id: c.webhook_id, after_seq: full ? Number(mine[mine.length - 1]!.seq) : Number(c.head_seq) });
      for (const row of mine) {
        const event = toolCallEvent(row, c.org_id);
        if (!events.has(event.id))
          events.set(event.id, { id: event.id, org_id: c.org_id, type: event.type, body: deliveryBody(event), created_at: event.createdAt.toISOString() });
        deliveries.push({ event_id: event.id, webhook_id: c.webhook_id, org_id: c.org_id });
      }
    }
    if (events.size > 0) await insertEventsAndDeliveries(tx, [...events.values()], deliveries);
    await moveCursors(tx, moved);
    return { queued: deliveries.length, more: more || cursors.length === CURSORS_PER_ROUND };
  });
}

/** Relays until no endpoint is behind (bounded rounds per call, so one poll cannot run forever). Returns deliveries queued. */
export async function relayToolCalled(db: Queryable, maxRounds = 20): Promise<number> {
  let queued = 0;
  for (let i = 0; i < maxRounds; i++) {
    const round = await relayRound(db);
    queued += round.queued;
    if (!round.more) break;
  }
  return queued;
}
