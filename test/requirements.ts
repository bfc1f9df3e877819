/**
 * The behaviours the spec demands, each under a stable id, and the `verifies(...)` helper tests use to cite them.
 *
 * Sources: `spec` = ../shared/spec/gateway-spec.md, `checklist` = ../shared/security-checklist.md, `decisions` =
 * docs/decisions/ (where the spec leaves something "not shown"; a tag names the old section, which
 * docs/decisions.md maps to the numbered files). Only what the gateway implements today is listed.
 * test/requirements.test.ts fails when an id here is cited by no test, or a test cites an id not listed here.
 */
export const REQUIREMENTS = {
  // JSON-RPC on the tool endpoint
  'RPC-32700': 'Malformed JSON is answered with -32700 Parse error, id null, HTTP 400 [checklist Protocol; decisions MCP endpoint]',
  'RPC-32600': 'A valid JSON value that is not a JSON-RPC request is answered with -32600, id null, HTTP 400 [spec Errors; checklist Protocol]',
  'RPC-BATCH': 'A JSON-RPC batch under MCP 2025-06-18 or later is refused with -32600 and nothing in it runs [decisions MCP endpoint]',
  'RPC-BATCH-2025-03-26':
    'Under MCP 2025-03-26 a JSON-RPC batch is answered message by message, each limited, scope-checked and audited as if sent alone [decisions MCP endpoint; MCP 2025-03-26 Transports]',
  'RPC-NOTIFY-202': 'A notification (no id) is answered with HTTP 202 and an empty body [checklist Protocol]',
  'RPC-32601': 'A method other than the supported ones gets -32601 with the request id echoed [spec Errors; checklist Protocol]',
  'RPC-32602': 'tools/call arguments that do not match the tool inputSchema get -32602 naming the field [spec Errors]',
  'RPC-32602-UNKNOWN-TOOL': 'tools/call of an unknown tool gets -32602 [checklist Protocol; decisions MCP endpoint]',
  'RPC-32003': 'tools/call of a tool outside the credential scope gets -32003 Insufficient Scope [spec Errors]',
  'RPC-32000': 'With the monthly quota used up, tools/call gets -32000 saying the quota is exceeded and to upgrade [spec Errors, Limits]',
  'RPC-ENVELOPE':
    'Responses are JSON-RPC 2.0 envelopes {jsonrpc: "2.0", id, result | error{code, message}} that validate against jsonrpc-schema.json [spec Tool endpoint]',
  'RPC-TOOL-ERROR-RESULT':
    'A failed tool execution (guard refusal, database error, database down) is a result with isError true and a clear text, not a protocol error [decisions MCP endpoint]',

  // MCP transport (Streamable HTTP)
  'MCP-ORIGIN': 'A foreign Origin or Origin: null is HTTP 403 and nothing executes; no Origin and the gateway origin pass [checklist Protocol]',
  'HTTP-HOST':
    'A Host naming neither the public URL host, nor localhost/127.0.0.1/[::1], nor TOOLGATE_ALLOWED_HOSTS is HTTP 403 forbidden_host on every route but /healthz, before any work [decisions Host and Origin]',
  'MCP-VERSION-HEADER': 'An unsupported MCP-Protocol-Version is HTTP 400; an absent header is accepted (taken as 2025-03-26) [checklist Protocol]',
  'MCP-INIT-NEGOTIATE': 'initialize answers the client protocol revision when supported, else the latest [decisions MCP endpoint]',
  'MCP-405': 'GET and DELETE on the tool endpoint answer 405 with Allow: POST [decisions MCP endpoint]',
  'MCP-SDK-CLIENT': 'The official MCP TypeScript SDK client connects, lists and calls tools over Streamable HTTP [spec What the service does 1]',
  'MCP-2026-SDK-V2':
    'The official SDK v2 client pinned to MCP 2026-07-28 negotiates it through server/discover (no initialize, no Mcp-Session-Id), lists and calls tools [decisions 0240]',
  'MCP-2026-HEADERS':
    'Under MCP 2026-07-28 an MCP-Protocol-Version, Mcp-Method or Mcp-Name header that disagrees with the body, or is missing, is HTTP 400 -32020 and the call is not run [decisions 0240]',
  'MCP-2026-ENVELOPE':
    'A 2026-07-28 request without a valid _meta envelope is HTTP 400 -32602; a revision not spoken is HTTP 400 -32022 listing the supported ones [decisions 0240]',
  'MCP-2026-CACHE': 'Under 2026-07-28 every result carries resultType complete, and tools/list and server/discover carry ttlMs and cacheScope [decisions 0241]',
  'MCP-2026-LEGACY': 'Clients of 2025-11-25, 2025-06-18 and 2025-03-26 keep initialize and their answers unchanged beside 2026-07-28 [decisions 0240]',
  'MCP-TOOL-DESCRIPTOR': 'tools/list returns MCP tool descriptors {name, description, inputSchema} [spec MCP tool descriptor, tools/list]',
  'MCP-DB-RESULT': 'A database tool result has content[0].text = JSON array of row objects (structuredContent {rows, rowCount, truncated}) [spec tools/call]',
  'MCP-CHECK-APPROVAL-STATUS':
    'check_approval_status is always listed and answers structuredContent.status not_found for an unknown approvalId [spec tools/call, Approval status]',

  // Whole-HTTP concerns (tool endpoint and REST)
  'HTTP-CONTENT-TYPE-415': 'A body with a Content-Type other than application/json is refused with 415 [spec Tool endpoint: Content-Type required]',
  'HOSTILE-BODIES-NESTING': 'Very deep JSON nesting is refused with a clear 400 and the app keeps serving [checklist Protocol: hostile bodies]',
  'HOSTILE-BODIES-PROTO': '__proto__ / constructor keys are refused or inert and pollute no prototype [checklist Protocol: hostile bodies]',
  'HOSTILE-BODIES-UTF8': 'Invalid UTF-8 in a body is refused with 400 [checklist Protocol: hostile bodies]',
  'HOSTILE-BODIES-SIZE':
    'A body larger than the configured cap (multi-megabyte strings, declared or streamed) is 413, and the next request works [checklist Protocol: hostile bodies]',

  // Authentication
  'AUTH-METHODS':
    'The tool endpoint accepts a static API key in X-API-Key and an OAuth client-credentials token as Authorization: Bearer [spec Authentication]',
  'AUTH-401-MISSING': 'A missing or invalid credential is 401 with a WWW-Authenticate Bearer challenge [spec Authentication failures; decisions Credentials]',
  'AUTH-APIKEY-REVOKE': 'A revoked API key is 401 on the very next request, on every instance [spec Authentication; checklist Authentication]',
  'AUTH-CACHE-EPOCH':
    'A cached MCP credential lookup is used only under the auth epoch it was filled under; every change to orgs, API keys or a catalog sets a new epoch before it is acknowledged, so the next request on every instance sees it [decisions MCP credential cache]',
  'AUTH-CACHE-FAIL-CLOSED':
    'Without a usable shared epoch (Redis configured but failing, or a PostgreSQL store without Redis) MCP credentials are checked in the store on every request [decisions MCP credential cache]',
  'AUTH-CACHE-TTL':
    'Cached MCP credential lookups expire after TOOLGATE_AUTH_CACHE_TTL_MS (0: no cache), only found credentials are cached, and their number is capped [decisions MCP credential cache]',
  'AUTH-CLIENT-REVOKE': 'Revoking an OAuth client ends its tokens at the next request, on every instance [decisions Credentials and tokens]',
  'AUTH-JWT-ALG-NONE': 'A JWT with alg none is 401 [checklist Authentication]',
  'AUTH-JWT-HS256-PUBKEY': 'A JWT signed HS256 with the public key as the secret is 401 [checklist Authentication]',
  'AUTH-JWT-ALG-OTHER':
    'An IdP JWT signed with an algorithm other than RS256 (e.g. RS512 under a published key) is 401 [spec BYOIDP; checklist Authentication]',
  'AUTH-JWT-SIGNATURE': 'A JWT under an unknown kid, another key with a known kid, or a tampered payload is 401 [spec BYOIDP: signed with RS256]',
  'AUTH-JWT-EXP': 'A JWT with exp missing or past is 401 [spec BYOIDP; checklist Authentication]',
  'AUTH-JWT-NBF': 'A JWT with nbf in the future is 401 [checklist Authentication]',
  'AUTH-JWT-ISS': 'A JWT whose iss is not the configured issuer is 401 [spec BYOIDP; checklist Authentication]',
  'AUTH-JWT-AUD': 'A JWT whose aud is not the configured audience is 401 [spec BYOIDP; checklist Authentication]',
  'AUTH-JWT-AUD-ARRAY': 'An aud array that contains the configured audience is accepted [checklist Authentication]',
  'AUTH-JWKS-COOLDOWN': 'A burst of tokens with unknown kid values fetches the JWKS at most once per cooldown [checklist Authentication]',
  'AUTH-JWKS-ROTATE': 'A rotated IdP key is accepted after the JWKS refresh [checklist Authentication]',
  'AUTH-JWKS-HANG': 'A slow or failing JWKS endpoint fails new kids fast while cached keys keep working [checklist Authentication]',
  'AUTH-IDP-IMMEDIATE': 'IdP tokens are accepted immediately after the BYOIDP configuration is saved; changes apply on the next request [spec BYOIDP]',
  'AUTH-IDP-MCP-ANY-TOKEN': 'On the tool endpoint any valid IdP token may call tools, whatever its role [spec REST interface: Tool endpoint any valid token]',
  'AUTH-CROSS-ORG': "Another org's IdP token, OAuth token or API key at this org's endpoint is 401 [checklist Authentication]",
  'AUTH-SLUG-ENUM':
    'An unknown org slug answers exactly like a bad credential at a known one (no org enumeration) [checklist Authorization; decisions MCP endpoint]',
  'AUTH-QUERY-STRING': 'Credentials in the query string are never accepted [checklist Authentication]',
  'AUTH-HASHED-SECRETS':
    'API keys and client secrets are stored only as hashes; the plaintext is shown once, at creation [spec Credentials; checklist Authentication]',
  'AUTH-SCOPE-MCP-CALL':
    'Scope mcp:call reaches every connector; a token without an mcp:call scope is 403 insufficient_scope on the tool endpoint [spec Scopes; decisions Credentials]',
  'AUTH-APIKEY-CONNECTORS':
    'An API key may be limited to connectors of its own org (others: 422 connector_not_found) and then reaches only those [spec Credentials]',

  // Token endpoint
  'TOKEN-ENDPOINT-ISSUE':
    'POST /oauth/token (client_credentials) answers {access_token, token_type: Bearer, expires_in: 3600, scope}; the token lives 3600 s [spec Token endpoint, Limits]',
  'TOKEN-ENDPOINT-SCOPE': 'A requested scope subset (e.g. mcp:call) is honoured in the response and the token [spec Token endpoint, Scopes]',
  'TOKEN-ENDPOINT-ERRORS':
    'A wrong secret, unknown or revoked client is 401 invalid_client; unsupported_grant_type, invalid_scope and invalid_request are 400; bodies are {error, error_description, message} [decisions Credentials and tokens (RFC 6749)]',

  // REST interface
  'REST-ROLES-MATRIX':
    "Every REST route against every kind of caller gives exactly the spec's role table; a route without a declared policy fails [spec REST interface; checklist Authorization (BFLA)]",
  'REST-METHOD-SWAP': 'A method a path does not declare is 405 with Allow, whoever asks [checklist Authorization (method swaps)]',
  'REST-BOLA':
    "Org A's credential against org B's org id, connector ids, tool ids or credential ids is 404 revealing nothing about B [checklist Authorization (BOLA)]",
  'REST-BEARER-ONLY': 'Every /api/* endpoint requires Authorization: Bearer <token>; an API key is not accepted there [spec REST interface]',
  'REST-ORG-MANAGE-SCOPE': 'A client-credentials token without org:manage is 403 insufficient_scope on /api/* [spec Authentication failures 403; decisions]',
  'REST-ERROR-BODY': 'REST errors are {error: snake_case code, message} and disclose no stack trace or file path [spec REST errors]',
  'REST-400-FIELD': 'A validation error is 400 validation_error naming the offending field [spec REST errors]',
  'REST-404-NOT-FOUND': 'An unknown resource id is 404 with a specific code (connector_not_found, tool_not_found, ...) [spec REST errors]',

  // Connectors
  'CONN-CREATE':
    'Creating a connector answers 201 with {id (uuid), name, type, status validating, allow_write, allow_ddl, created_at ISO UTC}; validation makes it active with tools [spec Connector; decisions]',
  'CONN-TYPE-UNAVAILABLE': 'A database type without a driver here is 422 connector_type_unavailable; an unknown type is 400 [decisions Connectors]',
  'CONN-DRIVER-MISSING':
    'A type whose optional client package (mongodb, mssql, oracledb) is not installed is 422 connector_type_unavailable naming the package, at creation and at validation [decisions 0221]',
  'CONN-LIST-NO-ARCHIVED': 'Archived connectors are not returned by GET /api/connectors [spec Connector]',
  'CONN-ARCHIVE':
    'DELETE /api/connectors/{id} answers {archived: true, id}; its tools leave the endpoint and stay gone after provisioning [spec Connector status]',
  'CONN-REVALIDATE': "POST /api/connectors/{id}/revalidate answers {status: 'validating', id} at once and re-runs validation [spec Connector status]",
  'CONN-PATCH-ALLOW-WRITE': 'PATCH allow_write / allow_ddl on a database connector changes what calls may do [spec Connectors PATCH]',
  'CONN-PATCH-REVALIDATES': 'PATCH of config or credential re-validates the connector (failed when broken, active when fixed) [decisions Connectors]',
  'CONN-CREDENTIAL-HIDDEN': 'A connector credential is never returned, never in a status reason, and sealed at rest [spec Connector; decisions Store]',

  // Tools and tool settings
  'TOOLS-REST-FIELDS':
    'GET /api/mcp/{orgId}/tools lists each tool with the spec fields (id, tool_name, enabled, requires_approval, ...) and their defaults; ?connector_id= filters to one connector [spec Tool, Provisioning and tools]',
  'TOOLS-DISABLED-HIDDEN': 'A disabled tool is hidden from tools/list and cannot be called [spec What the service does 5]',
  'TOOLS-OVERRIDES': 'tool_name_override / tool_description_override change what agents see; clashes are 409 [spec Tool settings; decisions]',
  'TOOLS-SCOPE-FILTER': 'tools/list lists only the tools of the connectors the credential may use [spec tools/list]',
  'TOOLS-APPROVAL-SETTINGS': 'requires_approval, approval_ttl_seconds and approval_emails are stored and returned; out-of-range values are 400 [spec Tool]',
  'TOOLS-READ-ONLY': 'read_only on a tool of a write-allowed connector refuses writes [spec Tool settings]',
  'TOOLS-NAMING': 'Database tools are named query_<type>_<table>, sanitised and unique within the org [spec Tool; decisions Tool names]',
  'TOOLS-BULK':
    'PATCH /api/mcp/{orgId}/tools enables or disables many tools at once: all or nothing, one audit row tools.bulk_updated [issue 38 item 3; decision 0304]',
  'TOOLS-LIST-PAGES':
    'tools/list pages with cursor/nextCursor in a stable order; a stale or foreign cursor is -32602 [MCP pagination; issue 38 item 5; decision 0305]',
  'TOOLS-CONNECTOR-NAMED':
    'Every tool description ends naming its connector; a second connector with the same table gets a name derived from its own name, never a bare _2 [issue 38 item 5; decision 0305]',
  'CONN-TABLE-FILTER':
    'include_tables / exclude_tables (globs over schema.table, exclude wins) decide which tables become tools; bad patterns are 400 [issue 38 item 3; decision 0303]',
  'TOOLS-WITHDRAWN':
    'A tool row whose table (or upstream tool) is no longer served is withdrawn, never deleted: served nowhere (tools/list, tools/call, joins, REST, tool count, held calls), and back with every setting and its policy when served again; a table taking its name gets a row of its own [decision 0405]',
  'TOOLS-MULTI-INSTANCE': 'A tool setting changed on one instance applies on the next request on every instance [decisions Tool settings]',

  // SQL guard and database execution
  'SQL-SELECT-ONLY': 'Without write permission only SELECT is permitted; INSERT/UPDATE/DELETE/DDL are refused [spec tools/call: only SELECT permitted]',
  'SQL-STACKED':
    'Stacked statements that end the read-only transaction (COMMIT / END / SET ... READ WRITE), with or without leading comments, are refused and the table survives [checklist SQL]',
  'SQL-WRITABLE-CTE': 'Writable CTEs are refused on a read-only tool [checklist SQL]',
  'SQL-SELECT-INTO': 'SELECT ... INTO is refused [checklist SQL]',
  'SQL-EXPLAIN-ANALYZE': 'EXPLAIN ANALYZE <dml> is refused [checklist SQL]',
  'SQL-FOR-UPDATE': 'SELECT ... FOR UPDATE (row locks) is refused without write permission [checklist SQL]',
  'SQL-MYSQL-OUTFILE': 'MySQL INTO OUTFILE / DUMPFILE is refused [checklist SQL]',
  'SQL-MYSQL-EXEC-COMMENT': 'MySQL /*! ... */ executable comments are refused [checklist SQL]',
  'SQL-COPY-PROGRAM': 'COPY ... TO PROGRAM is refused [checklist SQL]',
  'SQL-SIDE-EFFECT-FUNCS': 'File and side-effect functions (pg_read_file, lo_export, setval, dblink_exec, LOAD_FILE, sleep) are refused [checklist SQL]',
  'SQL-OTHER-TABLE':
    "A query that references a table outside its connector's exposed tables is refused, and a write touches only its tool's table (a read may JOIN the connector's other tables, each governed by its own tool: decision 0292) [checklist SQL]",
  'SQL-PG-RESOLUTION':
    'PostgreSQL: a statement the server resolves to a function off the allow-list (attribute notation, also to built-ins), a user operator, cast, type or domain, a user function shadowing a built-in, or another relation is refused before it runs, and the function never runs [issue 7; decisions PostgreSQL: a tool reads only its own table]',
  'SQL-PG-CATALOGS':
    'PostgreSQL: no pg_catalog or information_schema relation or statistics view is readable through a tool, however the name is written; a user table named like a catalog relation reads the user table [issue 7]',
  'SQL-PG-ROWTYPE-ORACLE':
    'PostgreSQL: only built-in scalar type names may be named (no row types, domains, reg* types) and pg_typeof is refused, so another relation cannot serve as a metadata oracle [issue 7]',
  'SQL-ONE-STATEMENT-PROTOCOL':
    'Even past the guard, the protocol runs one statement and a read session cannot write [checklist SQL; decisions How reads stay read-only]',
  'SQL-CANCEL-DISCONNECT':
    'A client that disconnects mid-call has its statement cancelled on the server within a second; no pool slot is lost and the next calls are served at once [checklist Limits, SQL; issue 26]',
  'SQL-CANCEL-QUEUED': 'A caller that leaves while its call waits for a connector slot gives its place up at once and nothing runs [checklist SQL; issue 26]',
  'SQL-CANCEL-NEXT-SAFE': 'A cancel sent for an abandoned call, at any moment, never reaches the next statement on that connection [checklist SQL; issue 26]',
  'SQL-TIMEOUT': 'A runaway query is cancelled at the statement timeout, killed on the server, and the pooled connection is clean afterwards [checklist SQL]',
  'SQL-ROW-CAP': 'Results are capped at the row limit with a truncation marker [checklist SQL]',
  'SQL-BYTE-CAP': 'Results are capped at a byte cap with a truncation marker [checklist SQL]',
  'SQL-LIMIT-ARG': 'The database tool inputSchema has required sql (string) and limit (integer, default 100, maximum 1000) [spec tools/call, Limits]',

  // Limits
  'LIMIT-PLAN-FIGURES':
    'Plans carry the spec figures (starter 20,000/20, growth 50,000/50, scale unlimited/100); enterprise and standalone get their custom burst [spec Limits]',
  'LIMIT-BURST-429': 'Over the burst limit a call gets HTTP 429 with an integer Retry-After of at least 1; the next second admits again [spec Errors, Limits]',
  'LIMIT-BURST-MULTI-INSTANCE': 'N+1 concurrent calls against a limit of N spread over several instances: exactly N pass [checklist Limits]',
  'LIMIT-REDIS-DOWN': 'With Redis down burst limiting falls back to a per-instance limiter, with no 5xx [checklist Limits]',
  'LIMIT-QUOTA-NO-OVERSHOOT': 'Concurrent calls at quota-1 on several instances do not overshoot the monthly quota [checklist Limits]',
  'LIMIT-QUOTA-BATCHED':
    'The quota consumptions of one event-loop turn are counted by one store statement for all their orgs and periods, each granted up to its quota in arrival order [decisions Quota increments by group commit]',
  'LIMIT-QUOTA-ROLLOVER': 'The monthly quota rolls over at the period boundary [checklist Limits]',
  'LIMIT-AUTH-FAILURES':
    'Failed authentications on /oauth/token and console sign-in are limited per client id and per source address across instances: 429 with an integer Retry-After of at least 1 [checklist Limits]',
  'LIMIT-AUTH-NO-LOCKOUT':
    'Failures from other addresses never lock a client out at an address it signed in from; the per-client cap only slows, and expires [checklist Limits; decisions 2026-11-26 sign-in limits]',
  'LIMIT-REST-PER-CREDENTIAL':
    'REST calls are limited per credential by plan across instances: N+1 concurrent calls against a limit of N pass exactly N, the rest 429 with Retry-After [checklist Limits; spec Errors]',
  'LIMIT-MCP-429-JSONRPC': 'On the MCP endpoint a 429 carries a JSON-RPC error (-32029) with the request id and Retry-After [checklist Limits]',
  'LIMIT-LIST-NOT-COUNTED': 'Only tools/call counts against the monthly quota; tools/list does not [spec Limits]',

  // Outbound requests (JWKS URIs today)
  'OUTBOUND-SSRF':
    'Outbound targets in loopback, private, link-local or metadata ranges, in any spelling or by a DNS name that resolves there, are refused at save and at send unless an operator allow-list names them [checklist Outbound requests]',
  'OUTBOUND-REDIRECT': 'Outbound redirects are refused, not followed [checklist Outbound requests]',
  'OUTBOUND-TIMEOUT-SIZE': 'An outbound request that hangs times out; a body above the size cap is refused [checklist Outbound requests]',

  // Provisioning, docs, audit
  'PROVISION-STATUS':
    'An onboarded org is provisioned; GET /api/mcp/{orgId}/status answers {status, endpoint (absolute URL), toolCount} [spec What the service does 6, Provisioning and tools]',
  'PROVISION-MANUAL':
    'Provisioning can be triggered manually (POST /api/mcp/{orgId}/provision) and answers the status [spec What the service does 6; decisions]',
  'DOCS-OFFLINE': 'The explorer at /docs renders the REST operations with no request leaving the machine [spec What the service does 8]',
  'CONTRACT-RESPONSES':
    'Every response of the suite is checked against openapi.yaml (declared status, media type, body schema, declared headers); a drift fails the test [issue 8; decisions Contract tests]',
  'AUDIT-MANAGEMENT-ROW': 'A management change writes an audit row naming the actor [checklist Audit; decisions Not built yet]',
  'AUDIT-HELD-OUTCOME': 'A held call is audited with outcome held, not success [issue 26 item 9; checklist Audit]',
  'USAGE-COUNTED-CALLS':
    'A counted tool call is a tools/call (immediate or approved) that reached its connector; guard-refused calls are not counted, and usage by connector adds up to the total [spec Limits; issue 26 item 9]',
  'AUDIT-ROW-MAC':
    'Only rows the gateway wrote enter the audit chain: a row inserted or altered in the store without the key is refused by every sealer, reported, named by verify and not listed as genuine [issue 26 item 5]',

  // Approvals (issue 9)
  'APPROVAL-HELD-RESULT':
    'tools/call of a flagged tool is not executed; the result is {content:[text naming check_approval_status], structuredContent:{status: pending_approval, approvalId}, isError:false} and a pending row is stored [spec tools/call Flagged tool result, Approval status]',
  'APPROVAL-ROW-FIELDS':
    'An approval carries id, tool_name, status, arguments, requested_by, decided_by, decided_at, approver_emails, created_at, expires_at (= created_at + approval_ttl_seconds) [spec Approval]',
  'APPROVAL-POLL-STATUS':
    'check_approval_status reports pending, executed (with the tool result), rejected, expired, failed; another org or a credential that could not call the tool gets not_found [spec tools/call Polling; decisions]',
  'APPROVAL-LIST': 'GET /api/org/approvals filters by status, limit defaults to 200 and is capped at 500, newest first [spec Approvals, Limits]',
  'APPROVAL-APPROVE-EXECUTES':
    'approve runs the held call server-side with the held arguments, records decided_by/decided_at and answers {ok: true, status: executed, result} [spec Approvals, Approval status]',
  'APPROVAL-REJECT': 'reject answers {ok: true, status: rejected}, records decided_by/decided_at, and the call never runs [spec Approvals]',
  'APPROVAL-409-NOT-PENDING': 'approve or reject of an approval that is not pending is 409 approval_not_pending [spec Approval status, Errors]',
  'APPROVAL-404':
    "An unknown approval id, or another org's, is 404 approval_not_found on approve and reject, and absent from the list [spec Approvals; checklist Authorization (BOLA)]",
  'APPROVAL-APPROVER-CHECK':
    'A user token whose e-mail is not a listed approver is 403; client-credentials tokens with org:manage skip the list [spec REST interface: Approve and reject]',
  'APPROVAL-NO-SELF-APPROVAL':
    "An agent's own credential (API key, MCP-only token, or the very credential that requested the call) can never approve or reject it [issue 9; checklist Authorization]",
  'APPROVAL-EXPIRY':
    'A pending approval becomes expired at expires_at (not a millisecond before), lazily on read and by the sweeper, and can then no longer be approved (409) [issue 9; decisions]',
  'APPROVAL-EXACTLY-ONCE':
    'Two approves sent at the same moment to two instances sharing one PostgreSQL run the call once: one gets the result, the other 409 [checklist Authorization; issue 9]',
  'APPROVAL-CRASH-RECOVERY': 'An approval left executing by a dead instance is marked failed by the recovery sweep and never re-executed [issue 9; decisions]',
  'APPROVAL-DIGEST':
    'The held call is bound to an HMAC digest of tool and arguments; a held call altered in the store fails closed at execution and nothing runs [issue 9; decisions]',
  'APPROVAL-POLICY-RECHECK':
    'At execution the tool must still be enabled, its connector live, and the requesting credential not revoked; otherwise the approval fails closed with a clear reason [issue 9; decisions]',
  'APPROVAL-EXECUTION-FAILED':
    'An approved call whose tool reports an error ends failed, with the reason in the approve response and in check_approval_status [issue 9; decisions]',
  'APPROVAL-AUDIT-EVENTS':
    'approval.requested and approval.decided go through the domain events module; approval.approved / approval.rejected audit rows commit in the decision transaction [spec Events, Audit; issue 9]',
  'APPROVAL-QUOTA':
    'Holding a call does not count against the monthly quota; the approved execution counts once, and a used-up quota fails the approval without running it [decisions Limits]',
  'APPROVAL-MCP-SDK-POLL':
    'The official MCP SDK client gets pending_approval for a flagged tool and polls check_approval_status until executed [spec tools/call Polling]',
  // External MCP servers as tools (connector type mcp, issue 12)
  'MCPC-VALIDATE': 'An mcp connector is validated with initialize + tools/list against the upstream; it turns active and its tools join the catalog [issue 12]',
  'MCPC-NAMES': 'Upstream tools are named <connector>__<tool>, sanitised to [a-z0-9_], at most 64 characters, collisions suffixed [decisions MCP connectors]',
  'MCPC-SDK-CALL': 'The official MCP SDK client lists and calls upstream tools through the gateway, arguments validated against their schemas [issue 12]',
  'MCPC-PASSTHROUGH': 'Upstream content (text, images, structured content) is passed through within the caps [issue 12]',
  'MCPC-NO-TOKEN-PASSTHROUGH':
    "The caller's Authorization / X-API-Key / cookies never reach the upstream; the connector's sealed credential does [issue 12; MCP token passthrough]",
  'MCPC-UPSTREAM-ERRORS': 'Upstream tool errors are tool results with isError [issue 12]',
  'MCPC-TIMEOUT': 'An upstream call ends at the per-call timeout with a tool error, without holding up other calls [issue 12]',
  'MCPC-CONCURRENCY': 'Calls on one upstream are bounded by the per-connector cap (busy past it); other connectors are not held up [issue 12]',
  'MCPC-SIZE-CAP': 'An upstream answer over the result-size cap is refused with a tool error [issue 12]',
  'MCPC-SCOPES': 'Connector scopes apply to upstream tools (-32003, not listed) [issue 12]',
  'MCPC-APPROVALS': 'A flagged upstream tool is held for approval and runs on the upstream only once approved [issue 12]',
  'MCPC-MANAGED': 'Upstream tools are enabled/disabled like database tools [issue 12]',
  'MCPC-PRIVATE-REFUSED':
    'Without the operator allow-list, private/loopback/metadata upstreams and plain http are refused before any request [issue 12; checklist SSRF]',
  'OUTBOUND-DB-SAVE':
    'A database connector whose host is outside the outbound policy (loopback, private, link-local, metadata, unspecified, multicast, in every spelling, or a name resolving there) is refused at create and update with 422 connector_target_refused [issue 26]',
  'OUTBOUND-DB-CONNECT':
    'Every database connection is checked at connect time and made to the checked address: a DNS change after saving cannot redirect it [issue 26]',
  'OUTBOUND-ALLOW-CIDR':
    'TOOLGATE_OUTBOUND_ALLOW_HOSTS takes host, host:port and CIDR entries and opens private targets for database connectors too; never link-local/metadata [issue 26]',
  'OUTBOUND-NEVER-SELF': "The gateway's own listening port and its store database are refused as targets even when allow-listed [issue 26]",
  'OUTBOUND-NO-SCANNER': 'A refused target answers the same whatever is there (open port, closed port, name that does not resolve) [issue 26]',
  'OUTBOUND-HTTP-PINNED':
    'HTTP fetches (webhooks, MCP upstreams, JWKS, OIDC) connect to the checked address, the name kept in Host and TLS server name [issue 26]',
  'DEMO-SAMPLE-PRIVATE': "The demo's sample database has no network listener; only the demo org's connector reaches it [issue 26]",
  'MCPC-NO-REDIRECT': 'An upstream redirect is refused, not followed [issue 12]',
  'MCPC-CONFIG': 'mcp config is checked against the contract McpConfig (400); reserved headers (Authorization...) are refused [decisions MCP connectors]',
  'MCPC-DOWN-RECOVER': 'An unreachable upstream fails the connector with a clear reason and its calls are tool errors; revalidate recovers [issue 12]',
  'MCPC-EVERYTHING': 'The reference server @modelcontextprotocol/server-everything (streamable HTTP) works through the gateway [issue 12]',
  'MCPC-TOOL-ONE-BY-ONE':
    "Each upstream tool is checked on its own (name per MCP rules, description cleaned and capped, input schema an object schema within size and depth caps, self-contained, compilable, count cap): the bad ones are skipped and listed with a reason in the connector's skipped_tools, the connector turns active and serves the rest [issue 26]",
  'MCPC-TOOL-SCHEMAS': 'Upstream input schemas are checked as JSON Schema and size-capped; a tool whose schema fails is left out [issue 12]',

  // Webhooks (issue 11)
  'WEBHOOK-CRUD': "Admins list, create, change and delete webhooks; bad input is 400, another org's webhook 404 [spec Webhooks]",
  'WEBHOOK-SECRET-ONCE': 'A webhook secret appears only in the creation response and is sealed at rest [spec Webhook; issue 11]',
  'WEBHOOK-URL-GUARD':
    'Webhook URLs must be https and pass the outbound guard at save and at every send (a DNS name resolving to 127.0.0.1 too) [issue 11; checklist Outbound requests]',
  'WEBHOOK-DELIVERIES': 'GET /api/org/webhooks/{id}/deliveries lists attempts with status code, latency and error [issue 11]',
  'WEBHOOK-RESEND': 'One event can be re-sent to a webhook, with the same id [issue 11; decisions Webhooks]',
  'WEBHOOK-SIGNATURE':
    'A delivery carries the spec body and X-Service-Signature/Timestamp/Event (and Standard Webhooks headers), verified independently [spec Events]',
  'WEBHOOK-RETRY':
    'A failed delivery is retried with backoff and the same event id until 2xx; 3xx is not followed; 410 disables the endpoint [issue 11; decisions Webhooks]',
  'WEBHOOK-OUTBOX':
    "Events are written to the outbox in the emitter's transaction and delivered after a crash and restart; several instances deliver each event once [issue 11]",
  'WEBHOOK-ISOLATION': 'A hanging receiver does not stall deliveries to other endpoints [issue 11]',
  'WEBHOOK-APPROVAL-EVENTS':
    'Holding a flagged call and deciding it deliver approval.requested and approval.decided, without the call arguments [spec Events; issue 11]',
  'WEBHOOK-TOOL-CALLED': 'tools/call of an org with a tool.called webhook delivers a tool.called event; an org without one writes no outbox row [issue 11]',
  'WEBHOOK-TOOL-CALLED-RELAY':
    "The tool call's audit row is the outbox record of tool.called: tools/call writes nothing for webhooks; the relay turns sealed rows into events (id evt_<audit row id>, the documented data) and deliveries and moves its cursor in one transaction (all or nothing); calls committed with no relay running are delivered later; several relays deliver each call once; no backfill before an endpoint takes tool.called; disabled endpoints get nothing [issue 11]",

  // Audit trail and billing (issue 10)
  'AUDIT-TOOL-CALL':
    'Every tools/call writes exactly one tool.called row (tool, connector, credential, outcome, duration, rows), never argument values or SQL [issue 10]',
  'AUDIT-DURABLE-BEFORE-RESULT':
    'The tool-call row is committed before the result is answered; if it cannot be written the call fails and the result is withheld [issue 10]',
  'AUDIT-REFUSALS': 'Refusals (401, 403, 429, -32003, -32000) are recorded with the reason and the key prefix, never the secret [issue 10]',
  'AUDIT-CHAIN':
    "Each org's rows form a hash chain; editing, deleting or truncating rows is detected and the first broken row named, also by `toolgate audit verify` [issue 10]",
  'AUDIT-LIST':
    'GET /api/audit: newest first, limit 1-200 (default 50), action exact or prefix ending with a dot, days, cursor pagination [spec Audit; issue 10]',
  'AUDIT-ORG-ISOLATION': "An org's audit list and export never contain another org's rows [issue 10]",
  'AUDIT-EXPORT-REDACT':
    'GET /api/audit/export-json streams the whole log; with redact=true no SQL, argument digests, secrets, e-mail or IP addresses appear [spec Audit; issue 10]',
  'AUDIT-RETENTION': 'Retention removes old rows with a checkpoint and the chain still verifies [issue 10]',
  'AUDIT-APPROVALS': 'approval.requested events become audit rows in the emitter transaction [issue 10]',
  'OPERATOR-PLAN-CHANGE':
    "An operator's plan change makes the subscription active, applies its limits on the next request (cached lookups dropped) and is audited org.plan_changed [issues 31, 32; decisions 0210]",
  'OPERATOR-SUSPEND':
    "A suspended org's credentials are refused: MCP and /api/* 403 org_suspended, /oauth/token 400 unauthorized_client; resuming restores them; both audited [issue 32; decisions 0210]",
  'OPERATOR-CLI':
    'Every operator task has a CLI command with --json, a one-line error and a documented exit code, through the operator API or offline on the store [issue 32]',
  'AUDIT-SEAL':
    "Hot-path rows are sealed into their org's chain by their writer from memory (same hash as verify recomputes) or, if it stopped, by any instance's orphan sweep or start; concurrent sealers never leave a gap or seal a row twice; a seal meeting rows sealed elsewhere rolls back whole [issue 14]",
  'GUARD-PARSER-MEMORY':
    "The PostgreSQL guard's parser (libpg-query's binary) starts with the memory its stack and data need plus 4 MB, not the 128 MB it declares, grows when a parse needs more, and answers exactly what the package's own functions answer [decisions issue 14, round four]",
  'AUDIT-FLOOD':
    'Refusals go to a bounded queue; when full they are counted (audit.denials_dropped) and tool calls are not held up; a full tool-call queue refuses calls before they run [issue 10]',
  'BILLING-ENDPOINTS':
    'GET /api/billing/subscription, usage and limits answer for the finance role; usage is the quota counter, also under concurrency across instances [spec Billing; issue 10]',
  'BILLING-CONNECTOR-LIMIT': "Creating a connector beyond the plan's limit is 409 connector_limit_reached, also under concurrent creation [issue 10]",
  'BILLING-TRIAL-EXPIRY': 'From trial_expires_at on, tools/call is -32000 and the subscription reads expired; before it, calls run [issue 10]',
  'CONSOLE-SIGNIN-CLIENT':
    'The console at /console signs in with an OAuth client id and secret that carries org:manage; a client without it is refused [issue 13]',
  'CONSOLE-SIGNIN-IDP':
    "The console signs users in with the org's IdP by OpenID Connect authorization code + PKCE (state, nonce, ID token checked), tested against a real OpenID provider [issue 13]",
  'CONSOLE-ROLES':
    'A console user gets the role REST gives the same token (same claim rules); the console lists only the pages that role may use, and REST still enforces it [issue 13]',
  'CONSOLE-SESSION':
    'Console sessions are server-side behind an HttpOnly SameSite=Strict cookie, CSRF-checked, ended by logout, bounded by the token lifetime, fixed to a fresh id at sign-in [issue 13]',
  'CONSOLE-ORIGIN':
    "A console call with a foreign Origin or Origin: null is HTTP 403 forbidden_origin before any session, body or sign-in is looked at (the MCP endpoint's Origin policy); the gateway origin and no Origin pass [issue 26]",
  'CONSOLE-HARDENING':
    'Console pages carry a CSP without inline script, frame-ancestors none and X-Frame-Options DENY; sign-in return targets are page names (no open redirect); a foreign or replayed state is refused [issue 13]',
  'CONSOLE-PAGES':
    'Overview, Connectors, Tools, Approvals, Audit, API keys and OAuth clients, Identity provider, Webhooks and Billing pages work on the generated REST client [issue 13]',
  'CONSOLE-E2E':
    'In Chromium: a PostgreSQL connector becomes active, a disabled tool leaves tools/list, a held call is approved in the inbox with its result, a revoked API key gets 401 on the next MCP call [issue 13]',
  'CONSOLE-OFFLINE': 'The console loads no asset from another host and builds its bundle itself (no build step after npm install) [issue 13]',

  // MongoDB, SQL Server and Oracle connectors (issue 16)
  'CONN-MONGODB-GUARD':
    "MongoDB tools accept a find (filter/projection/sort/limit) or an aggregate whose stages and operators are on allow-lists; $out, $merge, $where, $function, $accumulator and any unlisted stage/operator/system variable are refused, and $lookup/$unionWith/$graphLookup only reach the tool's own collection [issue 16]",
  'CONN-MSSQL-GUARD':
    "SQL Server tools accept one SELECT over the tool's own table (sqlparser MsSql dialect, T-SQL lexer): allow-listed built-ins only; writes, other tables, catalogs, variables, SELECT INTO, FOR XML/JSON, hints, OPENROWSET and stacked batches are refused [issue 16]",
  'CONN-ORACLE-GUARD':
    "Oracle tools accept one SELECT over the tool's own table (sqlparser Oracle dialect, stricter lexer): allow-listed built-ins only; writes, other tables, database links, packages, session keywords, q-quotes and FOR UPDATE are refused [issue 16]",
  'CONN-ORACLE-NAMES':
    "Oracle: every name without parentheses resolves as the server resolves it, to a column of a FROM item in scope (the tool's table by introspection, DUAL, CTEs and inline views by their select lists; ON sees the items joined so far; select-list aliases only in ORDER BY), or to an allow-listed pseudo-column; anything else (a parameterless function call, package.function) is refused [issue 26]",
  'CONN-NEW-TYPES-REST':
    'mongodb, mssql and oracle connectors can be created over REST; against an unreachable host they go failed with a readable reason that never contains the password [issue 16]',
  'CONN-NEW-TYPES-LIVE':
    'Against a live MongoDB / SQL Server / Oracle (TOOLGATE_TEST_*_URL), a connector introspects one tool per collection/table, answers a read within the row cap, refuses a write, and a long query is cancelled at the statement timeout [issue 16]',
  'OPS-METRICS':
    'GET /metrics: HTTP requests by route/method/status, MCP requests by method/outcome, tool calls by type/outcome with latency histograms, connector pool use and queue wait, guard, burst and quota refusals, Redis fallback, audit and outbox depth, webhook outcomes, process memory and event-loop lag [issue 15]',
  'OPS-METRICS-HOT':
    "Counters and histograms on hot paths cost one addition per count (no label object per call) and export exactly what prom-client's Counter and Histogram export for the same observations [issue 14]",
  'OPS-METRICS-GUARD': 'GET /metrics answers only the operator token (401 otherwise) [issue 15]',
  'OPS-METRICS-CARDINALITY':
    'No metric label carries an org id, slug, tool name, credential, SQL or caller-chosen method: every label value is from a fixed set [issue 15]',
  'OPS-LOG-LINE':
    'One JSON log line per request with request id (traceparent trace id or a well-formed X-Request-Id, else new), org id, caller kind and prefix, outcome and duration [issue 15]',
  'OPS-LOG-NO-SECRETS': 'Request log lines hold no secret, SQL text or argument value [issue 15]',
  'OPS-TRACE-OTLP':
    "With OTEL_EXPORTER_OTLP_ENDPOINT set, spans for the request, authentication, MCP method, driver call and guard reach an OTLP/HTTP receiver with the right parents, under the caller's traceparent [issue 15]",
  'OPS-TRACEPARENT-W3C':
    'A traceparent is adopted (as request id and span parent) only when W3C Trace Context allows it: no version ff, version 00 exactly 55 characters, lowercase hex, no all-zero ids, a higher version read forward-compatibly; otherwise ignored [issue 26]',
  'OPS-READYZ':
    '/readyz: 200 when the store answers and is migrated, Redis reported (ok, fallback, not_configured) but not fatal; 503 while shutting down [issue 15]',
  'OPS-SHUTDOWN':
    'SIGTERM: /readyz turns 503, new connections are refused, in-flight calls finish within the deadline, pools and the data folder are released, exit 0 [issue 15]',
  'OPS-SCALE-OUT':
    "Three instances on one PostgreSQL and Redis behind a round-robin proxy, one SIGKILLed mid-load: no lost or duplicated audit rows or approvals, burst and quota exact, only the killed instance's in-flight calls fail [issue 15]",
  'OPS-STORE-ROLE': 'The store works under a least-privilege PostgreSQL role (no superuser, no CREATEDB/CREATEROLE, owner of its database only) [issue 15]',

  // Found while merging the issues of 2026-11-24
  'STORE-LOCK-ORDER':
    'Concurrent connector creations and audited changes on one org never deadlock into a 500 (no FOR UPDATE on the org row against foreign-key checks) [standards: bad input loses nothing; issue 10]',
  'LOG-ERROR-NO-PARAMS':
    'A store failure is logged with the server error first and without the statement parameters [security checklist: no credential in logs]',

  // Issue 40 items 6 and 7
  'MCPAUTH-REDIRECT-URI-RULE':
    "Every source of a client's redirect URIs (metadata document, registration, pre-registration, a stored row at use) passes one rule: https, or http on loopback, or a private-use scheme with a dot; no fragment, user info or dangerous scheme; a refused redirect_uri gets a page, never a redirect [issue 40 item 7a; decision 0363]",
  'MCPAUTH-TOKEN-AUDIENCE':
    "A signed-in access token is accepted only at the MCP endpoint its aud names: another org's resource, another audience or none -> 401 with the endpoint's resource_metadata [issue 40 item 7b; RFC 8707; decision 0364]",
  'AUTH-ERRORS-POINT-THE-WAY':
    'An IdP refused for plain http or a private address names TOOLGATE_OUTBOUND_ALLOW_HOSTS; an API key sent as Authorization: Bearer is told to use X-API-Key, without the key echoed [issue 40 item 6; decision 0365]',

  // Issue 40 item 3: passkeys of members (decision 0380)
  'PASSKEY-REGISTER':
    "A signed-in member registers a discoverable passkey (resident key, user verification required) whose RP ID is the public URL's host and whose origin is its origin exactly; also while following an invitation link [issue 40 item 3; decision 0380]",
  'PASSKEY-MANAGE-OWN':
    'A member lists, renames and removes their own passkeys through the contract (generated client, console; the CLI for the operator); no key material is shown [issue 40 item 3; decision 0380]',
  'PASSKEY-SIGN-IN':
    "A passkey signs a member in, usernameless, on the console and on the org's MCP sign-in page, under the failed-sign-in limits, audited as the member with method passkey [issue 40 items 3-4; decision 0380]",
  'PASSKEY-CHALLENGE-ONCE':
    "A ceremony's challenge is kept in the store as a hash, bound to what asked for it, short-lived, and works once on any instance sharing the store [issue 40 item 3; decision 0380]",
  'PASSKEY-REFUSALS':
    "A replayed challenge, another origin, another org's passkey, a removed passkey: one answer that says nothing more [issue 40 item 3; decision 0380]",
  'PASSKEY-OPTIONS-LIMITED':
    "Passkey options written for nobody signed in yet (the console's sign-in, the org's MCP sign-in page) are a few per second per source address: a flood of page renders stores at most that many challenges [decision 0380]",
  'PASSKEY-COUNTER': 'A signature counter that does not move forward (a cloned authenticator) is a refused sign-in [decision 0380]',
  'PASSKEY-ADMIN-REMOVE':
    "An admin (not a contributor) lists and removes a member's passkeys; another org's member is not found [issue 40 item 3; decision 0380]",
  'PASSKEY-REMOVAL-ENDS-SESSIONS':
    'Removing a passkey ends the console sessions signed in with it and revokes the MCP grants made with it, on every instance; other sessions stay [decision 0380]',
  // Issue 40 item 2 and 3: mail and password reset (decisions 0385, 0386)
  'MAIL-SMTP-CONFIG':
    'TOOLGATE_SMTP_URL (smtp:// or smtps://), TOOLGATE_SMTP_FROM and TOOLGATE_SMTP_TIMEOUT_MS are checked at start, the messages never repeat the URL, and the URL is printed only without its user and password [issue 40 item 2; decision 0385]',
  'MAIL-MEMBER-LINKS':
    'Where SMTP is configured, an invitation and an admin-issued reset link also go by mail to the member (after the answer, which still shows the link once), and the mailed link works [issue 40 item 2; decision 0385]',
  'MAIL-FAILURE-ANSWER-UNCHANGED':
    'An SMTP server that refuses connections or hangs changes no answer; the failure is logged with its class, never the link, a token or the address [issue 40 item 2; decision 0385]',
  'MEMBER-FORGOT-PASSWORD':
    'POST /members/password-reset answers the same (202, same body, comparable time) for a member and an unknown e-mail; only an active member gets a mail, with a one-time link valid 30 minutes that sets a new password and ends the old password and sessions [issue 40 item 3; decision 0386]',
  'MEMBER-FORGOT-PASSWORD-LIMITS':
    'Forgot-password requests go through the door limits (per e-mail and address, per address, per e-mail; 429 with Retry-After) and a member gets at most 3 reset mails an hour; without SMTP the request is refused with mail_not_configured [issue 40 item 3; decision 0386]',
  'MEMBER-SECRETS-NOT-LOGGED':
    'No link token, password or password hash appears in a log line, an audit row or an export, mail failures included [issue 40 acceptance]',
  'MEMBER-SUSPENDED-REFRESH-EVERY-INSTANCE':
    "A suspended member's MCP refresh token is refused (invalid_grant) at the next use on another instance sharing the PostgreSQL store [issue 40 acceptance]",
  'MEMBER-SIGN-IN-UNIFORM':
    'A wrong password, an unknown e-mail, an unknown org and an invited member without a password get one sign-in answer in comparable time (each takes a hash) [issue 40 item 3; decision 0368]',
} as const;

export type RequirementId = keyof typeof REQUIREMENTS;

/** Ids cited by tests that really ran in this process, and ids whose only tests cannot run here, with the reason. */
interface RunRecord {
  verified: Set<string>;
  notRunHere: Map<string, string>;
}

/** One record per test process, shared by every test file through the global object (bun runs all files in one process). */
function runRecord(): RunRecord {
  const key = Symbol.for('toolgate.requirements.run');
  const holder = globalThis as unknown as Record<symbol, RunRecord | undefined>;
  holder[key] ??= { verified: new Set(), notRunHere: new Map() };
  return holder[key];
}

function checkIds(ids: readonly string[]): void {
  for (const id of ids) if (!Object.hasOwn(REQUIREMENTS, id)) throw new Error(`unknown requirement id ${id}`);
}

/**
 * Cites the requirements a test verifies. Call it inside the test body: the citation counts only when the test runs
 * (test/setup.ts checks, after a full run, that every requirement was cited by a test that ran), and
 * test/requirements.test.ts also finds the citations statically. The type makes an unknown id a compile error.
 */
export function verifies(...ids: RequirementId[]): void {
  checkIds(ids);
  for (const id of ids) runRecord().verified.add(id);
}

/**
 * Declares, at the top of a suite that is skipped because a server it needs is missing, the requirements it would
 * have verified and why they cannot be verified in this run. They are reported, not counted as covered.
 */
export function notVerifiableHere(reason: string, ...ids: RequirementId[]): void {
  checkIds(ids);
  for (const id of ids) runRecord().notRunHere.set(id, reason);
}

/** A run record as plain JSON, for a parallel run whose test files each run in a worker process of their own. */
export interface RunRecordJson {
  verified: string[];
  notRunHere: [string, string][];
}

/** This process's record as JSON (test/setup.ts writes it to TOOLGATE_REQUIREMENTS_DIR after each file). */
export function runRecordJson(): RunRecordJson {
  const record = runRecord();
  return { verified: [...record.verified], notRunHere: [...record.notRunHere] };
}

/** Requirements no test that ran has cited, over the records of every process of the run, split by whether a missing server explains it. */
export function uncoveredAcross(records: readonly RunRecordJson[]): { missing: string[]; notRunHere: [string, string][] } {
  const verified = new Set(records.flatMap((record) => record.verified));
  const notRunHere = new Map(records.flatMap((record) => record.notRunHere));
  const uncited = Object.keys(REQUIREMENTS).filter((id) => !verified.has(id));
  return {
    missing: uncited.filter((id) => !notRunHere.has(id)),
    notRunHere: uncited.filter((id) => notRunHere.has(id)).map((id) => [id, notRunHere.get(id)!]),
  };
}

/** After a full run in one process: requirements no test that ran has cited, split by whether a missing server explains it. */
export function uncoveredAfterRun(): { missing: string[]; notRunHere: [string, string][] } {
  return uncoveredAcross([runRecordJson()]);
}
