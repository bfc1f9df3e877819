/**
 * What every runtime entry (src/main.ts on Bun, src/deno.ts on Deno) does around its own `serve`: read the
 * config, take the embedded data folder, build the gateway and the demo, and tear them down in order.
 */
import { ConfigError, loadConfig, type Config } from './config.ts';
import { startDemo, type Demo } from './demo/demo.ts';
import { createGateway, type Gateway } from './gateway.ts';
import { consoleAssets } from './console/assets.ts';
import { collectGarbage } from './store/db.ts';
import { StoreUnreachableError } from './store/reach.ts';
import { acquireDataDirLock, DataDirBusyError, embeddedOperatorToken, updateLockInfo } from './util/datadir.ts';

export interface Booted {
  config: Config;
  gateway: Gateway;
  /** Call once the server listens: records the real port for the CLI and prints where to go. */
  listening(port: number, runtime: string): void;
  /** Stops the demo, closes the gateway and frees the data folder. */
  stop(): Promise<void>;
}

/** `fail` prints the message and exits (each runtime has its own exit). */
export async function boot(fail: (message: string) => never): Promise<Booted> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const embedded = !config.databaseUrl;
  let releaseLock = () => {};
  if (embedded) {
    try {
      releaseLock = acquireDataDirLock(config.dataDir, { port: config.port, url: config.publicUrl });
    } catch (err) {
      if (err instanceof DataDirBusyError) fail(`${err.message}; stop it or use another TOOLGATE_DATA_DIR`);
      throw err;
    }
    // The CLI talks to a running embedded server through the operator API with this token.
    config = { ...config, operatorToken: config.operatorToken ?? embeddedOperatorToken(config.dataDir) };
  }
  let gateway: Gateway;
  try {
    gateway = await createGateway(config, { onStoreWait: (message) => console.error(`toolgate: ${message}`) });
  } catch (err) {
    releaseLock();
    if (err instanceof StoreUnreachableError) fail(err.message);
    throw err;
  }
  // The console's built assets (generated/console) are read at start, so a missing build shows at once.
  await consoleAssets().catch((err: unknown) =>
    console.error(`toolgate: the console bundle could not be read: ${err instanceof Error ? err.message : String(err)}`),
  );
  const demo: Demo | null = config.demo ? await startDemo(gateway) : null;
  // Start-up's garbage (the migrations, the demo's onboarding and introspection) collected
  // once before the first request, not whenever the heap next grows enough (decision 0194).
  collectGarbage();
  const settled = config;
  return {
    config: settled,
    gateway,
    listening(port, runtime) {
      // With PORT=0 the listener's port is known only now: an org must not reach it either.
      if (!gateway.deps.outbound.ownPorts.includes(port)) gateway.deps.outbound.ownPorts.push(port);
      if (embedded) updateLockInfo(settled.dataDir, { port, url: settled.publicUrl });
      const store = embedded ? `embedded PGlite in ${settled.dataDir}` : 'PostgreSQL';
      console.log(`toolgate: listening on ${settled.publicUrl} on ${runtime} (store: ${store})`);
      // PORT=0 (tests, scripts): the port the system chose, for whoever started the process.
      if (port !== settled.port) console.log(`toolgate: port ${port}`);
      console.log(`toolgate: API explorer at ${settled.publicUrl}/docs`);
      console.log(
        `toolgate: settings console at ${settled.publicUrl}/console (sign in as a member with e-mail and password, with the org's identity provider, or with an OAuth client that has org:manage)`,
      );
      console.log(
        gateway.deps.mailer
          ? `toolgate: mail through ${gateway.deps.mailer.describe} (invitations, reset links, forgotten passwords)`
          : 'toolgate: no mail (TOOLGATE_SMTP_URL unset): invitation and reset links are shown to the admin only',
      );
      if (demo) console.log(demo.banner);
    },
    async stop() {
      await demo?.stop();
      await gateway.close();
      releaseLock();
    },
  };
}
