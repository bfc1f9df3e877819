/**
 * Floor (b): a bare Elysia endpoint answering a fixed JSON body to POST: the cost of HTTP + routing + body
 * parsing on Bun, with no work behind it. Env: FLOOR_PORT. Prints "ready <port>" once listening.
 */
import { Elysia } from 'elysia';

const port = Number(process.env.FLOOR_PORT ?? 0);
const body = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'ping', description: 'A fixed answer.', inputSchema: { type: 'object' } }] } };

const app = new Elysia().post('/', () => body).listen({ hostname: '127.0.0.1', port });
console.log(`ready ${app.server?.port}`);

const stop = async () => {
  await app.stop(true);
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
