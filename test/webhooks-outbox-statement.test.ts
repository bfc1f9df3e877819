// tool.called off the critical path (issue 11, last item): the audit batch writes its rows and the webhook outbox rows
// in ONE statement (data-modifying CTEs), no transaction. These tests prove the transactional-outbox rule still holds:
// both commit or neither, on the embedded store and on PostgreSQL. Real stores, the gateway's real recorder.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { DomainEvents } from '../src/events/index.ts';
import { AuditUnavailableError } from '../src/audit/recorder.ts';
import { rowsOf } from '../src/store/db.ts';
import { insertOutbox } from '../src/webhooks/repository.ts';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type StoreKind, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';
import { startReceiver, type Receiver } from './support/webhooks.ts';

const hasPg = await serviceAvailable('postgres');

for (const kind of ['pglite', 'postgres'] as StoreKind[]) {
  describe.skipIf(kind === 'postgres' && !hasPg)(`audit rows and outbox rows in one statement (${kind})`, () => {
    let g: TestGateway;
    let org: Onboarded;
    let receiver: Receiver;

    beforeAll(async () => {
      receiver = startReceiver();
      // No worker: the rows stay in the outbox, where the test reads them.
      g = await startTestGateway(kind, { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, TOOLGATE_WEBHOOK_WORKER: '0' });
      org = await onboard(g);
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      const created = await api(g, 'POST', '/api/org/webhooks', token, { url: receiver.url(), events: ['tool.called'] });
      expect(created.status).toBe(201);
    }, 60_000);
    afterAll(async () => {
      await g?.close();
      receiver?.stop();
    }, 30_000);

    const auditRows = async (marker: string) =>
      rowsOf<{ id: string }>(await g.deps.store.db.execute(sql`SELECT id FROM audit_events WHERE org_id = ${org.orgId} AND details->>'marker' = ${marker}`));
    const outbox = async (eventId: string) =>
      rowsOf<{ status: string }>(
        await g.deps.store.db.execute(sql`SELECT d.status FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.id = ${eventId}`),
      );

    test('a tool call\'s audit row and its tool.called outbox row (event + pending delivery) commit together', async () => {
      verifies('WEBHOOK-TOOL-CALLED-ONE-STATEMENT');
      const marker = crypto.randomUUID();
      const event = DomainEvents.create('tool.called', org.orgId, { tool_name: 'query_postgresql_items' });
      // Several calls in one batch, one of them without an event: every row is written, one outbox event.
      await Promise.all([
        g.deps.audit.toolCall({ orgId: org.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker } }, event),
        g.deps.audit.toolCall({ orgId: org.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker } }, null),
      ]);
      expect((await auditRows(marker)).length).toBe(2);
      expect((await outbox(event.id)).map((r) => r.status)).toEqual(['pending']);
    });

    test('when the outbox write fails, the batch\'s audit rows are not written either and every call in it fails', async () => {
      verifies('WEBHOOK-TOOL-CALLED-ONE-STATEMENT');
      const marker = crypto.randomUUID();
      const event = DomainEvents.create('tool.called', org.orgId, { tool_name: 'query_postgresql_items' });
      // The event id is taken already: the outbox INSERT inside the statement violates the primary key.
      await insertOutbox(g.deps.store.db, [{ id: event.id, orgId: org.orgId, type: 'tool.called', body: '{}', createdAt: new Date() }]);
      const results = await Promise.allSettled([
        g.deps.audit.toolCall({ orgId: org.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker } }, event),
        g.deps.audit.toolCall({ orgId: org.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker } }, null),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect((results[0] as PromiseRejectedResult).reason).toBeInstanceOf(AuditUnavailableError);
      expect(await auditRows(marker)).toEqual([]);
      // Still the one delivery of the first write, none added.
      expect((await outbox(event.id)).length).toBe(1);
      // The recorder keeps working after a failed batch.
      const after = crypto.randomUUID();
      await g.deps.audit.toolCall({ orgId: org.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker: after } }, null);
      expect((await auditRows(after)).length).toBe(1);
    });

    test('an event of an org without a tool.called webhook leaves no outbox row, its audit row is written', async () => {
      verifies('WEBHOOK-TOOL-CALLED-ONE-STATEMENT');
      const other = await onboard(g);
      const marker = crypto.randomUUID();
      const event = DomainEvents.create('tool.called', other.orgId, { tool_name: 'x' });
      await g.deps.audit.toolCall({ orgId: other.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' }, details: { marker } }, event);
      const rows = rowsOf(await g.deps.store.db.execute(sql`SELECT id FROM audit_events WHERE org_id = ${other.orgId} AND details->>'marker' = ${marker}`));
      expect(rows.length).toBe(1);
      expect(await outbox(event.id)).toEqual([]);
    });
  });
}
