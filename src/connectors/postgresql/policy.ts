/** How a PostgreSQL statement applies a tool's column and row policy (shared/policy.ts): the derived table's parts. */
import type { PolicyDialect } from '../shared/policy.ts';

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

export const PG_POLICY: PolicyDialect = {
  quote,
  numbered: true,
  // Typed: the statement and the resolution check (which sees typed NULLs instead) resolve alike.
  param: (n, type, resolution) => (resolution ? `NULL::pg_catalog.${type}` : `$${n}::pg_catalog.${type}`),
  mask(c, m, bind, pads) {
    const text = `(${c})::pg_catalog.text`;
    switch (m.mask) {
      case 'fixed':
        return `CASE WHEN ${c} IS NULL THEN NULL ELSE ${bind(m.text ?? '****', 'text')} END`;
      case 'last_n': {
        const n = Math.trunc(m.n ?? 4);
        return `CASE WHEN ${c} IS NULL THEN NULL ELSE pg_catalog.concat(pg_catalog.repeat('*', GREATEST(pg_catalog.length(${text}) - ${n}, 0)), pg_catalog.right(${text}, ${n})) END`;
      }
      case 'hash': {
        if (!pads) throw new Error('a hash mask needs the org key');
        // HMAC-SHA256(key, value) = sha256(opad || sha256(ipad || value)), value as UTF-8.
        // The pads travel as hex text, decoded on the server (no driver-specific bytea encoding in between).
        const opad = `pg_catalog.decode(${bind(Buffer.from(pads.opad).toString('hex'), 'text')}, 'hex')`;
        const ipad = `pg_catalog.decode(${bind(Buffer.from(pads.ipad).toString('hex'), 'text')}, 'hex')`;
        return `pg_catalog.encode(pg_catalog.sha256(${opad} OPERATOR(pg_catalog.||) pg_catalog.sha256(${ipad} OPERATOR(pg_catalog.||) pg_catalog.convert_to(${text}, 'UTF8'))), 'hex')`;
      }
    }
  },
  falseSql: 'FALSE',
  // OFFSET 0 keeps the planner from pulling the derived table up or pushing the statement's conditions below the
  // row filter (allpaths.c: no quals are pushed into a subquery with LIMIT/OFFSET).
  fence: ' OFFSET 0',
};
