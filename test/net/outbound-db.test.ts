// The outbound policy for database connectors (issue 26), per class, against real listeners: the test PostgreSQL
// and MariaDB servers, the demo's embedded sample database, the gateway's own store, and a resolver the suite controls.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { statSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import * as sdk from '../../sdk/index.ts';
import { loadConfig } from '../../src/config.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import { mysqlDriver } from '../../src/connectors/mysql/driver.ts';
import { mongodbDriver } from '../../src/connectors/mongodb/driver.ts';
import { mssqlDriver } from '../../src/connectors/mssql/driver.ts';
import { oracleDriver } from '../../src/connectors/oracle/driver.ts';
import { startDemo, SAMPLE_HOST, type Demo } from '../../src/demo/demo.ts';
import { assertDatabaseTarget } from '../../src/net/dial.ts';
import { OutboundRefusedError, parseOutboundPolicy, type Resolver } from '../../src/net/policy.ts';
import { verifies } from '../requirements.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from '../support/gateway.ts';
import { callTool, getConnector, listToolNames, type RpcAnswer } from '../support/mcp.ts';
import { serviceAvailable } from '../support/services.ts';
import { sdkFor } from '../support/sdk.ts';
import { createTargets, type Targets } from '../support/targets.ts';

setDefaultTimeout(60_000);

const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
if (!available) console.log('outbound-db: PostgreSQL or MariaDB not reachable, suites skipped');

/** A resolver the suite controls: names map to what `dns` says now (a changed entry is a DNS change). */
const dns = new Map<string, string[]>();
const resolve: Resolver = async (host) => {
  const hit = dns.get(host);
  if (!hit) throw Object.assign(new Error(`not found: ${host}`), { code: 'ENOTFOUND' });
  return hit;
};

/** A port on 127.0.0.1 nothing listens on. */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

type Created = Awaited<ReturnType<typeof sdk.createConnector>>;
const errorOf = (res: object) => (res as { error?: unknown }).error as { error: string; message: string } | undefined;

async function connectorFor(g: TestGateway, org: Onboarded) {
  return sdkFor(g, await tokenFor(g, org.clientId, org.clientSecret)).client;
}

function create(client: sdk.Client, type: 'postgresql' | 'mysql', config: Record<string, unknown>): Promise<Created> {
  return sdk.createConnector({
    client,
    body: {
      name: `c ${Math.random().toString(36).slice(2, 8)}`,
      type,
      config: { tls: 'disable', ...config } as sdk.CreateConnectorRequest['config'],
      credential: '',
    } as sdk.CreateConnectorRequest,
  });
}

function textOf(answer: RpcAnswer): string {
  const result = answer.body?.result as { content?: { text: string }[]; isError?: boolean } | undefined;
  return result?.content?.map((c) => c.text).join('\n') ?? JSON.stringify(answer.body);
}

const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  '127.0.0.2',
  '2130706433',
  '0x7f000001',
  '0177.0.0.1',
  '017700000001',
  '127.1',
  '0x7f.1',
  '127.0.0.1.',
  'localhost',
  'LOCALHOST.',
  'db.localhost',
  '::1',
  '[::1]',
  '0:0:0:0:0:0:0:1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '[::ffff:127.0.0.1]',
  '64:ff9b::7f00:1',
  '2002:7f00:1::',
  '::127.0.0.1',
];
const OTHER_FORBIDDEN = [
  '0.0.0.0',
  '0',
  '::',
  '169.254.169.254',
  '0xa9fea9fe',
  '::ffff:169.254.169.254',
  'fd00:ec2::254',
  '100.100.100.200',
  'metadata.google.internal',
  '224.0.0.1',
  'ff02::1',
  'fe80::1',
  '10.0.0.5',
  '172.16.3.4',
  '192.168.1.10',
  'fc00::5',
  '100.64.0.1',
  'name.to.loopback',
  'name.to.metadata',
  'name.mixed',
  'name.nowhere',
];
const NOT_A_HOST = ['/var/run/postgresql', '/tmp', '127.0.0.1:5432', 'a.example,127.0.0.1', 'user@db.example', 'db.example/x', 'fe80::1%eth0', ' '];

describe('the policy on database hosts (no network)', () => {
  const policy = parseOutboundPolicy({
    allowHosts: ['10.0.0.0/8', 'fd00::/8', '169.254.0.0/16', 'named.internal'],
    resolve: async (h) =>
      ({ 'named.internal': ['10.1.1.1'], 'private.other': ['192.168.0.9'], 'cidr.name': ['10.2.2.2'], 'name.to.meta': ['169.254.169.254'] })[h] ?? [],
  });
  const check = (host: string, port = 5432) => assertDatabaseTarget(policy, { host, port, database: 'd' });
  const refusal = async (host: string) => {
    const err = await check(host).then(
      () => null,
      (e: unknown) => e,
    );
    return err instanceof OutboundRefusedError ? err.reason : `allowed: ${String(err)}`;
  };

  test('CIDR and name entries open private targets; link-local and metadata stay closed whatever is listed', async () => {
    verifies('OUTBOUND-ALLOW-CIDR');
    for (const host of ['10.3.4.5', '0xa030405', 'fd00::1', 'named.internal', 'cidr.name', '::ffff:10.3.4.5']) await check(host);
    for (const host of ['169.254.169.254', '169.254.1.1', 'fd00:ec2::254', 'name.to.meta', '192.168.0.9', 'private.other', '127.0.0.1']) {
      expect({ host, reason: await refusal(host) }).toEqual({ host, reason: 'forbidden_address' });
    }
  });

  test('text that is no host (a socket path, a list, a port, user info) is refused as such', async () => {
    verifies('OUTBOUND-DB-SAVE');
    for (const host of NOT_A_HOST) expect({ host, reason: await refusal(host) }).toEqual({ host, reason: 'invalid_host' });
  });

  test('an allow-list of everything is refused at start', () => {
    for (const entry of ['0.0.0.0/0', '::/0', '10.0.0.0/33', '10.0.0.0/x']) {
      expect(() => loadConfig({ TOOLGATE_OUTBOUND_ALLOW_HOSTS: entry })).toThrow('TOOLGATE_OUTBOUND_ALLOW_HOSTS');
    }
    expect(loadConfig({ TOOLGATE_OUTBOUND_ALLOW_HOSTS: '10.0.0.0/8,fd00::/8,db.internal:5432' }).outboundAllowHosts).toHaveLength(3);
  });
});

describe('mongodb, mssql and oracle: checked at connect time, before the driver connects', () => {
  test('a name that now resolves to a forbidden address fails validation and calls with the policy words', async () => {
    verifies('OUTBOUND-DB-CONNECT');
    const policy = parseOutboundPolicy({ allowHosts: [], resolve: async () => ['10.7.7.7'] });
    const limits = { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows: 10, maxResultBytes: 10_000 };
    for (const driver of [mongodbDriver, mssqlDriver, oracleDriver] as const) {
      const config = { host: 'moved.example', port: 1, database: 'db', user: 'u', tls: 'disable' as const };
      const err = await driver.validate('c', config, 'pw', { outbound: policy }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect({ type: driver.type, message: err?.message }).toEqual({ type: driver.type, message: expect.stringContaining('is not an allowed destination') });
      const spec = { name: 't', description: '', inputSchema: { type: 'object' as const, properties: {} }, target: {} };
      const result = await (driver.execute as (...a: unknown[]) => Promise<{ isError?: boolean; content: { text: string }[] }>)(
        spec,
        {},
        { connectorId: 'c', config, credential: 'pw', allowWrite: false, allowDdl: false, readOnly: true, limits, outbound: policy },
      );
      expect({ type: driver.type, isError: result.isError, text: result.content[0]?.text }).toEqual({
        type: driver.type,
        isError: true,
        text: expect.stringContaining('is not an allowed destination'),
      });
    }
  });
});

describe('mongodb and mssql: their sockets go to the address the policy checked', () => {
  test('a name only the policy resolver knows reaches its checked address (here a closed port: connection refused)', async () => {
    verifies('OUTBOUND-DB-CONNECT');
    const port = await deadPort();
    // `.invalid` never resolves in DNS: a driver that looked the name up itself would report it unresolvable.
    const policy = parseOutboundPolicy({ allowHosts: ['127.0.0.1'], resolve: async (h) => (h === 'pinned.invalid' ? ['127.0.0.1'] : []) });
    for (const driver of [mongodbDriver, mssqlDriver] as const) {
      const config = { host: 'pinned.invalid', port, database: 'db', user: 'u', tls: 'disable' as const };
      const err = await driver.validate('c', config, 'pw', { outbound: policy }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect({ type: driver.type, message: err?.message }).toEqual({ type: driver.type, message: expect.stringContaining('connection refused') });
    }
  });
});

describe.skipIf(!available)('no allow-list: refused at create in every spelling, the same words whatever is there', () => {
  let g: TestGateway;
  let client: sdk.Client;

  beforeAll(async () => {
    dns.set('name.to.loopback', ['127.0.0.1']);
    dns.set('name.to.metadata', ['169.254.169.254']);
    dns.set('name.mixed', ['93.184.216.34', '10.0.0.1']);
    g = await startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1' }, undefined, { resolve });
    client = await connectorFor(g, await onboard(g));
  });
  afterAll(async () => {
    await g?.close();
  });

  test('loopback, private, link-local, metadata, unspecified and multicast hosts: 422 for postgresql and mysql, nothing written', async () => {
    verifies('OUTBOUND-DB-SAVE');
    for (const type of ['postgresql', 'mysql'] as const) {
      for (const host of [...LOOPBACK_SPELLINGS, ...OTHER_FORBIDDEN]) {
        const res = await create(client, type, { host, port: type === 'mysql' ? 3306 : 5432, database: 'postgres', user: 'postgres' });
        expect({ type, host, status: res.response.status, error: errorOf(res)?.error }).toEqual({ type, host, status: 422, error: 'connector_target_refused' });
      }
      // Text that is no host: the contract's pattern refuses most (400), the policy the rest (422).
      for (const host of NOT_A_HOST) {
        const res = await create(client, type, { host, port: 5432, database: 'postgres', user: 'postgres' });
        expect({ type, host, refused: [400, 422].includes(res.response.status) }).toEqual({ type, host, refused: true });
      }
    }
    expect((await sdk.listConnectors({ client, throwOnError: true })).data.connectors).toEqual([]);
  });

  test('an open port, a closed port and a name that does not resolve are refused with the same message', async () => {
    verifies('OUTBOUND-NO-SCANNER');
    const closed = await deadPort();
    dns.set('open.test', ['127.0.0.1']);
    const cases = [
      { host: '127.0.0.1', port: 5432, database: 'postgres' }, // the real PostgreSQL server, trust auth
      { host: '127.0.0.1', port: 5432, database: 'no_such_database' },
      { host: '127.0.0.1', port: closed, database: 'postgres' },
      { host: 'open.test', port: 5432, database: 'postgres' },
      { host: 'nxdomain.test', port: 5432, database: 'postgres' },
    ];
    const messages = new Set<string>();
    for (const c of cases) {
      const res = await create(client, 'postgresql', { ...c, user: 'postgres' });
      expect(res.response.status).toBe(422);
      messages.add(errorOf(res)!.message.replace(JSON.stringify(c.host), '"<host>"'));
    }
    expect([...messages]).toHaveLength(1);
    expect([...messages][0]).toContain('TOOLGATE_OUTBOUND_ALLOW_HOSTS');
  });
});

describe.skipIf(!available)('allow-listed targets: checked again, and pinned, at every connection', () => {
  let g: TestGateway;
  let t: Targets;
  let org: Onboarded;
  let client: sdk.Client;

  beforeAll(async () => {
    [g, t] = await Promise.all([
      startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1:5432,127.0.0.1:3306' }, undefined, {
        resolve,
      }),
      createTargets('tg_outbound'),
    ]);
    org = await onboard(g);
    client = await connectorFor(g, org);
  });
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  });

  for (const [type, driver] of [
    ['postgresql', postgresqlDriver],
    ['mysql', mysqlDriver],
  ] as const) {
    test(`${type}: a name that resolved to an allowed address at save and a forbidden one later is refused at connect`, async () => {
      verifies('OUTBOUND-DB-CONNECT');
      const name = `rebind-${type}.test`;
      dns.set(name, ['127.0.0.1']);
      const base = type === 'postgresql' ? t.pgConfig : t.myConfig;
      const res = await create(client, type, { ...base, host: name });
      expect(res.response.status).toBe(201);
      await g.deps.jobs.idle();
      const id = res.data!.id;
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      expect((await getConnector(g, token, id)).status).toBe('active');
      const tool = `query_${type === 'postgresql' ? 'public' : t.name}_items`.toLowerCase();
      const names = (await sdk.listTools({ client, path: { orgId: org.orgId }, throwOnError: true })).data.tools.map((x) => x.name);
      const toolName = names.find((n) => n.endsWith('_items') && n.startsWith('query_')) ?? tool;
      expect(textOf(await callTool(g, org.slug, { apiKey: org.apiKey }, toolName, { sql: 'SELECT name FROM items WHERE id = 1' }))).toContain('apple');

      // The DNS answer changes: open connections end, and the next one must not follow the name.
      dns.set(name, ['10.9.9.9']);
      await driver.close(id);
      const call = await callTool(g, org.slug, { apiKey: org.apiKey }, toolName, { sql: 'SELECT name FROM items WHERE id = 1' });
      expect(textOf(call)).toContain('is not an allowed destination');
      const revalidated = await sdk.revalidateConnector({ client, path: { connectorId: id }, throwOnError: true });
      expect(revalidated.data.status).toBe('validating');
      await g.deps.jobs.idle();
      const failed = await getConnector(g, token, id);
      expect(failed.status).toBe('failed');
      expect(failed.status_reason).toContain('is not an allowed destination');
      // Loopback itself, reached by name: listed only for 5432 and 3306, so another port of the same name is refused.
      dns.set(name, ['127.0.0.1']);
      const other = await create(client, type, { ...base, host: name, port: await deadPort() });
      expect(other.response.status).toBe(422);
    });
  }

  test('PATCH to a refused host: 422 connector_target_refused, the connector unchanged', async () => {
    verifies('OUTBOUND-DB-SAVE');
    const res = await create(client, 'postgresql', { ...t.pgConfig });
    expect(res.response.status).toBe(201);
    await g.deps.jobs.idle();
    for (const host of ['10.1.2.3', '169.254.169.254', '2130706434', 'localhost']) {
      const patched = await sdk.updateConnector({ client, path: { connectorId: res.data!.id }, body: { config: { ...t.pgConfig, host, tls: 'disable' } } });
      expect({ host, status: patched.response.status, error: errorOf(patched)?.error }).toEqual({ host, status: 422, error: 'connector_target_refused' });
    }
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    expect(await getConnector(g, token, res.data!.id)).toMatchObject({ status: 'active', config: { host: '127.0.0.1', port: 5432 } });
  });
});

describe.skipIf(!available)('CIDR entries open database targets', () => {
  test('127.0.0.0/8 allows the loopback server; 10.0.0.0/8 does not', async () => {
    verifies('OUTBOUND-ALLOW-CIDR');
    const t = await createTargets('tg_outbound_cidr', 'pg');
    const open = await startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.0/8,169.254.0.0/16' });
    const shut = await startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '10.0.0.0/8' });
    try {
      const org = await onboard(open);
      const client = await connectorFor(open, org);
      const ok = await create(client, 'postgresql', t.pgConfig);
      expect(ok.response.status).toBe(201);
      await open.deps.jobs.idle();
      expect((await getConnector(open, await tokenFor(open, org.clientId, org.clientSecret), ok.data!.id)).status).toBe('active');
      expect((await create(client, 'postgresql', { ...t.pgConfig, host: '169.254.169.254' })).response.status).toBe(422);
      const refused = await create(await connectorFor(shut, await onboard(shut)), 'postgresql', t.pgConfig);
      expect(refused.response.status).toBe(422);
    } finally {
      await open.close();
      await shut.close();
      await t.drop();
    }
  });
});

describe.skipIf(!available)("the gateway's own store and port are never targets", () => {
  test('the store database is refused even with its server allow-listed; another database of that server is not', async () => {
    verifies('OUTBOUND-NEVER-SELF');
    const ownPort = await deadPort();
    const g = await startTestGateway(
      'postgres',
      { PORT: String(ownPort), TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.0/8,::1/128' },
      undefined,
      { resolve },
    );
    const t = await createTargets('tg_outbound_store', 'pg');
    try {
      dns.set('store.alias.test', ['127.0.0.1']);
      const client = await connectorFor(g, await onboard(g));
      const storeDb = new URL(g.databaseUrl!).pathname.slice(1);
      for (const host of ['127.0.0.1', 'localhost', '127.0.0.2', '::1', '2130706433', 'store.alias.test']) {
        const res = await create(client, 'postgresql', { host, port: 5432, database: storeDb, user: 'postgres' });
        expect({ host, status: res.response.status, error: errorOf(res)?.error }).toEqual({ host, status: 422, error: 'connector_target_refused' });
      }
      for (const host of ['127.0.0.1', 'localhost']) {
        const res = await create(client, 'postgresql', { host, port: ownPort, database: 'postgres', user: 'postgres' });
        expect({ host, status: res.response.status }).toEqual({ host, status: 422 });
      }
      expect((await create(client, 'postgresql', t.pgConfig)).response.status).toBe(201);
    } finally {
      await g.close();
      await t.drop();
    }
  });
});

describe.skipIf(!available)("the demo's sample database", () => {
  let g: TestGateway;
  let demo: Demo;

  beforeAll(async () => {
    g = await startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.0/8' });
    demo = await startDemo(g, { inMemory: true });
  });
  afterAll(async () => {
    await demo?.stop();
    await g?.close();
  });

  test('serves the demo org, through a socket in a folder only this user can enter, and no other org', async () => {
    verifies('DEMO-SAMPLE-PRIVATE');
    const apiKey = /demo API key: (\S+)/.exec(demo.banner)?.[1];
    expect(apiKey).toBeString();
    const tool = (await listToolNames(g, 'demo', { apiKey: apiKey! })).find((n) => n.includes('customers'));
    expect(tool).toBeString();
    const customers = await callTool(g, 'demo', { apiKey: apiKey! }, tool!, { sql: 'SELECT count(*) AS n FROM customers' });
    expect(textOf(customers)).toContain('"n":5');
    expect(statSync(dirname(demo.socketPath)).mode & 0o077).toBe(0);

    // Another org, with loopback allow-listed: neither the demo's host name nor its socket can be named.
    const other = await onboard(g);
    const client = await connectorFor(g, other);
    for (const host of [SAMPLE_HOST, SAMPLE_HOST.toUpperCase(), demo.socketPath, dirname(demo.socketPath)]) {
      const res = await create(client, 'postgresql', { host, port: 5432, database: 'postgres', user: 'postgres' });
      // A path is already no valid host to the contract (400); the names pass it and meet the policy (422).
      expect({ host, refused: [400, 422].includes(res.response.status) }).toEqual({ host, refused: true });
    }
    expect((await sdk.listConnectors({ client, throwOnError: true })).data.connectors).toEqual([]);
  });
});
