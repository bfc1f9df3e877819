// DNS-rebinding defence (docs/decisions/0050-host-check.md): which Host names the gateway answers to on every
// route but /healthz, and which browser Origins may call the MCP endpoint, in every spelling a client can send.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import { ConfigError, loadConfig } from '../src/config.ts';
import { hostPolicyFor } from '../src/net/host-policy.ts';
import { verifies } from './requirements.ts';
import { BASE, OPERATOR_TOKEN, onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';
import { rpc } from './support/mcp.ts';

/** The port the unit cases assume (nothing listens on it): the default public URL is http://localhost:PORT, as with `npm start`. */
const PORT = 3841;

const policy = (env: Record<string, string>) => hostPolicyFor(loadConfig(env));
const withHost = (host: string) => new Request('http://unused.test/', { headers: { host } });

describe('Host names (unit)', () => {
  test('a loopback public URL answers to localhost, 127.0.0.1 and [::1] in any spelling and on any port; nothing else', () => {
    verifies('HTTP-HOST');
    const p = policy({ PORT: String(PORT) });
    const accepted = [
      `localhost:${PORT}`,
      'localhost',
      'LOCALHOST:3841',
      'LocalHost',
      'localhost.',
      `localhost.:${PORT}`,
      `127.0.0.1:${PORT}`,
      '127.0.0.1',
      '127.0.0.1.',
      '127.1',
      `0x7f.1:${PORT}`,
      '0177.0.0.1',
      '2130706433',
      `[::1]:${PORT}`,
      '[::1]',
      '[0:0:0:0:0:0:0:1]',
      '[0::1]:80',
      // The port plays no part: a rebinding page can only use the port the gateway really listens on.
      'localhost:9999',
      '127.0.0.1:1',
    ];
    const refused = [
      'evil.example',
      `evil.example:${PORT}`,
      'localhost..',
      '.localhost',
      'sub.localhost',
      'localhost.evil.example',
      'localhost-evil.example',
      '127.0.0.2',
      '127.0.1.1',
      '0.0.0.0',
      '[::]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '::1',
      '[::1',
      'evil.example@localhost',
      'localhost@evil.example',
      'localhost/x',
      'localhost\\x',
      'localhost?x',
      'localhost#x',
      'local host',
      'localhost:99999',
      'localhost:x',
      '',
      'gateway.test',
    ];
    expect(accepted.filter((h) => !p.hostAllowed(withHost(h)))).toEqual([]);
    expect(refused.filter((h) => p.hostAllowed(withHost(h)))).toEqual([]);
  });

  test('a public URL with a DNS name answers to that name, the loopback names (CLI, local probes) and TOOLGATE_ALLOWED_HOSTS', () => {
    verifies('HTTP-HOST');
    const p = policy({ TOOLGATE_PUBLIC_URL: 'https://Gateway.Example.com', TOOLGATE_ALLOWED_HOSTS: 'toolgate.internal, 10.0.0.5,[FD00::1],Upper.Example.' });
    const accepted = [
      'gateway.example.com',
      'GATEWAY.EXAMPLE.COM:443',
      'gateway.example.com.',
      'toolgate.internal:8080',
      '10.0.0.5',
      '[fd00::1]:8080',
      'upper.example',
      'localhost:8080',
      '127.0.0.1:8080',
      '[::1]',
    ];
    const refused = ['sub.localhost', '127.0.0.2', 'example.com', 'evil.gateway.example.com', 'gateway.example.com.evil.example', '10.0.0.6', '[fd00::2]'];
    expect(accepted.filter((h) => !p.hostAllowed(withHost(h)))).toEqual([]);
    expect(refused.filter((h) => p.hostAllowed(withHost(h)))).toEqual([]);
  });

  test('TOOLGATE_ALLOWED_HOSTS=* answers to any well-formed Host; a request without Host is judged by its URL', () => {
    verifies('HTTP-HOST');
    const any = policy({ TOOLGATE_PUBLIC_URL: 'https://gateway.example.com', TOOLGATE_ALLOWED_HOSTS: '*' });
    expect(['evil.example', '192.0.2.1:80', '[2001:db8::1]'].every((h) => any.hostAllowed(withHost(h)))).toBe(true);
    expect(any.hostAllowed(withHost('a@b'))).toBe(false);
    const p = policy({ TOOLGATE_PUBLIC_URL: 'https://gateway.example.com' });
    expect(p.hostAllowed(new Request('https://gateway.example.com/x'))).toBe(true);
    expect(p.hostAllowed(new Request('http://evil.example/x'))).toBe(false);
  });
});

describe('Origins (unit)', () => {
  test('a loopback public URL accepts the loopback spellings of its own scheme and port; everything else is refused', () => {
    verifies('MCP-ORIGIN');
    const p = policy({ PORT: String(PORT), TOOLGATE_ALLOWED_ORIGINS: 'https://app.example.com, chrome-extension://abcdef' });
    const accepted = [
      null,
      `http://localhost:${PORT}`,
      `http://127.0.0.1:${PORT}`,
      `http://[::1]:${PORT}`,
      `HTTP://LOCALHOST:${PORT}`,
      `http://localhost.:${PORT}`,
      `http://127.1:${PORT}`,
      `http://0x7f.1:${PORT}`,
      `http://[0:0:0:0:0:0:0:1]:${PORT}`,
      'https://app.example.com',
      'https://APP.example.com:443',
      'chrome-extension://abcdef',
    ];
    const refused = [
      'null',
      '',
      `http://localhost:${PORT + 1}`,
      `http://127.0.0.1:${PORT + 1}`,
      'http://[::1]',
      'http://localhost',
      `https://localhost:${PORT}`,
      `https://127.0.0.1:${PORT}`,
      `http://127.0.0.2:${PORT}`,
      `http://[::ffff:127.0.0.1]:${PORT}`,
      `http://sub.localhost:${PORT}`,
      `http://localhost..:${PORT}`,
      `http://evil.example:${PORT}`,
      `http://localhost:${PORT}/`,
      `http://localhost:${PORT}/path`,
      `http://evil.example@localhost:${PORT}`,
      `localhost:${PORT}`,
      `//localhost:${PORT}`,
      'http://app.example.com',
      'https://app.example.com:8443',
      'chrome-extension://other',
    ];
    expect(accepted.filter((o) => !p.originAllowed(o))).toEqual([]);
    expect(refused.filter((o) => p.originAllowed(o))).toEqual([]);
  });

  test('a public URL with a DNS name has no loopback aliases', () => {
    verifies('MCP-ORIGIN');
    const p = policy({ TOOLGATE_PUBLIC_URL: 'https://gateway.example.com' });
    expect(['https://gateway.example.com', 'https://gateway.example.com:443', 'https://gateway.example.com.'].every((o) => p.originAllowed(o))).toBe(true);
    expect(
      ['http://localhost', 'https://localhost', 'https://127.0.0.1', 'http://gateway.example.com', 'https://gateway.example.com:8443'].some((o) =>
        p.originAllowed(o),
      ),
    ).toBe(false);
  });
});

describe('configuration', () => {
  test('a malformed TOOLGATE_ALLOWED_HOSTS or TOOLGATE_ALLOWED_ORIGINS entry stops start-up naming the variable', () => {
    for (const hosts of ['example.com:8080', 'http://example.com', '::1', '[::1]:80', 'exa mple.com', 'a/b', 'user@example.com']) {
      expect(() => loadConfig({ TOOLGATE_ALLOWED_HOSTS: hosts })).toThrow(ConfigError);
      expect(() => loadConfig({ TOOLGATE_ALLOWED_HOSTS: hosts })).toThrow(/^TOOLGATE_ALLOWED_HOSTS: /);
    }
    for (const origins of ['null', 'example.com', 'https://example.com/', 'https://example.com/app', 'https://user@example.com']) {
      expect(() => loadConfig({ TOOLGATE_ALLOWED_ORIGINS: origins })).toThrow(/^TOOLGATE_ALLOWED_ORIGINS: /);
    }
    expect(loadConfig({ TOOLGATE_ALLOWED_HOSTS: 'A.Example., [FD00:0::1], 10.0.0.5, *' }).allowedHosts).toEqual(['a.example', '[fd00::1]', '10.0.0.5', '*']);
    expect(loadConfig({ TOOLGATE_ALLOWED_ORIGINS: 'HTTPS://App.Example.com:443' }).allowedOrigins).toEqual(['https://app.example.com']);
  });
});

/** One raw HTTP/1.1 exchange, so the Host and Origin headers reach the server exactly as written. */
function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
    const lines = Object.entries({ ...headers, connection: 'close', 'content-length': String(Buffer.byteLength(body)) }).map(([k, v]) => `${k}: ${v}`);
    socket.write(`${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}

describe('through the app', () => {
  let g: TestGateway;
  let org: Onboarded;

  beforeAll(async () => {
    g = await startTestGateway();
    org = await onboard(g);
  }, 60_000);
  afterAll(async () => {
    await g?.close();
  }, 30_000);

  const send = (path: string, host: string, init: RequestInit = {}) =>
    g.handle(new Request(`${BASE}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), host } }));

  test('every route but /healthz refuses a foreign Host with 403 forbidden_host, before authentication or any work', async () => {
    verifies('HTTP-HOST');
    const routes: Array<[string, RequestInit]> = [
      ['/openapi.json', {}],
      ['/docs', {}],
      ['/.well-known/jwks.json', {}],
      ['/api/org', { headers: { authorization: 'Bearer nope' } }],
      [
        '/oauth/token',
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=client_credentials&client_id=${org.clientId}&client_secret=${org.clientSecret}`,
        },
      ],
      [
        '/operator/orgs',
        {
          method: 'POST',
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ slug: 'rebound', name: 'x', plan: 'starter' }),
        },
      ],
      [
        `/mcp/${org.slug}`,
        { method: 'POST', headers: { 'x-api-key': org.apiKey, 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' },
      ],
    ];
    for (const [path, init] of routes) {
      const refused = await send(path, 'evil.example', init);
      expect([path, refused.status, await refused.json()]).toEqual([
        path,
        403,
        { error: 'forbidden_host', message: expect.stringContaining('TOOLGATE_ALLOWED_HOSTS') },
      ]);
    }
    // The token and the org were not created: the refused requests did nothing.
    const token = await send('/oauth/token', 'gateway.test', routes[4]![1]);
    expect(token.status).toBe(200);
    const again = await send('/operator/orgs', 'gateway.test', routes[5]![1]);
    expect(again.status).toBe(201);
    // With our own name (any spelling) the same requests pass.
    for (const host of ['gateway.test', 'GATEWAY.TEST.', 'gateway.test:8080']) {
      expect((await send('/openapi.json', host)).status).toBe(200);
      expect((await send(`/mcp/${org.slug}`, host, routes[6]![1])).status).toBe(200);
    }
    // Liveness probes reach an instance by its address: /healthz answers whatever the Host.
    expect((await send('/healthz', '10.1.2.3:8080')).status).toBe(200);
  });

  test('the Origin check still runs after the Host check on the MCP endpoint', async () => {
    verifies('MCP-ORIGIN');
    const answer = await rpc(g, org.slug, { apiKey: org.apiKey }, 'ping', undefined, { origin: 'http://evil.example' });
    expect([answer.status, answer.body.error]).toEqual([403, 'forbidden_origin']);
    expect((await rpc(g, org.slug, { apiKey: org.apiKey }, 'ping', undefined, { origin: BASE })).status).toBe(200);
  });
});

describe('over real HTTP with the default public URL (http://localhost:PORT)', () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let org: Onboarded;
  /** An ephemeral port: the server listens first (delegating to the gateway once it exists), so no fixed port. */
  let port = 0;

  beforeAll(async () => {
    // No TOOLGATE_PUBLIC_URL: the `npm start` default, http://localhost:PORT (gateway.test: onboard() below uses it).
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
    port = server.port!;
    g = await startTestGateway('pglite', { PORT: String(port), TOOLGATE_PUBLIC_URL: '', TOOLGATE_ALLOWED_HOSTS: 'gateway.test' });
    expect(g.config.publicUrl).toBe(`http://localhost:${port}`);
    org = await onboard(g);
  }, 60_000);
  afterAll(async () => {
    server?.stop(true);
    await g?.close();
  }, 30_000);

  const ping = (headers: Record<string, string>) =>
    rawRequest(
      port,
      'POST',
      `/mcp/${org.slug}`,
      { 'x-api-key': org.apiKey, 'content-type': 'application/json', ...headers },
      '{"jsonrpc":"2.0","id":7,"method":"ping"}',
    );

  test('Host: the loopback spellings pass, foreign names get 403', async () => {
    verifies('HTTP-HOST');
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`, `localhost.:${port}`, `127.1:${port}`, 'localhost']) {
      const answer = await ping({ host });
      expect([host, answer.status, JSON.parse(answer.body)]).toEqual([host, 200, { jsonrpc: '2.0', id: 7, result: {} }]);
    }
    for (const host of [`evil.example:${port}`, `sub.localhost:${port}`, `127.0.0.2:${port}`, `[::ffff:127.0.0.1]:${port}`]) {
      const answer = await ping({ host });
      expect([host, answer.status, JSON.parse(answer.body).error]).toEqual([host, 403, 'forbidden_host']);
    }
  });

  test('Origin: pages on the loopback spellings of the same port pass (the conformance "valid localhost" case); other ports and names get 403', async () => {
    verifies('MCP-ORIGIN');
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`]) {
      const answer = await ping({ host: `127.0.0.1:${port}`, origin });
      expect([origin, answer.status]).toEqual([origin, 200]);
    }
    for (const origin of [`http://localhost:${port + 1}`, `http://127.0.0.1:${port + 1}`, `http://[::1]:${port + 1}`, `http://evil.example:${port}`, 'null']) {
      const answer = await ping({ host: `127.0.0.1:${port}`, origin });
      expect([origin, answer.status, JSON.parse(answer.body).error]).toEqual([origin, 403, 'forbidden_origin']);
    }
  });
});
