/**
 * The Prometheus metrics of this process (prom-client), served by GET /metrics. Labels take only values from small
 * fixed sets (route templates, methods, connector types, outcomes, reasons): never an org id, a tool name, a user or
 * anything a caller chooses, so the series count stays bounded whatever the traffic (docs/decisions/0122-metric-label-rule.md).
 * Counters and histograms are series.ts's (counting is one addition, no label object); gauges and the process
 * metrics are prom-client's, read at scrape time.
 */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './series.ts';

export const registry = new Registry();

let defaultsOn = false;
/** Process memory, CPU, event-loop lag and the like; started by the first gateway (not by the CLI). */
export function startDefaultMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: registry, prefix: 'toolgate_', eventLoopMonitoringPrecision: 20 });
}

/** Latency buckets in seconds: 1 ms to 30 s (a statement timeout is at most minutes, an approval wait is not timed). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const httpRequests = new HotCounter({
  name: 'toolgate_http_requests_total',
  help: 'HTTP requests answered, by route template, method and status.',
  labelNames: ['route', 'method', 'status'],
  registers: [registry],
});
const httpDuration = new HotHistogram({
  name: 'toolgate_http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by route template.',
  labelNames: ['route'],
  buckets: BUCKETS,
  registers: [registry],
});

export function observeHttp(route: string, method: string, status: number, seconds: number): void {
  httpRequests.inc(route, method, statusText(status));
  httpDuration.observe(seconds, route);
}

const STATUS_TEXT = new Map<number, string>();
function statusText(status: number): string {
  let text = STATUS_TEXT.get(status);
  if (!text) STATUS_TEXT.set(status, (text = String(status)));
  return text;
}

const MCP_METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
]);
const mcpRequests = new HotCounter({
  name: 'toolgate_mcp_requests_total',
  help: 'JSON-RPC requests answered on the MCP endpoint, by method (unknown for any other) and outcome (ok, rpc_error, internal_error).',
  labelNames: ['method', 'outcome'],
  registers: [registry],
});
const mcpDuration = new HotHistogram({
  name: 'toolgate_mcp_request_duration_seconds',
  help: 'Time to answer a JSON-RPC request, by method.',
  labelNames: ['method'],
  buckets: BUCKETS,
  registers: [registry],
});

export type McpOutcome = 'ok' | 'rpc_error' | 'internal_error';
export function observeMcp(method: string, outcome: McpOutcome, seconds: number): void {
  const name = MCP_METHODS.has(method) ? method : 'unknown';
  mcpRequests.inc(name, outcome);
  mcpDuration.observe(seconds, name);
}

const toolCalls = new HotCounter({
  name: 'toolgate_tool_calls_total',
  help: 'tools/call by tool type (postgresql, mysql, mcp, builtin, none: an unknown tool) and outcome (success, error, held, refused).',
  labelNames: ['tool_type', 'outcome'],
  registers: [registry],
});
const toolDuration = new HotHistogram({
  name: 'toolgate_tool_call_duration_seconds',
  help: 'Time of a tools/call from lookup to its committed audit row, by tool type.',
  labelNames: ['tool_type'],
  buckets: BUCKETS,
  registers: [registry],
});

export type ToolOutcome = 'success' | 'error' | 'held' | 'refused';
/** `toolType`: the connector type of the tool, null for a built-in or unknown tool. */
export function observeToolCall(toolType: string | null | undefined, outcome: ToolOutcome, seconds: number): void {
  const type = toolType ?? 'none';
  toolCalls.inc(type, outcome);
  toolDuration.observe(seconds, type);
}

/** A refused tools/call: counted as refused, and as a quota refusal when a limit of the plan is why (`byQuota`: its kind says so). */
export function observeToolRefusal(toolType: string | null | undefined, byQuota: boolean, seconds: number): void {
  observeToolCall(toolType, 'refused', seconds);
  if (byQuota) countLimitRefusal('quota');
}

const connectorWait = new HotHistogram({
  name: 'toolgate_connector_queue_wait_seconds',
  help: 'Time a call waited for a free slot of its connector, by connector type.',
  labelNames: ['connector_type'],
  buckets: BUCKETS,
  registers: [registry],
});
const connectorBusy = new HotCounter({
  name: 'toolgate_connector_busy_total',
  help: 'Calls refused because their connector stayed full for the whole queue deadline, by connector type.',
  labelNames: ['connector_type'],
  registers: [registry],
});

export function observeConnectorWait(connectorType: string, seconds: number): void {
  connectorWait.observe(seconds, connectorType);
}
export function countConnectorBusy(connectorType: string): void {
  connectorBusy.inc(connectorType);
}

/** The pools of each connector type, read at scrape time (connectors/shared/pools.ts registers them). */
export interface PoolSource {
  type: string;
  /** Open pools, calls holding a slot, calls waiting for one. */
  usage(): { pools: number; running: number; waiting: number };
}
const poolSources = new Set<PoolSource>();
export function registerPoolSource(source: PoolSource): void {
  poolSources.add(source);
}
new Gauge({
  name: 'toolgate_connector_pool_usage',
  help: 'Connector pools by connector type: open pools (state=pools), calls holding a slot (state=running), calls waiting for one (state=waiting).',
  labelNames: ['connector_type', 'state'],
  registers: [registry],
  collect() {
    this.reset();
    for (const source of poolSources) {
      const { pools, running, waiting } = source.usage();
      this.inc({ connector_type: source.type, state: 'pools' }, pools);
      this.inc({ connector_type: source.type, state: 'running' }, running);
      this.inc({ connector_type: source.type, state: 'waiting' }, waiting);
    }
  },
});

const guardRefusals = new HotCounter({
  name: 'toolgate_guard_refusals_total',
  help: 'SQL calls refused before reaching the database, by dialect and reason (arguments, statement, read_only, not_wrappable).',
  labelNames: ['dialect', 'reason'],
  registers: [registry],
});
export type GuardRefusalReason = 'arguments' | 'statement' | 'read_only' | 'not_wrappable';
export function countGuardRefusal(dialect: string, reason: GuardRefusalReason): void {
  guardRefusals.inc(dialect, reason);
}

const limitRefusals = new HotCounter({
  name: 'toolgate_limit_refusals_total',
  help: "Requests refused by a limit: burst_local (this instance's window), burst_shared (the Redis window of tools/call), quota (the monthly quota, or a trial that ended), rest (REST calls per credential), auth_failures (failed sign-ins per client and address).",
  labelNames: ['limit'],
  registers: [registry],
});
export type LimitKind = 'burst_local' | 'burst_shared' | 'quota' | 'rest' | 'auth_failures';
export function countLimitRefusal(kind: LimitKind): void {
  limitRefusals.inc(kind);
}

const authCacheLookups = new HotCounter({
  name: 'toolgate_mcp_auth_cache_total',
  help: "MCP credential lookups while the credential cache is on, by result: hit (answered from this instance's cache), miss (looked up in the store).",
  labelNames: ['result'],
  registers: [registry],
});
export function countAuthCache(result: 'hit' | 'miss'): void {
  authCacheLookups.inc(result);
}

const webhookDeliveries = new HotCounter({
  name: 'toolgate_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome (delivered, retry, gone).',
  labelNames: ['outcome'],
  registers: [registry],
});
export function countWebhookDelivery(outcome: 'delivered' | 'retry' | 'gone'): void {
  webhookDeliveries.inc(outcome);
}

/** What each gateway of this process reports at scrape time (registered by gateway.ts, removed on close). */
export interface GatewaySource {
  /** Rows waiting in the audit recorder: tool-call rows waiting for their commit, refusals waiting to be written. */
  auditQueue(): { calls: number; denials: number };
  /** 'shared': Redis answers; 'fallback': Redis configured but down (per-instance windows); 'local': no Redis. */
  burstMode(): 'shared' | 'fallback' | 'local';
}
const gatewaySources = new Set<GatewaySource>();
export function registerGatewaySource(source: GatewaySource): () => void {
  gatewaySources.add(source);
  return () => gatewaySources.delete(source);
}
new Gauge({
  name: 'toolgate_audit_queue_depth',
  help: 'Audit rows waiting in this instance: queue=calls (tool-call rows waiting for their group commit), queue=denials (refusals waiting to be written).',
  labelNames: ['queue'],
  registers: [registry],
  collect() {
    let calls = 0;
    let denials = 0;
    for (const source of gatewaySources) {
      const depth = source.auditQueue();
      calls += depth.calls;
      denials += depth.denials;
    }
    this.set({ queue: 'calls' }, calls);
    this.set({ queue: 'denials' }, denials);
  },
});
new Gauge({
  name: 'toolgate_redis_fallback',
  help: '1 while Redis is configured but unreachable and burst limits fall back to per-instance windows, else 0.',
  registers: [registry],
  collect() {
    let fallback = 0;
    for (const source of gatewaySources) if (source.burstMode() === 'fallback') fallback = 1;
    this.set(fallback);
  },
});

/** Outbox rows not yet delivered, read at scrape time from the store (one count query per scrape). */
let outboxDepth: (() => Promise<number>) | null = null;
export function registerOutboxDepth(read: (() => Promise<number>) | null): void {
  outboxDepth = read;
}
new Gauge({
  name: 'toolgate_webhook_outbox_depth',
  help: 'Webhook deliveries waiting to be sent or retried (shared store: the same figure on every instance).',
  registers: [registry],
  async collect() {
    if (!outboxDepth) return this.set(0);
    try {
      this.set(await outboxDepth());
    } catch {
      // The store is down: /readyz says so; the gauge keeps its last value.
    }
  },
});

export const METRICS_CONTENT_TYPE = registry.contentType;
