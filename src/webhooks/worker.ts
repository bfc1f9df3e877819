/**
 * The delivery worker: first relays sealed tool-call audit rows into the outbox as tool.called events (relay.ts), then claims due deliveries from the shared outbox (several instances side by side), signs and sends
 * each through the outbound guard, and records the outcome: delivered on 2xx, retried with backoff otherwise, the
 * endpoint disabled on 410. Delivery is at least once; the event id never changes, so receivers de-duplicate on it.
 */
import { countWebhookDelivery } from '../observability/metrics.ts';
import { inSpan } from '../observability/tracing.ts';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import { OutboundFetchError, OutboundRefusedError, safeFetch, type OutboundPolicy } from '../net/outbound.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import { describeError, type Logger } from '../util/log.ts';
import { claimDue, disableByGateway, finishAttempt, pruneOutbox, type AttemptOutcome, type ClaimedDelivery } from './repository.ts';
import { relayToolCalled } from './relay.ts';
import { signatureHeaders } from './signing.ts';
import { attemptExchange } from './exchange.ts';

/** Attempts per delivery, the first included; with the default 30 s base the last one comes 27 to 40 hours after the event. */
export const MAX_ATTEMPTS = 14;
const MAX_DELAY_MS = 8 * 3600_000;
/** Requests in flight per instance, all endpoints together: waiting requests cost a socket each, so room for many
 * endpoints' shares (a few hanging endpoints hold at most their share each until the timeout). */
const MAX_IN_FLIGHT = 128;
const HISTORY_DAYS = 30;

/** Delay before attempt `failed + 1` after `failed` failures: base * 2^(failed-1), capped at 8 h, times 0.8-1.2. */
export function retryDelayMs(failed: number, baseMs: number, random: () => number = Math.random): number {
  const exponential = Math.min(baseMs * 2 ** Math.min(failed - 1, 30), MAX_DELAY_MS);
  return Math.round(exponential * (0.8 + 0.4 * random()));
}

export interface WebhookWorkerDeps {
  store: Pick<Store, 'db'>;
  box: SecretBox;
  outbound: OutboundPolicy;
  log: Logger;
  config: Pick<
    Config,
    'webhookTimeoutMs' | 'webhookMaxResponseBytes' | 'webhookRetryBaseMs' | 'webhookLeaseMs' | 'webhookPollMs' | 'webhookEndpointConcurrency'
  >;
}

type Verdict = { outcome: AttemptOutcome; kind: 'delivered' | 'retry' | 'gone' };

export class WebhookWorker {
  private readonly leaseToken = randomUUID();
  private readonly inFlight = new Set<Promise<void>>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;
  private polls = 0;
  private again = false;

  constructor(private readonly deps: WebhookWorkerDeps) {}

  start(): void {
    this.schedule(0);
  }

  /** Polls now instead of at the next tick (new events were written, or a slot freed); once more if a poll runs. */
  kick(): void {
    if (this.stopped) return;
    if (this.polling) this.again = true;
    else this.schedule(0);
  }

  /** Stops claiming and waits for the requests in flight (each bounded by the timeout) to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.polling;
    await Promise.allSettled([...this.inFlight]);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.again = false;
      this.polling = this.poll().finally(() => {
        this.polling = null;
        this.schedule(this.again ? 0 : this.deps.config.webhookPollMs);
      });
    }, ms);
  }

  private async poll(): Promise<void> {
    try {
      await relayToolCalled(this.deps.store.db);
    } catch (err) {
      // The cursors did not move (one transaction per round): the next poll relays the same rows, with the same ids.
      this.deps.log.error('webhook relay failed', { error: describeError(err) });
    }
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return;
    const { config } = this.deps;
    try {
      const claims = await claimDue(this.deps.store.db, {
        limit: room,
        perEndpoint: config.webhookEndpointConcurrency,
        leaseMs: config.webhookLeaseMs,
        leaseToken: this.leaseToken,
      });
      for (const claim of claims) {
        // A finished delivery frees a slot of its endpoint: look for the next one at once rather than at the next tick.
        const running: Promise<void> = this.deliver(claim).finally(() => {
          this.inFlight.delete(running);
          this.kick();
        });
        this.inFlight.add(running);
      }
      if (++this.polls % 3600 === 0) await pruneOutbox(this.deps.store.db, HISTORY_DAYS);
    } catch (err) {
      this.deps.log.error('webhook poll failed', { error: describeError(err) });
    }
  }

  private async deliver(claim: ClaimedDelivery): Promise<void> {
    const verdict = await inSpan('webhook delivery', () => this.send(claim));
    countWebhookDelivery(verdict.kind);
    const { config } = this.deps;
    try {
      if (verdict.kind === 'delivered') {
        await finishAttempt(this.deps.store.db, claim, this.leaseToken, verdict.outcome, { status: 'delivered' });
      } else if (verdict.kind === 'gone') {
        await finishAttempt(this.deps.store.db, claim, this.leaseToken, verdict.outcome, { status: 'failed' });
        await disableByGateway(this.deps.store.db, claim.webhookId, 'gone');
      } else if (claim.attempt >= MAX_ATTEMPTS) {
        await finishAttempt(this.deps.store.db, claim, this.leaseToken, verdict.outcome, { status: 'failed' });
      } else {
        await finishAttempt(this.deps.store.db, claim, this.leaseToken, verdict.outcome, {
          retryInMs: retryDelayMs(claim.attempt, config.webhookRetryBaseMs),
        });
      }
    } catch (err) {
      // The lease runs out and another attempt follows; the receiver de-duplicates on the event id.
      this.deps.log.error('webhook outcome not recorded', { delivery: claim.id, error: describeError(err) });
    }
  }

  /** One signed POST through the outbound guard (address rules re-checked at every send, no redirects, capped). */
  private async send(claim: ClaimedDelivery): Promise<Verdict> {
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    let secret: string;
    try {
      secret = this.deps.box.decrypt(claim.secretSealed, `webhook_secret:${claim.webhookId}`);
    } catch {
      return { kind: 'retry', outcome: { statusCode: null, latencyMs: 0, error: 'the signing secret could not be unsealed' } };
    }
    const headers = signatureHeaders(secret, claim.eventId, claim.type, claim.body, Math.floor(Date.now() / 1000));
    try {
      const res = await safeFetch(claim.url, { method: 'POST', headers, body: claim.body }, this.deps.outbound, {
        requireHttps: true,
        timeoutMs: this.deps.config.webhookTimeoutMs,
        maxBytes: this.deps.config.webhookMaxResponseBytes,
      });
      const outcome = { statusCode: res.status, latencyMs: latency(), error: null, exchange: await attemptExchange(headers, res) };
      if (res.status >= 200 && res.status < 300) return { kind: 'delivered', outcome };
      if (res.status === 410) return { kind: 'gone', outcome: { ...outcome, error: 'the receiver answered 410 Gone: endpoint disabled' } };
      return { kind: 'retry', outcome: { ...outcome, error: `the receiver answered ${res.status}` } };
    } catch (err) {
      // The guard's messages name at most the host; anything else stays in the log, not in the admin's attempts list.
      const known = err instanceof OutboundRefusedError || err instanceof OutboundFetchError;
      if (!known) this.deps.log.error('webhook delivery failed', { delivery: claim.id, error: describeError(err) });
      const error = known ? err.message : 'delivery failed';
      // The guard refuses a 3xx before handing it back; its status is still worth showing in the attempts list.
      const redirectStatus = err instanceof OutboundRefusedError && err.reason === 'redirect' ? Number(/\((3\d\d)\)/.exec(err.message)?.[1]) : NaN;
      const statusCode = Number.isNaN(redirectStatus) ? null : redirectStatus;
      const exchange = await attemptExchange(headers, null);
      return { kind: 'retry', outcome: { statusCode, latencyMs: latency(), error: error.slice(0, 300), exchange } };
    }
  }
}
