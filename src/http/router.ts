/**
 * Binds every operation of the contract to exactly one handler on Elysia, through the HTTP pipeline
 * (pipeline/pipeline.ts): door checks, authentication and validation before the handler, error mapping and the
 * refusal audit after it. The REST operations (the console's own among them, tag `console`) and the MCP transport are
 * mounted as sub-apps: one route table, the contract's.
 */
import { Elysia } from 'elysia';
import { operations, type OperationDef, type OperationId } from '../../generated/operations.ts';
import * as validators from '../../generated/validators/rest.ts';
import { roleSatisfies, type Principal, type Role } from '../principal.ts';
import { AppError, forbidden, json, OAuthError } from '../errors.ts';
import { describeError } from '../util/log.ts';
import { describeSchemaError, type SchemaError } from '../util/schema-errors.ts';
import { decodeUtf8, parseJson, readBodyCapped } from '../util/body.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler, HandlerTable, RequestContext } from '../handlers/context.ts';
import { bearerToken } from '../net/bearer.ts';
import { fromSession, sessionAnswer, sessionBearer, sessionPrincipal } from '../console/context.ts';
import { answerFailure, checkDoor, restRefusal, stampRequestId, withDoorHeaders, type Door } from '../pipeline/pipeline.ts';
import { enterMcp } from '../pipeline/mcp.ts';
import { versionRefusal } from '../mcp/doorway.ts';
import { noteCaller, requestAnswered, requestIdOf } from '../observability/requests.ts';
import { inRequestSpan } from '../observability/tracing.ts';
import { takeRestCall, type RestLimitDeps } from '../limits/rest.ts';
import { findOrgById } from '../orgs/repository.ts';
import { limitedAttempt, refusalMessage } from '../limits/auth-failures.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { countLimitRefusal, observeHttp } from '../observability/metrics.ts';

/** Liveness and readiness probes reach an instance by its pod or container address, and the answer reveals nothing. */
const HOST_CHECK_EXEMPT: ReadonlySet<OperationId> = new Set(['getHealth', 'getReady']);

const FORBIDDEN_HOST =
  'This gateway does not answer to the host name in the Host header: it answers to the host of TOOLGATE_PUBLIC_URL and the names in TOOLGATE_ALLOWED_HOSTS.';
const jsonReply: Door['reply'] = (status, error, message) => json({ error, message }, status);

/** Every answer of the console's operations: a strict CSP, no framing, no caching unless the answer says otherwise. */
const CONSOLE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

/**
 * The doors of the operations (pipeline/pipeline.ts): the probes pass every check; the MCP transport checks Origin
 * too, and so does the console (before any session, body or sign-in is looked at: navigations and same-origin GETs
 * send no Origin and pass; the CSRF token and Sec-Fetch-Site still apply after it).
 */
const DOORS = {
  probe: { hostMessage: null, originMessage: null, reply: jsonReply },
  rest: { hostMessage: FORBIDDEN_HOST, originMessage: null, reply: jsonReply },
  mcp: { hostMessage: FORBIDDEN_HOST, originMessage: 'This Origin may not call the MCP endpoint.', reply: jsonReply, check: versionRefusal },
  console: {
    hostMessage: 'This gateway does not answer to the host name in the Host header.',
    originMessage: 'This Origin may not call the console.',
    reply: jsonReply,
    headers: CONSOLE_HEADERS,
  },
} satisfies Record<string, Door>;

/**
 * The public documents and endpoints of the orgs' authorization servers that a browser-based MCP client reads or posts
 * to from its own origin (decision 0249): CORS with `*` and no credentials, and OPTIONS preflights. Never the
 * person's pages (authorize, callback, consent: top-level navigations), never /api/*, never the MCP endpoint (its
 * Origin allow-list stands) and never the gateway's own client-credentials /oauth/token (a secret has no place in a
 * page).
 */
const CORS_OPERATIONS: ReadonlySet<OperationId> = new Set([
  'getJwks',
  'getProtectedResourceMetadata',
  'getAuthorizationServerMetadata',
  'getOpenIdConfiguration',
  'getOpenIdConfigurationAppended',
  'issueMcpToken',
  'revokeMcpToken',
  'registerMcpClient',
]);
const CORS_HEADERS = { 'access-control-allow-origin': '*' };
/** What a preflight may ask for: the bodies' type, a registration's initial token, and the header MCP clients add. */
const PREFLIGHT_HEADERS = {
  ...CORS_HEADERS,
  'access-control-allow-headers': 'Authorization, Content-Type, MCP-Protocol-Version',
  'access-control-max-age': '600',
};

/** The answer with `Access-Control-Allow-Origin: *` (a response whose headers cannot be changed is copied first). */
function withCors(response: Response): Response {
  try {
    response.headers.set('access-control-allow-origin', '*');
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set('access-control-allow-origin', '*');
    return copy;
  }
}

function doorOf(op: OperationDef): Door {
  if (HOST_CHECK_EXEMPT.has(op.operationId as OperationId)) return DOORS.probe;
  if (op.auth === 'console') return DOORS.console;
  return op.auth === 'mcp' ? DOORS.mcp : DOORS.rest;
}

type Validator = ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

/** Refuses to build an app in which an operation lacks a handler or a handler lacks an operation. */
export function checkHandlerTable(defs: readonly OperationDef[], handlers: Record<string, Handler>): void {
  const ids = new Set(defs.map((d) => d.operationId));
  const missing = [...ids].filter((id) => typeof handlers[id] !== 'function');
  const extra = Object.keys(handlers).filter((id) => !ids.has(id));
  if (missing.length || extra.length) {
    throw new Error(
      `handlers do not match openapi.yaml: ${missing.length ? `no handler for ${missing.join(', ')}` : ''}${missing.length && extra.length ? '; ' : ''}${extra.length ? `no operation for ${extra.join(', ')}` : ''}`,
    );
  }
}

function validate(name: string, data: unknown, where: string, form: boolean): void {
  const fn = (validators as unknown as Record<string, Validator | undefined>)[name];
  if (!fn || fn(data)) return;
  const message = describeSchemaError(where, fn.errors?.[0]);
  if (form) throw new OAuthError(400, 'invalid_request', message);
  throw new AppError(400, 'validation_error', message);
}

function queryObject(url: URL): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    out[key] = all.length === 1 ? all[0] : all;
  }
  return out;
}

function authorize(policy: Role, principal: Principal): void {
  if (principal.orgLevel) return;
  if (!roleSatisfies(principal.roles, policy)) {
    const has = principal.roles.length ? `; the caller has ${principal.roles.join(', ')}` : ' and the caller has none';
    throw forbidden('insufficient_role', `This operation needs the ${policy} role${has}.`);
  }
}

async function readBody(op: OperationDef, request: Request, deps: AppDeps): Promise<unknown> {
  const contentType = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const form = op.bodyType === 'form';
  const expected = form ? 'application/x-www-form-urlencoded' : 'application/json';
  const bytes = await readBodyCapped(request, deps.config.maxBodyBytes);
  if (bytes.byteLength === 0) {
    if (!op.bodyRequired) return undefined;
    if (form) throw new OAuthError(400, 'invalid_request', `A ${expected} body is required.`);
    throw new AppError(400, 'validation_error', 'body is required');
  }
  if (contentType !== expected) {
    if (form) throw new OAuthError(400, 'invalid_request', `Content-Type must be ${expected}.`);
    throw new AppError(415, 'unsupported_media_type', `Content-Type must be ${expected}.`);
  }
  const text = decodeUtf8(bytes);
  if (form) return Object.fromEntries(new URLSearchParams(text));
  const parsed = parseJson(text);
  if (!parsed.ok) {
    throw new AppError(
      400,
      parsed.reason === 'depth' ? 'body_too_deep' : 'invalid_json',
      parsed.reason === 'depth' ? 'The JSON body is nested too deeply.' : 'The body is not valid JSON.',
    );
  }
  return parsed.value;
}

/** The context of an endpoint that reads its own request: `url` and `query` are parsed on first use. */
function lazyUrlContext(request: Request, params: Record<string, string>, principal: Principal | null, deps: AppDeps): RequestContext {
  let url: URL | undefined;
  let query: Record<string, unknown> | undefined;
  return {
    request,
    params,
    body: undefined,
    principal,
    deps,
    get url() {
      return (url ??= new URL(request.url));
    },
    get query() {
      return (query ??= queryObject(this.url));
    },
  };
}

/** How the router enforces an operation's access policy (x-toolgate-auth) before its handler runs. */
interface AccessPolicy {
  /**
   * The handler's context: the caller authenticated (the door's limits taken) and the request read, or the refusal
   * thrown. Synchronous where nothing needs waiting for (a public operation without a body): no await on that path.
   */
  enter(op: OperationDef, request: Request, params: Record<string, string>, deps: AppDeps): RequestContext | Promise<RequestContext>;
  /** Whether the console session is a credential here too (its answers then go through sessionAnswer). */
  session?: true;
}

type Authenticate = (request: Request, deps: AppDeps) => Principal | null | Promise<Principal | null>;

/** A REST operation's request, after its caller: path and query validated, then the body read and validated. */
function restRequest(op: OperationDef, request: Request, params: Record<string, string>, principal: Principal | null, deps: AppDeps) {
  // Who called is kept for the request's log line only, so nothing is recorded when info lines are off.
  if (principal && deps.log.enabled('info')) noteCaller(request, principal);
  const ctx = restContext(op, request, params, principal, deps);
  if (!op.bodyType) return ctx;
  return readBody(op, request, deps).then((body) => {
    if (body !== undefined) validate(`${op.operationId}_body`, body, 'body', op.bodyType === 'form');
    ctx.body = body;
    return ctx;
  });
}

/** A REST operation's policy: its caller (`authenticate`), then the REST request read against the contract. */
const restPolicy = (authenticate: Authenticate, session?: true): AccessPolicy => ({
  enter(op, request, params, deps) {
    const authenticated = authenticate(request, deps);
    if (authenticated instanceof Promise) return authenticated.then((principal) => restRequest(op, request, params, principal, deps));
    return restRequest(op, request, params, authenticated, deps);
  },
  ...(session ? { session } : {}),
});

/**
 * The MCP operation's policy (pipeline/mcp.ts): an API key, a bearer or the console session; the burst limit of this
 * instance; the body as JSON. The doorway (mcp/doorway.ts) classifies and answers it; the URL is parsed only if asked.
 */
const mcpPolicy: AccessPolicy = {
  async enter(_op, request, params, deps) {
    const entered = await enterMcp(request, params.orgSlug!, deps, (r, d) => (fromSession(r, d) ? sessionBearer(r, d) : null));
    const ctx = lazyUrlContext(request, params, entered.session.principal, deps);
    ctx.body = entered;
    return ctx;
  },
  session: true,
};

/** The REST limit's view of the deps: the org's plan comes through the credential cache (dropped on any change). */
const restLimits = (deps: AppDeps): RestLimitDeps => ({
  limiter: deps.limiter,
  planOf: async (orgId) => (await deps.authCache.lookup(`r\n${orgId}`, () => findOrgById(deps.store.db, orgId)))?.plan,
});

/** A management operation's credential: the bearer, else the console session (with its checks, decision 0317). */
const restCredential = (request: Request, deps: AppDeps): Promise<Principal> =>
  fromSession(request, deps) ? sessionPrincipal(request, deps) : deps.auth.rest(request);

const rolePolicy = (role: Role): AccessPolicy =>
  restPolicy(async (request, deps) => {
    let principal: Principal | null = null;
    try {
      principal = await restCredential(request, deps);
      // Every authenticated call counts, refused ones too: a credential cannot spin on routes it may not use.
      await takeRestCall(restLimits(deps), principal);
      authorize(role, principal);
      return principal;
    } catch (err) {
      // 403 and 429 are audited by the pipeline (pipeline/pipeline.ts).
      throw restRefusal(err, request, principal);
    }
  }, true);

/**
 * Operations after which the MCP endpoint's cached credential lookups are dropped on every instance (a new auth
 * epoch, mcp/auth-cache.ts): every authenticated management write, whatever its outcome. Listing the few writes
 * that change orgs or API keys would be smaller, but a write added later would be missed silently; management
 * writes are rare, and one only costs each instance a store lookup per credential in use
 * (docs/decisions/0113-mcp-credential-cache.md).
 */
function changesCredentialLookups(op: OperationDef): boolean {
  return op.method !== 'GET' && op.auth !== 'public' && op.auth !== 'mcp';
}

/** The operator token is a sign-in door too: wrong tokens count against the source address like wrong client secrets. */
async function operatorSignIn(request: Request, deps: AppDeps): Promise<Principal> {
  // No token presented is no attempt: answered 401 without touching the counts.
  if (!bearerToken(request)) return deps.auth.operator(request);
  return limitedAttempt(
    deps.authFailures,
    { client: 'operator', address: sourceAddressOf(request, deps.config.trustedProxies) },
    async () => deps.auth.operator(request),
    (err) => (err instanceof AppError && err.status === 401 ? 'failed' : 'unjudged'),
    async (refusal) => {
      countLimitRefusal('auth_failures');
      throw new AppError(429, 'rate_limited', refusalMessage(refusal), { 'retry-after': String(refusal.retryAfterSeconds) });
    },
  );
}

const ACCESS: Record<OperationDef['auth'], AccessPolicy> = {
  public: restPolicy(() => null),
  operator: restPolicy(operatorSignIn),
  mcp: mcpPolicy,
  // The console's own operations read the session themselves (console/): signing in is how one gets one.
  console: restPolicy(() => null),
  contributor: rolePolicy('contributor'),
  admin: rolePolicy('admin'),
  finance: rolePolicy('finance'),
};

/** An operation bound at build time: everything a request needs but its own values. */
interface Route {
  op: OperationDef;
  spanName: string;
  handler: Handler;
  door: Door;
  access: AccessPolicy;
  /** The log line of an unexpected error (answered 500): the MCP transport keeps its own words. */
  logFailure(deps: AppDeps, err: unknown): void;
}

const logFailureOf = (op: OperationDef): Route['logFailure'] =>
  op.auth === 'mcp'
    ? (deps, err) => deps.log.error('mcp endpoint failed', { error: describeError(err) })
    : (deps, err) => deps.log.error('unhandled error', { operation: op.operationId, error: describeError(err) });

/** Every operation's request: its span, its id (echoed as X-Request-Id), its log line and metrics (observability/). */
function dispatch(route: Route, request: Request, params: Record<string, string>, deps: AppDeps): Promise<Response> {
  const startedAt = performance.now();
  const requestId = requestIdOf(request);
  return inRequestSpan(request, route.spanName, async (span) => {
    let answered = await answer(route, request, params, deps);
    if (route.access.session && fromSession(request, deps)) answered = await sessionAnswer(request, answered);
    const response = stampRequestId(withDoorHeaders(answered, route.door), requestId);
    requestAnswered(deps.log, request, { route: route.op.path, method: route.op.method, status: response.status, startedAt, requestId, span });
    return response;
  });
}

/** The REST request's context: path and query validated against the contract before the handler (the body after). */
function restContext(op: OperationDef, request: Request, params: Record<string, string>, principal: Principal | null, deps: AppDeps): RequestContext {
  const url = new URL(request.url);
  const query = queryObject(url);
  if (op.pathParams.length) validate(`${op.operationId}_path`, params, 'path', false);
  if (op.queryParams.length) validate(`${op.operationId}_query`, query, 'query', false);
  return { request, url, params, query, body: undefined, principal, deps };
}

/** The pipeline of one operation: door checks, authentication, request, handler, error mapping (pipeline/pipeline.ts). */
async function answer(route: Route, request: Request, params: Record<string, string>, deps: AppDeps): Promise<Response> {
  const { op, access } = route;
  const refused = checkDoor(route.door, deps, request);
  if (refused) return refused;
  let wrote = false;
  try {
    const entered = access.enter(op, request, params, deps);
    // Policies that enter synchronously (a public operation without a body) cost no await.
    const ctx = entered instanceof Promise ? await entered : entered;
    wrote = ctx.principal !== null && changesCredentialLookups(op);
    const response = await route.handler(ctx);
    // After the handler's commit, before the answer: whoever learns of the change gets it on every instance.
    if (wrote) await deps.authCache.changed();
    return response;
  } catch (err) {
    // A write that failed may have committed part of its work (a connector updated, then its revalidation refused).
    if (wrote) await deps.authCache.changed();
    return answerFailure(deps, request, err, (_msg, e) => route.logFailure(deps, e));
  }
}

const toElysiaPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/** Operations as Elysia routes: one route per operation, 405 for a known path with another method. */
function operationsApp(ops: readonly OperationDef[], handlers: HandlerTable, deps: AppDeps): Elysia {
  const app = new Elysia();
  const methodsByPath = new Map<string, string[]>();
  const corsPaths = new Set<string>();
  for (const op of ops) {
    const route: Route = {
      op,
      spanName: `${op.method} ${op.path}`,
      handler: handlers[op.operationId as OperationId],
      door: doorOf(op),
      access: ACCESS[op.auth],
      logFailure: logFailureOf(op),
    };
    const path = toElysiaPath(op.path);
    methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), op.method]);
    const cors = CORS_OPERATIONS.has(op.operationId as OperationId);
    if (cors) corsPaths.add(path);
    app.route(
      op.method,
      path,
      cors
        ? async ({ request, params }) => withCors(await dispatch(route, request, params as Record<string, string>, deps))
        : ({ request, params }) => dispatch(route, request, params as Record<string, string>, deps),
      { parse: 'none' } as never,
    );
  }
  for (const path of corsPaths) {
    const methods = `${methodsByPath.get(path)!.join(', ')}, OPTIONS`;
    // The preflight passes the Host check like the request it announces; it runs nothing and reads no credential.
    app.options(path, ({ request }) => {
      const refused = checkDoor(DOORS.rest, deps, request);
      const response = refused ?? new Response(null, { status: 204, headers: { ...PREFLIGHT_HEADERS, 'access-control-allow-methods': methods } });
      return stampRequestId(response, requestIdOf(request));
    });
  }
  for (const [path, methods] of methodsByPath) {
    const allow = methods.join(', ');
    app.all(path, () => json({ error: 'method_not_allowed', message: `Allowed methods: ${allow}.` }, 405, { allow }));
  }
  return app;
}

/**
 * The Elysia app: the REST operations, the MCP transport and the console mounted as sub-apps (routes merged when the
 * app is built: no per-request hook), and a JSON 404 elsewhere.
 */
export function buildRouter(deps: AppDeps, handlers: HandlerTable): Elysia {
  checkHandlerTable(operations, handlers);
  const app = new Elysia();
  app.use(
    operationsApp(
      operations.filter((op) => op.auth !== 'mcp'),
      handlers,
      deps,
    ),
  );
  app.use(
    operationsApp(
      operations.filter((op) => op.auth === 'mcp'),
      handlers,
      deps,
    ),
  );
  app.onError(({ code, error }) => {
    if (code === 'NOT_FOUND') {
      observeHttp('unmatched', 'ANY', 404, 0);
      return json({ error: 'not_found', message: 'No such route.' }, 404);
    }
    deps.log.error('unhandled error', { error: describeError(error) });
    return json({ error: 'internal_error', message: 'An internal error occurred.' }, 500);
  });
  return app as unknown as Elysia;
}
