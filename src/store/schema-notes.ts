/**
 * What the database catalog cannot say about the store's tables, for the generated Drizzle schema
 * (generated/store-schema.ts, written by `bun scripts/gen.ts` from what migrations.ts creates): the TypeScript type of
 * each jsonb column (Record<string, unknown> when not listed here) and a note per table or column, written into the
 * generated module as its doc comment. No schema fact lives here: tables, columns, types, nullability, defaults, keys
 * and indexes come from the migrations alone. A key that names no table or column of the migrated store fails the
 * generator, so a note cannot outlive its column.
 */

/** The TypeScript type of a jsonb column, by `table.column`. */
export const JSONB_TYPES: Record<string, string> = {
  'connectors.skipped_tools': '{ name: string; reason: string }[]',
  'saved_tool_versions.parameters': 'Record<string, unknown>[]',
  'api_keys.attributes': 'Record<string, string>',
  'oauth_clients.attributes': 'Record<string, string>',
  'mcp_oauth_clients.redirect_uris': 'string[]',
  'mcp_oauth_grants.roles': 'string[]',
  'mcp_oauth_grants.attributes': 'Record<string, string>',
  'approvals.requester_attributes': 'Record<string, string>',
  'mcp_oauth_grants.scopes': 'string[]',
  'org_members.roles': 'string[]',
  'org_members.attributes': 'Record<string, string>',
  'member_passkeys.transports': 'string[]',
  'webhook_attempts.request_headers': 'Record<string, string>',
  'webhook_attempts.response_headers': 'Record<string, string>',
};

/** The TypeScript type of a text column whose values a CHECK constraint lists, by `table.column` (text when not listed). */
export const TEXT_TYPES: Record<string, string> = {
  'mcp_oauth_clients.kind': "'registered' | 'preregistered'",
  'tools.kind': "'tool' | 'schema' | 'resource' | 'resource_template' | 'prompt'",
  'orgs.audit_statements': "'none' | 'fingerprint' | 'full'",
  'org_members.status': "'invited' | 'active' | 'suspended'",
  'member_links.purpose': "'invitation' | 'password_reset'",
  'mcp_oauth_settings.people_sign_in': "'idp_only' | 'members_only' | 'both'",
};

/** A table's note, by table name. */
export const TABLE_NOTES: Record<string, string> = {
  org_members: 'People of an org kept by the gateway (issue 40): roles, status, attributes, a scrypt password hash (never shown or audited).',
  member_passkeys:
    "Members' passkeys (WebAuthn credentials, decision 0380): credential id, COSE public key, signature counter; no secret (the private key never leaves the authenticator).",
  passkey_challenges:
    'Challenges of passkey ceremonies, as SHA-256 of the challenge and of what it was issued for; a ceremony deletes its row (single use on every instance).',
  member_links: 'One-time invitation and password-reset links of members, kept only as the SHA-256 of the token.',
  audit_chains: "Head and base of each org's audit hash chain; the head row is the lock every audit write of the org takes.",
  usage_counters:
    'Tool calls per org and calendar month (UTC), and the calls leased out in blocks (`leased`); written with SQL text by limits/quota-statements.ts.',
  quota_leases: 'Blocks of quota an instance took from a counter (issue 42, decision 0393): calls not yet spent, spent so far, expiry.',
  gateway_instances:
    "Live gateway instances of a PostgreSQL store and the connector connections each claims on the store's server (decision 0409); each beats every few seconds.",
  webhooks: 'Outbound webhook endpoints (issue 11); the secret is sealed (AAD `webhook_secret:<id>`).',
  webhook_relay_cursors:
    "Per endpoint, the org's audit chain position up to which sealed tool-call rows were relayed into the outbox as tool.called events " +
    '(webhooks/relay.ts); set to the chain head when the endpoint starts taking tool.called.',
  webhook_events: 'The outbox: one row per event, holding the exact body that is signed and sent on every attempt.',
  webhook_deliveries: 'The delivery queue: one row per event and endpoint, claimed by workers with FOR UPDATE SKIP LOCKED and a lease.',
  webhook_attempts: 'Every delivery attempt (status code, latency, error), for GET /api/org/webhooks/{id}/deliveries.',
  mcp_oauth_settings: "Each org's authorization server for MCP sign-in (migration 13; auth/oauth-server/).",
  saved_tool_versions: "Every version of every saved-statement tool's definition (kept after the tool is deleted: deleted_at).",
  console_sessions: 'Signed-in console sessions (src/console): the cookie carries a random id, the row its hash and the sealed bearer.',
};

/** A column's note, by `table.column`. */
export const COLUMN_NOTES: Record<string, string> = {
  'approvals.requester_attributes': "The requester's attributes at request time, which the tool's row filter binds when the approved call runs.",
  'mcp_oauth_grants.attributes': "The person's IdP claims at sign-in that row filters bind as :caller.<claim> (auth/idp/identity.ts claimAttributes).",
  'api_keys.last_used_at': 'When the key was last used, to the minute at best: written in the background (auth/last-use.ts, decision 0282).',
  'oauth_clients.last_used_at': 'When a token of the client was last used or issued, to the minute at best (auth/last-use.ts, decision 0282).',
  'webhook_attempts.request_headers': 'The headers the attempt sent (no secret among them: the signatures are per attempt; decision 0283).',
  'webhook_attempts.response_headers': "The receiver's response headers, capped (decision 0283); null when no answer came.",
  'webhook_attempts.response_body': "The first 4 KB of the receiver's response body (decision 0283); null when no answer came.",
  'orgs.catalog_version': "Bumped on every change that alters the org's tool catalog or credentials' view of it.",
  'orgs.burst_limit_per_second': "Custom burst limit (enterprise, standalone); null uses the plan's.",
  'orgs.suspended_at': 'Set while an operator has suspended the org: every credential of it is refused.',
  'orgs.audit_statements': 'What a refused statement keeps in the audit log: none, its fingerprint (default) or the full text (decision 0321).',
  'audit_events.seq': "Position in the org's hash chain (audit/chain.ts); null until the row is sealed into it (audit/repository.ts sealPending).",
  'audit_events.mac': "HMAC-SHA256 (hex) of the row's content with the gateway's audit key (audit/mac.ts); null on rows from before it.",
  'audit_events.refused_at': 'Set when a sealer refused the row (no valid MAC: not written by the gateway); it stays outside the chain.',
  'audit_chains.base_seq': 'Rows up to base_seq were removed by retention; base_hash is the hash of the last of them.',
  'audit_chains.mac_from_seq': 'Rows up to this position were chained before rows carried a MAC (migration 10); every later row must carry one.',
  'connectors.skipped_tools': 'Tools the source lists that the last validation did not serve, with why ({name, reason}[]).',
  'idp_configs.console_client_id': "The console's OIDC client at this IdP (authorization code + PKCE); null: no IdP sign-in to the console.",
  'idp_configs.console_client_secret_sealed': 'Its client secret, sealed; null for a public client (PKCE only).',
  'approvals.arguments_json': 'The held arguments exactly as they will run (validated, defaults filled in), as JSON text: byte-for-byte.',
  'approvals.arguments_digest': "HMAC over the approval's identity, tool and arguments (approvals/digest.ts), verified before execution.",
  'approvals.requester_connector_ids': "The requesting credential's connector scope at request time (null: every connector).",
  'webhooks.disabled_reason': 'Why the gateway disabled the endpoint itself (410 Gone, retries exhausted); null when an admin did or it is on.',
  'connectors.free_sql': "false: the connector's table tools (free SQL) are left out of the catalog; its saved tools stay.",
  'connectors.tool_layout': 'per_table: one query tool per exposed table; single: one query tool for the whole connector (decision 0299).',
  'approvals.approver_tool_ids': 'The tool rows whose approval the held call needed (every table it touches, decision 0292); null: tool_id alone.',
  'connectors.include_tables': 'Glob patterns over `schema.table` of the tables that become tools; empty: every table (migration 18).',
  'connectors.exclude_tables': 'Glob patterns over `schema.table` of tables that never become tools; they win over include_tables.',
  'connectors.description': 'Free text naming what the connector is (e.g. production); every tool description ends with it.',
  'connectors.health': 'Whether the source answers (healthy, unhealthy, unknown), from calls and probes (migration 21, decision 0325).',
  'connectors.health_reason': 'Why the last probe or call found the source unreachable (never a password or DSN); null when healthy.',
  'connectors.health_changed_at': 'When health last changed.',
  'connectors.health_checked_at': 'When an instance last claimed the periodic probe of this connector.',
  'tools.saved_version': 'A saved-statement tool, at this version of its definition (spec.target.saved); null: a tool the source yields.',
  'api_keys.attributes': 'Attributes row filters bind as `:caller.<attr>` (migration 15).',
  'oauth_clients.attributes': 'Attributes row filters bind as `:caller.<attr>` (migration 15).',
  'tools.kind': "What the row governs: a tool, the connector's schema tool, or an upstream MCP server's resource, resource template or prompt (migration 20).",
  'tools.withdrawn_at': 'When introspection stopped serving the row (its table excluded or gone); null: served. Settings kept (migration 26).',
  'tools.policy': 'Hidden and masked columns and the row filter (connectors/shared/policy.ts ToolPolicy); null: none (migration 15).',
  'webhook_relay_cursors.since': 'Calls recorded before this time are not relayed to the endpoint (rows committed, not yet sealed, at its start).',
};
