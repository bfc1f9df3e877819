/** The one small interface every connector driver implements, and the shapes it exchanges with the gateway. */

/** JSON Schema object as carried in an MCP tool descriptor. */
export type JsonSchema = {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
};

/** Configuration of a database connector (postgresql, mysql, ...). `credential` (the password) is kept apart. */
export interface DatabaseConfig {
  host: string;
  port?: number;
  database: string;
  user: string;
  /** disable: plain TCP; require: TLS without certificate check; verify-full: TLS with certificate and host check. */
  tls?: 'disable' | 'require' | 'verify-full';
  /** Schemas whose tables and views become tools. Default: public (postgresql) or the configured database (mysql). */
  schemas?: string[];
}

export interface ColumnInfo {
  name: string;
  type: string;
}

/** A tool a connector yields, before the org's per-tool settings are applied. */
export interface ToolSpec {
  /** Base MCP name, `query_<type>_<table>`: lower-case, [a-z0-9_], at most 64 characters, unique within the connector. */
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** What the tool works on; opaque to the gateway, used by the driver at execution. */
  target: {
    schema: string;
    table: string;
    kind: 'table' | 'view';
    columns: ColumnInfo[];
    /** MySQL/MariaDB: the server's `lower_case_table_names` when introspected; the guard compares names by it. */
    lowerCaseTableNames?: 0 | 1 | 2;
    /** MySQL/MariaDB: stored functions of the table's database named like an allowed built-in; the guard refuses those names. */
    storedFunctions?: string[];
  };
}

/** Limits the gateway applies to every execution; values come from the config module. */
export interface ExecutionLimits {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  /** Hard cap on rows returned whatever `limit` asks for. */
  maxRows: number;
  /** Cap on the UTF-8 size of the result text. */
  maxResultBytes: number;
  /** Calls that may run on one connector at once (at most its pool size); unset: no cap (tests, tools). */
  maxConcurrentCalls?: number;
  /** How long a call waits for a free slot before it answers "busy". */
  queueTimeoutMs?: number;
  /** PostgreSQL: how long a server-side resolution verdict is reused (postgresql/resolution.ts); default 30 s, 0 = every call. */
  resolutionCacheTtlMs?: number;
}

/** Everything a driver needs to run one call. */
export interface ExecutionContext {
  connectorId: string;
  config: DatabaseConfig;
  credential: string | null;
  allowWrite: boolean;
  allowDdl: boolean;
  /** Per-tool setting: when true, writes are refused even if the connector allows them. */
  readOnly: boolean;
  limits: ExecutionLimits;
  signal?: AbortSignal;
}

export type ToolContent = { type: 'text'; text: string };

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

export interface ConnectorDriver {
  /** Connector type name, e.g. `postgresql`. */
  readonly type: string;
  readonly kind: 'database' | 'mcp';
  /** JSON Schema of `config` for this type (validated before create and patch). */
  readonly configSchema: Record<string, unknown>;
  /** Connects with the credential; throws ConnectorError on failure. */
  validate(connectorId: string, config: DatabaseConfig, credential: string | null): Promise<void>;
  /** Lists the tools the source yields; throws ConnectorError on failure. */
  introspect(connectorId: string, config: DatabaseConfig, credential: string | null): Promise<ToolSpec[]>;
  /** Runs a call. Never throws for tool-level failures (bad SQL, database down, timeout): returns isError. */
  execute(tool: ToolSpec, args: Record<string, unknown>, ctx: ExecutionContext): Promise<ToolResult>;
  /** Closes the connector's pool (archived, or config changed). */
  close(connectorId: string): Promise<void>;
  /** Closes every pool (shutdown, tests). */
  closeAll(): Promise<void>;
}
