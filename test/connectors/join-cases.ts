/**
 * Issue 38 item 1 (docs/decisions/0292): the multi-table cases every SQL dialect with a live server runs (PostgreSQL in
 * postgresql-tables.test.ts, MySQL/MariaDB in its own suite). One fixture, one policy on `customers`, a disabled
 * `payroll`, and statements written as an attacker would: every multi-table form (join, alias, self-join, subquery,
 * CTE, a CTE shadowing a table name, set operations, LATERAL, a view) tries to read a hidden value, a raw masked value
 * or another tenant's row. Each case says what must come back (rows, or a refusal with words it holds); the suite also
 * checks that no SECRET appears anywhere in any answer, refused or not.
 *
 * The SQL is portable between PostgreSQL and MySQL/MariaDB (lower-case unquoted names, `{schema}` for the main schema's
 * name, written unquoted); a case only one dialect reads says so in `only`.
 */

/** The dialects that run these cases live. */
type JoinDialect = 'postgresql' | 'mysql';

/**
 * The fixture, in the main schema: customers (tenants a and b), their orders, a disabled payroll, and a view over
 * orders. Portable DDL (both dialects read it as written).
 */
export const JOIN_FIXTURE: readonly string[] = [
  'CREATE TABLE customers (id integer PRIMARY KEY, tenant varchar(10) NOT NULL, name varchar(50) NOT NULL, email varchar(100), ssn varchar(30))',
  "INSERT INTO customers VALUES (1, 'a', 'ann-a', 'ann@a.example', 'ssn-1111-a'), (2, 'a', 'abe-a', 'abe@a.example', 'ssn-2222-a')," +
    " (3, 'b', 'bob-secret-b', 'bob@b.example', 'ssn-3333-b'), (4, 'b', 'bea-secret-b', NULL, 'ssn-4444-b')",
  'CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, total integer NOT NULL, note varchar(50))',
  "INSERT INTO orders VALUES (10, 1, 100, 'first'), (11, 2, 200, 'second'), (12, 3, 300, 'third'), (13, 4, 400, 'fourth')",
  'CREATE TABLE payroll (id integer PRIMARY KEY, customer_id integer NOT NULL, salary varchar(30) NOT NULL)',
  "INSERT INTO payroll VALUES (1, 1, 'salary-987654'), (2, 3, 'salary-555111')",
  'CREATE VIEW big_orders AS SELECT id, customer_id, total FROM orders WHERE total >= 200',
];

/** The tables of the fixture as the connector lists them: `customers` has JOIN_POLICY, `payroll` is disabled. */
export const JOIN_TABLES = ['customers', 'orders', 'payroll', 'big_orders'] as const;
export const DISABLED_TABLE = 'payroll';

/** The text every masked email becomes. */
const MASK_TEXT = 'masked-mail';

/** The policy of `customers` (a ToolPolicy): hidden ssn, masked email, and the caller's tenant only. */
export const JOIN_POLICY = {
  hidden_columns: ['ssn'],
  masked_columns: [{ column: 'email', mask: 'fixed' as const, text: MASK_TEXT }],
  row_filter: 'tenant = :caller.tenant',
};

/** The caller every case runs as. */
export const JOIN_CALLER = { tenant: 'a' };

/** Values that must never appear in any answer: hidden values, raw masked values, tenant b's rows, the disabled table's. */
const SECRETS: readonly string[] = [
  'ssn-1111-a',
  'ssn-2222-a',
  'ssn-3333-b',
  'ssn-4444-b',
  'ann@a.example',
  'abe@a.example',
  'bob@b.example',
  'bob-secret-b',
  'bea-secret-b',
  'salary-987654',
  'salary-555111',
];

type Row = Record<string, unknown>;

export interface JoinCase {
  name: string;
  /** `{schema}` stands for the main schema's name. */
  sql: string;
  /** The rows expected, in order (values compared as text; see sameRows). */
  rows?: readonly Row[];
  /** Refused before the database: the refusal's text holds these words (case-insensitive). */
  refused?: string;
  /** Only these dialects run the case (the others lack the syntax). */
  only?: readonly JoinDialect[];
}

const ORDERS_A = [
  { id: 10, name: 'ann-a', email: MASK_TEXT },
  { id: 11, name: 'abe-a', email: MASK_TEXT },
];

/** Cases that answer: what a production user asks, and what an attacker tries; the answer holds only what the policy allows. */
export const JOIN_ANSWERS: readonly JoinCase[] = [
  {
    name: 'inner join with aliases',
    sql: 'SELECT o.id, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id',
    rows: ORDERS_A,
  },
  {
    name: 'join with AS aliases and qualified names',
    sql: 'SELECT o.id, c.name, c.email FROM {schema}.orders AS o INNER JOIN {schema}.customers AS c ON c.id = o.customer_id ORDER BY o.id',
    rows: ORDERS_A,
  },
  {
    name: 'join without aliases, names as qualifiers',
    sql: 'SELECT orders.id, customers.name, customers.email FROM orders, customers WHERE customers.id = orders.customer_id ORDER BY orders.id',
    rows: ORDERS_A,
  },
  {
    name: 'left join keeps every order, the other tenant’s customers come back NULL',
    sql: 'SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id ORDER BY o.id',
    rows: [
      { id: 10, name: 'ann-a' },
      { id: 11, name: 'abe-a' },
      { id: 12, name: null },
      { id: 13, name: null },
    ],
  },
  {
    name: 'self-join of the policy table',
    sql: 'SELECT a.name AS a_name, b.email AS b_email FROM customers a JOIN customers b ON a.id <> b.id ORDER BY a.id, b.id',
    rows: [
      { a_name: 'ann-a', b_email: MASK_TEXT },
      { a_name: 'abe-a', b_email: MASK_TEXT },
    ],
  },
  { name: 'select * of the join', sql: 'SELECT * FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.id = 12', rows: [] },
  {
    name: 'derived table in FROM',
    sql: 'SELECT x.name, x.email FROM (SELECT * FROM customers) x ORDER BY x.name',
    rows: [
      { name: 'abe-a', email: MASK_TEXT },
      { name: 'ann-a', email: MASK_TEXT },
    ],
  },
  {
    name: 'scalar subquery per order',
    sql: 'SELECT o.id, (SELECT c.email FROM customers c WHERE c.id = o.customer_id) AS email FROM orders o ORDER BY o.id',
    rows: [
      { id: 10, email: MASK_TEXT },
      { id: 11, email: MASK_TEXT },
      { id: 12, email: null },
      { id: 13, email: null },
    ],
  },
  {
    name: 'EXISTS probing the other tenant',
    sql: "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id AND c.tenant = 'b')",
    rows: [],
  },
  {
    name: 'IN probing a raw masked value',
    sql: "SELECT o.id FROM orders o WHERE o.customer_id IN (SELECT c.id FROM customers c WHERE c.email LIKE 'ann@%' OR c.email LIKE 'bob%')",
    rows: [],
  },
  { name: 'counting rows through a join', sql: 'SELECT count(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id', rows: [{ n: 2 }] },
  {
    name: 'counting the policy table beside another',
    sql: 'SELECT (SELECT count(*) FROM customers) AS c, (SELECT count(*) FROM orders) AS o',
    rows: [{ c: 2, o: 4 }],
  },
  {
    name: 'CTE over the policy table',
    sql: 'WITH c AS (SELECT id, name, email FROM customers) SELECT o.id, c.name, c.email FROM orders o JOIN c ON c.id = o.customer_id ORDER BY o.id',
    rows: ORDERS_A,
  },
  {
    name: 'CTE shadowing the policy table’s name reads the table inside',
    sql: 'WITH customers AS (SELECT * FROM customers) SELECT customers.name, customers.email FROM customers ORDER BY customers.id',
    rows: [
      { name: 'ann-a', email: MASK_TEXT },
      { name: 'abe-a', email: MASK_TEXT },
    ],
  },
  {
    name: 'CTE named like the other table hides the policy table',
    sql: 'WITH orders AS (SELECT id, name AS note, email FROM customers) SELECT orders.note, orders.email FROM orders ORDER BY orders.id',
    rows: [
      { note: 'ann-a', email: MASK_TEXT },
      { note: 'abe-a', email: MASK_TEXT },
    ],
  },
  {
    name: 'nested CTEs',
    sql: 'WITH a AS (SELECT * FROM customers), b AS (SELECT a.email, o.total FROM a JOIN orders o ON o.customer_id = a.id) SELECT email, total FROM b ORDER BY total',
    rows: [
      { email: MASK_TEXT, total: 100 },
      { email: MASK_TEXT, total: 200 },
    ],
  },
  {
    name: 'UNION ALL of the two tables',
    sql: 'SELECT email AS v FROM customers UNION ALL SELECT note FROM orders WHERE id = 10 ORDER BY v',
    rows: [{ v: 'first' }, { v: MASK_TEXT }, { v: MASK_TEXT }],
  },
  {
    name: 'UNION (distinct) of names from both sides',
    sql: 'SELECT name AS v FROM customers UNION SELECT note FROM orders ORDER BY v',
    rows: [{ v: 'abe-a' }, { v: 'ann-a' }, { v: 'first' }, { v: 'fourth' }, { v: 'second' }, { v: 'third' }],
  },
  {
    name: 'INTERSECT probing the other tenant’s ids',
    sql: 'SELECT customer_id AS id FROM orders INTERSECT SELECT id FROM customers ORDER BY id',
    rows: [{ id: 1 }, { id: 2 }],
  },
  {
    name: 'EXCEPT showing which customers are filtered away',
    sql: 'SELECT customer_id AS id FROM orders EXCEPT SELECT id FROM customers ORDER BY id',
    rows: [{ id: 3 }, { id: 4 }],
  },
  {
    name: 'LATERAL subquery reading the policy table per order',
    sql: 'SELECT o.id, l.email FROM orders o, LATERAL (SELECT c.email FROM customers c WHERE c.id = o.customer_id) l ORDER BY o.id',
    rows: [
      { id: 10, email: MASK_TEXT },
      { id: 11, email: MASK_TEXT },
    ],
  },
  {
    name: 'LEFT JOIN LATERAL',
    sql: 'SELECT o.id, l.name FROM orders o LEFT JOIN LATERAL (SELECT c.name FROM customers c WHERE c.id = o.customer_id) l ON TRUE ORDER BY o.id',
    rows: [
      { id: 10, name: 'ann-a' },
      { id: 11, name: 'abe-a' },
      { id: 12, name: null },
      { id: 13, name: null },
    ],
  },
  {
    name: 'a view joined with the policy table',
    sql: 'SELECT v.id, c.name, c.email FROM big_orders v JOIN customers c ON c.id = v.customer_id ORDER BY v.id',
    rows: [{ id: 11, name: 'abe-a', email: MASK_TEXT }],
  },
  {
    name: 'the policy table in a subquery of a join condition',
    sql: 'SELECT o.id FROM orders o JOIN big_orders v ON v.id = o.id AND o.customer_id IN (SELECT id FROM customers) ORDER BY o.id',
    rows: [{ id: 11 }],
  },
  {
    name: 'aggregate over the join grouped by the masked column',
    sql: 'SELECT c.email, sum(o.total) AS total FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.email',
    rows: [{ email: MASK_TEXT, total: 300 }],
  },
  {
    name: 'comparison with the raw masked value',
    sql: "SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.email = 'ann@a.example' OR c.email IS NULL",
    rows: [],
  },
  {
    name: 'error side channel on the other tenant’s rows',
    sql: "SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE 1 / (CASE WHEN c.tenant = 'b' THEN 0 ELSE 1 END) = 1 ORDER BY o.id",
    rows: [{ id: 10 }, { id: 11 }],
    only: ['postgresql'],
  },
  {
    name: 'whole-row value of the policy table through a join',
    sql: 'SELECT o.id, c::text AS r FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id',
    rows: [
      { id: 10, r: `(1,a,ann-a,${MASK_TEXT})` },
      { id: 11, r: `(2,a,abe-a,${MASK_TEXT})` },
    ],
    only: ['postgresql'],
  },
  {
    name: 'row_to_json of the policy table in a subquery',
    sql: 'SELECT (SELECT row_to_json(c)::text FROM customers c WHERE c.id = o.customer_id) AS j FROM orders o WHERE o.id = 10',
    rows: [{ j: `{"id":1,"tenant":"a","name":"ann-a","email":"${MASK_TEXT}"}` }],
    only: ['postgresql'],
  },
];

/** Cases refused before the database, whatever the statement's form. */
export const JOIN_REFUSALS: readonly JoinCase[] = [
  { name: 'hidden column through a join', sql: 'SELECT o.id, c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id', refused: 'ssn' },
  { name: 'hidden column in a subquery', sql: 'SELECT (SELECT ssn FROM customers c WHERE c.id = o.customer_id) FROM orders o', refused: 'ssn' },
  {
    name: 'hidden column in a join condition',
    sql: "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id AND c.ssn LIKE '%-b'",
    refused: 'ssn',
  },
  { name: 'hidden column in a CTE', sql: 'WITH x AS (SELECT ssn FROM customers) SELECT * FROM x', refused: 'ssn' },
  { name: 'hidden column in a set operation', sql: 'SELECT note FROM orders UNION SELECT ssn FROM customers', refused: 'ssn' },
  {
    name: 'hidden column in a LATERAL subquery',
    sql: 'SELECT o.id, l.s FROM orders o, LATERAL (SELECT c.ssn AS s FROM customers c WHERE c.id = o.customer_id) l',
    refused: 'ssn',
  },
  { name: 'disabled table joined', sql: 'SELECT c.name, p.salary FROM customers c JOIN payroll p ON p.customer_id = c.id', refused: DISABLED_TABLE },
  {
    name: 'disabled table in a subquery',
    sql: 'SELECT o.id, (SELECT salary FROM payroll p WHERE p.customer_id = o.customer_id) FROM orders o',
    refused: DISABLED_TABLE,
  },
  {
    name: 'disabled table in EXISTS',
    sql: 'SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM payroll p WHERE p.customer_id = o.customer_id)',
    refused: DISABLED_TABLE,
  },
  { name: 'disabled table behind a CTE', sql: 'WITH p AS (SELECT * FROM payroll) SELECT * FROM p', refused: DISABLED_TABLE },
  {
    name: 'disabled table behind a CTE named like an enabled table',
    sql: 'WITH orders AS (SELECT * FROM payroll) SELECT * FROM orders',
    refused: DISABLED_TABLE,
  },
  { name: 'disabled table in a set operation', sql: 'SELECT note FROM orders UNION ALL SELECT salary FROM payroll', refused: DISABLED_TABLE },
  { name: 'disabled table qualified', sql: 'SELECT * FROM {schema}.payroll', refused: DISABLED_TABLE },
  {
    name: 'disabled table in a LATERAL subquery',
    sql: 'SELECT o.id, l.salary FROM orders o, LATERAL (SELECT salary FROM payroll p WHERE p.customer_id = o.customer_id) l',
    refused: DISABLED_TABLE,
  },
  { name: 'a table the connector does not list', sql: 'SELECT o.id, s.v FROM orders o JOIN unlisted_secrets s ON TRUE', refused: 'unlisted_secrets' },
  { name: 'a catalog joined', sql: 'SELECT o.id, t.table_name FROM orders o JOIN information_schema.tables t ON TRUE', refused: 'information_schema' },
  { name: 'a write reading another table', sql: 'UPDATE orders SET total = (SELECT count(*) FROM customers)', refused: '' },
  { name: 'an INSERT ... SELECT from another table', sql: 'INSERT INTO orders (id, customer_id, total) SELECT id + 100, id, 1 FROM customers', refused: '' },
  { name: 'a DELETE with a subquery on another table', sql: 'DELETE FROM orders WHERE customer_id IN (SELECT id FROM customers)', refused: '' },
];

/** The case's SQL for a schema. */
export const sqlFor = (c: JoinCase, schema: string): string => c.sql.replaceAll('{schema}', schema);

/** Rows compared as text (numbers from either driver, a count as a bigint string...), in order. */
export function sameRows(actual: readonly Row[], expected: readonly Row[]): boolean {
  const text = (rows: readonly Row[]) =>
    JSON.stringify(rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k.toLowerCase(), v === null ? null : String(v)]))));
  return text(actual) === text(expected);
}

/** The first secret a text holds, or null. */
export const leakedSecret = (text: string): string | null => SECRETS.find((s) => text.includes(s)) ?? null;
