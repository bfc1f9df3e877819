/** Webhook endpoints, the outbox (events and their deliveries) and delivery attempts; every read is scoped to its org. */
import { and, eq, sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { webhooks } from '../store/schema.ts';

export type WebhookRow = typeof webhooks.$inferSelect;

export async function listWebhooks(db: Queryable, orgId: string): Promise<WebhookRow[]> {
  return db.select().from(webhooks).where(eq(webhooks.orgId, orgId)).orderBy(webhooks.createdAt, webhooks.id);
}

export async function findWebhook(db: Queryable, orgId: string, id: string): Promise<WebhookRow | null> {
  const [row] = await db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.orgId, orgId), eq(webhooks.id, id)));
  return row ?? null;
}

export async function insertWebhook(db: Queryable, values: typeof webhooks.$inferInsert): Promise<WebhookRow> {
  const [row] = await db.insert(webhooks).values(values).returning();
  return row!;
}

export async function updateWebhook(
  db: Queryable,
  orgId: string,
  id: string,
  patch: Partial<Pick<WebhookRow, 'url' | 'events' | 'enabled' | 'disabledReason'>>,
): Promise<WebhookRow | null> {
  const [row] = await db
    .update(webhooks)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(webhooks.orgId, orgId), eq(webhooks.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteWebhook(db: Queryable, orgId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(webhooks)
    .where(and(eq(webhooks.orgId, orgId), eq(webhooks.id, id)))
    .returning({ id: webhooks.id });
  return rows.length > 0;
}

export interface OutboxEvent {
  id: string;
  orgId: string;
  type: string;
  /** The exact delivery body, signed and sent unchanged on every attempt. */
  body: string;
  createdAt: Date;
}

/**
 * Writes events and one pending delivery per subscribed enabled endpoint, in one statement on the caller's
 * transaction. An event no endpoint subscribes to leaves no row.
 */
export async function insertOutbox(tx: Queryable, events: readonly OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  const input = JSON.stringify(events.map((e) => ({ id: e.id, org_id: e.orgId, type: e.type, body: e.body, created_at: e.createdAt.toISOString() })));
  await tx.execute(sql`
    WITH ev AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(id text, org_id uuid, type text, body text, created_at timestamptz)
    ), subs AS (
      SELECT ev.id AS event_id, w.id AS webhook_id, w.org_id
      FROM ev JOIN webhooks w ON w.org_id = ev.org_id AND w.enabled AND ev.type = ANY(w.events)
    ), written AS (
      INSERT INTO webhook_events (id, org_id, type, body, created_at)
      SELECT id, org_id, type, body, created_at FROM ev WHERE id IN (SELECT event_id FROM subs)
      RETURNING id
    )
    INSERT INTO webhook_deliveries (event_id, webhook_id, org_id)
    SELECT s.event_id, s.webhook_id, s.org_id FROM subs s JOIN written w ON w.id = s.event_id`);
}

export interface ClaimedDelivery {
  id: string;
  eventId: string;
  webhookId: string;
  orgId: string;
  /** This attempt's number (1 for the first). */
  attempt: number;
  type: string;
  body: string;
  url: string;
  secretSealed: string;
}

/**
 * Claims due deliveries for `leaseMs` under `leaseToken`. FOR UPDATE SKIP LOCKED lets instances claim side by side
 * without waiting on or taking each other's rows; the lease (not an open transaction) keeps a claimed row away from
 * other workers while its request runs, and a crashed worker's rows come back when the lease ends. No endpoint gets
 * more than `perEndpoint` leased rows from one claim (counting those already leased), so one slow receiver cannot
 * take the batch.
 */
export async function claimDue(db: Queryable, opts: { limit: number; perEndpoint: number; leaseMs: number; leaseToken: string }): Promise<ClaimedDelivery[]> {
  const result = await db.execute(sql`
    WITH inflight AS (
      SELECT webhook_id, count(*) AS n FROM webhook_deliveries
      WHERE status = 'pending' AND leased_until > now() GROUP BY webhook_id
    ), candidates AS (
      SELECT d.id, d.next_attempt_at,
        row_number() OVER (PARTITION BY d.webhook_id ORDER BY d.next_attempt_at) + coalesce(i.n, 0) AS slot
      FROM webhook_deliveries d
      JOIN webhooks w ON w.id = d.webhook_id AND w.enabled
      LEFT JOIN inflight i ON i.webhook_id = d.webhook_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
    ), picked AS (
      SELECT id FROM webhook_deliveries
      WHERE id IN (SELECT id FROM candidates WHERE slot <= ${opts.perEndpoint} ORDER BY next_attempt_at LIMIT ${opts.limit})
        AND status = 'pending' AND (leased_until IS NULL OR leased_until <= now())
      FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE webhook_deliveries d
      SET lease_token = ${opts.leaseToken}, leased_until = now() + ${opts.leaseMs} * interval '1 millisecond', attempts = d.attempts + 1
      FROM picked WHERE d.id = picked.id
      RETURNING d.id, d.event_id, d.webhook_id, d.org_id, d.attempts
    )
    SELECT c.id, c.event_id, c.webhook_id, c.org_id, c.attempts, e.type, e.body, w.url, w.secret_sealed
    FROM claimed c JOIN webhook_events e ON e.id = c.event_id JOIN webhooks w ON w.id = c.webhook_id`);
  return rowsOf<Record<string, unknown>>(result).map((r) => ({
    id: String(r.id),
    eventId: String(r.event_id),
    webhookId: String(r.webhook_id),
    orgId: String(r.org_id),
    attempt: Number(r.attempts),
    type: String(r.type),
    body: String(r.body),
    url: String(r.url),
    secretSealed: String(r.secret_sealed),
  }));
}

export interface AttemptOutcome {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** What was sent and what came back (decision 0283); absent when nothing was sent (the secret could not be unsealed). */
  exchange?: AttemptExchange;
}

/** An attempt's request headers and, when an answer came, the response's headers and the start of its body (capped). */
export interface AttemptExchange {
  requestHeaders: Record<string, string>;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseTruncated: boolean;
}

/**
 * Records an attempt and moves the delivery on: `retryInMs` null ends it as delivered (ok) or failed, a number
 * schedules the next attempt. Only the holder of the lease writes; a worker whose lease ran out (and was taken over)
 * changes nothing. Returns whether the write was made.
 */
export async function finishAttempt(
  db: Queryable,
  claim: Pick<ClaimedDelivery, 'id' | 'webhookId' | 'attempt'>,
  leaseToken: string,
  outcome: AttemptOutcome,
  next: { status: 'delivered' | 'failed' } | { retryInMs: number },
): Promise<boolean> {
  const ex = outcome.exchange;
  return db.transaction(async (tx) => {
    const moved =
      'status' in next
        ? await tx.execute(sql`
            UPDATE webhook_deliveries SET status = ${next.status}, completed_at = now(), lease_token = NULL, leased_until = NULL
            WHERE id = ${claim.id} AND lease_token = ${leaseToken} RETURNING id`)
        : await tx.execute(sql`
            UPDATE webhook_deliveries
            SET next_attempt_at = now() + ${next.retryInMs} * interval '1 millisecond', lease_token = NULL, leased_until = NULL
            WHERE id = ${claim.id} AND lease_token = ${leaseToken} RETURNING id`);
    if (rowsOf(moved).length === 0) return false;
    await tx.execute(sql`
      INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, status_code, latency_ms, error,
        request_headers, response_headers, response_body, response_truncated)
      VALUES (${claim.id}, ${claim.webhookId}, ${claim.attempt}, ${outcome.statusCode}, ${outcome.latencyMs}, ${outcome.error},
        ${jsonOrNull(ex?.requestHeaders)}::jsonb, ${jsonOrNull(ex?.responseHeaders)}::jsonb, ${ex?.responseBody ?? null}, ${ex?.responseTruncated ?? false})`);
    return true;
  });
}

const jsonOrNull = (value: object | null | undefined): string | null => (value ? JSON.stringify(value) : null);

/** The gateway turns an endpoint off itself (410 Gone); its pending deliveries end as failed. */
export async function disableByGateway(db: Queryable, webhookId: string, reason: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`UPDATE webhooks SET enabled = false, disabled_reason = ${reason}, updated_at = now() WHERE id = ${webhookId}`);
    await tx.execute(sql`
      UPDATE webhook_deliveries SET status = 'failed', completed_at = now(), lease_token = NULL, leased_until = NULL
      WHERE webhook_id = ${webhookId} AND status = 'pending'`);
  });
}

export interface AttemptRow {
  id: string;
  eventId: string;
  eventType: string;
  attempt: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  attemptedAt: Date;
  deliveryStatus: string;
  /** Null on attempts recorded before the exchange was kept (migration 16). */
  exchange: (AttemptExchange & { requestBody: string }) | null;
}

/**
 * A page of a webhook's attempts, newest first (attempt time, then attempt number, then id). `after` is the id of the
 * previous page's last attempt: the page continues below it.
 */
export async function listAttempts(db: Queryable, orgId: string, webhookId: string, limit: number, after?: string): Promise<AttemptRow[]> {
  const below = after
    ? sql`AND (a.attempted_at, a.attempt, a.id) < (SELECT c.attempted_at, c.attempt, c.id FROM webhook_attempts c WHERE c.id = ${after} AND c.webhook_id = ${webhookId})`
    : sql``;
  const result = await db.execute(sql`
    SELECT a.id, d.event_id, e.type, a.attempt, a.status_code, a.latency_ms, a.error, a.attempted_at, d.status,
      e.body, a.request_headers, a.response_headers, a.response_body, a.response_truncated
    FROM webhook_attempts a
    JOIN webhook_deliveries d ON d.id = a.delivery_id
    JOIN webhook_events e ON e.id = d.event_id
    WHERE a.webhook_id = ${webhookId} AND d.org_id = ${orgId} ${below}
    ORDER BY a.attempted_at DESC, a.attempt DESC, a.id DESC
    LIMIT ${limit}`);
  return rowsOf<Record<string, unknown>>(result).map((r) => ({
    id: String(r.id),
    eventId: String(r.event_id),
    eventType: String(r.type),
    attempt: Number(r.attempt),
    statusCode: r.status_code === null ? null : Number(r.status_code),
    latencyMs: Number(r.latency_ms),
    error: r.error === null ? null : String(r.error),
    attemptedAt: new Date(r.attempted_at as string | Date),
    deliveryStatus: String(r.status),
    exchange: attemptExchange(r),
  }));
}

function attemptExchange(r: Record<string, unknown>): AttemptRow['exchange'] {
  if (r.request_headers === null || r.request_headers === undefined) return null;
  const json = (v: unknown) => (typeof v === 'string' ? (JSON.parse(v) as Record<string, string>) : (v as Record<string, string> | null));
  return {
    requestHeaders: json(r.request_headers)!,
    requestBody: String(r.body),
    responseHeaders: json(r.response_headers),
    responseBody: r.response_body === null ? null : String(r.response_body),
    responseTruncated: r.response_truncated === true,
  };
}

/** Whether an attempt id belongs to this webhook (a paging cursor must). */
export async function attemptExists(db: Queryable, webhookId: string, id: string): Promise<boolean> {
  const result = await db.execute(sql`SELECT 1 FROM webhook_attempts WHERE id = ${id} AND webhook_id = ${webhookId}`);
  return rowsOf(result).length > 0;
}

/**
 * Queues an event again for one endpoint: its delivery goes back to pending, due now, with a fresh retry schedule.
 * Returns 'not_found' when the endpoint never had that event, 'in_flight' while an attempt is running.
 */
export async function requeueDelivery(db: Queryable, orgId: string, webhookId: string, eventId: string): Promise<'queued' | 'not_found' | 'in_flight'> {
  const updated = await db.execute(sql`
    UPDATE webhook_deliveries
    SET status = 'pending', attempts = 0, next_attempt_at = now(), completed_at = NULL, lease_token = NULL, leased_until = NULL
    WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND event_id = ${eventId}
      AND NOT (status = 'pending' AND leased_until > now())
    RETURNING id`);
  if (rowsOf(updated).length > 0) return 'queued';
  const exists = await db.execute(sql`
    SELECT 1 AS one FROM webhook_deliveries WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND event_id = ${eventId}`);
  return rowsOf(exists).length > 0 ? 'in_flight' : 'not_found';
}

/** Drops delivered or failed history older than `days` (events go with their deliveries and attempts). */
export async function pruneOutbox(db: Queryable, days: number): Promise<void> {
  await db.execute(sql`
    DELETE FROM webhook_events e WHERE e.created_at < now() - ${days} * interval '1 day'
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')`);
}

/** Deliveries waiting to be sent or retried, across all orgs (metrics: toolgate_webhook_outbox_depth). */
export async function countPendingDeliveries(db: Queryable): Promise<number> {
  const result = await db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`);
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}
