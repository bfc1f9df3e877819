/** Test receivers for webhook deliveries (real HTTP servers on 127.0.0.1) and a signature check written apart from the gateway's. */
import { sql } from 'drizzle-orm';
import { DomainEvents, type WebhookEventType } from '../../src/events/index.ts';
import type { Gateway } from '../../src/gateway.ts';

export interface Received {
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** Answers each request with `respond(n, request)` (n = 0-based count); may return a never-settling promise to hang. */
export function startReceiver(respond: (n: number, received: Received) => Response | Promise<Response> = () => new Response('ok')) {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const entry: Received = { headers: Object.fromEntries(request.headers), body: await request.text(), at: Date.now() };
      received.push(entry);
      return respond(received.length - 1, entry);
    },
  });
  return {
    received,
    hostPort: `127.0.0.1:${server.port}`,
    /** Plain http: the test gateway's allow-list names this host:port (allow-listed hosts are exempt from https). */
    url: (path = '/hook') => `http://127.0.0.1:${server.port}${path}`,
    ids: () => received.map((r) => (JSON.parse(r.body) as { id: string }).id),
    stop: () => server.stop(true),
  };
}
export type Receiver = ReturnType<typeof startReceiver>;

/** HMAC-SHA256 with WebCrypto (not node:crypto, which the gateway signs with). */
export async function hmac(key: Uint8Array<ArrayBuffer>, message: string): Promise<Uint8Array> {
  const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', cryptoKey, new TextEncoder().encode(message)));
}

export const toHex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/** Emits one event through the gateway's domain events inside a transaction, as an emitter (approvals) does. */
export async function emitEvent(gateway: Gateway, type: WebhookEventType, orgId: string, data: Record<string, unknown> = {}): Promise<string> {
  const event = DomainEvents.create(type, orgId, data);
  await gateway.deps.store.db.transaction((tx) => gateway.deps.events.emit(tx, [event]));
  gateway.deps.webhookWorker?.kick();
  return event.id;
}

export async function deliveryStatuses(gateway: Gateway, webhookId: string): Promise<string[]> {
  const result = await gateway.deps.store.db.execute(sql`SELECT status FROM webhook_deliveries WHERE webhook_id = ${webhookId} ORDER BY created_at`);
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { status: string }[];
  return rows.map((r) => r.status);
}

export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
