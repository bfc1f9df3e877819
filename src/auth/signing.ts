/** The gateway's own access tokens: ES256 keys kept sealed in the store, published as a JWKS, rotation-ready. */
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../store/db.ts';
import { activeSigningKeys, insertSigningKey, withFirstSigningKeyLock } from './repository.ts';
import type { SecretBox } from '../util/crypto.ts';

export const TOKEN_AUDIENCE = 'toolgate';
const ALG = 'ES256';
/** How often an unknown kid may trigger a reload of keys from the store (another instance may have rotated). */
const RELOAD_COOLDOWN_MS = 5_000;

export interface AccessTokenClaims extends JWTPayload {
  /** Org id. */
  tg_org: string;
  /** OAuth client_id (a member's token: `member:<id>`). */
  sub: string;
  scope: string;
  /** A member's token (the console's session): the member id, whose status is read on every request. */
  tg_member?: string;
}

/** A token a person signed in for (auth/oauth-server): issued by the org's authorization server for its MCP URL. */
export interface SignedInClaims extends JWTPayload {
  tg_org: string;
  /** The grant (one consent): checked in the store on every request, so revoking it ends the token at once. */
  tg_grant: string;
  /** The person (the IdP subject). */
  sub: string;
  client_id: string;
  scope: string;
}

export class TokenSigner {
  private signingKey: { kid: string; key: CryptoKey } | null = null;
  private verifyKeys: ReturnType<typeof createLocalJWKSet> | null = null;
  private publicJwks: { keys: JWK[] } = { keys: [] };
  private lastReload = 0;

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
    readonly issuer: string,
  ) {}

  /** Loads the keys, creating the first one when the store has none. */
  async init(): Promise<void> {
    await this.reload();
    if (!this.signingKey) {
      // Instances starting together on an empty store must agree on one first key (else each signs with its
      // own and, within the reload cooldown, refuses the other's tokens): create it under a lock, re-checking.
      await withFirstSigningKeyLock(this.db, (tx) => this.insertKey(tx));
      await this.reload();
    }
  }

  /** Creates a new signing key; older keys keep verifying tokens until retired. */
  async rotate(): Promise<string> {
    const kid = await this.insertKey(this.db);
    await this.reload();
    return kid;
  }

  private async insertKey(db: Queryable): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = randomUUID();
    const privateJwk = await exportJWK(privateKey);
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    await insertSigningKey(db, {
      kid,
      alg: ALG,
      privateKeySealed: this.box.encrypt(JSON.stringify(privateJwk), `signing_key:${kid}`),
      publicJwk,
    });
    return kid;
  }

  private async reload(): Promise<void> {
    const rows = await activeSigningKeys(this.db);
    const newest = rows[0];
    if (newest) {
      const jwk = JSON.parse(this.box.decrypt(newest.privateKeySealed, `signing_key:${newest.kid}`)) as JWK;
      this.signingKey = { kid: newest.kid, key: (await importJWK(jwk, ALG)) as CryptoKey };
    }
    this.publicJwks = { keys: rows.map((r) => r.publicJwk as JWK) };
    this.verifyKeys = createLocalJWKSet(this.publicJwks);
    this.lastReload = Date.now();
  }

  jwks(): { keys: JWK[] } {
    return this.publicJwks;
  }

  async issue(input: { orgId: string; clientId: string; scopes: string[]; ttlSeconds: number; memberId?: string }): Promise<string> {
    if (!this.signingKey) throw new Error('token signer is not initialised');
    return new SignJWT({ tg_org: input.orgId, scope: input.scopes.join(' '), ...(input.memberId ? { tg_member: input.memberId } : {}) })
      .setProtectedHeader({ alg: ALG, kid: this.signingKey.kid, typ: 'at+jwt' })
      .setIssuer(this.issuer)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(input.clientId)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${input.ttlSeconds}s`)
      .sign(this.signingKey.key);
  }

  /** A signed-in person's access token (RFC 9068 profile): the org's issuer, its MCP URL as the audience. */
  async issueSignedIn(input: {
    issuer: string;
    audience: string;
    orgId: string;
    grantId: string;
    subject: string;
    clientId: string;
    scopes: string[];
    ttlSeconds: number;
  }): Promise<string> {
    if (!this.signingKey) throw new Error('token signer is not initialised');
    return new SignJWT({ tg_org: input.orgId, tg_grant: input.grantId, client_id: input.clientId, scope: input.scopes.join(' ') })
      .setProtectedHeader({ alg: ALG, kid: this.signingKey.kid, typ: 'at+jwt' })
      .setIssuer(input.issuer)
      .setAudience(input.audience)
      .setSubject(input.subject)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${input.ttlSeconds}s`)
      .sign(this.signingKey.key);
  }

  /** Verifies a gateway token: ES256 only, our issuer and audience, `exp` required. Throws on any failure. */
  async verify(token: string): Promise<AccessTokenClaims> {
    const payload = await this.verifyWithReload(token, this.issuer, TOKEN_AUDIENCE, ['exp', 'iat', 'sub', 'tg_org']);
    if (typeof payload.tg_org !== 'string' || typeof payload.scope !== 'string') throw new Error('malformed claims');
    return payload as AccessTokenClaims;
  }

  /** Verifies a signed-in person's token for exactly this issuer and audience (one org's). Throws on any failure. */
  async verifySignedIn(token: string, issuer: string, audience: string): Promise<SignedInClaims> {
    const payload = await this.verifyWithReload(token, issuer, audience, ['exp', 'iat', 'sub', 'tg_org', 'tg_grant', 'client_id']);
    for (const claim of ['tg_org', 'tg_grant', 'client_id', 'scope', 'sub'] as const) {
      if (typeof payload[claim] !== 'string') throw new Error('malformed claims');
    }
    return payload as SignedInClaims;
  }

  private async verifyWithReload(token: string, issuer: string, audience: string, requiredClaims: string[]): Promise<JWTPayload> {
    try {
      return await this.verifyOnce(token, issuer, audience, requiredClaims);
    } catch (err) {
      // A kid minted by another instance after our last load: reload once per cooldown, then retry.
      if ((err as { code?: string }).code === 'ERR_JWKS_NO_MATCHING_KEY' && Date.now() - this.lastReload > RELOAD_COOLDOWN_MS) {
        await this.reload();
        return this.verifyOnce(token, issuer, audience, requiredClaims);
      }
      throw err;
    }
  }

  private async verifyOnce(token: string, issuer: string, audience: string, requiredClaims: string[]): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, this.verifyKeys!, { algorithms: [ALG], issuer, audience, requiredClaims, typ: 'at+jwt' });
    return payload;
  }
}
