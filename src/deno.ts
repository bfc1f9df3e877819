/**
 * Serves the gateway on Deno: the same handler as src/main.ts, with Deno.serve instead of Bun.serve.
 * Run from the repository root: `deno run -A src/deno.ts` (Deno resolves npm packages from node_modules).
 * Excluded from the project tsconfig (which types the Bun runtime); the Deno API it uses is declared below.
 */
import { boot } from './boot.ts';
import { notePeerAddress } from './net/source-address.ts';

/** The slice of the Deno runtime this entry uses. */
interface DenoServer {
  addr: { port: number; hostname: string };
  shutdown(): Promise<void>;
}
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen?: (addr: { port: number; hostname: string }) => void },
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Response | Promise<Response>,
  ): DenoServer;
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code: number): never;
};

const booted = await boot((message) => {
  console.error(`toolgate: ${message}`);
  Deno.exit(1);
});
const { config, gateway } = booted;
// The direct peer is the source address the failure limits count (net/source-address.ts).
const server = Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, (request, info) => {
  notePeerAddress(request, info.remoteAddr.hostname);
  return gateway.handle(request);
});
booted.listening(server.addr.port, 'Deno');

let stopping = false;
/**
 * As src/main.ts on Bun: /readyz answers 503 from now on, the listener closes, requests in flight finish within
 * TOOLGATE_SHUTDOWN_DEADLINE_MS (Deno's shutdown() waits for them), then pools, the store and the data folder are
 * released. Past the deadline the process exits with the rest cut off.
 */
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  gateway.deps.lifecycle.shuttingDown = true;
  const started = Date.now();
  console.log(`toolgate: ${signal}, shutting down (deadline ${config.shutdownDeadlineMs} ms)`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), config.shutdownDeadlineMs)));
  const drained = await Promise.race([server.shutdown().then(() => true), deadline]);
  clearTimeout(timer);
  if (!drained) console.error('toolgate: requests still in flight at the deadline; closing their connections');
  await booted.stop();
  console.log(`toolgate: stopped after ${Date.now() - started} ms`);
  Deno.exit(0);
}
Deno.addSignalListener('SIGINT', () => void shutdown('SIGINT'));
Deno.addSignalListener('SIGTERM', () => void shutdown('SIGTERM'));
