/**
 * Hand-drawn SVG bar charts (decision 0281): calls and refusals per bucket, stacked. Each bar carries a <title>; the
 * chart has a text summary for screen readers, and the same figures are in the table beside it.
 */
import type { Insights } from './api.ts';

const W = 720;
const H = 160;
const PAD = 24;

const label = (iso: string, bucket: Insights['bucket']) => {
  const d = new Date(iso);
  return bucket === 'hour' ? `${String(d.getHours()).padStart(2, '0')}:00` : d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
};

export function CallsChart({ insights }: { insights: Insights }) {
  const { series, bucket } = insights;
  const max = Math.max(1, ...series.map((s) => s.calls + s.refusals));
  const step = (W - PAD) / Math.max(1, series.length);
  const bar = Math.max(2, step * 0.7);
  const y = (n: number) => (n / max) * (H - PAD);
  const total = series.reduce((n, s) => n + s.calls, 0);
  const refused = series.reduce((n, s) => n + s.refusals, 0);
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${total} calls and ${refused} refusals over the last ${insights.days === 1 ? '24 hours' : `${insights.days} days`}, per ${bucket}; busiest ${bucket}: ${max}.`}
        preserveAspectRatio="none"
      >
        <line x1={PAD} y1={H - PAD} x2={W} y2={H - PAD} class="axis" />
        <text x={0} y={12} class="tick">
          {max}
        </text>
        <text x={0} y={H - PAD} class="tick">
          0
        </text>
        {series.map((s, i) => {
          const x = PAD + i * step + (step - bar) / 2;
          const calls = y(s.calls);
          const refusals = y(s.refusals);
          return (
            <g key={s.start}>
              <title>{`${label(s.start, bucket)}: ${s.calls} calls (${s.errors} errors), ${s.refusals} refusals`}</title>
              <rect x={x} y={H - PAD - calls} width={bar} height={calls} class="bar-calls" />
              <rect x={x} y={H - PAD - calls - refusals} width={bar} height={refusals} class="bar-refusals" />
              {(i % Math.ceil(series.length / 8) === 0 || i === series.length - 1) && (
                <text x={x} y={H - 6} class="tick">
                  {label(s.start, bucket)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend">
        <span class="key key-calls" aria-hidden="true" /> calls <span class="key key-refusals" aria-hidden="true" /> refusals
      </figcaption>
    </figure>
  );
}
