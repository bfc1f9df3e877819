/**
 * Serves the gateway on Deno: the same handler as src/main.ts, with Deno.serve instead of Bun.serve.
 * Run from the repository root: `deno run -A src/deno.ts` (deno.json resolves npm packages from node_modules).
 * Excluded from the project tsconfig (which types the Bun runtime); the Deno API it uses is declared below.
 */
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createGateway } from './gateway.ts';
import { acquireDataDirLock, DataDirBusyError, embeddedOperatorToken, updateLockInfo } from './util/datadir.ts';
import { startDemo } from './demo/demo.ts';

/** The slice of the Deno runtime this entry uses. */
interface DenoServer {
  addr: { port: number; hostname: string };
  finished: Promise<void>;
  shutdown(): Promise<void>;
}
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen?: (addr: { port: number; hostname: string }) => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): DenoServer;
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code: number): never;
};

function fatal(message: string): never {
  console.error(`toolgate: ${message}`);
  Deno.exit(1);
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) fatal(err.message);
  throw err;
}

const embedded = !config.databaseUrl;
let releaseLock = () => {};
if (embedded) {
  try {
    releaseLock = acquireDataDirLock(config.dataDir, { port: config.port, url: config.publicUrl });
  } catch (err) {
    if (err instanceof DataDirBusyError) fatal(`${err.message}; stop it or use another TOOLGATE_DATA_DIR`);
    throw err;
  }
  // The CLI talks to a running embedded server through the operator API with this token.
  config = { ...config, operatorToken: config.operatorToken ?? embeddedOperatorToken(config.dataDir) };
}

const gateway = await createGateway(config);
const demo = config.demo ? await startDemo(gateway) : null;
const server = Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, (request) => gateway.handle(request));
if (embedded) updateLockInfo(config.dataDir, { port: server.addr.port, url: config.publicUrl });

console.log(`toolgate: listening on ${config.publicUrl} on Deno (store: ${embedded ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL'})`);
console.log(`toolgate: API explorer at ${config.publicUrl}/docs`);
if (demo) console.log(demo.banner);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`toolgate: ${signal}, shutting down`);
  await server.shutdown();
  await demo?.stop();
  await gateway.close();
  releaseLock();
  Deno.exit(0);
}
Deno.addSignalListener('SIGINT', () => void shutdown('SIGINT'));
Deno.addSignalListener('SIGTERM', () => void shutdown('SIGTERM'));
