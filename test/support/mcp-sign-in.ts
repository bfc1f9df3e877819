/**
 * Parts for MCP sign-in tests (issue 29): a private test CA and an https server for client ID metadata documents
 * signed by it (the gateway is told to trust the CA, as an operator would), and an in-memory OAuth client provider
 * for the official v2 SDK client.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthClientProvider, OAuthDiscoveryState, OAuthTokens } from '@modelcontextprotocol/client';

export const opensslPresent = spawnSync('openssl', ['version']).status === 0;

export interface TestCa {
  caFile: string;
  cert: string;
  key: string;
}

/** A CA made for this run and a server certificate for `hostname`, signed by it. */
export function makeTestCa(hostname: string): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'tg-ca-'));
  const run = (args: string[]) => {
    const result = spawnSync('openssl', args, { cwd: dir });
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=Toolgate Test CA']);
  run(['req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${hostname}`]);
  writeFileSync(join(dir, 'leaf.ext'), `subjectAltName=DNS:${hostname}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '1', '-extfile', 'leaf.ext']);
  return { caFile: join(dir, 'ca.pem'), cert: readFileSync(join(dir, 'leaf.pem'), 'utf8'), key: readFileSync(join(dir, 'leaf.key'), 'utf8') };
}

export interface MetadataServer {
  port: number;
  /** Fetches of each path so far (the cache test counts them). */
  hits: Map<string, number>;
  url(path: string): string;
  stop(): void;
}

/**
 * An https server of client metadata documents at `https://{hostname}:{port}/...`: /agent.json (a good one, cached a
 * minute), /big.json (larger than the gateway's cap), /slow.json (answers after 6 s); `redirectsByPath` gives other
 * paths their own redirect_uris.
 */
export function startMetadataServer(ca: TestCa, hostname: string, redirectUri: string, redirectsByPath: Record<string, string[]> = {}): MetadataServer {
  const hits = new Map<string, number>();
  let port = 0;
  const base = (): string => `https://${hostname}:${port}`;
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    tls: { cert: ca.cert, key: ca.key },
    fetch: async (request): Promise<Response> => {
      const path = new URL(request.url).pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const doc = {
        client_id: `${base()}${path}`,
        client_name: 'Test Agent <b>',
        redirect_uris: redirectsByPath[path] ?? [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
      if (path === '/big.json') return Response.json({ ...doc, padding: 'x'.repeat(20_000) });
      if (path === '/slow.json') await Bun.sleep(6000);
      return Response.json(doc, { headers: { 'cache-control': 'max-age=60' } });
    },
  });
  port = server.port!;
  return { port, hits, url: (path) => `${base()}${path}`, stop: () => server.stop(true) };
}

/** The client side of one agent: what a real client keeps between the redirect and the callback. */
export class TestAuthProvider implements OAuthClientProvider {
  authorizationUrl: URL | null = null;
  private verifier = '';
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private discovery: OAuthDiscoveryState | undefined;

  constructor(
    private readonly redirect: string,
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Agent',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}
