/** Unit tests of the helpers shared by the SQL drivers: naming, JSON-safe values, caps, wrapping, pools, config schema. */
import { describe, expect, test } from 'bun:test';
import Ajv from 'ajv';
import { toolNames } from '../../src/connectors/shared/naming.ts';
import {
  byteaHexToBase64,
  decimalTextToJson,
  int64TextToJson,
  timestampTextToIso,
  timestamptzTextToIso,
  toJsonSafe,
} from '../../src/connectors/shared/jsonsafe.ts';
import { parseCallArgs, rowsResult } from '../../src/connectors/shared/result.ts';
import { checkWrappable } from '../../src/connectors/shared/sqltext.ts';
import { PG_SYNTAX } from '../../src/connectors/postgresql/saved.ts';
import { MYSQL_SYNTAX } from '../../src/connectors/mysql/saved.ts';
import { PoolRegistry } from '../../src/connectors/shared/pools.ts';
import { scrub } from '../../src/connectors/shared/errors.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import { mysqlDriver } from '../../src/connectors/mysql/driver.ts';
import { verifies } from '../requirements.ts';

const limits = { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000 };

describe('toolNames', () => {
  test('sanitises, qualifies same-named tables, truncates and suffixes deterministically', () => {
    verifies('TOOLS-NAMING');
    const rels = [
      { schema: 'public', table: 'Order Items' },
      { schema: 'public', table: 'orders' },
      { schema: 'sales', table: 'orders' },
      { schema: 'public', table: 'order_items' },
      { schema: 'public', table: `${'x'.repeat(60)}_b` },
      { schema: 'public', table: `${'x'.repeat(60)}_a` },
    ];
    const names = toolNames('postgresql', rels);
    const long = `query_postgresql_${'x'.repeat(47)}`;
    expect(names).toEqual([
      'query_postgresql_order_items_2', // the table already spelled order_items keeps the plain name
      'query_postgresql_public_orders',
      'query_postgresql_sales_orders',
      'query_postgresql_order_items',
      `${long.slice(0, 62)}_2`,
      long,
    ]);
    expect(toolNames('postgresql', [...rels].reverse())).toEqual([...names].reverse());
  });

  test('a suffix never takes a name that is already unique', () => {
    expect(
      toolNames('mysql', [
        { schema: 'd', table: 'a' },
        { schema: 'd', table: 'A' },
        { schema: 'd', table: 'a_2' },
      ]),
    ).toEqual(['query_mysql_a', 'query_mysql_a_3', 'query_mysql_a_2']);
  });

  test('case twins: the lower-case table keeps its name whichever twin exists or comes first', () => {
    const twins = [
      { schema: 'd', table: 'ACCOUNTS' },
      { schema: 'd', table: 'accounts' },
      { schema: 'd', table: 'Accounts' },
    ];
    expect(toolNames('mysql', twins)).toEqual(['query_mysql_accounts_2', 'query_mysql_accounts', 'query_mysql_accounts_3']);
    expect(toolNames('mysql', [...twins].reverse())).toEqual(['query_mysql_accounts_3', 'query_mysql_accounts', 'query_mysql_accounts_2']);
    expect(toolNames('mysql', twins.slice(0, 2))).toEqual(['query_mysql_accounts_2', 'query_mysql_accounts']);
    // Twin databases holding a same-named table: qualified, and the lower-case database keeps the plain name.
    expect(
      toolNames('mysql', [
        { schema: 'SHOP', table: 't' },
        { schema: 'shop', table: 't' },
      ]),
    ).toEqual(['query_mysql_shop_t_2', 'query_mysql_shop_t']);
  });
});

describe('JSON-safe values', () => {
  test('timestamps keep their precision and become UTC', () => {
    expect(timestamptzTextToIso('2024-01-02 03:04:05.123456+00')).toBe('2024-01-02T03:04:05.123456Z');
    expect(timestamptzTextToIso('2024-01-02 01:04:05.5-02')).toBe('2024-01-02T03:04:05.5Z');
    expect(timestamptzTextToIso('2024-01-01 23:30:00+05:30')).toBe('2024-01-01T18:00:00Z');
    expect(timestamptzTextToIso('infinity')).toBe('infinity');
    expect(timestamptzTextToIso('0044-03-15 12:00:00+00 BC')).toBe('0044-03-15 12:00:00+00 BC');
    expect(timestampTextToIso('2024-01-02 03:04:05')).toBe('2024-01-02T03:04:05');
    expect(timestampTextToIso('0000-00-00 00:00:00')).toBe('0000-00-00T00:00:00');
  });

  test('64-bit integers and exact decimals: JSON numbers while exact, the exact text beyond (issue 17)', () => {
    expect(int64TextToJson('40')).toBe(40);
    expect(int64TextToJson('-9007199254740991')).toBe(-9007199254740991);
    expect(int64TextToJson('9007199254740992')).toBe('9007199254740992');
    expect(int64TextToJson('9223372036854775807')).toBe('9223372036854775807');
    expect(decimalTextToJson('1999.00')).toBe(1999);
    expect(decimalTextToJson('-0.000123')).toBe(-0.000123);
    expect(decimalTextToJson('0.00')).toBe(0);
    expect(decimalTextToJson('123456789012345')).toBe(123456789012345);
    expect(decimalTextToJson('12345678901234.5')).toBe(12345678901234.5);
    expect(decimalTextToJson('1234567890123.456')).toBe('1234567890123.456'); // 16 significant digits
    expect(decimalTextToJson('0.1000000000000001')).toBe('0.1000000000000001');
    expect(decimalTextToJson('12345678901234567890.0123456789')).toBe('12345678901234567890.0123456789');
    expect(decimalTextToJson(`1${'0'.repeat(400)}`)).toBe(`1${'0'.repeat(400)}`); // beyond a double's range
    expect(decimalTextToJson(`0.${'0'.repeat(400)}1`)).toBe(`0.${'0'.repeat(400)}1`);
    for (const special of ['NaN', 'Infinity', '-Infinity']) expect(decimalTextToJson(special)).toBe(special);
    expect(toJsonSafe({ small: 40n, big: 2n ** 60n })).toEqual({ small: 40, big: '1152921504606846976' });
  });

  test('bytes, bigints, dates and non-finite numbers', () => {
    expect(byteaHexToBase64('\\x00ff10')).toBe('AP8Q');
    expect(toJsonSafe({ b: Buffer.from([0, 255, 16]), n: 2n ** 70n, d: new Date(0), f: NaN, a: [Infinity, null] })).toEqual({
      b: 'AP8Q',
      n: '1180591620717411303424',
      d: '1970-01-01T00:00:00.000Z',
      f: 'NaN',
      a: ['Infinity', null],
    });
  });
});

describe('results and arguments', () => {
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i, s: 'é'.repeat(10) }));

  test('row cap: one extra row fetched means truncated', () => {
    verifies('SQL-ROW-CAP');
    expect(rowsResult(rows, 9, 1e6).structuredContent).toMatchObject({ rowCount: 9, truncated: true });
    expect(rowsResult(rows, 10, 1e6).structuredContent).toMatchObject({ rowCount: 10, truncated: false });
  });

  test("the truncation note counts in words that agree: one row is 'the first row is shown', a limit of 1 is '1 row'", () => {
    const noteOf = (maxRows: number) => (rowsResult(rows, maxRows, 1e6).content[1] as { text: string }).text;
    expect(noteOf(1)).toStartWith("Truncated: only the first row is shown; more rows exist beyond this call's limit of 1 row. ");
    expect(noteOf(2)).toStartWith("Truncated: only the first 2 rows are shown; more rows exist beyond this call's limit of 2 rows. ");
  });

  test('byte cap bounds the whole answer: the text, the note and structuredContent as JSON (decision 0306)', () => {
    verifies('SQL-BYTE-CAP');
    const full = rowsResult(rows, 100, 1e6);
    const whole = Buffer.byteLength(JSON.stringify(full));
    expect(full.content).toHaveLength(1);
    // Just too small for every row with the note set aside: one row fewer, and the answer still within the cap.
    let cap = whole;
    while (rowsResult(rows, 100, cap).structuredContent!.truncated === true) cap += 1;
    const r = rowsResult(rows, 100, cap - 1);
    expect(r.structuredContent).toMatchObject({ rowCount: 9, truncated: true });
    expect(r.content[0]!.text).toBe(JSON.stringify(rows.slice(0, 9)));
    expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(cap - 1);
    expect(rowsResult(rows, 100, cap).structuredContent).toMatchObject({ rowCount: 10, truncated: false });
    expect(rowsResult(rows, 100, 5).content[0]!.text).toBe('[]');
  });

  test('writes report the affected count', () => {
    expect(rowsResult([], 10, 1e6, 7).structuredContent).toEqual({ rows: [], rowCount: 7, truncated: false });
  });

  test('arguments', () => {
    verifies('SQL-LIMIT-ARG');
    expect(parseCallArgs({ sql: 'select 1' }, limits)).toEqual({ sql: 'select 1', maxRows: 100 });
    expect(parseCallArgs({ sql: 'select 1', limit: 1000 }, { ...limits, maxRows: 50 })).toEqual({ sql: 'select 1', maxRows: 50 });
    for (const bad of [{}, { sql: '' }, { sql: 'x', limit: 0 }, { sql: 'x', limit: 1001 }, { sql: 'x', limit: 1.5 }, { sql: 'x', other: 1 }]) {
      expect(typeof parseCallArgs(bad, limits)).toBe('string');
    }
  });
});

describe('checkWrappable', () => {
  test('drops a trailing terminator and trailing comments', () => {
    expect(checkWrappable('select 1; -- done', PG_SYNTAX)).toEqual({ ok: true, body: 'select 1' });
    expect(checkWrappable("select ';' from t;", MYSQL_SYNTAX)).toEqual({ ok: true, body: "select ';' from t" });
    expect(checkWrappable('select $a$ ) ; $a$ from t', PG_SYNTAX).ok).toBe(true);
  });

  test('refuses text that would escape the wrapper', () => {
    for (const [sql, d] of [
      ['select 1) as q union select * from secrets --', 'postgresql'],
      ['select (1', 'postgresql'],
      ['select 1; drop table t', 'postgresql'],
      ["select 'open", 'mysql'],
      ['select 1 /* open', 'postgresql'],
      ['select 1 /*!, 2 */', 'mysql'],
      ['select 1 -- (\n)', 'mysql'],
    ] as const) {
      expect({ sql, ok: checkWrappable(sql, d === 'postgresql' ? PG_SYNTAX : MYSQL_SYNTAX).ok }).toEqual({ sql, ok: false });
    }
  });
});

describe('PoolRegistry', () => {
  function registry() {
    const opened: string[] = [];
    const ended: string[] = [];
    const r = new PoolRegistry<string, undefined>({
      open: (config, credential) => (opened.push(`${config.host}/${credential}`), `${config.host}/${credential}`),
      end: async (p) => void ended.push(p),
    });
    return { r, opened, ended };
  }
  const config = { host: 'h', database: 'd', user: 'u' };

  test('one pool per connector, replaced when the credential changes, closed on close()', async () => {
    const { r, opened, ended } = registry();
    await r.use('c', config, 'a', async () => undefined);
    await r.use('c', config, 'a', async () => undefined);
    expect(opened).toEqual(['h/a']);
    await r.use('c', config, 'b', async () => undefined);
    expect(opened).toEqual(['h/a', 'h/b']);
    expect(ended).toEqual(['h/a']);
    await r.close('c');
    expect(ended).toEqual(['h/a', 'h/b']);
    expect(r.size).toBe(0);
  });

  test('an idle pool is closed, a busy one is not', async () => {
    const { r, ended } = registry();
    r.configure({ idleMs: 20 });
    let release!: () => void;
    const busy = r.use('busy', config, 'x', () => new Promise<void>((res) => (release = res)));
    await r.use('idle', config, 'y', async () => undefined);
    await Bun.sleep(60);
    expect(ended).toEqual(['h/y']);
    release();
    await busy;
    await Bun.sleep(60);
    expect(ended).toEqual(['h/y', 'h/x']);
  });
});

describe('config schemas and error scrubbing', () => {
  test('DatabaseConfig schema per driver', () => {
    const ajv = new Ajv({ useDefaults: true, strict: false });
    for (const [driver, port] of [
      [postgresqlDriver, 5432],
      [mysqlDriver, 3306],
    ] as const) {
      const validate = ajv.compile(driver.configSchema);
      const ok: Record<string, unknown> = { host: 'db.example.com', database: 'app', user: 'reader', schemas: ['public'] };
      expect(validate(ok)).toBe(true);
      // TLS on unless said otherwise: what a managed cloud database expects (issue 26).
      expect(ok).toMatchObject({ port, tls: 'require' });
      expect(validate({ host: 'h', database: 'd', user: 'u', password: 'x' })).toBe(false);
      expect(validate({ host: 'h', database: 'd', user: 'u', port: 70000 })).toBe(false);
      expect(validate({ host: 'h', database: 'd', user: 'u', tls: 'maybe' })).toBe(false);
      expect(validate({ host: 'h', database: 'd', user: 'u', schemas: ['bad name;'] })).toBe(false);
      expect(validate({ host: '/var/run/postgresql', database: 'd', user: 'u' })).toBe(false);
      expect(validate({ database: 'd', user: 'u' })).toBe(false);
    }
  });

  test('scrub removes the credential and URLs with user info', () => {
    expect(scrub('failed for postgres://bob:hunter22@db:5432/x and hunter22', 'hunter22')).toBe('failed for <connection url> and ***');
  });
});
