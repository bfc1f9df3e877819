// Metrics off the hot path (issue 14): the counters and histograms of src/observability/series.ts export exactly what
// prom-client's own Counter and Histogram export for the same observations, through the same Registry.
import { describe, expect, test } from 'bun:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from '../src/observability/series.ts';
import { verifies } from './requirements.ts';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The samples of a Prometheus text, each as `name{labels sorted}` -> value, plus the HELP and TYPE lines. */
function samples(text: string): Map<string, number | string> {
  const out = new Map<string, number | string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      out.set(line, '');
      continue;
    }
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unparsed line: ${line}`);
    const labels = (match[2] ?? '').match(/[a-z_]+="(?:[^"\\]|\\.)*"/g) ?? [];
    out.set(`${match[1]}{${labels.sort().join(',')}}`, Number(match[3]));
  }
  return out;
}

/** Observations from a fixed pseudo-random sequence (values across every bucket, and beyond the last). */
function* observations(n: number): Generator<{ route: string; method: string; status: string; seconds: number }> {
  let x = 12345;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const routes = ['/mcp/{orgSlug}', '/api/connectors', 'route "quoted" \\ back\nslash'];
  for (let i = 0; i < n; i++) {
    yield {
      route: routes[Math.floor(next() * routes.length)]!,
      method: next() < 0.5 ? 'GET' : 'POST',
      status: next() < 0.8 ? '200' : '429',
      seconds: i % 50 === 0 ? 45 + next() : i % 7 === 0 ? BUCKETS[i % BUCKETS.length]! : next() ** 4 * 3,
    };
  }
}

describe('metrics series (series.ts) against prom-client', () => {
  test('counters and histograms export the same samples as prom-client Counter and Histogram', async () => {
    verifies('OPS-METRICS-HOT');
    const theirs = new Registry();
    const ours = new Registry();
    const help = 'Help text with a \\ backslash.';
    const c1 = new Counter({ name: 'x_requests_total', help, labelNames: ['route', 'method', 'status'], registers: [theirs] });
    const h1 = new Histogram({ name: 'x_duration_seconds', help, labelNames: ['route'], buckets: BUCKETS, registers: [theirs] });
    const c2 = new HotCounter({ name: 'x_requests_total', help, labelNames: ['route', 'method', 'status'], registers: [ours] });
    const h2 = new HotHistogram({ name: 'x_duration_seconds', help, labelNames: ['route'], buckets: BUCKETS, registers: [ours] });
    // A series asked for but never counted is not exported (prom-client's labels() creates none either).
    c1.labels('/never', 'GET', '200');
    c2.of('/never', 'GET', '200');
    for (const o of observations(5000)) {
      c1.labels(o.route, o.method, o.status).inc();
      c2.inc(o.route, o.method, o.status);
      h1.labels(o.route).observe(o.seconds);
      h2.observe(o.seconds, o.route);
    }
    const expected = samples(await theirs.metrics());
    const actual = samples(await ours.metrics());
    expect(actual.size).toBe(expected.size);
    for (const [key, value] of expected) {
      if (typeof value === 'number' && key.includes('_sum')) expect(actual.get(key) as number).toBeCloseTo(value, 6);
      else expect([key, actual.get(key)]).toEqual([key, value]);
    }
    expect([...actual.keys()].some((k) => k.startsWith('x_duration_seconds_bucket{le="+Inf"'))).toBe(true);
    expect([...actual.keys()].some((k) => k.includes('/never'))).toBe(false);
    // The JSON form carries the labels of each value too (registry.getMetricsAsJSON).
    const json = await ours.getMetricsAsJSON();
    const bucket = json.find((m) => m.name === 'x_duration_seconds')!.values.find((v) => v.labels.le === 0.001)!;
    expect(Object.keys(bucket.labels).sort()).toEqual(['le', 'route']);
  });

  test('one to three labels find their own series; a non-finite value is dropped; reset zeroes the series callers hold', async () => {
    verifies('OPS-METRICS-HOT');
    const registry = new Registry();
    const one = new HotCounter({ name: 'one_total', help: 'h', labelNames: ['a'], registers: [registry] });
    const two = new HotCounter({ name: 'two_total', help: 'h', labelNames: ['a', 'b'], registers: [registry] });
    const hist = new HotHistogram({ name: 'lat_seconds', help: 'h', labelNames: ['a'], buckets: [1, 2], registers: [registry] });
    one.inc('x');
    one.inc('x');
    one.inc('y');
    two.inc('x', 'y');
    two.inc('y', 'x');
    two.inc('x', 'x');
    expect(one.of('x').value).toBe(2);
    expect(one.of('y').value).toBe(1);
    expect([two.of('x', 'y').value, two.of('y', 'x').value, two.of('x', 'x').value, two.of('y', 'y').value]).toEqual([1, 1, 1, 0]);
    hist.observe(1, 'x');
    hist.observe(1.5, 'x');
    hist.observe(Number.NaN, 'x');
    hist.observe(Number.POSITIVE_INFINITY, 'x');
    hist.observe(7, 'x');
    const text = await registry.metrics();
    expect(text).toContain('lat_seconds_bucket{a="x",le="1"} 1');
    expect(text).toContain('lat_seconds_bucket{a="x",le="2"} 2');
    expect(text).toContain('lat_seconds_bucket{a="x",le="+Inf"} 3');
    expect(text).toContain('lat_seconds_sum{a="x"} 9.5');
    expect(text).toContain('lat_seconds_count{a="x"} 3');
    const held = one.of('x');
    registry.resetMetrics();
    expect(held.value).toBe(0);
    one.inc('x');
    expect(held.value).toBe(1);
    expect(await registry.metrics()).not.toContain('lat_seconds_count');
    expect(() => new HotCounter({ name: 'four_total', help: 'h', labelNames: ['a', 'b', 'c', 'd'], registers: [] })).toThrow('at most three labels');
  });
});
