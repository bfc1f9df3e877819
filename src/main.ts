/** Serves the gateway on Bun, and shuts it down gracefully on SIGTERM/SIGINT. */
import { boot } from './boot.ts';
import { notePeerAddress } from './net/source-address.ts';

const booted = await boot((message) => {
  console.error(`toolgate: ${message}`);
  process.exit(1);
});
const { config, gateway } = booted;
/** Requests being answered right now: a shutdown waits for them (up to TOOLGATE_SHUTDOWN_DEADLINE_MS). */
let inFlight = 0;
let drained: (() => void) | null = null;
async function serve(request: Request): Promise<Response> {
  inFlight++;
  try {
    return await gateway.handle(request);
  } finally {
    if (--inFlight === 0) drained?.();
  }
}
let server: ReturnType<typeof Bun.serve>;
try {
  server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Bun's default (10 s) closes a connection whose answer takes longer, without an answer (issue 42).
    idleTimeout: config.httpIdleTimeoutSeconds,
    // The direct peer is the source address the failure limits count (net/source-address.ts).
    fetch: (request, bunServer) => {
      notePeerAddress(request, bunServer.requestIP(request)?.address);
      return serve(request);
    },
  });
} catch (err) {
  await booted.stop();
  const inUse = (err as { code?: string }).code === 'EADDRINUSE';
  console.error(`toolgate: cannot listen on ${config.host}:${config.port}${inUse ? ': the port is in use (set PORT to another one)' : ''}`);
  process.exit(1);
}
booted.listening(server.port ?? config.port, 'Bun');

let stopping = false;
/**
 * Stops accepting (the listener closes; /readyz answers 503 to whatever still reaches this instance), lets the
 * requests in flight finish within the deadline, closes what is left, then releases pools, the store and the data
 * folder (booted.stop). A second signal does not cut it short; SIGKILL does.
 */
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  gateway.deps.lifecycle.shuttingDown = true;
  const started = Date.now();
  console.log(`toolgate: ${signal}, shutting down (${inFlight} requests in flight, deadline ${config.shutdownDeadlineMs} ms)`);
  const listenerClosed = server.stop(false);
  if (inFlight > 0) {
    const finished = new Promise<boolean>((resolve) => (drained = () => resolve(true)));
    const deadline = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), config.shutdownDeadlineMs).unref?.());
    if (!(await Promise.race([finished, deadline]))) console.error(`toolgate: ${inFlight} requests still in flight at the deadline; closing their connections`);
  }
  // Idle keep-alive connections (and anything past the deadline) are closed now.
  await Promise.race([server.stop(true), listenerClosed]);
  await booted.stop();
  console.log(`toolgate: stopped after ${Date.now() - started} ms`);
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
