/**
 * The newcomer's first minute: a demo org whose sample database (PGlite, served over the PostgreSQL wire
 * protocol on 127.0.0.1) is registered as an ordinary postgresql connector, so it needs no external service.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { and, eq, isNull } from 'drizzle-orm';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnector, updateConnector } from '../connectors/service.ts';
import type { Gateway } from '../gateway.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { onboardOrg } from '../orgs/service.ts';
import { mcpEndpointUrl, onboardingView } from '../handlers/views.ts';
import { embeddedPgliteOptions } from '../store/db.ts';
import { connectors } from '../store/schema.ts';
import { SAMPLE_SCHEMA } from './sample-data.ts';

export const DEMO_SLUG = 'demo';
const CONNECTOR_NAME = 'Sample database';
const SYSTEM = { type: 'system', id: null } as const;

export interface Demo {
  banner: string;
  port: number;
  stop(): Promise<void>;
}

/** The sample database is a few hundred rows: 8 MB of shared buffers hold it many times over. */
const SAMPLE_SHARED_BUFFERS_MB = 8;

async function openSampleDatabase(dir: string | null): Promise<PGlite> {
  const options = embeddedPgliteOptions(SAMPLE_SHARED_BUFFERS_MB);
  const db = dir ? new PGlite(dir, options) : new PGlite(options);
  await db.waitReady;
  await db.exec(SAMPLE_SCHEMA);
  return db;
}

export async function startDemo(gateway: Gateway, options: { inMemory?: boolean } = {}): Promise<Demo> {
  const { deps } = gateway;
  const dataDir = deps.config.dataDir;
  const sample = await openSampleDatabase(options.inMemory ? null : join(dataDir, 'sample-db'));
  // PGlite is one session: a single wire connection at a time keeps transactions from interleaving.
  const server = new PGLiteSocketServer({ db: sample, host: '127.0.0.1', port: deps.config.demoDbPort, maxConnections: 1 });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());

  let org = await findOrgBySlug(deps.store.db, DEMO_SLUG);
  let fresh: ReturnType<typeof onboardingView> | null = null;
  if (!org) {
    fresh = onboardingView(await onboardOrg(deps, { slug: DEMO_SLUG, name: 'Demo', plan: 'starter', trialDays: 14 }, SYSTEM), deps.config);
    org = (await findOrgBySlug(deps.store.db, DEMO_SLUG))!;
  }
  const config = { host: '127.0.0.1', port, database: 'postgres', user: 'postgres', tls: 'disable' as const, schemas: ['public'] };
  const [existing] = await deps.store.db
    .select()
    .from(connectors)
    .where(and(eq(connectors.orgId, org.id), eq(connectors.name, CONNECTOR_NAME), isNull(connectors.archivedAt)));
  if (!existing) await createConnector(deps, org.id, { name: CONNECTOR_NAME, type: 'postgresql', config, credential: 'postgres' }, SYSTEM);
  // The sample database listens on a new port each start: point the connector at it (this revalidates).
  else if ((existing.config as { port?: number }).port !== port) await updateConnector(deps, org.id, existing.id, { config }, SYSTEM);
  await deps.jobs.idle();

  const credentialsFile = join(dataDir, 'demo.json');
  if (fresh && !options.inMemory) {
    // Demo credentials only, kept in the private data folder so the quickstart can read them.
    writeFileSync(
      credentialsFile,
      JSON.stringify({ org_id: fresh.org.id, slug: DEMO_SLUG, endpoint: fresh.endpoint, api_key: fresh.api_key.key, client_id: fresh.oauth_client.client_id, client_secret: fresh.oauth_client.client_secret }, null, 2) + '\n',
      { mode: 0o600 },
    );
  }
  const banner = [
    `toolgate: demo org "${DEMO_SLUG}" with a sample database (customers, products, orders) at ${mcpEndpointUrl(deps.config.publicUrl, DEMO_SLUG)}`,
    // The key goes to the log only when there is no private file to hold it (an in-memory store): logs are shared.
    fresh && options.inMemory ? `toolgate: demo API key: ${fresh.api_key.key}` : null,
    !options.inMemory && existsSync(credentialsFile)
      ? `toolgate: demo credentials are in ${credentialsFile} (its client_id and client_secret sign in to the console at ${deps.config.publicUrl}/console)`
      : null,
  ]
    .filter(Boolean)
    .join('\n');
  return {
    banner,
    port,
    stop: async () => {
      await server.stop();
      await sample.close();
    },
  };
}
