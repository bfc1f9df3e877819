/** Service metadata: the gateway's JWKS, health, the OpenAPI document and its explorer. */
import { explorerAsset, explorerPage } from '../docs/explorer.ts';
import { json, notFound } from '../errors.ts';
import { schemaState, storeReachable } from '../store/db.ts';
import { METRICS_CONTENT_TYPE, registry } from '../observability/metrics.ts';
import type { Handler } from './context.ts';
import openapiDocument from '../../generated/openapi.json' with { type: 'json' };

const openapiText = JSON.stringify(openapiDocument);

export const getJwks: Handler = ({ deps }) => json(deps.signer.jwks(), 200, { 'cache-control': 'public, max-age=300' });

export const getHealth: Handler = async ({ deps }) =>
  (await storeReachable(deps.store.db)) ? json({ status: 'ok' }) : json({ error: 'store_unavailable', message: 'The store cannot be reached.' }, 503);

/** Readiness: the store answers and is migrated; Redis is reported, never fatal; 503 while shutting down. */
export const getReady: Handler = async ({ deps }) => {
  const schema = await schemaState(deps.store.db);
  const mode = deps.limiter.mode?.() ?? 'local';
  const redis = mode === 'shared' ? 'ok' : mode === 'fallback' ? 'fallback' : 'not_configured';
  const ready = schema === 'done' && !deps.lifecycle.shuttingDown;
  const status = deps.lifecycle.shuttingDown ? 'shutting_down' : ready ? 'ready' : 'not_ready';
  const body = { status, store: schema === 'unreachable' ? 'unreachable' : 'ok', migrations: schema === 'unreachable' ? 'unknown' : schema, redis };
  return json(body, ready ? 200 : 503, { 'cache-control': 'no-store' });
};

export const getMetrics: Handler = async () =>
  new Response(await registry.metrics(), { headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' } });

export const getOpenApi: Handler = () => new Response(openapiText, { headers: { 'content-type': 'application/json; charset=utf-8' } });

export const getDocs: Handler = () => explorerPage();

export const getDocsAsset: Handler = async ({ params }) => {
  const response = await explorerAsset(params.asset!);
  if (!response) throw notFound('asset_not_found', 'No such asset.');
  return response;
};
