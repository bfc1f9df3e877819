/**
 * The statements of the sealed audit INSERT (sealed-insert.ts), typed: reading an org's chain head, and the one
 * statement that moves the heads still where the writer believed and inserts those orgs' rows sealed.
 */
import { sql } from 'drizzle-orm';
import { arrayParam, executePrepared, rowsOf, type Queryable } from '../store/db.ts';
import { genesisHash } from './chain.ts';
import type { Head } from './repository.ts';

/**
 * The current heads of these orgs (created at genesis where missing), read in a statement of their own: no lock is
 * kept, the sealed INSERT checks them again under its lock.
 */
export async function readHeads(db: Queryable, orgIds: readonly string[]): Promise<Map<string, Head>> {
  const values = sql.join(
    orgIds.map((id) => sql`(${id}::uuid, 0, ${genesisHash(id)}, 0, ${genesisHash(id)})`),
    sql`, `,
  );
  const result = await db.execute(sql`WITH created AS (
      INSERT INTO audit_chains (org_id, head_seq, head_hash, base_seq, base_hash) VALUES ${values}
      ON CONFLICT (org_id) DO NOTHING RETURNING org_id, head_seq, head_hash
    )
    SELECT org_id::text AS org_id, head_seq, head_hash FROM created
    UNION ALL
    SELECT org_id::text, head_seq, head_hash FROM audit_chains
    WHERE org_id = ANY(${arrayParam('uuid', [...orgIds])}::uuid[]) AND org_id NOT IN (SELECT org_id FROM created)`);
  return new Map(
    rowsOf<{ org_id: string; head_seq: string | number; head_hash: string }>(result).map((r) => [r.org_id, { seq: Number(r.head_seq), hash: r.head_hash }]),
  );
}

/**
 * Locks the heads named in `moves` (org-id order), moves each one still at its `from` to its `to`, and inserts the rows
 * of `json` of the orgs it moved, sealed; returns those orgs. Fixed text with three parameters, so it runs prepared.
 */
export function runSealedInsert(db: Queryable, json: string, moves: string, createdAt: string): Promise<{ org_id: string }[]> {
  return executePrepared<{ org_id: string }>(
    db,
    'toolgate_audit_insert_sealed',
    sql`WITH h AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${moves}::jsonb) AS h(org_id uuid, from_seq bigint, from_hash text, to_seq bigint, to_hash text)
      ),
      locked AS MATERIALIZED (
        SELECT c.org_id, c.head_seq, c.head_hash FROM audit_chains c JOIN h ON h.org_id = c.org_id ORDER BY c.org_id FOR UPDATE OF c
      ),
      moved AS (
        UPDATE audit_chains AS c SET head_seq = h.to_seq, head_hash = h.to_hash
        FROM locked l JOIN h ON h.org_id = l.org_id
        WHERE c.org_id = l.org_id AND l.head_seq = h.from_seq AND l.head_hash = h.from_hash
        RETURNING c.org_id
      ),
      inserted AS (
        INSERT INTO audit_events (id, org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, mac, seq, prev_hash, hash)
        SELECT v.id, v.org_id, ${createdAt}::timestamptz, v.action, v.actor_type, v.actor_id, v.target_type, v.target_id, v.outcome, v.details, v.mac,
          v.seq, v.prev_hash, v.hash
        FROM jsonb_to_recordset(${json}::jsonb)
          AS v(id uuid, mac text, org_id uuid, seq bigint, prev_hash text, hash text, action text, actor_type text, actor_id text, target_type text,
               target_id text, outcome text, details jsonb)
        JOIN moved m ON m.org_id = v.org_id
        RETURNING 1
      )
      SELECT org_id::text AS org_id FROM moved`,
  );
}
