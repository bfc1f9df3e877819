/**
 * The settings console at /console, in route groups: the page and its assets (here), sign-in (sign-in.ts), the
 * session and the playground (session-routes.ts); the page's REST calls go to /api/* with the session as their
 * credential (context.ts sessionPrincipal). The shared checks (Host, Origin), the refusal audit and
 * the error mapping are the HTTP pipeline's: src/http/router.ts mounts this on its app.
 */
import type { AppDeps } from '../deps.ts';
import { describeError } from '../util/log.ts';
import { CONSOLE_PAGE, consoleAssets, landingPage } from './assets.ts';
import { consoleContext, type ConsoleContext } from './context.ts';
import { errorReply, respond } from './replies.ts';
import { finishIdpSignIn, signInWithClient, startIdpSignIn } from './sign-in.ts';
import { playground, sessionInfo, signOut } from './session-routes.ts';
import { signInWithPassword } from './member-sign-in.ts';

/** The console's error answer (JSON, with the console's security headers), for the pipeline's refusals too. */
export const consoleErrorReply = (status: number, error: string, message: string): Response => errorReply(status, error, message);

async function serveAsset(ctx: ConsoleContext, name: string): Promise<Response> {
  let assets: Map<string, { body: Uint8Array<ArrayBuffer>; type: string; etag: string }>;
  try {
    assets = await consoleAssets();
  } catch (err) {
    ctx.deps.log.error('console bundle unavailable', { error: describeError(err) });
    return errorReply(503, 'console_unavailable', 'The console assets are missing on this instance (run npm run gen).');
  }
  const found = Object.hasOwn(Object.fromEntries(assets), name) ? assets.get(name) : undefined;
  if (!found) return errorReply(404, 'not_found', 'No such asset.');
  return respond(found.body, 200, { 'content-type': found.type, etag: found.etag, 'cache-control': 'no-cache' });
}

type Route = (ctx: ConsoleContext, request: Request, url: URL) => Promise<Response> | Response;

/** The routes at an exact method and path. */
const ROUTES: Record<string, Route> = {
  'GET /': (ctx) => respond(landingPage(ctx.deps.config.publicUrl), 200, { 'content-type': 'text/html; charset=utf-8' }),
  'GET /console': () => respond(CONSOLE_PAGE, 200, { 'content-type': 'text/html; charset=utf-8' }),
  'GET /console/': () => respond(CONSOLE_PAGE, 200, { 'content-type': 'text/html; charset=utf-8' }),
  'GET /console/session': (ctx, request) => sessionInfo(ctx, request),
  'POST /console/auth/logout': (ctx, request) => signOut(ctx, request),
  'POST /console/playground': (ctx, request, url) => playground(ctx, request, url),
  'POST /console/auth/client': (ctx, request) => signInWithClient(ctx, request),
  'POST /console/auth/password': (ctx, request) => signInWithPassword(ctx, request),
  'GET /console/auth/idp': (ctx, _request, url) => startIdpSignIn(ctx, url),
  'GET /console/auth/callback': (ctx, request, url) => finishIdpSignIn(ctx, request, url),
};

const ASSETS_PREFIX = '/console/assets/';

/**
 * The console's routes for the requests that passed the pipeline's door; an error thrown here is the pipeline's to
 * answer (a Refusal audited, anything else a 500).
 */
export function consoleServer(deps: AppDeps, forward: (request: Request) => Promise<Response>): (request: Request, url: URL) => Promise<Response> {
  const ctx = consoleContext(deps, forward);
  return async (request, url) => {
    const path = url.pathname;
    if (request.method === 'GET' && path.startsWith(ASSETS_PREFIX)) return serveAsset(ctx, path.slice(ASSETS_PREFIX.length));
    const route = Object.hasOwn(ROUTES, `${request.method} ${path}`) ? ROUTES[`${request.method} ${path}`] : undefined;
    return route ? route(ctx, request, url) : errorReply(404, 'not_found', 'No such route.');
  };
}
