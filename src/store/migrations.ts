/**
 * Versioned migrations of the gateway's own schema; applied in order at start, each once, under a lock. They are the
 * schema, written once: the Drizzle tables the queries are typed by (generated/store-schema.ts, re-exported by
 * schema.ts) are printed from what these create. After adding a migration:
 *
 *   node_modules/.bin/bun scripts/gen.ts        (npm run gen: rewrites generated/store-schema.ts)
 *
 * then pin its hash in test/store-schema.test.ts and commit the three together. Never edit one already merged: a
 * change is a new migration (docs/decisions/0160). Notes and jsonb types for new columns: schema-notes.ts.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'orgs_and_credentials',
    sql: `
CREATE TABLE orgs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$'),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  plan text NOT NULL CHECK (plan IN ('starter','growth','scale','enterprise','standalone')),
  subscription_status text NOT NULL CHECK (subscription_status IN ('trialing','active','past_due','canceled')),
  trial_expires_at timestamptz,
  provision_status text NOT NULL CHECK (provision_status IN ('not_provisioned','provisioned')),
  provisioned_at timestamptz,
  catalog_version bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  connector_ids uuid[],
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_org ON api_keys (org_id);

CREATE TABLE oauth_clients (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text NOT NULL,
  client_id text NOT NULL UNIQUE,
  secret_hash text NOT NULL,
  scopes text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX oauth_clients_org ON oauth_clients (org_id);

CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL,
  private_key_sealed text NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);

CREATE TABLE audit_events (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  action text NOT NULL,
  actor_type text NOT NULL,
  actor_id text,
  target_type text,
  target_id text,
  outcome text NOT NULL DEFAULT 'success',
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_org_time ON audit_events (org_id, created_at DESC);
`,
  },
  {
    version: 2,
    name: 'connectors_tools_idp',
    sql: `
CREATE TABLE connectors (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  type text NOT NULL,
  status text NOT NULL CHECK (status IN ('validating','active','failed')),
  status_reason text,
  config jsonb NOT NULL,
  credential_sealed text,
  allow_write boolean NOT NULL DEFAULT false,
  allow_ddl boolean NOT NULL DEFAULT false,
  validation_generation integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  archived_at timestamptz
);
CREATE INDEX connectors_org ON connectors (org_id) WHERE archived_at IS NULL;

CREATE TABLE tools (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  connector_id uuid NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  base_name text NOT NULL,
  spec jsonb NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  requires_approval boolean NOT NULL DEFAULT false,
  approval_ttl_seconds integer NOT NULL DEFAULT 3600 CHECK (approval_ttl_seconds BETWEEN 60 AND 604800),
  approval_emails text[] NOT NULL DEFAULT '{}',
  tool_name_override text,
  tool_description_override text,
  read_only boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (connector_id, base_name)
);
CREATE INDEX tools_org ON tools (org_id);
CREATE UNIQUE INDEX tools_override_unique ON tools (org_id, tool_name_override) WHERE tool_name_override IS NOT NULL;

CREATE TABLE idp_configs (
  org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  issuer text NOT NULL,
  jwks_uri text NOT NULL,
  audience text NOT NULL,
  role_claim text NOT NULL DEFAULT 'role',
  email_claim text NOT NULL DEFAULT 'email',
  default_role text CHECK (default_role IN ('contributor','admin','finance')),
  updated_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 3,
    name: 'idp_issuer_audience_unique',
    sql: `
CREATE UNIQUE INDEX idp_configs_issuer_audience ON idp_configs (issuer, audience);
`,
  },
  {
    version: 4,
    name: 'usage_and_burst',
    sql: `
CREATE TABLE usage_counters (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  period_start date NOT NULL,
  tool_calls bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, period_start)
);
ALTER TABLE orgs ADD COLUMN burst_limit_per_second integer CHECK (burst_limit_per_second BETWEEN 1 AND 100000);
`,
  },
  {
    version: 5,
    name: 'approvals',
    sql: `
CREATE TABLE approvals (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  tool_id uuid NOT NULL,
  tool_name text NOT NULL,
  connector_id uuid NOT NULL,
  arguments_json text NOT NULL,
  arguments_digest text NOT NULL,
  requester_kind text NOT NULL CHECK (requester_kind IN ('api_key','oauth_client','idp_user')),
  requester_id text NOT NULL,
  requested_by text NOT NULL,
  requester_connector_ids uuid[],
  approver_emails text[] NOT NULL,
  status text NOT NULL CHECK (status IN ('pending','executing','executed','rejected','failed','expired')),
  status_reason text,
  result jsonb,
  decided_by text,
  decided_at timestamptz,
  executing_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX approvals_org_created ON approvals (org_id, created_at DESC);
CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending';
CREATE INDEX approvals_executing ON approvals (executing_at) WHERE status = 'executing';
`,
  },
  {
    // The outbox is webhook_events (one row per event, the exact signed body)
    // plus webhook_deliveries (one row per event and endpoint: the queue the workers claim); attempts are the history.
    version: 6,
    name: 'webhooks_outbox',
    sql: `
CREATE TABLE webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  url text NOT NULL,
  events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  secret_sealed text NOT NULL,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_org ON webhooks (org_id);

CREATE TABLE webhook_events (
  id text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  type text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX webhook_events_org ON webhook_events (org_id, created_at);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  event_id text NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
  webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','delivered','failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_token uuid,
  leased_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  UNIQUE (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);

CREATE TABLE webhook_attempts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  status_code integer,
  latency_ms integer NOT NULL,
  error text,
  attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, attempted_at);
`,
  },
  {
    version: 7,
    name: 'audit_chain',
    sql: `
ALTER TABLE audit_events ADD COLUMN seq bigint;
ALTER TABLE audit_events ADD COLUMN prev_hash text;
ALTER TABLE audit_events ADD COLUMN hash text;
CREATE UNIQUE INDEX audit_events_org_seq ON audit_events (org_id, seq);
CREATE INDEX audit_events_unsealed ON audit_events (created_at) WHERE seq IS NULL;
CREATE TABLE audit_chains (
  org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  head_seq bigint NOT NULL,
  head_hash text NOT NULL,
  base_seq bigint NOT NULL,
  base_hash text NOT NULL
);
`,
  },
  {
    version: 8,
    name: 'console_sign_in',
    sql: `
ALTER TABLE idp_configs ADD COLUMN console_client_id text;
ALTER TABLE idp_configs ADD COLUMN console_client_secret_sealed text;
CREATE TABLE console_sessions (
  id_hash text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('idp_user','oauth_client')),
  actor text NOT NULL,
  bearer_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
`,
  },
  {
    version: 9,
    name: 'webhook_relay_cursors',
    // tool.called events are relayed from sealed audit rows (webhooks/relay.ts): one cursor per endpoint, the chain
    // position up to which the org's rows were turned into events for it, and the time from which calls count for
    // it. Existing endpoints start at the head.
    sql: `
CREATE TABLE webhook_relay_cursors (
  webhook_id uuid PRIMARY KEY REFERENCES webhooks(id) ON DELETE CASCADE,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  after_seq bigint NOT NULL,
  since timestamptz NOT NULL DEFAULT now()
);
INSERT INTO webhook_relay_cursors (webhook_id, org_id, after_seq)
  SELECT w.id, w.org_id, coalesce(c.head_seq, 0) FROM webhooks w LEFT JOIN audit_chains c ON c.org_id = w.org_id;
`,
  },
  {
    version: 10,
    name: 'audit_row_mac',
    // Audit rows carry an HMAC written with them (audit/mac.ts); sealers refuse rows without a valid one and mark them
    // refused (out of the sealers' index). Rows already chained stay covered by the chain: mac_from_seq is each
    // chain's head now, and only rows after it must carry a MAC. Rows still unsealed now have none and are refused.
    sql: `
ALTER TABLE audit_events ADD COLUMN mac text;
ALTER TABLE audit_events ADD COLUMN refused_at timestamptz;
ALTER TABLE audit_chains ADD COLUMN mac_from_seq bigint NOT NULL DEFAULT 0;
UPDATE audit_chains SET mac_from_seq = head_seq;
DROP INDEX audit_events_unsealed;
CREATE INDEX audit_events_unsealed ON audit_events (created_at) WHERE seq IS NULL AND refused_at IS NULL;
`,
  },
  {
    version: 11,
    name: 'connector_skipped_tools',
    // The upstream tools a validation did not serve, with the reason, for the admin (issue 26).
    sql: `
ALTER TABLE connectors ADD COLUMN skipped_tools jsonb NOT NULL DEFAULT '[]';
`,
  },
  {
    version: 12,
    name: 'org_suspension',
    // An operator can suspend an org (docs/decisions/0210-operator-org-suspend-and-plan-change.md): while set, its MCP
    // endpoint, REST API and token endpoint refuse every credential; nothing else of the org changes.
    sql: `
ALTER TABLE orgs ADD COLUMN suspended_at timestamptz;
`,
  },
  {
    version: 13,
    name: 'mcp_sign_in',
    // Each org's authorization server for MCP clients a person signs in with (issue 29; decision 0245): the org's
    // settings, registered clients (dynamic registration and pre-registered; metadata-document clients are fetched,
    // not stored), grants (one per consent: the person, the client, the scopes; revoking one ends its tokens on the
    // next request), one-time codes and rotating refresh tokens, both kept only as SHA-256 hashes.
    sql: `
CREATE TABLE mcp_oauth_settings (
  org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  registration_enabled boolean NOT NULL DEFAULT true,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE mcp_oauth_clients (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  client_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('registered', 'preregistered')),
  client_name text,
  redirect_uris jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  PRIMARY KEY (org_id, client_id)
);
CREATE TABLE mcp_oauth_grants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  client_id text NOT NULL,
  client_kind text NOT NULL CHECK (client_kind IN ('metadata_document', 'registered', 'preregistered')),
  client_name text,
  subject text NOT NULL,
  email text,
  roles jsonb NOT NULL,
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  scopes jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX mcp_oauth_grants_org ON mcp_oauth_grants (org_id, created_at);
CREATE TABLE mcp_oauth_codes (
  code_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES mcp_oauth_grants(id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX mcp_oauth_codes_grant ON mcp_oauth_codes (grant_id);
CREATE TABLE mcp_oauth_refresh_tokens (
  token_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES mcp_oauth_grants(id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX mcp_oauth_refresh_tokens_grant ON mcp_oauth_refresh_tokens (grant_id);
`,
  },
  {
    version: 14,
    name: 'saved_tools_and_free_sql',
    // Issue 30 items 1-2 (docs/decisions/0260-saved-statement-tools.md): a saved-statement tool is a tools row with
    // saved_version set (its definition is in spec.target.saved); every version of its definition is kept in
    // saved_tool_versions, also after the tool is deleted. free_sql false leaves a connector's table tools out.
    sql: `
ALTER TABLE connectors ADD COLUMN free_sql boolean NOT NULL DEFAULT true;
ALTER TABLE tools ADD COLUMN saved_version integer;
CREATE TABLE saved_tool_versions (
  tool_id uuid NOT NULL,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  connector_id uuid NOT NULL,
  version integer NOT NULL CHECK (version >= 1),
  name text NOT NULL,
  description text NOT NULL,
  statement text NOT NULL,
  parameters jsonb NOT NULL,
  actor text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  PRIMARY KEY (tool_id, version)
);
CREATE INDEX saved_tool_versions_org ON saved_tool_versions (org_id, connector_id);
`,
  },
  {
    version: 15,
    name: 'tool_policies',
    // Issue 30 items 3-4 (docs/tool-policies.md): a tool's hidden and masked columns and row filter, and the
    // attributes an API key or OAuth client carries for row filters (`:caller.<attr>`).
    sql: `
ALTER TABLE tools ADD COLUMN policy jsonb;
ALTER TABLE api_keys ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}';
ALTER TABLE oauth_clients ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}';
`,
  },
  {
    version: 16,
    name: 'credential_last_use_and_attempt_exchange',
    // Issue 31: when each API key and OAuth client was last used (written coarsely, in the background, at most once a
    // minute per credential per instance: auth/last-use.ts, decision 0282), and what each webhook attempt sent and got
    // back (request headers without secrets, response status, headers and the first 4 KB of its body; decision 0283).
    sql: `
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
ALTER TABLE oauth_clients ADD COLUMN last_used_at timestamptz;
ALTER TABLE webhook_attempts ADD COLUMN request_headers jsonb;
ALTER TABLE webhook_attempts ADD COLUMN response_headers jsonb;
ALTER TABLE webhook_attempts ADD COLUMN response_body text;
ALTER TABLE webhook_attempts ADD COLUMN response_truncated boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 17,
    name: 'approval_requester_attributes',
    // Issue 30: a held call keeps the requester's attributes (the ones row filters bind as :caller.<name>), so the
    // approved call reads the requester's rows, not none; bound into the held call's digest (approvals/digest.ts).
    sql: `
ALTER TABLE approvals ADD COLUMN requester_attributes jsonb NOT NULL DEFAULT '{}'::jsonb;
`,
  },
  {
    version: 18,
    name: 'connector_table_filters_and_description',
    // Issue 38 items 3 and 5 (docs/decisions/0303): which tables of a database connector become tools (glob patterns
    // over `schema.table`; empty include: every table; exclude wins), and a free-text description that tool
    // descriptions carry so an agent can tell connectors apart.
    sql: `
ALTER TABLE connectors ADD COLUMN include_tables text[] NOT NULL DEFAULT '{}'::text[];
ALTER TABLE connectors ADD COLUMN exclude_tables text[] NOT NULL DEFAULT '{}'::text[];
ALTER TABLE connectors ADD COLUMN description text;
`,
  },
  {
    version: 19,
    name: 'table_governance_and_tool_layout',
    // Issue 38 (docs/decisions/0292, 0299): a connector's tool layout (per_table | single); the tool rows whose approval
    // a held call needed (a statement may touch several tables: their approvers are its approvers); and policies move
    // from saved tools onto the table each one reads (a saved tool has none of its own): hidden columns united, masked
    // ones united (a column hidden anywhere stays hidden; of two masks the stricter), row filters joined with AND.
    // A saved tool whose table has no tool row keeps its policy (never dropped; the call is refused anyway).
    sql: `
ALTER TABLE connectors ADD COLUMN tool_layout text NOT NULL DEFAULT 'per_table' CHECK (tool_layout IN ('per_table', 'single'));
ALTER TABLE approvals ADD COLUMN approver_tool_ids uuid[];
CREATE TEMP TABLE toolgate_m19_moved ON COMMIT DROP AS
  SELECT s.id AS saved_id, t.id AS table_id, t.org_id, s.policy AS policy
  FROM tools s
  JOIN tools t ON t.connector_id = s.connector_id AND t.saved_version IS NULL
    AND t.spec->'target'->>'schema' = s.spec->'target'->>'schema' AND t.spec->'target'->>'table' = s.spec->'target'->>'table'
  WHERE s.saved_version IS NOT NULL AND s.policy IS NOT NULL;
CREATE TEMP TABLE toolgate_m19_policies ON COMMIT DROP AS
  SELECT t.id AS table_id, 0 AS rank, t.id::text AS src, t.policy AS policy FROM tools t
  WHERE t.policy IS NOT NULL AND t.id IN (SELECT table_id FROM toolgate_m19_moved)
  UNION ALL
  SELECT table_id, 1, saved_id::text, policy FROM toolgate_m19_moved;
CREATE TEMP TABLE toolgate_m19_hidden ON COMMIT DROP AS
  SELECT p.table_id, h.col FROM toolgate_m19_policies p, jsonb_array_elements_text(COALESCE(p.policy->'hidden_columns', '[]'::jsonb)) AS h(col)
  GROUP BY p.table_id, h.col;
UPDATE tools SET updated_at = now(), policy = jsonb_build_object(
  'hidden_columns', COALESCE((SELECT jsonb_agg(h.col ORDER BY h.col) FROM toolgate_m19_hidden h WHERE h.table_id = tools.id), '[]'::jsonb),
  'masked_columns', COALESCE((
    SELECT jsonb_agg(m.mask ORDER BY m.mask->>'column') FROM (
      SELECT DISTINCT ON (e.mask->>'column') e.mask FROM toolgate_m19_policies p,
        jsonb_array_elements(COALESCE(p.policy->'masked_columns', '[]'::jsonb)) AS e(mask)
      WHERE p.table_id = tools.id
        AND NOT EXISTS (SELECT 1 FROM toolgate_m19_hidden h WHERE h.table_id = tools.id AND h.col = e.mask->>'column')
      ORDER BY e.mask->>'column', CASE e.mask->>'mask' WHEN 'fixed' THEN 0 WHEN 'hash' THEN 1 ELSE 2 END,
        COALESCE((e.mask->>'n')::int, 0), p.rank, p.src
    ) m), '[]'::jsonb),
  'row_filter', (
    SELECT to_jsonb(string_agg('(' || f.filter || ')', ' AND ' ORDER BY f.rank, f.src)) FROM (
      SELECT DISTINCT p.rank, p.src, p.policy->>'row_filter' AS filter FROM toolgate_m19_policies p
      WHERE p.table_id = tools.id AND jsonb_typeof(p.policy->'row_filter') = 'string'
    ) f)
)
WHERE id IN (SELECT table_id FROM toolgate_m19_moved);
UPDATE tools SET policy = NULL, updated_at = now() WHERE id IN (SELECT saved_id FROM toolgate_m19_moved);
UPDATE orgs SET catalog_version = catalog_version + 1 WHERE id IN (SELECT org_id FROM toolgate_m19_moved);
`,
  },
  {
    version: 20,
    name: 'tool_kinds',
    // Issues 38 and 43 (decisions 0313, 0315): a connector's items beside its tools, each governed by its own row (enabled,
    // approval settings, audit): the schema tool of a database connector, and an upstream MCP server's resources, resource
    // templates and prompts. A name is unique per connector and kind (a prompt may be named like a tool).
    sql: `
ALTER TABLE tools ADD COLUMN kind text NOT NULL DEFAULT 'tool' CHECK (kind IN ('tool','schema','resource','resource_template','prompt'));
ALTER TABLE tools DROP CONSTRAINT tools_connector_id_base_name_key;
ALTER TABLE tools ADD CONSTRAINT tools_connector_kind_base_name_key UNIQUE (connector_id, kind, base_name);
`,
  },
  {
    version: 21,
    name: 'connector_health',
    // Issue 41 item 4 (docs/decisions/0325): whether a connector's source answers, apart from its validation status,
    // shared by every instance so a transition is written (and audited) once; health_checked_at lets instances
    // claim a connector's periodic probe without probing it twice.
    sql: `
ALTER TABLE connectors ADD COLUMN health text NOT NULL DEFAULT 'unknown';
ALTER TABLE connectors ADD COLUMN health_reason text;
ALTER TABLE connectors ADD COLUMN health_changed_at timestamptz;
ALTER TABLE connectors ADD COLUMN health_checked_at timestamptz;
`,
  },
  {
    version: 22,
    name: 'audit_statements_and_filters',
    // Issue 41 (docs/decisions/0321, 0357, 0358): how much of a refused statement the org keeps in its audit log, and an
    // index per filter of GET /api/audit, each ending in the list's order (created_at, seq), so the first page and any
    // cursor page of a filter is one ordered index range. The time index replaces audit_events_org_time (same lead).
    // reason_class and fingerprint_id exist on refused rows only: partial indexes.
    sql: `
ALTER TABLE orgs ADD COLUMN audit_statements text NOT NULL DEFAULT 'fingerprint' CHECK (audit_statements IN ('none', 'fingerprint', 'full'));
CREATE INDEX audit_events_org_time_seq ON audit_events (org_id, created_at, seq);
DROP INDEX audit_events_org_time;
CREATE INDEX audit_events_org_outcome ON audit_events (org_id, outcome, created_at, seq);
CREATE INDEX audit_events_org_action ON audit_events (org_id, action, created_at, seq);
CREATE INDEX audit_events_org_actor ON audit_events (org_id, actor_type, actor_id, created_at, seq);
CREATE INDEX audit_events_org_target ON audit_events (org_id, target_id, created_at, seq);
CREATE INDEX audit_events_org_connector ON audit_events (org_id, (details->>'connector_id'), created_at, seq) WHERE (details->>'connector_id') IS NOT NULL;
CREATE INDEX audit_events_org_reason_class ON audit_events (org_id, (details->>'reason_class'), created_at, seq) WHERE (details->>'reason_class') IS NOT NULL;
CREATE INDEX audit_events_org_fingerprint ON audit_events (org_id, (details->>'fingerprint_id'), created_at, seq) WHERE (details->>'fingerprint_id') IS NOT NULL;
`,
  },
  {
    version: 23,
    name: 'audit_rollups_and_checkpoints',
    // Issue 42 item 3 (docs/decisions/0347, 0348, 0350): counts kept as rows are written, so the insights, billing usage
    // and the export's seek read a few rows per hour instead of scanning the log. Statement-level triggers on
    // audit_events keep them in the writer's transaction whatever writes the rows (sealed in the INSERT, or sealed by
    // a later UPDATE): a row counts in the insights and hours from the moment it has a chain position, in billing's
    // counted calls from its commit until a sealer refuses it, and in neither once deleted. Key columns hold '' for a
    // missing tool, connector or agent (a primary key takes no NULL). The verified_* columns: decision 0348.
    sql: `
CREATE TABLE audit_rollups (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  action text NOT NULL,
  outcome text NOT NULL,
  tool_name text NOT NULL,
  connector_id text NOT NULL,
  actor_type text NOT NULL,
  actor_id text NOT NULL,
  events bigint NOT NULL,
  counted bigint NOT NULL,
  PRIMARY KEY (org_id, hour, action, outcome, tool_name, connector_id, actor_type, actor_id)
);
CREATE TABLE audit_rollup_latency (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  tool_name text NOT NULL,
  connector_id text NOT NULL,
  duration_ms double precision NOT NULL,
  calls bigint NOT NULL,
  PRIMARY KEY (org_id, hour, tool_name, connector_id, duration_ms)
);
CREATE TABLE audit_hours (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  first_seq bigint NOT NULL,
  events bigint NOT NULL,
  PRIMARY KEY (org_id, hour)
);
ALTER TABLE audit_chains ADD COLUMN verified_seq bigint;
ALTER TABLE audit_chains ADD COLUMN verified_hash text;
ALTER TABLE audit_chains ADD COLUMN verified_mac text;

CREATE FUNCTION audit_hour_of(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $f$ SELECT date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $f$;

-- Adds the changed rows to the roll-ups, times a sign per measure: sealed_sign for what counts once a row is in the
-- chain (insights, hours), counted_sign for billing's counted calls (from the commit until a sealer refuses the row).
-- Rows of an org being deleted (its cascade) are skipped: their roll-ups go with the org. Every upsert takes its rows
-- in key order and the tables in one order, so writers and sealers upserting the same keys wait, never deadlock.
CREATE FUNCTION audit_rollup_change(changed audit_events[], sealed_sign int, counted_sign int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  IF coalesce(cardinality(changed), 0) = 0 THEN RETURN; END IF;
  IF sealed_sign <> 0 THEN
    INSERT INTO audit_hours AS h (org_id, hour, first_seq, events)
      SELECT c.org_id, audit_hour_of(c.created_at), min(c.seq), sealed_sign * count(*) FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id) GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (org_id, hour) DO UPDATE SET first_seq = LEAST(h.first_seq, excluded.first_seq), events = h.events + excluded.events;
    INSERT INTO audit_rollup_latency AS l (org_id, hour, tool_name, connector_id, duration_ms, calls)
      SELECT c.org_id, audit_hour_of(c.created_at), coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
        (c.details->>'duration_ms')::float8, sealed_sign * count(*)
      FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome NOT IN ('held', 'refused') AND c.details->>'duration_ms' IS NOT NULL
        AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, hour, tool_name, connector_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  END IF;
  INSERT INTO audit_rollups AS r (org_id, hour, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted)
    SELECT c.org_id, audit_hour_of(c.created_at), c.action, c.outcome, coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
      c.actor_type, coalesce(c.actor_id, ''), sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL),
      counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL)
    FROM unnest(changed) c
    WHERE c.action IN ('tool.called', 'tool.call_refused', 'approval.executed', 'approval.failed') AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    HAVING sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL) <> 0
      OR counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT (org_id, hour, action, outcome, tool_name, connector_id, actor_type, actor_id)
    DO UPDATE SET events = r.events + excluded.events, counted = r.counted + excluded.counted;
  IF sealed_sign < 0 OR counted_sign < 0 THEN
    DELETE FROM audit_rollups WHERE events <= 0 AND counted <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
    DELETE FROM audit_rollup_latency WHERE calls <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
  END IF;
END $f$;

CREATE FUNCTION audit_rollup_apply() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM audit_rollup_change(ARRAY(SELECT ROW(n.*)::audit_events FROM new_rows n), 1, 1);
  ELSIF TG_OP = 'UPDATE' THEN
    -- IN (hashed), not a join: the transition tables carry no statistics, and a nested loop is quadratic.
    PERFORM audit_rollup_change(ARRAY(SELECT ROW(n.*)::audit_events FROM new_rows n
      WHERE n.seq IS NOT NULL AND n.id IN (SELECT o.id FROM old_rows o WHERE o.seq IS NULL)), 1, 0);
    PERFORM audit_rollup_change(ARRAY(SELECT ROW(o.*)::audit_events FROM old_rows o
      WHERE o.refused_at IS NULL AND o.id IN (SELECT n.id FROM new_rows n WHERE n.refused_at IS NOT NULL)), 0, -1);
  ELSE
    PERFORM audit_rollup_change(ARRAY(SELECT ROW(o.*)::audit_events FROM old_rows o), -1, -1);
  END IF;
  RETURN NULL;
END $f$;

CREATE TRIGGER audit_rollup_insert AFTER INSERT ON audit_events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION audit_rollup_apply();
CREATE TRIGGER audit_rollup_update AFTER UPDATE ON audit_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION audit_rollup_apply();
CREATE TRIGGER audit_rollup_delete AFTER DELETE ON audit_events REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION audit_rollup_apply();

SELECT audit_rollup_change(array_agg(e), 1, 1) FROM audit_events e GROUP BY e.org_id, audit_hour_of(e.created_at);
`,
  },
  {
    version: 24,
    name: 'org_members',
    // Issue 40 (docs/decisions/0367, 0368): people of an org kept by the gateway, beside the org's IdP. A member's
    // e-mail is unique per org (email_key: lower-cased); password_hash is a scrypt string (never in a view, an audit
    // row or an export). member_links are the one-time invitation and password-reset links, kept as SHA-256 of the
    // token. people_sign_in is what the org's MCP authorization server offers a person when an IdP is configured.
    sql: `
CREATE TABLE org_members (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 320),
  email_key text NOT NULL,
  display_name text CHECK (display_name IS NULL OR length(display_name) <= 200),
  roles jsonb NOT NULL DEFAULT '[]'::jsonb,
  status text NOT NULL CHECK (status IN ('invited','active','suspended')),
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  password_hash text,
  password_changed_at timestamptz,
  last_sign_in_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, email_key)
);
CREATE TABLE member_links (
  token_hash text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  member_id uuid NOT NULL REFERENCES org_members(id) ON DELETE CASCADE,
  purpose text NOT NULL CHECK (purpose IN ('invitation','password_reset')),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX member_links_member ON member_links (member_id);
ALTER TABLE mcp_oauth_settings ADD COLUMN people_sign_in text NOT NULL DEFAULT 'idp_only' CHECK (people_sign_in IN ('idp_only','members_only','both'));
ALTER TABLE console_sessions DROP CONSTRAINT console_sessions_kind_check;
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_kind_check CHECK (kind IN ('idp_user','oauth_client','member'));
`,
  },
  {
    version: 25,
    name: 'audit_rollups_by_agent_and_refusal',
    // Issue 41 item 3 (docs/decisions/0390): the Overview's refusals by reason class, its top refused fingerprints (and a
    // tool's), and each agent's p95, kept as rows are sealed like the roll-ups of migration 23 (decision 0347), so no
    // poll scans the log. audit_rollup_refusals: refused statements (tool.called, outcome refused) per hour, tool,
    // connector, reason class and fingerprint id. audit_rollup_agent_latency: durations of calls that ran per hour and
    // agent (actor), exact under 100 ms and kept to 3 significant digits above (decision 0391), with their count.
    // The trigger function of migration 23 now also calls audit_rollup_detail_change; the backfill is one pass.
    sql: `
CREATE TABLE audit_rollup_refusals (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  tool_name text NOT NULL,
  connector_id text NOT NULL,
  reason_class text NOT NULL,
  fingerprint_id text NOT NULL,
  events bigint NOT NULL,
  PRIMARY KEY (org_id, hour, tool_name, connector_id, reason_class, fingerprint_id)
);
CREATE TABLE audit_rollup_agent_latency (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  actor_type text NOT NULL,
  actor_id text NOT NULL,
  duration_ms double precision NOT NULL,
  calls bigint NOT NULL,
  PRIMARY KEY (org_id, hour, actor_type, actor_id, duration_ms)
);

-- A duration as the agent latency roll-up keeps it: as recorded (0.1 ms) under 100 ms, else to 3 significant digits.
CREATE FUNCTION audit_latency_bucket(ms float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS
  $f$ SELECT CASE WHEN ms < 100 THEN ms ELSE round(ms::numeric, 2 - floor(log(ms::numeric))::int)::float8 END $f$;

-- Adds sealed rows (sign 1) or removes them (-1) from the two roll-ups; same rules as audit_rollup_change (rows of an
-- org being deleted are skipped; keys in order, tables in one order, after those of audit_rollup_change).
CREATE FUNCTION audit_rollup_detail_change(changed audit_events[], sealed_sign int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  IF coalesce(cardinality(changed), 0) = 0 OR sealed_sign = 0 THEN RETURN; END IF;
  INSERT INTO audit_rollup_refusals AS r (org_id, hour, tool_name, connector_id, reason_class, fingerprint_id, events)
    SELECT c.org_id, audit_hour_of(c.created_at), coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
      coalesce(c.details->>'reason_class', ''), coalesce(c.details->>'fingerprint_id', ''), sealed_sign * count(*)
    FROM unnest(changed) c
    WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome = 'refused' AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
    GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (org_id, hour, tool_name, connector_id, reason_class, fingerprint_id) DO UPDATE SET events = r.events + excluded.events;
  INSERT INTO audit_rollup_agent_latency AS l (org_id, hour, actor_type, actor_id, duration_ms, calls)
    SELECT c.org_id, audit_hour_of(c.created_at), c.actor_type, coalesce(c.actor_id, ''),
      audit_latency_bucket((c.details->>'duration_ms')::float8), sealed_sign * count(*)
    FROM unnest(changed) c
    WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome NOT IN ('held', 'refused') AND c.details->>'duration_ms' IS NOT NULL
      AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (org_id, hour, actor_type, actor_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  IF sealed_sign < 0 THEN
    DELETE FROM audit_rollup_refusals WHERE events <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
    DELETE FROM audit_rollup_agent_latency WHERE calls <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
  END IF;
END $f$;

CREATE OR REPLACE FUNCTION audit_rollup_apply() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  changed audit_events[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    changed := ARRAY(SELECT ROW(n.*)::audit_events FROM new_rows n);
    PERFORM audit_rollup_change(changed, 1, 1);
    PERFORM audit_rollup_detail_change(changed, 1);
  ELSIF TG_OP = 'UPDATE' THEN
    -- IN (hashed), not a join: the transition tables carry no statistics, and a nested loop is quadratic.
    changed := ARRAY(SELECT ROW(n.*)::audit_events FROM new_rows n
      WHERE n.seq IS NOT NULL AND n.id IN (SELECT o.id FROM old_rows o WHERE o.seq IS NULL));
    PERFORM audit_rollup_change(changed, 1, 0);
    PERFORM audit_rollup_detail_change(changed, 1);
    PERFORM audit_rollup_change(ARRAY(SELECT ROW(o.*)::audit_events FROM old_rows o
      WHERE o.refused_at IS NULL AND o.id IN (SELECT n.id FROM new_rows n WHERE n.refused_at IS NOT NULL)), 0, -1);
  ELSE
    changed := ARRAY(SELECT ROW(o.*)::audit_events FROM old_rows o);
    PERFORM audit_rollup_change(changed, -1, -1);
    PERFORM audit_rollup_detail_change(changed, -1);
  END IF;
  RETURN NULL;
END $f$;

SELECT audit_rollup_detail_change(array_agg(e), 1) FROM audit_events e
  WHERE e.seq IS NOT NULL AND e.action = 'tool.called' GROUP BY e.org_id, audit_hour_of(e.created_at);
`,
  },
  {
    version: 26,
    name: 'tool_rows_withdrawn',
    // docs/decisions/0405: introspection withdraws a row whose table (or upstream tool) is no longer served instead of
    // deleting it, so its settings and the table's policy are there when it is served again. A withdrawn row holds no
    // name: the per-connector unique name covers served rows only (a new table may take the name; the ON CONFLICT of
    // introspection names this index). Lookups by connector that include withdrawn rows get an index of their own. A
    // saved tool is the admin's and is never withdrawn.
    sql: `
ALTER TABLE tools ADD COLUMN withdrawn_at timestamptz;
ALTER TABLE tools ADD CONSTRAINT tools_saved_never_withdrawn CHECK (withdrawn_at IS NULL OR saved_version IS NULL);
ALTER TABLE tools DROP CONSTRAINT tools_connector_kind_base_name_key;
CREATE UNIQUE INDEX tools_served_name ON tools (connector_id, kind, base_name) WHERE withdrawn_at IS NULL;
CREATE INDEX tools_connector ON tools (connector_id);
`,
  },
  {
    version: 27,
    name: 'member_passkeys',
    // Issue 40 (docs/decisions/0380): a member's passkeys (WebAuthn credentials: the credential id, unique across the
    // gateway, which is one relying party; the COSE public key; the signature counter; transports); the ceremonies'
    // challenges, kept only as their SHA-256 with what they were issued for (the member and session, the link, the
    // browser or the sign-in transaction), used once by deleting the row; and the passkey a console session or an MCP
    // grant was signed in with, so removing the passkey ends the one and revokes the other on every instance.
    sql: `
CREATE TABLE member_passkeys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  member_id uuid NOT NULL REFERENCES org_members(id) ON DELETE CASCADE,
  credential_id text NOT NULL UNIQUE CHECK (length(credential_id) BETWEEN 16 AND 1400),
  public_key text NOT NULL CHECK (length(public_key) <= 4000),
  counter bigint NOT NULL DEFAULT 0 CHECK (counter >= 0),
  transports jsonb NOT NULL DEFAULT '[]'::jsonb,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  backed_up boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX member_passkeys_member ON member_passkeys (member_id);
CREATE TABLE passkey_challenges (
  challenge_hash text PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('register', 'sign_in')),
  binding_hash text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
ALTER TABLE console_sessions ADD COLUMN passkey_id uuid REFERENCES member_passkeys(id) ON DELETE CASCADE;
CREATE INDEX console_sessions_passkey ON console_sessions (passkey_id) WHERE passkey_id IS NOT NULL;
ALTER TABLE mcp_oauth_grants ADD COLUMN passkey_id uuid REFERENCES member_passkeys(id) ON DELETE SET NULL;
CREATE INDEX mcp_oauth_grants_passkey ON mcp_oauth_grants (passkey_id) WHERE passkey_id IS NOT NULL;
`,
  },
  {
    version: 28,
    name: 'quota_leases',
    // Issue 42 (docs/decisions/0393): the monthly quota by lease. An instance takes a block of calls from its org's
    // counter in one statement and spends it in memory; usage_counters.leased is the sum of the blocks out, so
    // tool_calls + leased never passes the quota when a block is taken. quota_leases holds each block with its expiry:
    // a block whose holder stopped without returning it comes back in the next statement on that counter.
    // quota_lease() is the one statement of the hot path (src/limits/quota-statements.ts).
    sql: `
ALTER TABLE usage_counters ADD COLUMN leased bigint NOT NULL DEFAULT 0 CHECK (leased >= 0);
CREATE TABLE quota_leases (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  period_start date NOT NULL,
  calls bigint NOT NULL CHECK (calls >= 0),
  spent bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  FOREIGN KEY (org_id, period_start) REFERENCES usage_counters (org_id, period_start) ON DELETE CASCADE
);
CREATE INDEX quota_leases_counter ON quota_leases (org_id, period_start);

-- For each ask, counters locked in key order (two instances' statements queue instead of deadlocking), each read as
-- committed once locked (READ COMMITTED: every statement of the function takes a new snapshot):
--   1. blocks of other holders past their expiry come back (deleted, out of leased);
--   2. the calls the holder spent from its block since its last statement (spent is cumulative per block, so a
--      statement sent twice settles once) move from leased to tool_calls;
--   3. release gives the rest of the holder's block back;
--   4. need (calls waiting now) is granted up to quota - tool_calls - leased and counted at once;
--   5. extra (the next block) is granted from what is left, at most an eighth of it and none when fewer than 32
--      calls would be left, so the last calls of a period are granted one batch at a time, exactly.
-- A counter nothing changed in is not written. Answers per ask: need granted, extra granted, the block's calls now,
-- the calls of other holders' blocks, and what is left to grant.
CREATE FUNCTION quota_lease(p_orgs uuid[], p_periods date[], p_leases uuid[], p_spent bigint[], p_acked bigint[],
  p_need bigint[], p_extra bigint[], p_release bigint[], p_quotas bigint[], p_ttl_ms bigint)
RETURNS TABLE (r_org text, r_period text, r_granted bigint, r_extra bigint, r_block bigint, r_others bigint, r_left bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  a record;
  used bigint; out_leased bigint; back bigint; settled bigint; own bigint; avail bigint; g_need bigint; g_extra bigint;
  held boolean; lease_spent bigint; changed boolean;
BEGIN
  -- The nil uuid is no block (calls waiting, none to lease); release is 0 or 1 (arrays of one form: store/db.ts arrayParam).
  FOR a IN SELECT x.org_id, x.period_start, nullif(x.lease_id, '00000000-0000-0000-0000-000000000000') AS lease_id,
        x.spent, x.acked, x.need, x.extra, x.release <> 0 AS release, x.quota
      FROM unnest(p_orgs, p_periods, p_leases, p_spent, p_acked, p_need, p_extra, p_release, p_quotas)
      AS x(org_id, period_start, lease_id, spent, acked, need, extra, release, quota) ORDER BY 1, 2 LOOP
    INSERT INTO usage_counters AS u (org_id, period_start) VALUES (a.org_id, a.period_start) ON CONFLICT DO NOTHING;
    SELECT u.tool_calls, u.leased INTO used, out_leased FROM usage_counters u
      WHERE u.org_id = a.org_id AND u.period_start = a.period_start FOR UPDATE;
    WITH gone AS (
      DELETE FROM quota_leases q WHERE q.org_id = a.org_id AND q.period_start = a.period_start
        AND q.expires_at <= now() AND q.id IS DISTINCT FROM a.lease_id RETURNING q.calls)
    SELECT coalesce(sum(g.calls), 0) INTO back FROM gone g;
    out_leased := greatest(out_leased - back, 0);
    changed := back > 0;
    own := 0; settled := 0; held := false;
    IF a.lease_id IS NOT NULL THEN
      SELECT q.calls, q.spent INTO own, lease_spent FROM quota_leases q WHERE q.id = a.lease_id FOR UPDATE;
      held := FOUND;
      IF held THEN settled := greatest(a.spent - lease_spent, 0);
      ELSE own := 0; settled := greatest(a.spent - a.acked, 0);
      END IF;
    END IF;
    used := used + settled;
    out_leased := greatest(out_leased - least(settled, own), 0);
    own := own - least(settled, own);
    IF a.release THEN out_leased := greatest(out_leased - own, 0); own := 0; END IF;
    avail := greatest(a.quota - used - out_leased, 0);
    g_need := least(a.need, avail);
    used := used + g_need;
    avail := avail - g_need;
    g_extra := CASE WHEN a.release OR a.lease_id IS NULL OR avail < 32 THEN 0 ELSE least(a.extra, avail / 8) END;
    own := own + g_extra;
    out_leased := out_leased + g_extra;
    IF changed OR settled > 0 OR g_need > 0 OR g_extra > 0 OR (held AND a.release) THEN
      UPDATE usage_counters u SET tool_calls = used, leased = out_leased
        WHERE u.org_id = a.org_id AND u.period_start = a.period_start;
    END IF;
    IF a.lease_id IS NOT NULL AND a.release THEN
      DELETE FROM quota_leases q WHERE q.id = a.lease_id;
    ELSIF a.lease_id IS NOT NULL AND (held OR own > 0) THEN
      INSERT INTO quota_leases AS q (id, org_id, period_start, calls, spent, expires_at)
        VALUES (a.lease_id, a.org_id, a.period_start, own, a.spent, now() + p_ttl_ms * interval '1 millisecond')
        ON CONFLICT (id) DO UPDATE SET calls = excluded.calls, spent = greatest(q.spent, excluded.spent), expires_at = excluded.expires_at;
    END IF;
    r_org := a.org_id::text; r_period := to_char(a.period_start, 'YYYY-MM-DD');
    r_granted := g_need; r_extra := g_extra; r_block := own; r_others := out_leased - own; r_left := avail - g_extra;
    RETURN NEXT;
  END LOOP;
END $f$;
`,
  },
  {
    version: 29,
    name: 'gateway_instances',
    // Issue 42 item 4 (docs/decisions/0409): the instances on a PostgreSQL store share the connector connections its
    // server can take (max_connections minus the store's reserve). Each instance beats every few seconds:
    // gateway_instance_beat() locks the table (one beat at a time), drops instances not seen for p_stale_ms, and
    // grants the caller its share, floor(capacity / live instances), never more than what the claims of the others
    // leave; the caller's claim is what it may hold until its next beat (its cap, or the connections it still holds
    // when more). So the claims of all instances never add up past the capacity. A clean stop deletes its row.
    sql: `
CREATE TABLE gateway_instances (
  id uuid PRIMARY KEY,
  connector_claim integer NOT NULL DEFAULT 0 CHECK (connector_claim >= 0),
  last_seen timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION gateway_instance_beat(p_id uuid, p_capacity integer, p_held integer, p_stale_ms bigint)
RETURNS TABLE (r_live integer, r_cap integer)
LANGUAGE plpgsql AS $f$
DECLARE
  live integer; others bigint; cap integer;
BEGIN
  LOCK TABLE gateway_instances IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM gateway_instances g WHERE g.id <> p_id AND g.last_seen < now() - p_stale_ms * interval '1 millisecond';
  INSERT INTO gateway_instances AS g (id, connector_claim) VALUES (p_id, greatest(p_held, 0))
    ON CONFLICT (id) DO UPDATE SET last_seen = now();
  SELECT count(*), coalesce(sum(g.connector_claim) FILTER (WHERE g.id <> p_id), 0) INTO live, others FROM gateway_instances g;
  cap := greatest(0, least(greatest(p_capacity, 0) / live, p_capacity - others));
  UPDATE gateway_instances g SET connector_claim = greatest(cap, p_held, 0) WHERE g.id = p_id;
  r_live := live; r_cap := cap;
  RETURN NEXT;
END $f$;
`,
  },
  {
    version: 30,
    name: 'audit_rollups_daily_and_log_buckets',
    // Issue 42 item 3 (docs/decisions/0412): the insights and billing stay flat as the log grows. Latencies are kept in
    // logarithmic buckets (20 per decade above 1 ms, each shown as its middle to 3 significant digits, so a percentile
    // is within 6% of the exact one; 0.1 ms below 1 ms) in both latency roll-ups, so an hour or a day holds at most
    // ~20 rows per decade of durations per key however many calls it had. A daily level beside each hourly roll-up
    // (counts, tool latency, agent latency) holds, per day, the sums of its hours before
    // audit_rollup_days.folded_before; the gateway folds each hour into its day ten minutes after it ended
    // (audit_rollup_fold), so the hot path's trigger writes the hours only. A change to a row of a folded hour (a late
    // seal, a refusal, retention) updates its day too, under a lock the fold takes exclusively. A window that starts at
    // a day reads the days and the hours not folded yet (an hour or two); the hours stay complete for windows that
    // start at another hour.
    sql: `
CREATE OR REPLACE FUNCTION audit_latency_bucket(ms float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $f$
  SELECT CASE WHEN ms < 0.95 THEN round(greatest(ms, 0)::numeric, 1)::float8
    ELSE (SELECT round(v::numeric, 2 - floor(log(v))::int)::float8 FROM (SELECT power(10::float8, round(log(ms) * 20) / 20) AS v) b) END $f$;
CREATE FUNCTION audit_day_of(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $f$ SELECT date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $f$;

CREATE TEMP TABLE rebucketed ON COMMIT DROP AS
  SELECT org_id, hour, tool_name, connector_id, audit_latency_bucket(duration_ms) AS duration_ms, sum(calls) AS calls
  FROM audit_rollup_latency GROUP BY 1, 2, 3, 4, 5;
DELETE FROM audit_rollup_latency;
INSERT INTO audit_rollup_latency SELECT * FROM rebucketed WHERE calls > 0;
DROP TABLE rebucketed;
CREATE TEMP TABLE rebucketed ON COMMIT DROP AS
  SELECT org_id, hour, actor_type, actor_id, audit_latency_bucket(duration_ms) AS duration_ms, sum(calls) AS calls
  FROM audit_rollup_agent_latency GROUP BY 1, 2, 3, 4, 5;
DELETE FROM audit_rollup_agent_latency;
INSERT INTO audit_rollup_agent_latency SELECT * FROM rebucketed WHERE calls > 0;
DROP TABLE rebucketed;

CREATE TABLE audit_rollups_daily (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  day timestamptz NOT NULL,
  action text NOT NULL,
  outcome text NOT NULL,
  tool_name text NOT NULL,
  connector_id text NOT NULL,
  actor_type text NOT NULL,
  actor_id text NOT NULL,
  events bigint NOT NULL,
  counted bigint NOT NULL,
  PRIMARY KEY (org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id)
);
CREATE TABLE audit_rollup_latency_daily (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  day timestamptz NOT NULL,
  tool_name text NOT NULL,
  connector_id text NOT NULL,
  duration_ms double precision NOT NULL,
  calls bigint NOT NULL,
  PRIMARY KEY (org_id, day, tool_name, connector_id, duration_ms)
);
CREATE TABLE audit_rollup_agent_latency_daily (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  day timestamptz NOT NULL,
  actor_type text NOT NULL,
  actor_id text NOT NULL,
  duration_ms double precision NOT NULL,
  calls bigint NOT NULL,
  PRIMARY KEY (org_id, day, actor_type, actor_id, duration_ms)
);
CREATE TABLE audit_rollup_days (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  folded_before timestamptz NOT NULL
);
INSERT INTO audit_rollup_days (folded_before) VALUES (audit_hour_of(now()) - interval '1 hour');
INSERT INTO audit_rollups_daily
  SELECT org_id, audit_day_of(hour), action, outcome, tool_name, connector_id, actor_type, actor_id, sum(events), sum(counted)
  FROM audit_rollups WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO audit_rollup_latency_daily
  SELECT org_id, audit_day_of(hour), tool_name, connector_id, duration_ms, sum(calls) FROM audit_rollup_latency
  WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5;
INSERT INTO audit_rollup_agent_latency_daily
  SELECT org_id, audit_day_of(hour), actor_type, actor_id, duration_ms, sum(calls) FROM audit_rollup_agent_latency
  WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5;

-- Adds changed rows of folded hours to their days, with the rules of audit_rollup_change (signs, rows of an org
-- being deleted skipped, keys in order, tables in one order after the hourly ones).
CREATE FUNCTION audit_rollup_daily_change(changed audit_events[], sealed_sign int, counted_sign int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  IF coalesce(cardinality(changed), 0) = 0 THEN RETURN; END IF;
  IF sealed_sign <> 0 THEN
    INSERT INTO audit_rollup_latency_daily AS l (org_id, day, tool_name, connector_id, duration_ms, calls)
      SELECT c.org_id, audit_day_of(c.created_at), coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
        audit_latency_bucket((c.details->>'duration_ms')::float8), sealed_sign * count(*)
      FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome NOT IN ('held', 'refused') AND c.details->>'duration_ms' IS NOT NULL
        AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, day, tool_name, connector_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
    INSERT INTO audit_rollup_agent_latency_daily AS l (org_id, day, actor_type, actor_id, duration_ms, calls)
      SELECT c.org_id, audit_day_of(c.created_at), c.actor_type, coalesce(c.actor_id, ''),
        audit_latency_bucket((c.details->>'duration_ms')::float8), sealed_sign * count(*)
      FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome NOT IN ('held', 'refused') AND c.details->>'duration_ms' IS NOT NULL
        AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, day, actor_type, actor_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  END IF;
  INSERT INTO audit_rollups_daily AS r (org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted)
    SELECT c.org_id, audit_day_of(c.created_at), c.action, c.outcome, coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
      c.actor_type, coalesce(c.actor_id, ''), sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL),
      counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL)
    FROM unnest(changed) c
    WHERE c.action IN ('tool.called', 'tool.call_refused', 'approval.executed', 'approval.failed') AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    HAVING sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL) <> 0
      OR counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT (org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id)
    DO UPDATE SET events = r.events + excluded.events, counted = r.counted + excluded.counted;
  IF sealed_sign < 0 OR counted_sign < 0 THEN
    DELETE FROM audit_rollups_daily WHERE events <= 0 AND counted <= 0 AND (org_id, day) IN (SELECT c.org_id, audit_day_of(c.created_at) FROM unnest(changed) c);
    DELETE FROM audit_rollup_latency_daily WHERE calls <= 0 AND (org_id, day) IN (SELECT c.org_id, audit_day_of(c.created_at) FROM unnest(changed) c);
    DELETE FROM audit_rollup_agent_latency_daily WHERE calls <= 0 AND (org_id, day) IN (SELECT c.org_id, audit_day_of(c.created_at) FROM unnest(changed) c);
  END IF;
END $f$;

-- Migration 23's function, tool latencies now bucketed, and the daily level kept for rows of folded days.
CREATE OR REPLACE FUNCTION audit_rollup_change(changed audit_events[], sealed_sign int, counted_sign int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
  folded timestamptz;
BEGIN
  IF coalesce(cardinality(changed), 0) = 0 THEN RETURN; END IF;
  IF sealed_sign <> 0 THEN
    INSERT INTO audit_hours AS h (org_id, hour, first_seq, events)
      SELECT c.org_id, audit_hour_of(c.created_at), min(c.seq), sealed_sign * count(*) FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id) GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (org_id, hour) DO UPDATE SET first_seq = LEAST(h.first_seq, excluded.first_seq), events = h.events + excluded.events;
    INSERT INTO audit_rollup_latency AS l (org_id, hour, tool_name, connector_id, duration_ms, calls)
      SELECT c.org_id, audit_hour_of(c.created_at), coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
        audit_latency_bucket((c.details->>'duration_ms')::float8), sealed_sign * count(*)
      FROM unnest(changed) c
      WHERE c.seq IS NOT NULL AND c.action = 'tool.called' AND c.outcome NOT IN ('held', 'refused') AND c.details->>'duration_ms' IS NOT NULL
        AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, hour, tool_name, connector_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  END IF;
  INSERT INTO audit_rollups AS r (org_id, hour, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted)
    SELECT c.org_id, audit_hour_of(c.created_at), c.action, c.outcome, coalesce(c.target_id, ''), coalesce(c.details->>'connector_id', ''),
      c.actor_type, coalesce(c.actor_id, ''), sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL),
      counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL)
    FROM unnest(changed) c
    WHERE c.action IN ('tool.called', 'tool.call_refused', 'approval.executed', 'approval.failed') AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    HAVING sealed_sign * count(*) FILTER (WHERE c.seq IS NOT NULL) <> 0
      OR counted_sign * count(*) FILTER (WHERE c.details->>'counted' = 'true' AND c.refused_at IS NULL) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT (org_id, hour, action, outcome, tool_name, connector_id, actor_type, actor_id)
    DO UPDATE SET events = r.events + excluded.events, counted = r.counted + excluded.counted;
  IF sealed_sign < 0 OR counted_sign < 0 THEN
    DELETE FROM audit_rollups WHERE events <= 0 AND counted <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
    DELETE FROM audit_rollup_latency WHERE calls <= 0 AND (org_id, hour) IN (SELECT c.org_id, audit_hour_of(c.created_at) FROM unnest(changed) c);
  END IF;
  -- Rows of an hour already folded into its day change the day too (a late seal, a refusal, retention), under the
  -- fold's lock, shared: a fold waits for this transaction, or this one sees the fold's new boundary. Rows of the
  -- current hour (the hot path's) are never folded yet: no lock.
  IF EXISTS (SELECT 1 FROM unnest(changed) c WHERE c.created_at < audit_hour_of(clock_timestamp())) THEN
    PERFORM pg_advisory_xact_lock_shared(7263311030);
    SELECT d.folded_before INTO folded FROM audit_rollup_days d;
    PERFORM audit_rollup_daily_change(ARRAY(SELECT ROW(c.*)::audit_events FROM unnest(changed) c WHERE c.created_at < folded), sealed_sign, counted_sign);
  END IF;
END $f$;

-- Folds the hours that ended more than p_margin ago (at most p_max_hours per call) into their days, org by org (each
-- org's hours by their key's prefix), under the fold lock; returns the hours folded. The margin leaves an hour's last
-- transactions time to commit: a row whose trigger ran before its hour was over takes no lock.
CREATE FUNCTION audit_rollup_fold(p_margin interval, p_max_hours int) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE
  folded timestamptz;
  upto timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(7263311030);
  SELECT d.folded_before INTO folded FROM audit_rollup_days d FOR UPDATE;
  upto := least(folded + p_max_hours * interval '1 hour', audit_hour_of(clock_timestamp() - p_margin));
  IF upto <= folded THEN RETURN 0; END IF;
  INSERT INTO audit_rollups_daily AS r (org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted)
    SELECT h.org_id, audit_day_of(h.hour), h.action, h.outcome, h.tool_name, h.connector_id, h.actor_type, h.actor_id, sum(h.events), sum(h.counted)
    FROM orgs o CROSS JOIN LATERAL (SELECT * FROM audit_rollups x WHERE x.org_id = o.id AND x.hour >= folded AND x.hour < upto) h
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING sum(h.events) <> 0 OR sum(h.counted) <> 0 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT (org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id)
    DO UPDATE SET events = r.events + excluded.events, counted = r.counted + excluded.counted;
  INSERT INTO audit_rollup_latency_daily AS l (org_id, day, tool_name, connector_id, duration_ms, calls)
    SELECT h.org_id, audit_day_of(h.hour), h.tool_name, h.connector_id, h.duration_ms, sum(h.calls)
    FROM orgs o CROSS JOIN LATERAL (SELECT * FROM audit_rollup_latency x WHERE x.org_id = o.id AND x.hour >= folded AND x.hour < upto) h
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(h.calls) <> 0 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (org_id, day, tool_name, connector_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  INSERT INTO audit_rollup_agent_latency_daily AS l (org_id, day, actor_type, actor_id, duration_ms, calls)
    SELECT h.org_id, audit_day_of(h.hour), h.actor_type, h.actor_id, h.duration_ms, sum(h.calls)
    FROM orgs o CROSS JOIN LATERAL (SELECT * FROM audit_rollup_agent_latency x WHERE x.org_id = o.id AND x.hour >= folded AND x.hour < upto) h
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(h.calls) <> 0 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (org_id, day, actor_type, actor_id, duration_ms) DO UPDATE SET calls = l.calls + excluded.calls;
  UPDATE audit_rollup_days SET folded_before = upto;
  RETURN extract(epoch FROM upto - folded)::int / 3600;
END $f$;
`,
  },
  {
    version: 31,
    name: 'audit_rollup_hours_pruned',
    // Issue 42 item 3 (docs/decisions/0414): the hourly roll-ups that have a daily level (counts, tool latency, agent
    // latency) stop growing with time. Only a window that does not start at a day reads hours older than
    // audit_rollup_days.folded_before, and the only such window is the insights' last 24 hours; so hours older than
    // both folded_before and p_keep are deleted, at most p_max_rows per table per call, org by org along each key's
    // (org_id, hour) prefix. Rows a concurrent transaction holds (a late seal or retention changing an old hour) are
    // skipped, not waited for (no lock order to keep with the trigger), and go at a later call. A change to a pruned
    // hour afterwards writes an hourly row again (a negative one is deleted by the trigger itself); it is pruned in turn.
    // audit_rollup_refusals has no daily level and is kept whole (the fingerprints read it over 31 days).
    sql: `
CREATE FUNCTION audit_rollup_prune(p_keep interval, p_max_rows int) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE
  upto timestamptz;
  a int;
  b int;
  c int;
BEGIN
  SELECT least(d.folded_before, audit_hour_of(clock_timestamp() - p_keep)) INTO upto FROM audit_rollup_days d;
  DELETE FROM audit_rollups WHERE ctid = ANY (ARRAY(
    SELECT x.ctid FROM orgs o CROSS JOIN LATERAL (
      SELECT r.ctid FROM audit_rollups r WHERE r.org_id = o.id AND r.hour < upto LIMIT p_max_rows FOR UPDATE OF r SKIP LOCKED) x
    LIMIT p_max_rows));
  GET DIAGNOSTICS a = ROW_COUNT;
  DELETE FROM audit_rollup_latency WHERE ctid = ANY (ARRAY(
    SELECT x.ctid FROM orgs o CROSS JOIN LATERAL (
      SELECT r.ctid FROM audit_rollup_latency r WHERE r.org_id = o.id AND r.hour < upto LIMIT p_max_rows FOR UPDATE OF r SKIP LOCKED) x
    LIMIT p_max_rows));
  GET DIAGNOSTICS b = ROW_COUNT;
  DELETE FROM audit_rollup_agent_latency WHERE ctid = ANY (ARRAY(
    SELECT x.ctid FROM orgs o CROSS JOIN LATERAL (
      SELECT r.ctid FROM audit_rollup_agent_latency r WHERE r.org_id = o.id AND r.hour < upto LIMIT p_max_rows FOR UPDATE OF r SKIP LOCKED) x
    LIMIT p_max_rows));
  GET DIAGNOSTICS c = ROW_COUNT;
  RETURN greatest(a, b, c);
END $f$;
`,
  },
];
