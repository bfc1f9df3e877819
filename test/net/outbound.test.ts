// Outbound guard: address classification, URL spellings, allow-list, and safeFetch against a local server only.
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import {
  OutboundFetchError,
  OutboundRefusedError,
  assertOutboundUrl,
  isForbiddenAddress,
  parseOutboundPolicy,
  safeFetch,
  type Resolver,
} from '../../src/net/outbound.ts';
import { verifies } from '../requirements.ts';

/** Fails the test if DNS is consulted: literals must never need it. */
const noDns: Resolver = async (host) => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};
const fakeDns =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    const hit = table[host];
    if (!hit) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return hit;
  };

async function refusal(p: Promise<unknown>): Promise<OutboundRefusedError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundRefusedError);
  return err as OutboundRefusedError;
}

describe('isForbiddenAddress', () => {
  const forbidden = [
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.100.100.200',
    '100.127.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.0.170',
    '198.18.0.1',
    '::1',
    '::',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:127.0.0.1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::808:808',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    '2002:a9fe:a9fe::1',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '2001:db8::1',
    '100::1',
    'metadata.google.internal',
    'localhost',
    'not-an-ip',
    '2130706433',
    '0177.0.0.1',
    '127.1',
    '1.2.3',
    '',
  ];
  for (const ip of forbidden) test(`refuses ${JSON.stringify(ip)}`, () => expect(isForbiddenAddress(ip)).toBe(true));

  const allowed = [
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '169.255.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:93.184.216.34',
    '::ffff:5db8:d822',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];
  for (const ip of allowed) test(`allows ${ip}`, () => expect(isForbiddenAddress(ip)).toBe(false));
});

describe('parseOutboundPolicy', () => {
  test('canonicalises entries', () => {
    const p = parseOutboundPolicy({ allowHosts: [' IdP.Example.com. ', '127.0.0.1:8443', '::1', '[::1]:99', ''] });
    expect([...p.allowHosts].sort()).toEqual(['127.0.0.1:8443', '[::1]', '[::1]:99', 'idp.example.com'].sort());
  });
  test('rejects garbage', () => {
    expect(() => parseOutboundPolicy({ allowHosts: ['host:99999'] })).toThrow();
    expect(() => parseOutboundPolicy({ allowHosts: ['bad host:80'] })).toThrow();
    expect(() => parseOutboundPolicy({ allowHosts: ['user@evil.example'] })).toThrow();
    expect(() => parseOutboundPolicy({ allowHosts: ['evil.example/path'] })).toThrow();
    expect(() => parseOutboundPolicy({ allowHosts: ['https://idp.example'] })).toThrow();
  });
});

describe('assertOutboundUrl', () => {
  const policy = parseOutboundPolicy({ allowHosts: [], resolve: noDns });
  const loopbackSpellings = [
    'http://127.0.0.1/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://017700000001/',
    'http://127.1/',
    'http://0x7f.1/',
    'http://127.0.0.1./',
    'http://%31%32%37.0.0.1/',
    'http://１２７.０.０.１/',
    'http://[::1]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[64:ff9b::127.0.0.1]/',
    'http://[2002:7f00:1::]/',
    'http://0/',
    'http://[::]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::ffff:169.254.169.254]/',
    'http://10.1.2.3:8080/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://100.64.1.1/',
    'http://255.255.255.255/',
    'http://localhost/',
    'http://LOCALHOST./',
    'http://api.localhost/',
    'http://metadata.google.internal/',
  ];
  for (const url of loopbackSpellings) {
    test(`refuses ${url}`, async () => {
      verifies('OUTBOUND-SSRF');
      const err = await refusal(assertOutboundUrl(url, policy, { requireHttps: false }));
      expect(err.reason).toBe('forbidden_address');
      expect(err.message).toMatch(/^refused: the address of host ".+" is in a private/);
    });
  }

  test('allows a public IP literal without DNS', async () => {
    const url = await assertOutboundUrl('https://93.184.216.34/jwks', policy, { requireHttps: true });
    expect(url.hostname).toBe('93.184.216.34');
    await assertOutboundUrl('http://[2606:4700:4700::1111]/', policy, { requireHttps: false });
  });

  test('refuses non-http schemes, credentials, and plain http when https is required', async () => {
    expect((await refusal(assertOutboundUrl('file:///etc/passwd', policy, { requireHttps: false }))).reason).toBe('scheme');
    expect((await refusal(assertOutboundUrl('gopher://93.184.216.34/', policy, { requireHttps: false }))).reason).toBe('scheme');
    const cred = await refusal(assertOutboundUrl('https://u:secretpw@93.184.216.34/', policy, { requireHttps: true }));
    expect(cred.reason).toBe('credentials');
    expect(cred.message).not.toContain('secretpw');
    expect((await refusal(assertOutboundUrl('http://93.184.216.34/', policy, { requireHttps: true }))).reason).toBe('insecure');
    expect((await refusal(assertOutboundUrl('not a url', policy, { requireHttps: false }))).reason).toBe('invalid_url');
  });

  test('localhost is refused (by name, and what it resolves to is loopback anyway)', async () => {
    verifies('OUTBOUND-SSRF');
    const real = parseOutboundPolicy({ allowHosts: [] });
    expect((await refusal(assertOutboundUrl('http://localhost:1/', real, { requireHttps: false }))).reason).toBe('forbidden_address');
    const resolved = await lookup('localhost', { all: true });
    expect(resolved.length).toBeGreaterThan(0);
    expect(resolved.every((a) => isForbiddenAddress(a.address))).toBe(true);
    // Names not special-cased are judged by what DNS says.
    const dns = parseOutboundPolicy({ allowHosts: [], resolve: fakeDns({ 'box.internal': ['127.0.0.1'] }) });
    expect((await refusal(assertOutboundUrl('http://box.internal/', dns, { requireHttps: false }))).reason).toBe('forbidden_address');
  });

  test('a name is refused if ANY of its addresses is forbidden', async () => {
    verifies('OUTBOUND-SSRF');
    const dns = parseOutboundPolicy({
      allowHosts: [],
      resolve: fakeDns({
        'mixed.example': ['93.184.216.34', '10.0.0.5'],
        'mapped.example': ['::ffff:169.254.169.254'],
        'good.example': ['93.184.216.34', '2606:4700:4700::1111'],
      }),
    });
    expect((await refusal(assertOutboundUrl('https://mixed.example/', dns, { requireHttps: true }))).reason).toBe('forbidden_address');
    expect((await refusal(assertOutboundUrl('https://mapped.example/', dns, { requireHttps: true }))).reason).toBe('forbidden_address');
    expect((await assertOutboundUrl('https://good.example./x', dns, { requireHttps: true })).pathname).toBe('/x');
    expect((await refusal(assertOutboundUrl('https://nxdomain.example/', dns, { requireHttps: true }))).reason).toBe('unresolvable');
  });

  test('allow-listed host:port is accepted, over http, in any spelling; other ports are not', async () => {
    verifies('OUTBOUND-SSRF');
    const p = parseOutboundPolicy({ allowHosts: ['127.0.0.1:8443', 'idp.local'], resolve: noDns });
    await assertOutboundUrl('http://127.0.0.1:8443/jwks', p, { requireHttps: true });
    await assertOutboundUrl('http://2130706433:8443/jwks', p, { requireHttps: true });
    await assertOutboundUrl('http://IDP.local.:9000/', p, { requireHttps: true });
    expect((await refusal(assertOutboundUrl('http://127.0.0.1:8444/', p, { requireHttps: false }))).reason).toBe('forbidden_address');
    expect((await refusal(assertOutboundUrl('http://127.0.0.1:8444/', p, { requireHttps: true }))).reason).toBe('insecure');
  });
});

describe('safeFetch against a local server', () => {
  let server: ReturnType<typeof Bun.serve>;
  let policy: ReturnType<typeof parseOutboundPolicy>;
  let base: string;
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === '/ok') return Response.json({ ok: true });
        if (path === '/redirect') return Response.redirect('http://169.254.169.254/latest/meta-data/', 302);
        if (path === '/hang') return new Promise<Response>(() => {});
        if (path === '/big') return new Response('x'.repeat(64 * 1024));
        if (path === '/big-stream') {
          // No content-length: the cap must be enforced while reading.
          let sent = 0;
          return new Response(
            new ReadableStream({
              pull(c) {
                if (sent >= 64) return c.close();
                sent++;
                c.enqueue(new Uint8Array(1024).fill(120));
              },
            }),
          );
        }
        if (path === '/stall') {
          return new Response(
            new ReadableStream({
              start(c) {
                c.enqueue(new TextEncoder().encode('{"partial":'));
              },
            }),
          );
        }
        return new Response('not found', { status: 404 });
      },
    });
    base = `http://127.0.0.1:${server.port}`;
    policy = parseOutboundPolicy({ allowHosts: [`127.0.0.1:${server.port}`], resolve: noDns });
  });
  afterAll(() => server.stop(true));

  const opts = { requireHttps: true, timeoutMs: 300, maxBytes: 4096 };

  test('returns a buffered response from an allow-listed host', async () => {
    const res = await safeFetch(`${base}/ok`, {}, policy, opts);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  test('refuses a non-allow-listed loopback before connecting', async () => {
    verifies('OUTBOUND-SSRF');
    const other = parseOutboundPolicy({ allowHosts: [], resolve: noDns });
    expect((await refusal(safeFetch(`${base}/ok`, {}, other, { ...opts, requireHttps: false }))).reason).toBe('forbidden_address');
  });

  test('refuses a redirect instead of following it', async () => {
    verifies('OUTBOUND-REDIRECT');
    const err = await refusal(safeFetch(`${base}/redirect`, { redirect: 'follow' }, policy, opts));
    expect(err.reason).toBe('redirect');
  });

  test('times out fast on a hanging server', async () => {
    verifies('OUTBOUND-TIMEOUT-SIZE');
    const started = performance.now();
    const err = await safeFetch(`${base}/hang`, {}, policy, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundFetchError);
    expect((err as OutboundFetchError).reason).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(1500);
  });

  test('times out on a body that stalls', async () => {
    verifies('OUTBOUND-TIMEOUT-SIZE');
    const started = performance.now();
    const err = await safeFetch(`${base}/stall`, {}, policy, opts).catch((e: unknown) => e);
    expect((err as OutboundFetchError).reason).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(1500);
  });

  test('refuses a body larger than maxBytes, declared or streamed', async () => {
    verifies('OUTBOUND-TIMEOUT-SIZE');
    expect((await refusal(safeFetch(`${base}/big`, {}, policy, opts))).reason).toBe('too_large');
    expect((await refusal(safeFetch(`${base}/big-stream`, {}, policy, opts))).reason).toBe('too_large');
  });

  test('reports a closed port as a network failure', async () => {
    const dead = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
    const port = dead.port;
    dead.stop(true);
    const p = parseOutboundPolicy({ allowHosts: [`127.0.0.1:${port}`], resolve: noDns });
    const err = await safeFetch(`http://127.0.0.1:${port}/`, {}, p, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundFetchError);
    expect((err as OutboundFetchError).reason).toBe('network');
  });
});
