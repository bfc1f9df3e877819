/**
 * Floor (a): the benchmark's SELECT through a bare postgres.js pool behind a tiny Bun.serve endpoint, so the
 * gateway and its floor are both measured HTTP-in/HTTP-out. Prepared statements (postgres.js' default), the
 * gateway's connector pool size, nothing else: no auth, no guard, no transaction.
 *
 * Env: FLOOR_PORT, FLOOR_DATABASE, FLOOR_POOL, FLOOR_SQL. Prints "ready <port>" once listening.
 */
import postgres from 'postgres';

const port = Number(process.env.FLOOR_PORT ?? 0);
const sqlText = process.env.FLOOR_SQL ?? 'select 1';
const sql = postgres({
  host: '127.0.0.1',
  port: 5432,
  user: 'postgres',
  database: process.env.FLOOR_DATABASE ?? 'postgres',
  max: Number(process.env.FLOOR_POOL ?? 10),
  onnotice: () => undefined,
});
const options = { prepare: true, simple: false } as postgres.UnsafeQueryOptions;
await sql.unsafe(sqlText, [], options);

const headers = { 'content-type': 'application/json; charset=utf-8' };
const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(request) {
    try {
      // Read and parse the request like the gateway does, so both sides pay for HTTP in and JSON out.
      JSON.parse(await request.text());
      const rows = await sql.unsafe(sqlText, [], options);
      return new Response(JSON.stringify({ rows, rowCount: rows.length }), { headers });
    } catch (err) {
      return new Response(JSON.stringify({ error: String(err) }), { status: 500, headers });
    }
  },
});
console.log(`ready ${server.port}`);

const stop = async () => {
  await server.stop(true);
  await sql.end({ timeout: 1 });
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
