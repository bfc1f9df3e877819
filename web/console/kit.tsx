/** Small shared pieces of the console's pages: loading, errors, copy buttons, the shown-once secret, actions. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type SessionInfo } from './api.ts';
import { toast } from './controls.tsx';

export type Role = 'contributor' | 'admin' | 'finance';

/** What every page is given: the session, and the id after the page's name in the hash (#/connectors/<id>). */
export interface PageProps {
  session: SessionInfo;
  id: string | undefined;
}

/** What the REST side would allow this session (it still enforces it): admin includes the others. */
export function can(session: SessionInfo, role: Role): boolean {
  return session.org_level || session.roles.includes('admin') || session.roles.includes(role);
}

export interface Loaded<T> {
  data: T | undefined;
  error: Error | null;
  loading: boolean;
  reload: () => void;
}

/** Loads once, again on `reload`, and again when `keys` change; `everyMs` refreshes while the page is open. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[] = [], everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: Error) => live && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [tick, ...keys]);
  useEffect(() => {
    if (!everyMs) return;
    const timer = setInterval(reload, everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return { ...state, reload };
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? ` (${error.code})` : '';
  return (
    <p class="error" role="alert">
      {message}
      <span class="code">{code}</span>
    </p>
  );
}

export function Loading({ loading }: { loading: boolean }) {
  return loading ? (
    <p class="loading" role="status" aria-live="polite">
      Loading…
    </p>
  ) : null;
}

export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  // Focus moves to the new page's heading, so keyboard and screen-reader users land on what changed.
  useEffect(() => heading.current?.focus(), [title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-header">
        <h1 id="page-title" tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 2000);
    } catch {
      window.prompt('Copy this value:', text);
    }
  };
  return (
    <button type="button" class="secondary" onClick={copy} aria-label={`${label} to the clipboard`}>
      {done ? 'Copied' : label}
    </button>
  );
}

/**
 * A secret the gateway shows once: the value, a copy button and a warning. It stays on screen, whatever else happens
 * on the page, until the user says it is stored.
 */
export function SecretOnce({ label, value, onDone, extra }: { label: string; value: string; onDone: () => void; extra?: string }) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => ref.current?.focus(), [value]);
  return (
    <section class="secret" aria-label={label} tabIndex={-1} ref={ref}>
      <p class="warning">
        <strong>Copy this {label.toLowerCase()} now.</strong> It is shown only once; the gateway keeps only a hash of it.
      </p>
      {extra && <p>{extra}</p>}
      <div class="secret-row">
        <code data-testid="secret-value">{value}</code>
        <CopyButton text={value} label={`Copy ${label.toLowerCase()}`} />
      </div>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}

/**
 * Runs an action, keeping its pending state and error for the form that started it; success (when `done` names it)
 * and failure are also said in a toast.
 */
export function useAction() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (action: () => Promise<unknown>, done?: string) => {
    setPending(true);
    setError(null);
    try {
      await action();
      if (done) toast('ok', done);
      return true;
    } catch (err) {
      setError(err);
      toast('error', err instanceof Error ? err.message : String(err));
      return false;
    } finally {
      setPending(false);
    }
  };
  return { pending, error, run, setError };
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
