/** Serves the gateway on Bun. */
import { boot } from './boot.ts';

const booted = await boot((message) => {
  console.error(`toolgate: ${message}`);
  process.exit(1);
});
const { config, gateway } = booted;
let server: ReturnType<typeof Bun.serve>;
try {
  server = Bun.serve({ port: config.port, hostname: config.host, fetch: (request) => gateway.handle(request) });
} catch (err) {
  await booted.stop();
  const inUse = (err as { code?: string }).code === 'EADDRINUSE';
  console.error(`toolgate: cannot listen on ${config.host}:${config.port}${inUse ? ': the port is in use (set PORT to another one)' : ''}`);
  process.exit(1);
}
booted.listening(server.port ?? config.port, 'Bun');

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`toolgate: ${signal}, shutting down`);
  await server.stop();
  await booted.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
