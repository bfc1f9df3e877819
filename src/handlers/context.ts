/** What a handler receives: the request after the router's authentication and validation, and the container. */
import type { Principal } from '../principal.ts';
import type { AppDeps } from '../deps.ts';
import type { OperationId } from '../../generated/operations.ts';

export interface RequestContext<Body = unknown> {
  request: Request;
  url: URL;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: Body;
  /** Null only for operations whose access policy authenticates no caller at the router (public; see http/router.ts). */
  principal: Principal | null;
  deps: AppDeps;
}

export type Handler = (ctx: RequestContext<any>) => Promise<Response> | Response;
export type HandlerTable = Record<OperationId, Handler>;
