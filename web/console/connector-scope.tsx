/**
 * What a connector tells agents and which of its tables become tools (docs/decisions/0303): the description field,
 * the include/exclude pattern fields of the connector form, and how a connector's page shows them.
 */
import type { Connector } from './api.ts';

/** The form's text for the three settings (patterns comma-separated, as the schemas field). */
export interface ScopeDraft {
  description: string;
  include: string;
  exclude: string;
}

export const emptyScope = (): ScopeDraft => ({ description: '', include: '', exclude: '' });

export const scopeOf = (c: Connector): ScopeDraft => ({
  description: c.description ?? '',
  include: c.include_tables.join(', '),
  exclude: c.exclude_tables.join(', '),
});

const patterns = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A pattern the API would refuse (no `schema.table` form), said before the request is sent; null: fine. */
export function scopeProblem(text: string): string | null {
  const bad = patterns(text).find((p) => p.indexOf('.') <= 0 || p.endsWith('.'));
  return bad ? `"${bad}" must have the form schema.table, e.g. public.orders or public.order*.` : null;
}

/**
 * The body fields of a create or update: the description always; the patterns for database types, and on an edit
 * only when they changed (a changed filter revalidates the connector).
 */
export function scopeBody(d: ScopeDraft, database: boolean, editing: Connector | null) {
  const include = patterns(d.include);
  const exclude = patterns(d.exclude);
  const same = (a: string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  return {
    description: d.description.trim() || null,
    ...(database && !(editing && same(include, editing.include_tables)) ? { include_tables: include } : {}),
    ...(database && !(editing && same(exclude, editing.exclude_tables)) ? { exclude_tables: exclude } : {}),
  };
}

/** The description field, and for database types the two pattern fields. */
export function ScopeFields({ d, set, database }: { d: ScopeDraft; set: (d: ScopeDraft) => void; database: boolean }) {
  const includeProblem = scopeProblem(d.include);
  const excludeProblem = scopeProblem(d.exclude);
  return (
    <>
      <div class="field">
        <label for="c-description">Description (optional)</label>
        <input id="c-description" maxLength={300} value={d.description} onInput={(e) => set({ ...d, description: e.currentTarget.value })} />
        <span class="hint">Tells agents what this connector is, e.g. "production, EU customers": every tool description ends with it.</span>
      </div>
      {database && (
        <>
          <div class="field">
            <label for="c-include">Include tables (comma-separated patterns, optional)</label>
            <input
              id="c-include"
              value={d.include}
              aria-invalid={includeProblem ? true : undefined}
              onInput={(e) => set({ ...d, include: e.currentTarget.value })}
            />
            {includeProblem ? (
              <span class="field-error">{includeProblem}</span>
            ) : (
              <span class="hint">schema.table globs (* and ?), e.g. public.order*. Empty: every table becomes a tool.</span>
            )}
          </div>
          <div class="field">
            <label for="c-exclude">Exclude tables (comma-separated patterns, optional)</label>
            <input
              id="c-exclude"
              value={d.exclude}
              aria-invalid={excludeProblem ? true : undefined}
              onInput={(e) => set({ ...d, exclude: e.currentTarget.value })}
            />
            {excludeProblem ? (
              <span class="field-error">{excludeProblem}</span>
            ) : (
              <span class="hint">A table matched here never becomes a tool, even if included.</span>
            )}
          </div>
        </>
      )}
    </>
  );
}

/** The connector page's facts for the three settings. */
export function ScopeFacts({ c }: { c: Connector }) {
  return (
    <>
      <dt>Description</dt>
      <dd data-testid="connector-description">{c.description ?? 'none'}</dd>
      {(c.include_tables.length > 0 || c.exclude_tables.length > 0) && (
        <>
          <dt>Tables</dt>
          <dd data-testid="connector-table-filter">
            {c.include_tables.length ? `include ${c.include_tables.join(', ')}` : 'every table'}
            {c.exclude_tables.length ? `; exclude ${c.exclude_tables.join(', ')}` : ''}
          </dd>
        </>
      )}
    </>
  );
}
