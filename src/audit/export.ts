/**
 * The audit export: one JSON document streamed page by page (keyset pagination), never the whole log in memory. A
 * range (`days`) starts at its first hour's chain position (repository.ts seqBefore) instead of walking the chain from
 * its start.
 */
import type { Queryable } from '../store/db.ts';
import { auditPageAsc, genuineRows, seqBefore, type AuditFilter } from './repository.ts';
import { auditEventView } from './views.ts';

const PAGE_ROWS = 500;

export function auditExportStream(db: Queryable, orgId: string, filter: AuditFilter, redact: boolean, now: Date = new Date()): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let afterSeq: number | null = null;
  let first = true;
  let done = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(
          encoder.encode(`{"org_id":${JSON.stringify(orgId)},"exported_at":${JSON.stringify(now.toISOString())},"redacted":${redact},"events":[`),
        );
      },
      async pull(controller) {
        if (done) return;
        afterSeq ??= filter.since ? await seqBefore(db, orgId, filter.since) : 0;
        const rows = await auditPageAsc(db, orgId, filter, afterSeq, PAGE_ROWS);
        const genuine = await genuineRows(db, orgId, rows);
        if (genuine.length) {
          const text = genuine.map((r) => JSON.stringify(auditEventView(r, redact))).join(',');
          controller.enqueue(encoder.encode(first ? text : `,${text}`));
          first = false;
        }
        if (rows.length) afterSeq = rows[rows.length - 1]!.seq!;
        if (rows.length < PAGE_ROWS) {
          done = true;
          controller.enqueue(encoder.encode(']}'));
          controller.close();
        }
      },
    },
    { highWaterMark: 1 },
  );
}
