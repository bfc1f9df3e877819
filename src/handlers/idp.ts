/** The org's own identity provider (BYOIDP): get, set, delete. */
import { actorOf } from '../principal.ts';
import * as idp from '../auth/idp/service.ts';
import { json } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import { idpConfigView } from './views.ts';
import type { IdpConfigInput } from '../../generated/client/types.gen.ts';

export const getIdpConfig: Handler = async ({ principal, deps }) => json(idpConfigView(await idp.getIdpConfig(deps, principal!.orgId)));

export const setIdpConfig: Handler = async ({ principal, deps, body }: RequestContext<IdpConfigInput>) => {
  const input = {
    issuer: body.issuer,
    jwksUri: body.jwks_uri,
    audience: body.audience,
    roleClaim: body.role_claim,
    emailClaim: body.email_claim,
    defaultRole: body.default_role,
    consoleClientId: body.console_client_id,
    consoleClientSecret: body.console_client_secret,
  };
  return json(idpConfigView(await idp.setIdpConfig(deps, principal!.orgId, input, actorOf(principal))));
};

export const deleteIdpConfig: Handler = async ({ principal, deps }) => {
  await idp.deleteIdpConfig(deps, principal!.orgId, actorOf(principal));
  return json({ deleted: true });
};
