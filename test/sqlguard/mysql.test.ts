// Unit tests of the MySQL / MariaDB SQL guard (no database: the guard only lexes and parses).
import { describe, expect, test } from 'bun:test';
import { clearMysqlGuardCache, guardMysqlSql } from '../../src/connectors/mysql/guard/guard.ts';
import type { GuardOptions, GuardResult } from '../../src/connectors/shared/sqlguard/types.ts';
import { verifies } from '../requirements.ts';

/** For MySQL the schema is the database. */
const table = { schema: 'shop', name: 'users' };
const RO: GuardOptions = { table, allowWrite: true, allowDdl: true, readOnly: true };
const READ_CONN: GuardOptions = { table, allowWrite: false, allowDdl: false, readOnly: false };
const RW: GuardOptions = { table, allowWrite: true, allowDdl: false, readOnly: false };
const DDL: GuardOptions = { table, allowWrite: false, allowDdl: true, readOnly: false };
const ALL: GuardOptions = { table, allowWrite: true, allowDdl: true, readOnly: false };

function refusal(r: GuardResult): string {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r)}`);
  return r.reason;
}

function expectAllowed(sql: string, opts: GuardOptions, kind: string, readOnly: boolean): void {
  const r = guardMysqlSql(sql, opts);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  expect(r).toEqual({ ok: true, kind: kind as never, readOnly });
}

function expectRefused(sql: string, opts: GuardOptions, fragment?: string | RegExp): string {
  const r = guardMysqlSql(sql, opts);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused, got ${JSON.stringify(r)}`);
  if (fragment !== undefined) expect(r.reason).toMatch(fragment);
  return r.reason;
}

describe('mysql guard: one statement', () => {
  test('empty input and comment-only input are refused', () => {
    for (const sql of ['', '  ', ';', '-- nothing', '# nothing', '/* nothing */', '/* a */ -- b\n;']) {
      expectRefused(sql, ALL);
    }
    expect(refusal(guardMysqlSql('', RO))).toContain('empty');
  });

  test('unparsable input is refused, never allowed', () => {
    for (const sql of ['SELEC 1', 'SELECT FROM WHERE', 'SELECT (1', "SELECT 'unterminated", 'SELECT `x', 'SELECT 1 /* open', '))))']) {
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
    expectAllowed('/* why */ -- note\n# hash note\nSELECT * FROM users -- trailing\n', RO, 'select', true);
    expectAllowed('  SELECT id FROM users /* end */ ;  # done', RO, 'select', true);
    expectAllowed('SELECT id FROM users;\n-- done', RO, 'select', true);
  });

  test('stacked statements are refused, with and without comments', () => {
    verifies('SQL-STACKED');
    const stacked = [
      'SELECT 1; COMMIT; DROP TABLE users',
      'SELECT 1;COMMIT;DROP TABLE t',
      'SELECT 1; ROLLBACK; DELETE FROM users',
      'SET SESSION TRANSACTION READ WRITE; DELETE FROM users',
      'SELECT 1; SET SESSION TRANSACTION READ WRITE; UPDATE users SET a = 1',
      '/* x */ -- y\nSELECT 1; COMMIT; DROP TABLE t',
      '# y\n/* x */ SELECT 1\n;\nCOMMIT\n;\nDROP TABLE t',
      'SELECT * FROM users; SELECT * FROM users',
      'SELECT 1;;',
      'SELECT 1; -- c\n SELECT 2',
    ];
    for (const sql of stacked) {
      for (const opts of [RO, READ_CONN, ALL]) expectRefused(sql, opts, /statement/);
    }
  });

  test('statement text inside strings and comments is data, not statements', () => {
    expectAllowed("SELECT 'x; COMMIT; DROP TABLE t' FROM users", RO, 'select', true);
    expectAllowed("SELECT 'it''s; DROP TABLE t' FROM users", RO, 'select', true);
    expectAllowed('SELECT 1 /* ; COMMIT; DROP TABLE t */ FROM users', RO, 'select', true);
    expectAllowed('SELECT 1 -- ; COMMIT; DROP TABLE t\nFROM users', RO, 'select', true);
    expectAllowed('SELECT 1 # ; COMMIT; DROP TABLE t\nFROM users', RO, 'select', true);
    expectAllowed('SELECT `we;ird` FROM users', RO, 'select', true);
  });

  test('executable comments and optimizer hints are refused before parsing', () => {
    verifies('SQL-MYSQL-EXEC-COMMENT');
    for (const sql of [
      'SELECT /*! SLEEP(10) */ 1',
      'SELECT /*!50000 SLEEP(10) */ 1 FROM users',
      'SELECT 1 FROM users /*!; DROP TABLE users */',
      'SELECT 1 /*M! , LOAD_FILE("/etc/passwd") */ FROM users',
      'SELECT 1 /*M!100000 ; DROP TABLE users */',
      "SELECT '/*!' FROM users",
      "SELECT /*+ SET_VAR(sql_mode='') */ * FROM users",
    ]) {
      expectRefused(sql, ALL, /executable comments|optimizer hints/);
    }
  });

  test('comments that would read differently if nested are refused', () => {
    expectRefused('SELECT 1 /* a /* b */ ; SELECT 2 */', ALL, 'nest');
    expectRefused('SELECT 1 /* /* */ , (SELECT 1 FROM other) /* */ FROM users', ALL, 'nest');
  });

  test('"--" without a following space is refused (MySQL reads it as two minus signs)', () => {
    expectRefused('SELECT 1 --1; DROP TABLE users', ALL, '"--"');
    expectRefused('SELECT a--b FROM users', RO, '"--"');
    expectAllowed('SELECT a - -b FROM users', RO, 'select', true);
    expectAllowed('SELECT 1 --\tcomment\nFROM users', RO, 'select', true);
  });

  test('strings whose end depends on NO_BACKSLASH_ESCAPES are refused', () => {
    expectRefused("SELECT 'a\\'; DROP TABLE users; -- ' FROM users", ALL, 'backslash');
    expectRefused('SELECT "a\\"b" FROM users', ALL, 'backslash');
    expectRefused("SELECT * FROM users WHERE name = 'O\\'Brien'", ALL, 'double the quote');
    // Both readings end at the same quote here: an escaped backslash is not ambiguous.
    expectAllowed("SELECT * FROM users WHERE name = 'x\\\\' OR name = ''", RO, 'select', true);
    // A backslash that does not move the end of the string is fine.
    expectAllowed("SELECT * FROM users WHERE name LIKE 'a\\_b'", RO, 'select', true);
    expectAllowed("SELECT 'it''s' FROM users", RO, 'select', true);
  });
});

describe('mysql guard: statement kinds', () => {
  test('SELECT forms are allowed and read-only', () => {
    const selects = [
      'SELECT * FROM users',
      'select id, name from users where id = ?',
      'SELECT * FROM shop.users',
      'SELECT * FROM `shop`.`users`',
      // Case variants (SHOP.Users) are the tool's table only on a case-insensitive server: mysql-names.test.ts.
      'SELECT u.* FROM users AS u WHERE u.id IN (SELECT id FROM users WHERE active = 1)',
      'WITH recent AS (SELECT * FROM users WHERE created_at > NOW() - INTERVAL 1 DAY) SELECT COUNT(*) FROM recent',
      'WITH RECURSIVE t (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t',
      'SELECT a FROM users UNION ALL SELECT b FROM users',
      'SELECT * FROM users u1 JOIN users u2 ON u1.id = u2.parent_id LEFT JOIN users u3 USING (id)',
      'SELECT * FROM (SELECT id FROM users) AS t WHERE t.id > 1',
      'SELECT EXISTS (SELECT 1 FROM users WHERE id = 1)',
      'SELECT 1',
      'SELECT 1 FROM DUAL',
      'VALUES ROW(1, 2)',
      'SELECT DISTINCT a FROM users ORDER BY a DESC LIMIT 10 OFFSET 5',
      'SELECT a FROM users LIMIT 5, 10',
      'SELECT a, COUNT(*) FROM users GROUP BY a HAVING COUNT(*) > 1',
      'SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b), SUM(a) OVER w FROM users WINDOW w AS (ORDER BY b)',
      "SELECT GROUP_CONCAT(DISTINCT name ORDER BY name SEPARATOR ', ') FROM users",
      "SELECT data->>'$.a', data->'$.b', JSON_EXTRACT(data, '$.c'), JSON_OBJECT('id', id) FROM users",
      "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END, IFNULL(a, 0), COALESCE(a, b), IF(a > 1, 1, 0), CAST(a AS CHAR), CONVERT(a, SIGNED) FROM users",
      "SELECT DATE_FORMAT(created_at, '%Y'), DATE_ADD(created_at, INTERVAL 1 DAY), EXTRACT(YEAR FROM created_at), TIMESTAMPDIFF(DAY, a, b) FROM users",
      "SELECT LOWER(name), UPPER(name), LENGTH(name), SUBSTRING(name, 1, 3), TRIM(name), CONCAT(a, b), REPLACE(name, 'a', 'b') FROM users",
      'SELECT ROUND(AVG(age), 2), ABS(MIN(age)), FLOOR(MAX(age)), CEIL(SUM(age)) FROM users',
      "SELECT MATCH (name) AGAINST ('x' IN BOOLEAN MODE) FROM users",
      "SELECT * FROM users WHERE name LIKE ? AND id IN (1, 2) AND age BETWEEN 1 AND 9 AND name REGEXP '^a' AND a XOR b",
      'SELECT * FROM users USE INDEX (idx_name) WHERE name = ?',
      'SELECT CURRENT_TIMESTAMP, CURRENT_DATE, NOW()',
    ];
    for (const sql of selects) {
      for (const opts of [RO, READ_CONN, RW, ALL]) expectAllowed(sql, opts, 'select', true);
    }
  });

  test('INSERT / REPLACE / UPDATE / DELETE only when allowWrite and not readOnly', () => {
    verifies('SQL-SELECT-ONLY');
    const writes: [string, string][] = [
      ['INSERT INTO users (name) VALUES (?)', 'insert'],
      ["INSERT INTO shop.users (name) VALUES ('a'), ('b') ON DUPLICATE KEY UPDATE name = VALUES(name)", 'insert'],
      ['INSERT INTO users SET name = ?, age = DEFAULT', 'insert'],
      ['INSERT INTO users (name) SELECT name FROM users WHERE id = 1', 'insert'],
      ['REPLACE INTO users (id, name) VALUES (1, ?)', 'insert'],
      ['UPDATE users SET name = UPPER(name) WHERE id = ? ORDER BY id LIMIT 1', 'update'],
      ['UPDATE users u JOIN users v ON u.id = v.parent_id SET u.name = v.name', 'update'],
      ['DELETE FROM users WHERE id = ?', 'delete'],
      ['DELETE u FROM users u WHERE u.id = 1', 'delete'],
      ['WITH old AS (SELECT id FROM users WHERE age > 99) DELETE FROM users WHERE id IN (SELECT id FROM old)', 'delete'],
      // MariaDB
      ['DELETE FROM users WHERE id = 1 RETURNING id', 'delete'],
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
    const ddl = [
      "CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL DEFAULT '', age INT CHECK (age > 0), KEY k (name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
      'CREATE TABLE IF NOT EXISTS shop.users (id BIGINT, parent BIGINT, FOREIGN KEY (parent) REFERENCES users (id))',
      'ALTER TABLE users ADD COLUMN email VARCHAR(100) AFTER name',
      'ALTER TABLE users DROP COLUMN age, MODIFY COLUMN name TEXT, ADD INDEX i (name), RENAME COLUMN name TO full_name',
      'ALTER TABLE users RENAME TO people',
      'DROP TABLE users',
      'DROP TABLE IF EXISTS shop.users',
      'TRUNCATE TABLE users',
      'CREATE INDEX i ON users (name)',
      'RENAME TABLE users TO people',
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
    for (const sql of [
      'DROP TABLE other',
      'DROP TABLE users, other',
      'DROP TABLE otherdb.users',
      'DROP VIEW users',
      'DROP DATABASE shop',
      'TRUNCATE TABLE other',
      'ALTER TABLE other ADD COLUMN x INT',
      'ALTER TABLE users RENAME TO otherdb.users',
      'RENAME TABLE users TO x, other TO users',
      'RENAME TABLE users TO otherdb.users',
      'CREATE TABLE other (id INT)',
      'CREATE TEMPORARY TABLE users (id INT)',
      'CREATE TABLE users (id INT, FOREIGN KEY (id) REFERENCES other (id))',
      'CREATE TABLE users (id INT REFERENCES other (id))',
      'CREATE TABLE users LIKE other',
      'CREATE TABLE users AS SELECT * FROM other',
      "CREATE TABLE users (id INT) DATA DIRECTORY = '/tmp'",
      "CREATE TABLE users (id INT) ENGINE=FEDERATED CONNECTION='mysql://u@evil/db/t'",
      'CREATE TABLE users (id INT DEFAULT (SLEEP(1)))',
      'CREATE INDEX i ON other (a)',
      'CREATE VIEW v AS SELECT * FROM users',
      'DROP TABLE users CASCADE',
    ]) {
      expectRefused(sql, ALL);
    }
  });

  test('everything else is refused, whatever the connector allows', () => {
    verifies('SQL-EXPLAIN-ANALYZE');
    const others = [
      'COMMIT',
      'BEGIN',
      'START TRANSACTION',
      'ROLLBACK',
      'SAVEPOINT s',
      'SET autocommit = 1',
      'SET @a = 1',
      'SET SESSION TRANSACTION READ WRITE',
      "SET NAMES 'utf8'",
      "SET sql_mode = ''",
      'SHOW TABLES',
      'SHOW GRANTS',
      'EXPLAIN SELECT * FROM users',
      'EXPLAIN ANALYZE DELETE FROM users',
      'DESCRIBE users',
      'GRANT ALL ON *.* TO bob',
      'REVOKE ALL ON *.* FROM bob',
      'LOCK TABLES users WRITE',
      'UNLOCK TABLES',
      'HANDLER users OPEN',
      'HANDLER users READ FIRST',
      "LOAD DATA INFILE '/etc/passwd' INTO TABLE users",
      "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE users",
      'DO SLEEP(5)',
      'DO 1',
      'CALL p()',
      "PREPARE s FROM 'DROP TABLE users'",
      'EXECUTE s',
      'DEALLOCATE PREPARE s',
      'FLUSH PRIVILEGES',
      'KILL 1',
      'USE mysql',
      'CREATE USER bob',
      'CREATE DATABASE x',
      'CREATE PROCEDURE p() SELECT 1',
      "INSTALL PLUGIN x SONAME 'x.so'",
      'SHUTDOWN',
      "XA START 'x'",
      'ANALYZE TABLE users',
      'OPTIMIZE TABLE users',
      'CHECKSUM TABLE users',
    ];
    for (const sql of others) expectRefused(sql, ALL);
    expectRefused('COMMIT', RO, 'found COMMIT');
    expectRefused('LOCK TABLES users WRITE', ALL, 'LOCK TABLES');
    expectRefused('SET SESSION TRANSACTION READ WRITE', ALL, 'SET');
  });
});

describe('mysql guard: the tool table only', () => {
  test('other tables, databases and system schemas are refused everywhere in the statement', () => {
    verifies('SQL-OTHER-TABLE');
    const refused = [
      'SELECT * FROM other',
      'SELECT * FROM otherdb.users',
      'SELECT * FROM users JOIN other ON 1 = 1',
      'SELECT * FROM users NATURAL JOIN other',
      'SELECT * FROM users WHERE id IN (SELECT id FROM other)',
      'SELECT (SELECT MAX(id) FROM other) FROM users',
      'SELECT * FROM users UNION SELECT * FROM other',
      'SELECT * FROM (SELECT * FROM other) t',
      'WITH x AS (SELECT * FROM other) SELECT * FROM x',
      'SELECT * FROM users WHERE EXISTS (SELECT 1 FROM other)',
      'SELECT * FROM `DUAL`',
    ];
    for (const sql of refused) {
      for (const opts of [RO, ALL]) expectRefused(sql, opts, /not this tool's table/);
    }
    for (const sql of [
      'SELECT * FROM mysql.user',
      'SELECT authentication_string FROM mysql.user',
      'SELECT * FROM information_schema.tables',
      'SELECT * FROM INFORMATION_SCHEMA.COLUMNS',
      'SELECT * FROM `information_schema`.`tables`',
      'SELECT * FROM performance_schema.threads',
      'SELECT * FROM sys.session',
      'SELECT * FROM users WHERE id IN (SELECT 1 FROM mysql.user)',
      'SELECT sys.format_bytes(1)',
    ]) {
      expectRefused(sql, ALL, /system schema|not this tool's table/);
    }
  });

  test('writes to or reads from another table are refused even with allowWrite', () => {
    verifies('SQL-OTHER-TABLE');
    for (const sql of [
      'INSERT INTO other VALUES (1)',
      'INSERT INTO users SELECT * FROM other',
      'UPDATE other SET a = 1',
      'UPDATE users u JOIN other o ON u.id = o.id SET u.a = o.a',
      'DELETE FROM other',
      'DELETE u FROM users u JOIN other o ON u.id = o.id',
      'DELETE o FROM users u JOIN other o ON u.id = o.id',
      'DELETE FROM users USING users JOIN other ON users.id = other.id',
      'REPLACE INTO other VALUES (1)',
    ]) {
      expectRefused(sql, ALL, /not this tool's table/);
    }
  });

  test('CTE names are allowed only where SQL makes them visible', () => {
    expectAllowed('WITH a AS (SELECT * FROM users), b AS (SELECT * FROM a) SELECT * FROM b', RO, 'select', true);
    expectRefused('WITH a AS (SELECT * FROM b), b AS (SELECT * FROM users) SELECT * FROM a', RO, '"b"');
    expectRefused('SELECT * FROM (WITH secret AS (SELECT 1) SELECT 1) s, secret', RO, 'secret');
    expectRefused('WITH other AS (SELECT 1) SELECT * FROM otherdb.other', RO, 'otherdb.other');
    expectRefused('WITH x AS (SELECT 1) DELETE FROM x', ALL, /not this tool's table/);
  });

  test('functions in FROM are refused', () => {
    expectRefused("SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x INT PATH '$')) j", RO, 'function in FROM');
  });
});

describe('mysql guard: writes and files hidden in reads', () => {
  test('SELECT ... INTO OUTFILE / DUMPFILE / @var is refused', () => {
    verifies('SQL-MYSQL-OUTFILE', 'SQL-SELECT-INTO');
    for (const opts of [RO, RW, DDL, ALL]) {
      expectRefused("SELECT * FROM users INTO OUTFILE '/tmp/x'", opts, 'OUTFILE');
      expectRefused("SELECT * INTO OUTFILE '/var/www/shell.php' FROM users", opts, 'OUTFILE');
      expectRefused("SELECT name FROM users LIMIT 1 INTO DUMPFILE '/tmp/x'", opts, 'DUMPFILE');
      expectRefused('SELECT name INTO @n FROM users LIMIT 1', opts, 'variables');
      expectRefused('SELECT name FROM users LIMIT 1 INTO @n', opts, 'variables');
      expectRefused('SELECT name INTO n FROM users LIMIT 1', opts, 'INTO');
    }
  });

  test('variables are refused', () => {
    for (const sql of ['SELECT @@version', 'SELECT @@global.secure_file_priv', 'SELECT @a := 1', 'SELECT * FROM users WHERE id = @id']) {
      expectRefused(sql, ALL, 'variables');
    }
  });

  test('locking reads need write permission', () => {
    verifies('SQL-FOR-UPDATE');
    for (const sql of ['SELECT * FROM users FOR UPDATE', 'SELECT * FROM users WHERE id = 1 FOR SHARE NOWAIT', 'SELECT * FROM users FOR UPDATE SKIP LOCKED']) {
      expectRefused(sql, RO, 'row locks');
      expectRefused(sql, READ_CONN, 'row locks');
      expectAllowed(sql, RW, 'select', false);
    }
  });

  test('a write under WITH is a write', () => {
    verifies('SQL-WRITABLE-CTE');
    const sql = 'WITH ids AS (SELECT id FROM users) UPDATE users SET name = NULL WHERE id IN (SELECT id FROM ids)';
    expectRefused(sql, RO, 'UPDATE');
    expectAllowed(sql, RW, 'update', false);
  });
});

describe('mysql guard: functions (allow-list)', () => {
  const dangerous = [
    "LOAD_FILE('/etc/passwd')",
    'SLEEP(10)',
    "BENCHMARK(10000000, MD5('x'))",
    "GET_LOCK('x', 10)",
    "RELEASE_LOCK('x')",
    'RELEASE_ALL_LOCKS()',
    "IS_FREE_LOCK('x')",
    "sys_exec('id')",
    "sys_eval('id')",
    'LAST_INSERT_ID(5)',
    "MASTER_POS_WAIT('x', 1)",
    'USER()',
    'DATABASE()',
    'VERSION()',
    'CONNECTION_ID()',
    'shop.my_func(1)',
    'my_udf(1)',
  ];

  test('side-effect, file and admin functions are refused anywhere in the statement', () => {
    verifies('SQL-SIDE-EFFECT-FUNCS');
    for (const call of dangerous) {
      const places = [
        `SELECT ${call}`,
        `SELECT ${call} FROM users`,
        `SELECT * FROM users WHERE id = 1 AND ${call} IS NOT NULL`,
        `SELECT * FROM users ORDER BY ${call}`,
        `SELECT LOWER(${call}) FROM users`,
        `SELECT CASE WHEN 1 = 1 THEN ${call} END FROM users`,
        `SELECT * FROM users WHERE id IN (SELECT id FROM users WHERE ${call} IS NULL)`,
      ];
      for (const sql of places) expectRefused(sql, ALL, /function|not allowed/);
      expectRefused(`INSERT INTO users (name) VALUES (${call})`, ALL, /function|not allowed/);
      expectRefused(`UPDATE users SET name = ${call}`, ALL, /function|not allowed/);
    }
  });

  test('quoted or spaced forms do not slip through', () => {
    verifies('SQL-SIDE-EFFECT-FUNCS');
    expectRefused("SELECT `LOAD_FILE`('/etc/passwd')", RO, 'LOAD_FILE');
    expectRefused("SELECT load_file ('/etc/passwd')", RO, 'LOAD_FILE');
    expectRefused('SELECT sleep/**/(5)', RO, 'SLEEP');
    expectRefused('SELECT 1 FROM users WHERE 1 = 1 AND BENCHMARK(1, 1) = 0', RO, 'BENCHMARK');
  });

  test('common safe functions are allowed', () => {
    expectAllowed(
      "SELECT COUNT(*), SUM(age), AVG(age), MIN(age), MAX(age), LOWER(name), UPPER(name), LENGTH(name), COALESCE(name, ''), NOW(), DATE(created_at), ROUND(age / 3, 1), JSON_OBJECT('n', name), MD5(name) FROM users GROUP BY created_at, name",
      RO,
      'select',
      true,
    );
  });
});

describe('mysql guard: refusal reasons', () => {
  test('the reason says what is allowed and on which table', () => {
    expect(refusal(guardMysqlSql('SELECT 1; COMMIT', RO))).toStartWith(
      'Only a single SELECT on table "shop.users" is allowed (read-only tool): found more than one statement',
    );
    expect(refusal(guardMysqlSql('COMMIT', RO))).toBe('Only a single SELECT on table "shop.users" is allowed (read-only tool): found COMMIT.');
    expect(refusal(guardMysqlSql('DELETE FROM users', READ_CONN))).toBe(
      'Only a single SELECT on table "shop.users" is allowed (read-only connector): found DELETE.',
    );
    expect(refusal(guardMysqlSql('DROP TABLE users', RW))).toStartWith('Only a single SELECT, INSERT, UPDATE or DELETE on table "shop.users" is allowed: ');
  });

  test('huge input is never echoed back', () => {
    const longName = 'x'.repeat(5000);
    for (const sql of [
      `SELECT * FROM ${longName}`,
      `SELECT ${longName}(1) FROM users`,
      `SELECT '${longName}' FROM users; COMMIT`,
      `SELEC ${longName}`,
      `SELECT '${longName}\\' FROM users`,
    ]) {
      expect(refusal(guardMysqlSql(sql, RO)).length).toBeLessThan(400);
    }
  });
});

describe('mysql guard: caching and speed', () => {
  test('verdicts depend on the options, not only on the SQL', () => {
    const sql = 'DELETE FROM users WHERE id = 1';
    expect(guardMysqlSql(sql, RO).ok).toBe(false);
    expect(guardMysqlSql(sql, RW).ok).toBe(true);
    expect(guardMysqlSql(sql, RO).ok).toBe(false);
    expect(guardMysqlSql('SELECT * FROM users', { ...RO, table: { schema: 'shop', name: 'other' } }).ok).toBe(false);
    expect(guardMysqlSql('SELECT * FROM users', RO).ok).toBe(true);
  });

  test('a typical SELECT is checked quickly', () => {
    clearMysqlGuardCache();
    const n = 1000;
    for (let i = 0; i < 100; i++) guardMysqlSql(`SELECT id, name FROM users WHERE id = ${i}`, RO);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const r = guardMysqlSql(`SELECT id, LOWER(name), COUNT(*) FROM users WHERE id > ${i} AND name = ? GROUP BY id, name ORDER BY name LIMIT 50`, RO);
      if (!r.ok) throw new Error(r.reason);
    }
    const perCallMs = (performance.now() - t0) / n;
    // ~0.09 ms on an idle machine; a loose bound so a busy CI box does not flake.
    expect(perCallMs).toBeLessThan(3);
  });
});
