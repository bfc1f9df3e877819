/** Who is calling, and the role ordering that decides what each policy admits. */

const ROLES = ['contributor', 'admin', 'finance'] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  orgId: string;
  kind: 'api_key' | 'oauth_client' | 'idp_user' | 'operator';
  /** API key id, OAuth client_id, or the IdP subject. */
  actorId: string;
  email: string | null;
  /** Roles of an IdP user; empty for machine credentials. */
  roles: Role[];
  /** Client-credentials tokens with the management scope act at org level (every role check passes). */
  orgLevel: boolean;
  /** Connectors whose tools the credential may call; null means every connector. */
  connectorIds: string[] | null;
  /**
   * What row filters bind as `:caller.<name>` (connectors/shared/policy.ts): an IdP user's string, number and boolean
   * claims as text, or the attributes set on the API key / OAuth client. Unset: none.
   */
  attributes?: Readonly<Record<string, string>>;
  /**
   * A token of the org's own authorization server (MCP sign-in): a person can consent to more, so a call outside its
   * connectors is answered with a step-up challenge (decision 0248).
   */
  signedIn?: true;
}

/**
 * Role ordering (docs/decisions/0020-role-ordering.md): admin includes contributor and finance;
 * contributor and finance are separate duties and do not include each other.
 */
const ADMITS: Record<Role, readonly Role[]> = {
  contributor: ['contributor', 'admin'],
  finance: ['finance', 'admin'],
  admin: ['admin'],
};

export function roleSatisfies(roles: readonly Role[], required: Role): boolean {
  return roles.some((role) => ADMITS[required].includes(role));
}

export function actorOf(principal: Principal | null): { type: 'api_key' | 'oauth_client' | 'user' | 'operator' | 'anonymous'; id: string | null } {
  if (!principal) return { type: 'anonymous', id: null };
  const type = principal.kind === 'idp_user' ? 'user' : principal.kind;
  return { type, id: principal.kind === 'idp_user' ? (principal.email ?? principal.actorId) : principal.actorId };
}
