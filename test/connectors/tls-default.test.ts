// The TLS default of database connectors is what a managed cloud database expects, and a TLS mismatch says TLS (issue 26).
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type TestGateway } from '../support/gateway.ts';
import { getConnector } from '../support/mcp.ts';
import { sdkFor } from '../support/sdk.ts';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
if (!available) console.log('tls-default: PostgreSQL or MariaDB not reachable, suite skipped');

let g: TestGateway;
let t: Targets;
beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_tls')]);
});
afterAll(async () => {
  await g?.close();
  await t?.drop();
});

test.skipIf(!available)('no tls given: require is stored, and a server without TLS fails with a reason that names TLS', async () => {
  const org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  const client = sdkFor(g, token).client;
  for (const [type, base] of [
    ['postgresql', t.pgConfig],
    ['mysql', t.myConfig],
  ] as const) {
    const { tls: _tls, ...config } = base;
    const created = await sdk.createConnector({ client, throwOnError: true, body: { name: `tls ${type}`, type, config } });
    expect(created.data.config).toMatchObject({ tls: 'require' });
    await g.deps.jobs.idle();
    const failed = await getConnector(g, token, created.data.id);
    expect({ type, status: failed.status, reason: failed.status_reason }).toEqual({
      type,
      status: 'failed',
      reason: `${base.host}:${base.port} does not accept TLS (tls is "require"): the server does not offer TLS; enable TLS on the server, or set tls to "disable" for a server on a trusted network`,
    });
    // Saying disable, as for a server on a trusted network, connects.
    await sdk.updateConnector({ client, throwOnError: true, path: { connectorId: created.data.id }, body: { config: base } });
    await g.deps.jobs.idle();
    expect((await getConnector(g, token, created.data.id)).status).toBe('active');
  }
});
