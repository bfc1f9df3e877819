/**
 * The one small interface every connector driver implements, and the shapes it exchanges with the gateway. The seam
 * is source-neutral: a type owns its config (`C`, the contract's per-type schema), its tool-catalog step
 * (`introspect`, yielding ToolSpec<T> whose `target` only it reads), its call step (`execute`) and the options that
 * step takes (`X`: every type gets a CallContext; database types add their write permissions and lock limit). Adding
 * a type is one folder under src/connectors/ plus one import line in src/connectors/index.ts
 * (docs/decisions/0170-connector-folder-shape.md).
 */
import type { OutboundPolicy } from '../net/outbound.ts';
import type * as wire from '../../generated/client/types.gen.ts';

/** JSON Schema object as carried in an MCP tool descriptor. */
export type JsonSchema = {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
};

/**
 * Configuration of a database connector (postgresql, mysql, ...), as the contract defines it (openapi.yaml
 * DatabaseConfig, generated); `credential` (the password) is kept apart.
 */
export type DatabaseConfig = wire.DatabaseConfig;

export interface ColumnInfo {
  name: string;
  type: string;
}

/** What a SQL tool works on (the `target` of the SQL drivers' ToolSpecs). */
export interface SqlTarget {
  schema: string;
  table: string;
  kind: 'table' | 'view';
  columns: ColumnInfo[];
  /** MySQL/MariaDB: the server's `lower_case_table_names` when introspected; the guard compares names by it. */
  lowerCaseTableNames?: 0 | 1 | 2;
  /** MySQL/MariaDB: stored functions of the table's database named like an allowed built-in; the guard refuses those names. */
  storedFunctions?: string[];
  /** SQL Server: the database's collation is case-sensitive; the guard then compares names exactly. */
  caseSensitiveNames?: boolean;
  /** SQL Server: the login's default schema, read at introspection (one-part names resolve there). */
  defaultSchema?: string;
  /** SQL Server: SNAPSHOT isolation is allowed on the database (calls then run under it). */
  snapshot?: boolean;
  /** A saved-statement tool (shared/saved.ts): its statement and typed parameters; the table is the one it reads. */
  saved?: SavedStatement;
  /** The primary key's columns in key order, read at introspection (the schema tool shows them); unset: none known. */
  primaryKey?: string[];
  /** The table's foreign keys, read at introspection (the schema tool shows them); unset: none known. */
  foreignKeys?: ForeignKey[];
  /** The server's estimate of the table's rows (its statistics, not a count); unset: unknown (views, never analysed). */
  rowEstimate?: number;
  /**
   * A view: the tables and views its definition reads, as introspection found them (MySQL/MariaDB); a statement
   * touching the view is governed by their rows too (docs/decisions/0292, item 4). Unset: not recorded.
   */
  bases?: { schema: string; table: string }[];
}

/** One typed parameter of a saved statement, as the admin declares it (the contract's SavedToolParameter). */
export type SavedParam = wire.SavedToolParameter;
export type ScalarType = wire.SavedToolScalarType;

/** A statement split at its placeholders: parts.length === slots.length + 1 (shared/saved.ts finds them). */
export interface SavedTemplate {
  parts: string[];
  /** The parameter name at each placeholder, in text order (one name may recur). */
  slots: string[];
}

/** What a saved tool's target carries besides its table (SqlTarget.saved), stored with the tool. */
export interface SavedStatement extends SavedTemplate {
  statement: string;
  parameters: SavedParam[];
  version: number;
}

/** The stored policy of one tool (tools.policy; the contract's ToolPolicy, every field present; shared/policy.ts applies it). */
export type ToolPolicy = Required<wire.ToolPolicy>;
export type ColumnMask = wire.ColumnMask;

/** A policy as a call carries it: the stored policy, the org's mask key and the caller's attributes. */
export interface CallPolicy {
  policy: ToolPolicy;
  /** Identifies the policy's text (guard verdict and resolution cache keys). */
  key: string;
  /** The org's 32-byte key for `hash` masks (HMAC-SHA256); null when the policy has none. */
  maskKey: Uint8Array | null;
  /** The caller's attributes (IdP claims, API key / OAuth client attributes). */
  caller: Readonly<Record<string, string>>;
}

/** A foreign key of a table: its columns, and the table and columns they reference (in the same order). */
export interface ForeignKey {
  columns: string[];
  references: { schema: string; table: string; columns: string[] };
}

/**
 * What a saved statement was found to be at save time: the connector's table it works on, whether it writes, and
 * its template (the statement split at its `:name` placeholders by the type's own lexer; absent: none, as MongoDB's
 * JSON pipelines).
 */
export type SavedCheck<T> =
  /** `touched`: a statement over several tables (issue 38), each it reads; the first is `target`. */
  { ok: true; target: T; write: boolean; template?: SavedTemplate; touched?: T[] } | { ok: false; reason: string };

/** Behaviour hints of a tool as MCP declares them; a type that sets none gets the database defaults (catalog.ts). */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  openWorldHint: boolean;
}

/**
 * What a connector's row governs (decisions 0313, 0315): a tool (absent: this), the connector's schema tool (answered
 * by the gateway from the catalog), or an upstream MCP server's resource, resource template or prompt.
 */
export type ItemKind = 'tool' | 'schema' | 'resource' | 'resource_template' | 'prompt';

/** A tool a connector yields, before the org's per-tool settings are applied. */
export interface ToolSpec<T = unknown> {
  /** Base MCP name: lower-case, [a-z0-9_], at most 64 characters, unique within the connector and kind. */
  name: string;
  /** Unset: a tool. */
  kind?: ItemKind;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** Hints the type declares itself (an upstream MCP server's); unset for databases (derived from write permissions). */
  annotations?: ToolHints;
  /** What the tool works on; opaque to the gateway, read only by the driver of its type at execution. */
  target: T;
}

/** A tool the source lists that the gateway does not serve, and why (shown to the org's admin on the connector). */
export interface SkippedTool {
  name: string;
  reason: string;
}

/** What the gateway hands a driver's validate/introspect besides config and credential. */
export interface SourceEnv {
  /** Where introspect reports the source's tools it skips (the others are served); unset: not reported. */
  reportSkipped?: (skipped: SkippedTool[]) => void;
  /** The connector's name (an upstream MCP server's tools are named after it). */
  connectorName?: string;
  /** The operator's outbound policy: every connection a driver opens is checked by it (and pinned where it can). */
  outbound?: OutboundPolicy;
  /** The org the connector belongs to (an embedded database answers only its owner's connectors). */
  orgId?: string;
  limits?: Pick<CallLimits, 'statementTimeoutMs' | 'maxResultBytes'>;
}

/** Limits the gateway applies to every call of every type; values come from the config module. */
export interface CallLimits {
  statementTimeoutMs: number;
  /** Hard cap on rows returned whatever `limit` asks for. */
  maxRows: number;
  /** Cap on the UTF-8 size of the result text. */
  maxResultBytes: number;
  /** Calls that may run on one connector at once (at most its pool size); unset: no cap (tests, tools). */
  maxConcurrentCalls?: number;
  /** How long a call waits for a free slot before it answers "busy". */
  queueTimeoutMs?: number;
}

/** A database call's limits: every call's, and how long a statement waits for a lock. */
export interface ExecutionLimits extends CallLimits {
  lockTimeoutMs: number;
}

/** What every type's driver gets to run one call (the `mcp` type gets only this). */
export interface CallContext<C = unknown, L extends CallLimits = CallLimits> {
  connectorId: string;
  config: C;
  credential: string | null;
  limits: L;
  /** The operator's outbound policy: every connection a driver opens is checked by it (and pinned where it can). */
  outbound?: OutboundPolicy;
  /** The org the connector belongs to (an embedded database answers only its owner's connectors). */
  orgId?: string;
  signal?: AbortSignal;
}

/** What a database driver gets to run one call: the call's context, the write permissions and the lock limit. */
export interface ExecutionContext<C = DatabaseConfig, L extends ExecutionLimits = ExecutionLimits> extends CallContext<C, L> {
  allowWrite: boolean;
  allowDdl: boolean;
  /** Per-tool setting: when true, writes are refused even if the connector allows them. */
  readOnly: boolean;
  /** The tool's column and row policy with the caller's attributes (shared/policy.ts); unset: the tool has none. */
  policy?: CallPolicy;
  /**
   * Issue 38 (docs/decisions/0292): the connector's tables a statement may touch, each with its own governance, as
   * the catalog built them (the caller's attributes added per call). Unset: the tool's own table alone, as before.
   * `key` identifies the list and its policies (catalog version and connector): it keys the guard's verdicts.
   */
  tables?: { key: string; list: readonly CallTable[] };
  /** With `tables`: told which of them the statement touches once the guard passed it (audit rows). */
  touched?: (tables: readonly SqlTarget[]) => void;
}

/**
 * One table of a connector as a multi-table call sees it: where it is and how its own tool row governs it. `T`: the
 * type's tool target (a SQL table; MongoDB: a collection, mongodb/driver.ts).
 */
export interface CallTable<T = SqlTarget> {
  target: T;
  /** The table's tool row is enabled: a statement touching a disabled table is refused, naming it. */
  enabled: boolean;
  /** The table's policy with the caller's attributes; unset: none. Applied at every reference of the table. */
  policy?: CallPolicy;
}

/** Text from every type; other MCP content blocks (images, audio, resources) pass through from upstream servers. */
type ToolContent = { type: 'text'; text: string } | { type: string; [key: string]: unknown };

/** An MCP tools/call result. A failing tool is a result with isError, never a thrown protocol error. */
export interface ToolResult {
  content: ToolContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** Thrown by validate/introspect with a message safe to show the org (no password, no DSN). */
export class ConnectorError extends Error {
  constructor(
    message: string,
    readonly code: 'connection_failed' | 'auth_failed' | 'timeout' | 'invalid_config' | 'introspection_failed',
  ) {
    super(message);
    this.name = 'ConnectorError';
  }
}

/**
 * C: the type's config (its schema in the contract's ConnectorConfig oneOf); T: its ToolSpec target; X: what its
 * execute reads of a call (the gateway hands every type the same object; a type's X names the part it may read).
 */
export interface ConnectorDriver<C = DatabaseConfig, T = unknown, X extends CallContext<C> = ExecutionContext<C>> {
  /** Connector type name, e.g. `postgresql`. */
  readonly type: string;
  readonly kind: 'database' | 'mcp';
  /** A database type that never writes through Toolgate (mongodb, mssql, oracle): allow_write/allow_ddl stay false. */
  readonly readOnly?: boolean;
  /** JSON Schema of `config` for this type (validated before create and patch). */
  readonly configSchema: Record<string, unknown>;
  /**
   * Resolves once the implementation can run; a type whose client package is not installed rejects with 422
   * connector_type_unavailable naming the package (shared/lazy.ts). Absent: always ready.
   */
  ready?(): Promise<void>;
  /** Connects with the credential; throws ConnectorError on failure. */
  validate(connectorId: string, config: C, credential: string | null, env?: SourceEnv): Promise<void>;
  /** The tool-catalog step: lists the tools the source yields; throws ConnectorError on failure. */
  introspect(connectorId: string, config: C, credential: string | null, env?: SourceEnv): Promise<ToolSpec<T>[]>;
  /**
   * Saved-statement tools (absent: the type serves none): checks a statement with typed `:name` placeholders against
   * the guard of each of the connector's tables (`tables`: their introspected targets; `policies`: each one's policy,
   * whose hidden columns a statement over several tables may not name) with the connector's write permission, and
   * returns the table it works on. Never throws for a refused statement.
   */
  checkSaved?(statement: string, params: SavedParam[], tables: T[], allowWrite: boolean, policies?: readonly (ToolPolicy | null)[]): Promise<SavedCheck<T>>;
  /**
   * SQL types: whether a column and row policy (shared/policy.ts) fits one of its tools; the problem, or null.
   * Absent: the type takes no policies.
   */
  checkPolicy?(tool: ToolSpec<T>, policy: ToolPolicy): Promise<string | null>;
  /**
   * Upstream MCP types: one request of an item method (resources/read, prompts/get, completion/complete) under the
   * call's limits, answering the upstream's result; throws ConnectorError with a message safe for the org. Absent: none.
   */
  request?(method: string, params: Record<string, unknown>, ctx: X): Promise<Record<string, unknown>>;
  /**
   * SQL types, issue 38 (docs/decisions/0292): the tables a call with `ctx.tables` would touch, decided as execute
   * decides it (guard and governance, nothing sent to the database), so the runtime can hold it for every touched
   * table's approval before it runs; or the tool result that refuses the call. Without `ctx.tables`: the tool's table.
   */
  touchedTables?(tool: ToolSpec<T>, args: Record<string, unknown>, ctx: X): Promise<T[] | ToolResult>;
  /** The call step. Never throws for tool-level failures (bad SQL, source down, timeout): returns isError. */
  execute(tool: ToolSpec<T>, args: Record<string, unknown>, ctx: X): Promise<ToolResult>;
  /** Closes the connector's pool (archived, or config changed). */
  close(connectorId: string): Promise<void>;
  /** Closes every pool (shutdown, tests). */
  closeAll(): Promise<void>;
}

/** The ToolSpec of the SQL drivers (postgresql, mysql, mssql, oracle). */
export type SqlToolSpec = ToolSpec<SqlTarget>;
