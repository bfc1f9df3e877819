/** How a MySQL/MariaDB statement applies a tool's column and row policy (shared/policy.ts): the derived table's parts. */
import type { PolicyDialect } from '../shared/policy.ts';

const quote = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

export const MYSQL_POLICY: PolicyDialect = {
  quote,
  numbered: false,
  param: () => '?',
  mask(c, m, bind, pads) {
    switch (m.mask) {
      case 'fixed':
        return `CASE WHEN ${c} IS NULL THEN NULL ELSE CAST(${bind(m.text ?? '****', 'text')} AS CHAR) END`;
      case 'last_n': {
        const n = Math.trunc(m.n ?? 4);
        return `CONCAT(REPEAT('*', GREATEST(CHAR_LENGTH(${c}) - ${n}, 0)), RIGHT(${c}, ${n}))`;
      }
      case 'hash': {
        if (!pads) throw new Error('a hash mask needs the org key');
        // HMAC-SHA256(key, value) = sha256(opad || sha256(ipad || value)), value as UTF-8; parameters bind in text order.
        // The pads travel as hex text (a binary parameter would be read in the connection's character set).
        const opad = bind(Buffer.from(pads.opad).toString('hex'), 'text');
        const ipad = bind(Buffer.from(pads.ipad).toString('hex'), 'text');
        return `SHA2(CONCAT(UNHEX(${opad}), UNHEX(SHA2(CONCAT(UNHEX(${ipad}), CAST(CONVERT(${c} USING utf8mb4) AS BINARY)), 256))), 256)`;
      }
    }
  },
  falseSql: 'FALSE',
  // A derived table with LIMIT is neither merged into the statement nor given its conditions (MariaDB's
  // condition pushdown and derived_merge skip it): the statement's expressions see only the filtered rows.
  fence: ' LIMIT 18446744073709551615',
};
