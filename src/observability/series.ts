/**
 * Counters and histograms for hot paths: a series is a plain object the caller holds (or finds in nested maps, no
 * allocation), and counting is one addition. prom-client's own `inc`/`observe` build and hash a label object on
 * every call, even through a `labels()` child: measured at ~5 µs of a ~30 µs `tools/list`
 * (docs/decisions/0109-hot-path-metrics-series.md). These register in a prom-client Registry like its own metrics
 * and hand it the same values at scrape time, so /metrics, its text format and its escaping stay prom-client's.
 */
import type { Metric, Registry } from 'prom-client';

/** What prom-client's registry reads of a metric at scrape time (its Counter and Histogram produce the same). */
interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
}

interface MetricOptions {
  name: string;
  help: string;
  /** At most three: a series is found through one nested map per label. */
  labelNames: readonly string[];
  registers: Registry[];
}

type Level<S> = Map<string, S | Level<S>>;

/** The series of a metric by label values: nested maps, one level per label, filled on first use. */
abstract class HotMetric<S extends { labels: Record<string, string> }> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  protected readonly labelNames: readonly string[];
  protected readonly all: S[] = [];
  private readonly root: Level<S> = new Map();

  constructor(options: MetricOptions) {
    if (options.labelNames.length > 3) throw new Error(`${options.name}: at most three labels`);
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  protected abstract create(labels: Record<string, string>): S;

  /** The series of these label values (as many as the metric has labels), created at its first use. */
  of(a: string, b?: string, c?: string): S {
    const n = this.labelNames.length;
    let level = this.root;
    let found = level.get(a);
    if (n > 1) {
      if (found === undefined) level.set(a, (found = new Map()));
      level = found as Level<S>;
      found = level.get(b!);
      if (n > 2) {
        if (found === undefined) level.set(b!, (found = new Map()));
        level = found as Level<S>;
        found = level.get(c!);
      }
    }
    if (found !== undefined) return found as S;
    const values = [a, b, c];
    const labels: Record<string, string> = {};
    for (const [i, label] of this.labelNames.entries()) labels[label] = values[i]!;
    const series = this.create(labels);
    level.set(values[n - 1]!, series);
    this.all.push(series);
    return series;
  }

  /** prom-client's Registry.resetMetrics: every series back to zero (the objects stay: callers may hold them). */
  abstract reset(): void;
  abstract get(): Promise<Exported>;
}

export interface CounterSeries {
  readonly labels: Record<string, string>;
  value: number;
}

/** A counter: `of(...).value++` (or `inc`). Series that were never counted are not exported, like prom-client's. */
export class HotCounter extends HotMetric<CounterSeries> {
  readonly type = 'counter' as const;

  protected create(labels: Record<string, string>): CounterSeries {
    return { labels, value: 0 };
  }

  inc(a: string, b?: string, c?: string): void {
    this.of(a, b, c).value++;
  }

  reset(): void {
    for (const series of this.all) series.value = 0;
  }

  async get(): Promise<Exported> {
    const values = this.all.filter((s) => s.value > 0).map((s) => ({ value: s.value, labels: { ...s.labels } }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export interface HistogramSeries {
  readonly labels: Record<string, string>;
  /** Observations per bucket (not cumulative), the last one above every bound (+Inf). */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram: `observe(value, ...labelValues)`; exported as prom-client exports its Histogram (cumulative buckets, sum, count). */
export class HotHistogram extends HotMetric<HistogramSeries> {
  readonly type = 'histogram' as const;
  private readonly bounds: readonly number[];

  constructor(options: MetricOptions & { buckets: readonly number[] }) {
    super(options);
    this.bounds = [...options.buckets].sort((x, y) => x - y);
  }

  protected create(labels: Record<string, string>): HistogramSeries {
    return { labels, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
  }

  /** Non-finite values are dropped (prom-client throws on them; a metric must never fail a request). */
  observe(value: number, a: string, b?: string, c?: string): void {
    if (!Number.isFinite(value)) return;
    const series = this.of(a, b, c);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.counts[i]!++;
    series.sum += value;
    series.count++;
  }

  reset(): void {
    for (const series of this.all) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }

  async get(): Promise<Exported> {
    const bucket = `${this.name}_bucket`;
    const values: Exported['values'] = [];
    for (const s of this.all) {
      if (s.count === 0) continue;
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ value: cumulative, labels: { ...s.labels, le }, metricName: bucket });
      });
      values.push({ value: s.count, labels: { ...s.labels, le: '+Inf' }, metricName: bucket });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
