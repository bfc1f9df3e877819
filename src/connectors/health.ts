/**
 * Connector health (docs/decisions/0325): whether each active connector's source answers, from the outcomes of real
 * calls and, for connectors not called successfully within the interval, a light probe (the driver's validate: one
 * fresh connection or MCP session). Probes are claimed in the store, so instances never probe a connector twice per
 * interval; each instance runs a few at once, on a jittered timer that stops on shutdown.
 */
import { recordAudit } from '../audit/repository.ts';
import type { Config } from '../config.ts';
import type { OutboundPolicy } from '../net/outbound.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import { describeError, type Logger } from '../util/log.ts';
import { claimDueProbes, findActiveConnector, setHealth, type HealthState } from './health-statements.ts';
import { getDriver } from './registry.ts';
import { credentialContext, type ConnectorRow } from './repository.ts';
import { ConnectorError, type SourceEnv } from './types.ts';

export interface ConnectorHealthDeps {
  store: Pick<Store, 'db'>;
  box: SecretBox;
  log: Logger;
  outbound: OutboundPolicy;
  config: Pick<Config, 'connectorProbeIntervalMs' | 'statementTimeoutMs' | 'maxResultBytes'>;
}

/** Probes one instance runs at once, and connectors it claims per store round trip. */
const PROBE_CONCURRENCY = 4;
const CLAIM_BATCH = 32;
/** The shortest interval honoured (a smaller setting would be a probe storm). */
const MIN_INTERVAL_MS = 200;
/** A probe that has not answered by then counts as a failure. */
const MIN_PROBE_TIMEOUT_MS = 5000;

export class ConnectorHealth {
  /** When a call last reached each connector's source and succeeded on this instance. */
  private readonly lastOk = new Map<string, number>();
  /** Connectors this instance last saw unhealthy (a successful call then records the recovery at once). */
  private readonly unhealthy = new Set<string>();
  /** When this instance last probed a connector because a call failed. */
  private readonly earlyProbes = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = true;
  private readonly intervalMs: number;

  constructor(private readonly deps: ConnectorHealthDeps) {
    const every = deps.config.connectorProbeIntervalMs;
    this.intervalMs = every > 0 ? Math.max(MIN_INTERVAL_MS, every) : 0;
  }

  /** Starts the periodic probe (not when the interval is 0). */
  start(): void {
    if (!this.intervalMs || !this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops the timer and waits for the probes under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }

  /**
   * The outcome of a call that reached the connector's source. A success is proof of health; a failure may be the
   * statement's own (bad SQL, a tool error), so it asks for a probe soon rather than deciding.
   */
  observe(orgId: string, connectorId: string, ok: boolean): void {
    if (ok) {
      this.lastOk.set(connectorId, Date.now());
      if (this.unhealthy.has(connectorId)) this.track(this.record(orgId, connectorId, 'healthy', null));
      return;
    }
    if (this.stopped) return;
    const last = this.earlyProbes.get(connectorId) ?? 0;
    if (Date.now() - last < this.intervalMs / 2) return;
    this.earlyProbes.set(connectorId, Date.now());
    this.track(findActiveConnector(this.deps.store.db, connectorId).then((row) => (row && !this.stopped ? this.probe(row) : undefined)));
  }

  private track(work: Promise<void>): void {
    const running = work.catch((err: unknown) => this.deps.log.error('connector health check failed', { error: describeError(err) }));
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running));
  }

  private schedule(): void {
    if (this.stopped) return;
    // Jittered (0.8x to 1.2x), so instances started together do not probe in step.
    const delay = this.intervalMs * (0.8 + Math.random() * 0.4);
    this.timer = setTimeout(() => {
      const tick = this.tick().catch((err: unknown) => this.deps.log.error('connector probe round failed', { error: describeError(err) }));
      this.inFlight.add(tick);
      void tick.finally(() => {
        this.inFlight.delete(tick);
        this.schedule();
      });
    }, delay);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** One round: claims the due connectors in batches and probes those no call proved healthy meanwhile. */
  private async tick(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const rows = await claimDueProbes(this.deps.store.db, this.intervalMs, CLAIM_BATCH);
      const now = Date.now();
      const due: ConnectorRow[] = [];
      for (const row of rows) {
        if (row.health === 'unhealthy') this.unhealthy.add(row.id);
        else this.unhealthy.delete(row.id);
        const recentlyOk = now - (this.lastOk.get(row.id) ?? 0) < this.intervalMs;
        if (!recentlyOk) due.push(row);
        else if (row.health !== 'healthy') await this.record(row.orgId, row.id, 'healthy', null);
      }
      await eachLimited(due, PROBE_CONCURRENCY, (row) => this.probe(row));
      if (rows.length < CLAIM_BATCH) return;
    }
  }

  /** Connects as a validation does (nothing is introspected) and records what it found. */
  private async probe(row: ConnectorRow): Promise<void> {
    const driver = getDriver(row.type);
    if (!driver) return;
    const { config, outbound, box } = this.deps;
    const env: SourceEnv = {
      connectorName: row.name,
      outbound,
      orgId: row.orgId,
      limits: { statementTimeoutMs: config.statementTimeoutMs, maxResultBytes: config.maxResultBytes },
    };
    let reason: string | null = null;
    try {
      const credential = row.credentialSealed ? box.decrypt(row.credentialSealed, credentialContext(row.id)) : null;
      await withTimeout(driver.validate(row.id, row.config, credential, env), Math.max(MIN_PROBE_TIMEOUT_MS, config.statementTimeoutMs));
    } catch (err) {
      reason = err instanceof ConnectorError ? err.message : err instanceof ProbeTimeout ? err.message : 'The source did not answer as expected.';
      if (!(err instanceof ConnectorError) && !(err instanceof ProbeTimeout))
        this.deps.log.error('connector probe failed', { connector: row.id, error: describeError(err) });
    }
    await this.record(row.orgId, row.id, reason === null ? 'healthy' : 'unhealthy', reason);
  }

  /** Writes a change of health once (the first instance to see it), audited when it enters or leaves `unhealthy`. */
  private async record(orgId: string, connectorId: string, state: HealthState, reason: string | null): Promise<void> {
    const before = await this.deps.store.db.transaction(async (tx) => {
      const before = await setHealth(tx, orgId, connectorId, state, reason);
      if (before === null || (state !== 'unhealthy' && before !== 'unhealthy')) return before;
      await recordAudit(tx, {
        orgId,
        action: state === 'unhealthy' ? 'connector.unhealthy' : 'connector.recovered',
        actor: { type: 'system', id: null },
        targetType: 'connector',
        targetId: connectorId,
        outcome: state === 'unhealthy' ? 'error' : 'success',
        details: state === 'unhealthy' ? { reason } : { was: before },
      });
      return before;
    });
    if (state === 'unhealthy') this.unhealthy.add(connectorId);
    else this.unhealthy.delete(connectorId);
    if (before !== null && (state === 'unhealthy' || before === 'unhealthy')) {
      this.deps.log.info(state === 'unhealthy' ? 'connector unhealthy' : 'connector recovered', { connector: connectorId });
    }
  }
}

class ProbeTimeout extends Error {}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(`The source did not answer within ${Math.round(ms / 1000)} s.`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Runs `work` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}
