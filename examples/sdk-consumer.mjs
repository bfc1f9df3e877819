// @ts-check
/**
 * A consumer of `@toolgate/client`, written as an adopter would, in plain JavaScript so that the same file runs
 * unchanged on Node 20+, Deno and Bun (test/sdk-runtimes.test.ts installs the packed package into an empty project,
 * typechecks this file there under NodeNext and runs it on all three against a real gateway). It signs in with
 * client credentials, creates a PostgreSQL connector, waits for it to validate, lists its tools, reads the audit log
 * page by page, calls again with a token provider (as an OAuth sign-in flow would give) and reads an error; it
 * prints what it saw as one JSON line.
 *
 *   TOOLGATE_URL=http://localhost:8080 TOOLGATE_CLIENT_ID=tgc_... TOOLGATE_CLIENT_SECRET=... \
 *   TOOLGATE_PG='{"host":"127.0.0.1","port":5432,"database":"shop","user":"postgres","tls":"disable"}' node examples/sdk-consumer.mjs
 */
import { createConnector, getConnector, getOrg, listTools, Toolgate, ToolgateError } from '@toolgate/client';

const env = (/** @type {string} */ name) => {
  // Node, Bun and Deno (2+) all provide `process.env`.
  const value = /** @type {any} */ (globalThis).process?.env?.[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const runtime = 'Deno' in globalThis ? 'deno' : 'Bun' in globalThis ? 'bun' : 'node';

const toolgate = new Toolgate({
  baseUrl: env('TOOLGATE_URL'),
  clientId: env('TOOLGATE_CLIENT_ID'),
  clientSecret: env('TOOLGATE_CLIENT_SECRET'),
  timeoutMs: 30_000,
  retry: { attempts: 3 },
});
const { client } = toolgate;

const { data: org } = await getOrg({ client, throwOnError: true });
const { data: created } = await createConnector({
  client,
  throwOnError: true,
  body: { name: `shop-${runtime}`, type: 'postgresql', config: JSON.parse(env('TOOLGATE_PG')) },
});
// Validation runs in the background: poll until the connector leaves `validating`.
let connector = created;
for (let i = 0; i < 100 && connector.status === 'validating'; i++) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  connector = (await getConnector({ client, throwOnError: true, path: { connectorId: created.id } })).data;
}
const { data: tools } = await listTools({ client, throwOnError: true, path: { orgId: org.id }, query: { connector_id: created.id } });

// Every audit event, two per request: the iterator follows next_cursor until the last page.
let auditEvents = 0;
for await (const event of toolgate.auditEvents({ limit: 2 })) if (event.id) auditEvents++;

// A bearer from elsewhere (an OAuth sign-in flow, say): a function asked before every request.
const signedIn = new Toolgate({ baseUrl: env('TOOLGATE_URL'), token: async () => toolgate.accessToken() });
const { data: again } = await getOrg({ client: signedIn.client, throwOnError: true });

let error = null;
try {
  await getConnector({ client, throwOnError: true, path: { connectorId: '00000000-0000-4000-8000-000000000000' } });
} catch (caught) {
  error = {
    isError: caught instanceof Error,
    isToolgateError: caught instanceof ToolgateError,
    status: caught instanceof ToolgateError ? caught.status : null,
    error: caught instanceof ToolgateError ? caught.error : null,
    message: caught instanceof Error ? caught.message : String(caught),
  };
}

console.log(
  JSON.stringify({
    runtime,
    org: org.slug,
    connector: { id: connector.id, status: connector.status },
    tools: tools.tools.map((t) => t.tool_name).sort(),
    auditEvents,
    tokenProvider: again.id === org.id,
    error,
  }),
);
