/**
 * The console's controls: toasts, switches, names with their ids, tables with search and sort, empty states, and
 * inline validation against the contract's schemas (the subset of JSON Schema the contract's fields use).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

// ---- Toasts: one live region; success and failure of every action are said there. ----
interface Toast {
  id: number;
  kind: 'ok' | 'error';
  text: string;
}
let toasts: Toast[] = [];
let nextToast = 1;
const toastListeners = new Set<(list: Toast[]) => void>();
const publish = () => {
  for (const l of toastListeners) l(toasts);
};

export function toast(kind: Toast['kind'], text: string): void {
  const id = nextToast++;
  toasts = [...toasts, { id, kind, text }].slice(-4);
  publish();
  setTimeout(
    () => {
      toasts = toasts.filter((t) => t.id !== id);
      publish();
    },
    kind === 'error' ? 8000 : 4000,
  );
}

export function Toasts() {
  const [list, setList] = useState<Toast[]>(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => void toastListeners.delete(setList);
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite" data-testid="toasts">
      {list.map((t) => (
        <p key={t.id} class={`toast toast-${t.kind}`}>
          {t.text}
        </p>
      ))}
    </div>
  );
}

/** A switch for a state (on/off): the label names the state, the switch shows it; nothing mixes state and action. */
export function Switch({
  label,
  on,
  onChange,
  disabled,
  hint,
}: {
  label: string;
  on: boolean;
  onChange: (on: boolean) => void;
  disabled?: boolean;
  hint?: string;
}) {
  return (
    <button
      type="button"
      role="switch"
      class="switch"
      aria-checked={on}
      aria-label={label}
      title={hint ?? label}
      disabled={disabled}
      onClick={() => onChange(!on)}
    >
      <span class="switch-track" aria-hidden="true">
        <span class="switch-knob" />
      </span>
      <span class="switch-text">{on ? 'On' : 'Off'}</span>
    </button>
  );
}

/** A name with its id on hover and a button that copies the id. */
export function Named({ name, id, muted }: { name: string; id?: string | null; muted?: boolean }) {
  const [copied, setCopied] = useState(false);
  if (!id || id === name) return <span class={muted ? 'muted' : undefined}>{name}</span>;
  return (
    <span class="named">
      <span title={id} class={muted ? 'muted' : undefined}>
        {name}
      </span>
      <button
        type="button"
        class="copy-id"
        aria-label={`Copy the id of ${name}`}
        title={`Copy id ${id}`}
        onClick={() =>
          navigator.clipboard?.writeText(id).then(
            () => (setCopied(true), setTimeout(() => setCopied(false), 1500)),
            () => {},
          )
        }
      >
        {copied ? (
          'copied'
        ) : (
          <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
            <rect x="3.5" y="0.5" width="8" height="8" rx="1" fill="none" stroke="currentColor" />
            <rect x="0.5" y="3.5" width="8" height="8" rx="1" fill="#fff" stroke="currentColor" />
          </svg>
        )}
      </button>
    </span>
  );
}

/** What an empty list says, with the next step. */
export function Empty({ children }: { children: ComponentChildren }) {
  return (
    <div class="empty card" data-testid="empty">
      {children}
    </div>
  );
}

// ---- Tables with search and sort ----
export interface Column<T> {
  key: string;
  label: string;
  /** The cell's value for search and sort. */
  value: (row: T) => string | number;
  render?: (row: T) => ComponentChildren;
}

/** A table whose rows can be searched (every column's text) and sorted by any column (click its header). */
export function DataTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  rowClass,
  rowTestId,
  after,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  rowClass?: (row: T) => string | undefined;
  rowTestId?: (row: T) => string;
  /** A row shown under a row (an editor), spanning the table. */
  after?: (row: T) => ComponentChildren;
}) {
  const [query, setQuery] = useState('');
  const [sort, setSort] = useState<{ key: string; dir: 1 | -1 } | null>(null);
  const q = query.trim().toLowerCase();
  let shown = q ? rows.filter((r) => columns.some((c) => String(c.value(r)).toLowerCase().includes(q))) : rows;
  const by = sort && columns.find((c) => c.key === sort.key);
  if (sort && by) {
    shown = [...shown].sort((a, b) => {
      const x = by.value(a);
      const y = by.value(b);
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * sort.dir;
    });
  }
  const id = caption.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return (
    <div class="datatable">
      <div class="field inline search">
        <label for={`search-${id}`}>Search {caption.toLowerCase()}</label>
        <input id={`search-${id}`} type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <span class="hint" aria-live="polite">
          {shown.length} of {rows.length}
        </span>
      </div>
      <div class="table-scroll">
        <table>
          <caption class="sr-only">{caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c.key} aria-sort={sort?.key === c.key ? (sort.dir === 1 ? 'ascending' : 'descending') : undefined}>
                  <button
                    type="button"
                    class="sort"
                    onClick={() => setSort(sort?.key === c.key ? { key: c.key, dir: sort.dir === 1 ? -1 : 1 } : { key: c.key, dir: 1 })}
                  >
                    {c.label}
                    <span aria-hidden="true">{sort?.key === c.key ? (sort.dir === 1 ? ' ▲' : ' ▼') : ''}</span>
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <>
                <tr key={rowKey(r)} class={rowClass?.(r)} data-testid={rowTestId?.(r)}>
                  {columns.map((c) => (
                    <td key={c.key}>{c.render ? c.render(r) : c.value(r)}</td>
                  ))}
                </tr>
                {after?.(r) && (
                  <tr key={`${rowKey(r)}-after`}>
                    <td colSpan={columns.length}>{after(r)}</td>
                  </tr>
                )}
              </>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

// ---- Inline validation with the contract's schemas ----
export interface FieldSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  enum?: readonly unknown[];
  format?: string;
}

/** Why `text` (as typed) does not fit `schema`, or null. Empty text is left to `required`. */
export function schemaError(schema: FieldSchema | undefined, text: string): string | null {
  if (!schema || text === '') return null;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('integer') || types.includes('number')) {
    const n = Number(text);
    if (!/^-?\d+(\.\d+)?$/.test(text.trim()) || !Number.isFinite(n)) return 'Enter a number.';
    if (types.includes('integer') && !Number.isInteger(n)) return 'Enter a whole number.';
    if (schema.minimum !== undefined && n < schema.minimum) return `At least ${schema.minimum}.`;
    if (schema.maximum !== undefined && n > schema.maximum) return `At most ${schema.maximum}.`;
    return null;
  }
  if (schema.minLength !== undefined && text.length < schema.minLength) return `At least ${schema.minLength} characters.`;
  if (schema.maxLength !== undefined && text.length > schema.maxLength) return `At most ${schema.maxLength} characters.`;
  if (schema.pattern && !new RegExp(schema.pattern, 'u').test(text)) return `Not in the expected form (${schema.pattern}).`;
  if (schema.enum && !schema.enum.includes(text)) return `One of ${schema.enum.join(', ')}.`;
  if (schema.format === 'uri' && !URL.canParse(text)) return 'Enter a full URL (https://…).';
  return null;
}

/** A labelled input checked against its schema as it is typed; the message is tied to the input (aria-describedby). */
export function SchemaInput({
  id,
  label,
  schema,
  value,
  onInput,
  required,
  hint,
  type,
  inline,
}: {
  id: string;
  label: string;
  schema?: FieldSchema;
  value: string;
  onInput: (v: string) => void;
  required?: boolean;
  hint?: string;
  type?: string;
  inline?: boolean;
}) {
  const problem = schemaError(schema, value);
  const numeric = schema?.type === 'integer' || schema?.type === 'number';
  return (
    <div class={inline ? 'field inline' : 'field'}>
      <label for={id}>{label}</label>
      <input
        id={id}
        value={value}
        required={required}
        type={type ?? 'text'}
        inputMode={numeric ? 'numeric' : undefined}
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? `${id}-problem` : hint ? `${id}-hint` : undefined}
        onInput={(e) => onInput(e.currentTarget.value)}
        autoComplete="off"
      />
      {hint && !problem && (
        <span class="hint" id={`${id}-hint`}>
          {hint}
        </span>
      )}
      {problem && (
        <span class="field-error" id={`${id}-problem`} role="alert">
          {problem}
        </span>
      )}
    </div>
  );
}
