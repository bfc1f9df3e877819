/** Serves the gateway on Bun: loads config, takes the data folder, opens the store, listens on PORT. */
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createGateway } from './gateway.ts';
import { acquireDataDirLock, DataDirBusyError, embeddedOperatorToken, updateLockInfo } from './util/datadir.ts';
import { startDemo } from './demo/demo.ts';

function fatal(message: string): never {
  console.error(`toolgate: ${message}`);
  process.exit(1);
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
const server = Bun.serve({ port: config.port, hostname: config.host, fetch: (request) => gateway.handle(request) });
if (embedded) updateLockInfo(config.dataDir, { port: server.port ?? config.port, url: config.publicUrl });

console.log(`toolgate: listening on ${config.publicUrl} (store: ${embedded ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL'})`);
console.log(`toolgate: API explorer at ${config.publicUrl}/docs`);
if (demo) console.log(demo.banner);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`toolgate: ${signal}, shutting down`);
  await server.stop();
  await demo?.stop();
  await gateway.close();
  releaseLock();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
