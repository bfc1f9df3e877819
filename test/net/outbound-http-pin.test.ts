// HTTP through the outbound policy connects to the address it checked (issue 26): the name is never resolved again.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { OutboundRefusedError, parseOutboundPolicy, safeFetch, type Resolver } from '../../src/net/outbound.ts';
import { verifies } from '../requirements.ts';

const dns = new Map<string, string[]>();
const resolve: Resolver = async (host) => dns.get(host) ?? [];
let server: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => new Response(`host=${req.headers.get('host')}`) });
});
afterAll(() => server.stop(true));

const opts = { requireHttps: false, timeoutMs: 5000, maxBytes: 1024 };

test('a name only the policy resolver knows is fetched at the checked address, the name kept in Host', async () => {
  verifies('OUTBOUND-HTTP-PINNED');
  // `.invalid` never resolves in DNS (RFC 6761): a fetch that looked the name up again could not connect at all.
  dns.set('pinned.invalid', ['127.0.0.1']);
  const policy = parseOutboundPolicy({ allowHosts: ['127.0.0.0/8'], resolve });
  const res = await safeFetch(`http://pinned.invalid:${server.port}/x`, {}, policy, opts);
  expect(await res.text()).toBe(`host=pinned.invalid:${server.port}`);
  // The answer changes: the next request is checked against it, and refused before any connection.
  dns.set('pinned.invalid', ['10.20.30.40']);
  const err = await safeFetch(`http://pinned.invalid:${server.port}/x`, {}, policy, opts).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OutboundRefusedError);
  expect((err as OutboundRefusedError).reason).toBe('forbidden_address');
});

test("the gateway's own port is refused even when its address is allow-listed", async () => {
  verifies('OUTBOUND-NEVER-SELF');
  const policy = parseOutboundPolicy({ allowHosts: ['127.0.0.1'], resolve, ownPorts: [server.port!] });
  const err = await safeFetch(`http://127.0.0.1:${server.port}/x`, {}, policy, opts).catch((e: unknown) => e);
  expect((err as OutboundRefusedError).reason).toBe('forbidden_address');
  const other = parseOutboundPolicy({ allowHosts: ['127.0.0.1'], resolve, ownPorts: [1] });
  expect(await (await safeFetch(`http://127.0.0.1:${server.port}/x`, {}, other, opts)).text()).toBe(`host=127.0.0.1:${server.port}`);
});
