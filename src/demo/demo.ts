/**
 * The newcomer's first minute: a demo org whose sample database (PGlite, served over the PostgreSQL wire protocol
 * on a Unix socket in a private folder, never on a network port) is a postgresql connector of the demo org only,
 * reached in-process (connectors/shared/embedded.ts), so it needs no external service and no other org reaches it.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMBEDDED_HOST_SUFFIX, registerEmbeddedDatabase } from '../connectors/shared/embedded.ts';
import { createConnector, revalidateConnector, updateConnector } from '../connectors/service.ts';
import type { Gateway } from '../gateway.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { onboardOrg } from '../orgs/service.ts';
import { mcpEndpointUrl, onboardingView } from '../handlers/views.ts';
import { collectGarbage, embeddedPgliteOptions, initPgliteDataDir } from '../store/db.ts';
import { findLiveConnectorByName } from '../connectors/repository.ts';
import { SAMPLE_SCHEMA } from './sample-data.ts';
import { addActiveMember } from '../members/service.ts';
import { findMemberByEmail } from '../members/repository.ts';
import { randomSecret } from '../util/crypto.ts';
import { OneConnectionAtATime } from './one-connection.ts';

const DEMO_SLUG = 'demo';
const CONNECTOR_NAME = 'Sample database';
const SYSTEM = { type: 'system', id: null } as const;
/** The demo org's admin member (issue 40): signs in to the console and from MCP clients with a generated password. */
const DEMO_MEMBER_EMAIL = 'admin@demo.example';

/** The sample database's host in the demo connector: a name that resolves nowhere but in this process. */
export const SAMPLE_HOST = `sample${EMBEDDED_HOST_SUFFIX}`;

export interface Demo {
  banner: string;
  /** The sample database's Unix socket (for tests; only this process's user can open it). */
  socketPath: string;
  stop(): Promise<void>;
}

/** Connects to the sample database's socket. */
function connectSample(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ path });
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** The sample database is a few hundred rows: 8 MB of shared buffers hold it many times over. */
const SAMPLE_SHARED_BUFFERS_MB = 8;

async function openSampleDatabase(dir: string | null): Promise<PGlite> {
  if (dir) await initPgliteDataDir(dir);
  const options = await embeddedPgliteOptions(SAMPLE_SHARED_BUFFERS_MB);
  const db = dir ? new PGlite(dir, options) : new PGlite(options);
  await db.waitReady;
  await db.exec(SAMPLE_SCHEMA);
  return db;
}

/**
 * How long the sample database stays open once no connection to it is left. Its PGlite instance is ~45 MB of RSS
 * that most of a demo's life nobody uses: it opens again with the next connection (~0.3 s), and the connector's
 * pool keeps its connections (so the database open) while calls come (decision 0190).
 */
const SAMPLE_IDLE_CLOSE_MS = 2_000;

/**
 * The sample database behind its socket, open only while a connection to it exists (and SAMPLE_IDLE_CLOSE_MS after
 * the last one closes). Opening and closing are serialised on one chain, so a connection never meets a half-closed
 * database. An in-memory database (tests) stays open: closing it would lose its rows.
 */
class SampleDatabase {
  #chain: Promise<unknown> = Promise.resolve();
  #open: { db: PGlite; server: PGLiteSocketServer } | null = null;
  #connections = 0;
  #idleTimer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;
  /** PGlite is one session: connections take turns instead of being refused (one-connection.ts). */
  #turns = new OneConnectionAtATime(() => (this.#open?.server.getStats().activeConnections ?? 0) > 0);

  constructor(
    private readonly dir: string | null,
    readonly socketPath: string,
  ) {}

  #serial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(step);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /** Opens the database and its socket unless open. */
  start(): Promise<void> {
    return this.#serial(async () => {
      if (this.#open || this.#stopped) return;
      const db = await openSampleDatabase(this.dir);
      // PGlite is one session: a single wire connection at a time keeps transactions from interleaving.
      const server = new PGLiteSocketServer({ db, path: this.socketPath, maxConnections: 1 });
      try {
        await server.start();
      } catch (err) {
        await db.close();
        throw err;
      }
      this.#open = { db, server };
    });
  }

  /** A connection to the sample database, opening it first when it is closed. */
  async connect(): Promise<net.Socket> {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
    this.#connections++;
    try {
      await this.start();
      const socket = await this.#turns.connect(() => connectSample(this.socketPath));
      socket.once('close', () => this.#released());
      return socket;
    } catch (err) {
      this.#released();
      throw err;
    }
  }

  #released(): void {
    this.#connections--;
    this.closeWhenUnused();
  }

  /** Closes the database SAMPLE_IDLE_CLOSE_MS from now unless a connection comes (never in memory). */
  closeWhenUnused(): void {
    if (this.#connections > 0 || !this.dir || this.#stopped) return;
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      if (this.#connections === 0) void this.#close().catch(() => undefined);
    }, SAMPLE_IDLE_CLOSE_MS);
    this.#idleTimer.unref?.();
  }

  #close(): Promise<void> {
    return this.#serial(async () => {
      const open = this.#open;
      if (!open || this.#connections > 0) return;
      this.#open = null;
      await open.server.stop();
      await open.db.close();
      // Its WebAssembly memory and heap go back to the system only with a full collection; nobody waits now. A
      // moment later, so that nothing on this stack still holds the closed instance.
      if (!this.#stopped) setTimeout(collectGarbage, 100).unref?.();
    });
  }

  /** Closes for good (the gateway stops). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#turns.close();
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#connections = 0;
    await this.#close();
  }
}

export async function startDemo(gateway: Gateway, options: { inMemory?: boolean } = {}): Promise<Demo> {
  const { deps } = gateway;
  const dataDir = deps.config.dataDir;
  // A folder only this user can enter: the socket in it is the sample database's only door (PGlite has no
  // authentication of its own, so it must never listen on a network port another org could name).
  const socketDir = mkdtempSync(join(tmpdir(), 'toolgate-sample-'));
  const socketPath = join(socketDir, '.s.PGSQL.5432');
  const sample = new SampleDatabase(options.inMemory ? null : join(dataDir, 'sample-db'), socketPath);
  // Opened now, so that a broken sample database fails the start; it closes again once unused.
  await sample.start();

  let org = await findOrgBySlug(deps.store.db, DEMO_SLUG);
  let fresh: ReturnType<typeof onboardingView> | null = null;
  if (!org) {
    fresh = onboardingView(await onboardOrg(deps, { slug: DEMO_SLUG, name: 'Demo', plan: 'starter', trialDays: 14 }, SYSTEM), deps.config);
    org = (await findOrgBySlug(deps.store.db, DEMO_SLUG))!;
  }
  const unregister = registerEmbeddedDatabase(SAMPLE_HOST, org.id, () => sample.connect());
  const config = { host: SAMPLE_HOST, port: 5432, database: 'postgres', user: 'postgres', tls: 'disable' as const, schemas: ['public'] };
  const existing = await findLiveConnectorByName(deps.store.db, org.id, CONNECTOR_NAME);
  if (!existing) await createConnector(deps, org.id, { name: CONNECTOR_NAME, type: 'postgresql', config, credential: 'postgres' }, SYSTEM);
  // A data folder from an older version points the connector at a TCP port: move it to the embedded host (this revalidates).
  else if ((existing.config as { host?: string }).host !== SAMPLE_HOST) await updateConnector(deps, org.id, existing.id, { config }, SYSTEM);
  // The connector was failed or validated against a socket of an earlier run: check it against this one.
  else if (existing.status !== 'active') await revalidateConnector(deps, org.id, existing.id, SYSTEM, false);
  await deps.jobs.idle();
  sample.closeWhenUnused();

  const credentialsFile = join(dataDir, 'demo.json');
  // The admin member, once (a data folder from before members gets one too): its password is shown only in demo.json.
  const member = (await findMemberByEmail(deps.store.db, org.id, DEMO_MEMBER_EMAIL)) ? null : { email: DEMO_MEMBER_EMAIL, password: randomSecret(15) };
  if (member) await addActiveMember(deps.store.db, org.id, { email: member.email, roles: ['admin'], password: member.password }, SYSTEM);
  if ((fresh || member) && !options.inMemory) {
    // Demo credentials only, kept in the private data folder so the quickstart can read them.
    const previous = existsSync(credentialsFile) ? (JSON.parse(readFileSync(credentialsFile, 'utf8')) as Record<string, unknown>) : {};
    const credentials = {
      ...previous,
      ...(fresh
        ? {
            org_id: fresh.org.id,
            slug: DEMO_SLUG,
            endpoint: fresh.endpoint,
            api_key: fresh.api_key.key,
            client_id: fresh.oauth_client.client_id,
            client_secret: fresh.oauth_client.client_secret,
          }
        : {}),
      ...(member ? { member_email: member.email, member_password: member.password } : {}),
    };
    writeFileSync(credentialsFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  }
  const banner = [
    `toolgate: demo org "${DEMO_SLUG}" with a sample database (customers, products, orders) at ${mcpEndpointUrl(deps.config.publicUrl, DEMO_SLUG)}`,
    // The key goes to the log only when there is no private file to hold it (an in-memory store): logs are shared.
    fresh && options.inMemory ? `toolgate: demo API key: ${fresh.api_key.key}` : null,
    member && options.inMemory ? `toolgate: demo admin member: ${member.email}, password ${member.password}` : null,
    !options.inMemory && existsSync(credentialsFile)
      ? `toolgate: demo credentials are in ${credentialsFile}: sign in to the console at ${deps.config.publicUrl}/console, and from MCP clients, as ${DEMO_MEMBER_EMAIL} with its member_password`
      : null,
  ]
    .filter(Boolean)
    .join('\n');
  return {
    banner,
    socketPath,
    stop: async () => {
      unregister();
      await sample.stop();
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
