/**
 * A real OpenID provider for console sign-in tests: panva's oidc-provider (a certified implementation) on 127.0.0.1,
 * with its development login form (any login name, any password), PKCE required, and JWT access tokens for the
 * gateway's audience (resource indicators), carrying the user's role and e-mail as an IdP would.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface TestUser {
  email: string;
  role: string;
}

export interface TestOidc {
  issuer: string;
  jwksUri: string;
  hostPort: string;
  clientId: string;
  clientSecret: string;
  audience: string;
  /** Accounts by login name (what the user types on the provider's login form). */
  users: Record<string, TestUser>;
  stop(): Promise<void>;
}

export async function startOidcProvider(redirectUri: string | string[], users: Record<string, TestUser>): Promise<TestOidc> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const audience = 'https://toolgate.test/api';
  const clientId = 'toolgate-console';
  const clientSecret = 'console-secret-0123456789abcdef0123456789';
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'console-test', alg: 'RS256', use: 'sig' };
  const claimsOf = (accountId: string) => {
    const user = users[accountId];
    return user ? { email: user.email, email_verified: true, role: user.role } : {};
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: Array.isArray(redirectUri) ? redirectUri : [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk as never] },
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['role'] },
    conformIdTokenClaims: false,
    ttl: { AccessToken: 3600, IdToken: 3600, Interaction: 600, Grant: 3600, Session: 3600, AuthorizationCode: 60 },
    findAccount: async (_ctx: unknown, accountId: string) => ({ accountId, claims: async () => ({ sub: accountId, ...claimsOf(accountId) }) }),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'openid', audience, accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg: 'RS256' } } }),
      },
    },
    extraTokenClaims: async (_ctx: unknown, token: any) => ('accountId' in token && token.accountId ? claimsOf(token.accountId as string) : {}),
    // Consent is given: the test is about the relying party, not the provider's consent screen.
    loadExistingGrant: async (ctx: any) => {
      const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email profile');
      grant.addResourceScope(audience, 'openid');
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    hostPort: `127.0.0.1:${port}`,
    clientId,
    clientSecret,
    audience,
    users,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
