/**
 * The ranks of src/: every folder (and file at the top of src/) with its rank and a one-line role. A module may import
 * only from its own folder or from a folder of lower rank; two folders of one rank never import each other. Derived
 * from the import graph (each rank is one more than the highest rank it imports); docs/ranks.md explains it.
 */
export const RANKS: Record<string, { rank: number; role: string }> = {
  'errors.ts': { rank: 0, role: 'the two error families (AppError, RpcError) and their codes' },
  'principal.ts': { rank: 0, role: 'who is calling, and the role ordering every policy checks' },
  'net/': { rank: 0, role: 'pure network rules: hostnames, IP ranges, outbound and dial policy, Host/Origin policy' },
  'store/': { rank: 0, role: 'the database: connection, schema, migrations' },
  'docs/': { rank: 0, role: 'the API explorer page' },
  'config.ts': { rank: 1, role: 'the environment, read and validated once at start' },
  'events/': { rank: 1, role: 'domain events: the one emitter that the audit log and the webhook outbox subscribe to' },
  'mail/': { rank: 2, role: 'outgoing mail over SMTP (nodemailer): the transport, its timeouts, the URL as it may be printed' },
  'util/': { rank: 2, role: 'logging, crypto, background jobs, body reading, schema error text, the JSON-RPC $defs' },
  'observability/': { rank: 3, role: 'metrics, tracing and request logs' },
  'audit/': { rank: 3, role: 'the audit log: records, hash chain, seals, refusals' },
  'limits/': { rank: 4, role: 'plans, rate limits, quotas and usage metering' },
  'members/': { rank: 4, role: "an org's members: invitations, one-time links, password hashes, the people sign-in setting" },
  'webhooks/': { rank: 4, role: 'webhook endpoints, the outbox and signed delivery' },
  'auth/': { rank: 5, role: 'credentials, tokens, IdP sign-in and authentication' },
  'billing/': { rank: 5, role: "an org's subscription, usage and limits; the trial rule" },
  'connectors/': { rank: 6, role: 'connector sources: their lifecycle, the drivers per type, the SQL guard' },
  'orgs/': { rank: 7, role: 'orgs: creation, provisioning, their credentials' },
  'tools/': { rank: 7, role: 'the tool catalog, tool settings and the tool runtime' },
  'approvals/': { rank: 8, role: 'held tool calls: requests, decisions, expiry and recovery' },
  'mcp/': { rank: 8, role: 'the MCP JSON-RPC protocol, method table and sessions' },
  'console/': { rank: 8, role: "the console's server side: its sessions (a credential of /api/*), sign-in, pages and assets" },
  'deps.ts': { rank: 9, role: 'the dependency container' },
  'handlers/': { rank: 10, role: 'one handler per OpenAPI operation, including the MCP transport' },
  'pipeline/': { rank: 10, role: 'the HTTP checks every surface shares: Host/Origin door, refusal audit, error mapping' },
  'http/': { rank: 11, role: 'the router: the REST operations, the MCP transport and the console mounted on the pipeline' },
  'app.ts': { rank: 12, role: 'buildApp: the web-standard fetch handler' },
  'gateway.ts': { rank: 13, role: 'assembles the dependencies and the app' },
  'cli/': { rank: 14, role: 'the operator command line: its commands, and where each runs (API or store)' },
  'cli.ts': { rank: 15, role: 'the operator command line: usage, dispatch, exit codes' },
  'demo/': { rank: 14, role: 'the demo org and its sample data' },
  'boot.ts': { rank: 15, role: 'starts a gateway process: config, console assets, demo' },
  'main.ts': { rank: 16, role: 'serves the gateway on Bun' },
  'deno.ts': { rank: 16, role: 'serves the gateway on Deno' },
};

/**
 * Ranks one level down (issue 39 item 5): inside these folders, every subfolder and file is a unit ranked as above, so
 * the type folders stand on shared/ and the interface, and shared/ never reaches up into a type. Type folders share
 * a rank: none imports another. Paths are relative to the folder.
 */
export const INNER_RANKS: Record<string, Record<string, { rank: number; role: string }>> = {
  'connectors/': {
    'types.ts': { rank: 0, role: 'the one interface every driver implements, and the shapes it exchanges (saved statements, policies)' },
    'shared/': { rank: 1, role: "the drivers' common code: the SQL driver skeleton, pools, results, policies, the SQL guards' shared walk" },
    'registry.ts': { rank: 1, role: 'the registry of driver types (each type folder registers itself)' },
    'table-filter.ts': { rank: 1, role: "which of a database connector's tables become tools" },
    'postgresql/': { rank: 2, role: 'the postgresql type: driver, pools, guard, resolution' },
    'mysql/': { rank: 2, role: 'the mysql type (MySQL and MariaDB): driver, pool, guard' },
    'mssql/': { rank: 2, role: 'the mssql type (SQL Server): driver and read-only guard dialect' },
    'oracle/': { rank: 2, role: 'the oracle type: driver and read-only guard dialect' },
    'mongodb/': { rank: 2, role: 'the mongodb type: driver, pipeline templates and guard' },
    'mcp/': { rank: 2, role: 'the mcp type: an upstream MCP server as a source' },
    'repository.ts': { rank: 2, role: 'SQL of connectors and their credentials in the store' },
    'index.ts': { rank: 3, role: 'loads every type folder (each registers itself) and re-exports the registry' },
    'health-statements.ts': { rank: 3, role: 'SQL of connector health probes' },
    'health.ts': { rank: 4, role: 'connector health: probes, their schedule and state' },
    'service.ts': { rank: 4, role: 'connector lifecycle: create, update, archive, validate' },
  },
};
