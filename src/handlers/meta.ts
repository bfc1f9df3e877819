/** Service metadata: the gateway's JWKS, health, the OpenAPI document and its explorer. */
import { explorerAsset, explorerPage } from '../docs/explorer.ts';
import { json, notFound } from '../errors.ts';
import { storeReachable } from '../store/db.ts';
import type { Handler } from './context.ts';
import openapiDocument from '../../generated/openapi.json' with { type: 'json' };

const openapiText = JSON.stringify(openapiDocument);

export const getJwks: Handler = ({ deps }) => json(deps.signer.jwks(), 200, { 'cache-control': 'public, max-age=300' });

export const getHealth: Handler = async ({ deps }) =>
  (await storeReachable(deps.store.db)) ? json({ status: 'ok' }) : json({ error: 'store_unavailable', message: 'The store cannot be reached.' }, 503);

export const getOpenApi: Handler = () => new Response(openapiText, { headers: { 'content-type': 'application/json; charset=utf-8' } });

export const getDocs: Handler = () => explorerPage();

export const getDocsAsset: Handler = async ({ params }) => {
  const response = await explorerAsset(params.asset!);
  if (!response) throw notFound('asset_not_found', 'No such asset.');
  return response;
};
