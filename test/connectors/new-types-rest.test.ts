// The mongodb, mssql and oracle connector types over REST on a real gateway. No such server runs on our machines, so
// this drives what can be driven without one: creation is accepted (the 422 of a type without a driver is gone), the
// per-type config rules, and validation against an unreachable host: `failed`, with a readable reason that never
// contains the password. Against live servers see new-types-live.test.ts.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../../sdk/index.ts';
import { connectorTypes } from '../../src/connectors/index.ts';
import { createConnector as createConnectorService } from '../../src/connectors/service.ts';
import { AppError } from '../../src/errors.ts';
import openapi from '../../generated/openapi.json' with { type: 'json' };
import { verifies } from '../requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from '../support/gateway.ts';
import { createConnector, restTools } from '../support/mcp.ts';
import { sdkFor } from '../support/sdk.ts';
import { deadPort } from '../support/targets.ts';

setDefaultTimeout(60_000);
const PASSWORD = 'PlainPw-4711!-new-types';

let g: TestGateway;
let org: Onboarded;
let token: string;
let client: sdk.Client;

beforeAll(async () => {
  // Any port of 127.0.0.1: the suite points connectors at dead ports and local stand-in servers.
  g = await startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  client = sdkFor(g, token).client;
}, 120_000);
afterAll(async () => {
  await g?.close();
}, 60_000);

describe('mongodb, mssql and oracle connectors over REST', () => {
  test('every type of the contract has a driver; a type without one would be 422 connector_type_unavailable', async () => {
    verifies('CONN-NEW-TYPES-REST', 'CONN-TYPE-UNAVAILABLE');
    expect(connectorTypes()).toEqual([...openapi.components.schemas.ConnectorType.enum].sort());
    // No type of the enum lacks a driver any more, so the refusal is reached through the service itself.
    let thrown: unknown;
    try {
      await createConnectorService(g.deps as never, org.orgId, { name: 'x', type: 'cassandra', config: {} }, { type: 'system' } as never);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).status).toBe(422);
    expect((thrown as AppError).code).toBe('connector_type_unavailable');
  });

  test('an unreachable host: failed, with a human-readable reason and no password', async () => {
    verifies('CONN-NEW-TYPES-REST', 'CONN-CREDENTIAL-HIDDEN');
    const port = await deadPort();
    const configs: Record<'mongodb' | 'mssql' | 'oracle', Record<string, unknown>> = {
      mongodb: { host: '127.0.0.1', port, database: 'shop', user: 'reader', auth_source: 'admin' },
      mssql: { host: '127.0.0.1', port, database: 'shop', user: 'reader', schemas: ['dbo', 'sales'] },
      oracle: { host: '127.0.0.1', port, database: 'FREEPDB1', user: 'reader', tls: 'disable' },
    };
    for (const [type, config] of Object.entries(configs)) {
      // These types only read: allow_write / allow_ddl are stored false whatever is sent.
      const failed = await createConnector(g, token, { name: `down ${type}`, type, config, credential: PASSWORD, allow_write: true, allow_ddl: true });
      expect(failed.type).toBe(type);
      expect([failed.allow_write, failed.allow_ddl]).toEqual([false, false]);
      expect(failed.status).toBe('failed');
      expect(failed.status_reason).toBe(`could not connect to 127.0.0.1:${port}: connection refused`);
      expect(JSON.stringify(failed)).not.toContain(PASSWORD);
      expect(await restTools(g, token, org.orgId, failed.id)).toEqual([]);
      const listed = await sdk.listConnectors({ client, parseAs: 'text' });
      expect(listed.data as unknown as string).not.toContain(PASSWORD);
      expect((await sdk.archiveConnector({ client, path: { connectorId: failed.id } })).response.status).toBe(200);
    }
  });

  test('per-type config rules: 400 naming the field, nothing created', async () => {
    verifies('CONN-NEW-TYPES-REST', 'REST-400-FIELD');
    const before = (await sdk.listConnectors({ client, throwOnError: true })).data.connectors.length;
    const bad = async (type: string, config: Record<string, unknown>, field: string) => {
      const res = await api(g, 'POST', '/api/connectors', token, { name: 'x', type, config, credential: PASSWORD });
      const text = await res.text();
      expect(res.status).toBe(400);
      const body = JSON.parse(text) as { error: string; message: string };
      expect(body.error).toBe('validation_error');
      expect(body.message).toContain(field);
      expect(text).not.toContain(PASSWORD);
    };
    // MongoDB tools are the collections of `database`: no schemas; a database name MongoDB refuses.
    await bad('mongodb', { host: 'db.example', database: 'shop', user: 'u', schemas: ['x'] }, 'config');
    await bad('mongodb', { host: 'db.example', database: 'sh.op', user: 'u' }, 'database');
    // auth_source is a MongoDB setting only.
    await bad('mssql', { host: 'db.example', database: 'shop', user: 'u', auth_source: 'admin' }, 'config');
    await bad('postgresql', { host: 'db.example', database: 'shop', user: 'u', auth_source: 'admin' }, 'config');
    await bad('oracle', { host: 'db.example', database: 'FREE', user: 'u', port: 0 }, 'port');
    await bad('mssql', { host: 'a/b', database: 'shop', user: 'u' }, 'host');
    expect((await sdk.listConnectors({ client, throwOnError: true })).data.connectors.length).toBe(before);
  });

  test('system databases and schemas are refused at validation, before any connection', async () => {
    verifies('CONN-NEW-TYPES-REST');
    const port = await deadPort();
    const cases: [string, Record<string, unknown>, string][] = [
      ['mongodb', { host: '127.0.0.1', port, database: 'admin', user: 'u' }, 'database admin is a system database'],
      ['mssql', { host: '127.0.0.1', port, database: 'master', user: 'u' }, 'database master is a system database'],
      ['mssql', { host: '127.0.0.1', port, database: 'shop', user: 'u', schemas: ['sys'] }, 'schema sys is a system schema'],
      ['oracle', { host: '127.0.0.1', port, database: 'FREE', user: 'u', schemas: ['sys'] }, 'schema SYS belongs to the database itself'],
    ];
    for (const [type, config, reason] of cases) {
      const failed = await createConnector(g, token, { name: `sys ${type}`, type, config, credential: PASSWORD });
      expect(failed.status).toBe('failed');
      expect(failed.status_reason).toContain(reason);
      await sdk.archiveConnector({ client, path: { connectorId: failed.id } });
    }
  });

  test('building a gateway loads none of the three client packages nor their guards (they load with the first connector)', async () => {
    verifies('CONN-NEW-TYPES-REST');
    // A fresh process: the test runner shares one module registry between suites.
    const script = `await import(${JSON.stringify(`${import.meta.dir}/../../src/gateway.ts`)});
const loaded = (needle) => Object.keys(require.cache).some((k) => k.includes(needle));
console.log(JSON.stringify(['node_modules/mongodb/', 'node_modules/mssql/', 'node_modules/tedious/', 'node_modules/oracledb/', 'sqlguard/mssql.ts', 'sqlguard/oracle.ts', 'mongodb/driver.ts', 'mongodb/index.ts'].map(loaded)));`;
    const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' });
    const out = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual([false, false, false, false, false, false, false, true]);
  }, 30_000);
});
