/**
 * Floor (c), the one issue 14's targets are set against: a bare Elysia gateway running the benchmark's SELECT on
 * Bun.sql (Bun's native PostgreSQL client), HTTP in, JSON-RPC body parsed, rows out as JSON. No auth, no limits, no
 * guard, no audit: the fastest a gateway on this stack can answer the same call. The gateway's connector pool size.
 *
 * It runs the SQL the request carries (`params.arguments.sql`, as a gateway would; FLOOR_SQL when there is none), so
 * the varied-SQL scenario sends it a new text per request too, with Bun.sql's defaults (named prepared statements,
 * the last 1,024 per connection kept).
 *
 * With FLOOR_PARAM_SQL, a request whose arguments carry `after` runs that parameterized text with the values bound
 * (issue 42's floor for a saved-statement tool).
 *
 * Env: FLOOR_PORT, FLOOR_DATABASE, FLOOR_POOL, FLOOR_SQL, FLOOR_PARAM_SQL. Prints "ready <port>" once listening.
 */
import { SQL } from 'bun';
import { Elysia } from 'elysia';

const port = Number(process.env.FLOOR_PORT ?? 0);
const sqlText = process.env.FLOOR_SQL ?? 'select 1';
/** Issue 42: a parameterized tool's text (`$1`, `$2`), run with the request's `after` and `qty` as bound values. */
const paramText = process.env.FLOOR_PARAM_SQL ?? null;
const sql = new SQL({
  hostname: '127.0.0.1',
  port: 5432,
  username: 'postgres',
  database: process.env.FLOOR_DATABASE ?? 'postgres',
  max: Number(process.env.FLOOR_POOL ?? 10),
});
await sql.unsafe(sqlText);

const app = new Elysia()
  .post('/', async ({ body }) => {
    // The JSON-RPC request is parsed by Elysia (as the gateway's router does); the rows go out as the result.
    const request = body as { id?: unknown; params?: { arguments?: { sql?: unknown; after?: unknown; qty?: unknown } } } | null;
    const id = request?.id ?? null;
    const args = request?.params?.arguments;
    const text = args?.sql;
    // A parameterized call: the same text, the values bound (Bun.sql prepares it once per connection).
    const rows =
      paramText !== null && args?.after !== undefined
        ? await sql.unsafe(paramText, [args.after, args.qty])
        : await sql.unsafe(typeof text === 'string' ? text : sqlText);
    return { jsonrpc: '2.0', id, result: { rows: [...rows], rowCount: rows.length } };
  })
  .listen({ hostname: '127.0.0.1', port });
console.log(`ready ${app.server?.port}`);

const stop = async () => {
  await app.stop(true);
  await sql.close({ timeout: 1 });
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
