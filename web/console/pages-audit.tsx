/**
 * The audit log page: every filter of GET /api/audit, kept in the page's address (`#/audit?outcome=refused&…`) so the
 * Overview's counts link to exactly their rows; a row's detail view; the org's `audit_statements` setting (admins).
 */
import { useEffect, useState } from 'preact/hooks';
import { queryParameters } from '../../generated/contract-schemas.ts';
import { call, client, rest, type AuditEvent, type AuditStatements, type ListAuditEventsData } from './api.ts';
import { DataTable, Empty, SchemaInput, schemaError, type Column, type FieldSchema } from './controls.tsx';
import { Actor, connectorName, Target, useDirectory } from './directory.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when, type PageProps } from './kit.tsx';

type AuditQuery = NonNullable<ListAuditEventsData['query']>;
/** The filters the page offers, in the order of its form (each a query parameter of listAuditEvents). */
const FILTERS = ['action', 'outcome', 'actor', 'tool', 'connector_id', 'reason_class', 'fingerprint_id', 'from', 'until', 'days'] as const;
type FilterName = (typeof FILTERS)[number];
type Filter = Partial<Record<FilterName, string>>;

const LABELS: Record<FilterName, [string, string]> = {
  action: ['Action', 'e.g. tool.called, or approval. for a prefix'],
  outcome: ['Outcome', 'success, held, denied, refused, error; several comma-separated'],
  actor: ['Actor', 'api_key:<id>, oauth_client:<client id>, user:<e-mail or subject>'],
  tool: ['Tool', "a tool's name"],
  connector_id: ['Connector', ''],
  reason_class: ['Reason class', 'e.g. write, ddl, other_table'],
  fingerprint_id: ['Fingerprint', '16 hex digits'],
  from: ['From', 'an instant, e.g. 2026-11-29T00:00:00Z'],
  until: ['Until', 'an instant (exclusive)'],
  days: ['Days', 'only the last N days'],
};

const SCHEMAS = queryParameters.listAuditEvents as unknown as Record<FilterName, FieldSchema>;

/** The address of the audit page showing these filters (what the Overview's counts link to). */
export function auditHref(filter: Filter): string {
  const query = new URLSearchParams(Object.entries(filter).filter((e): e is [string, string] => !!e[1]));
  return `#/audit?${query}`;
}

function filterFromHash(): Filter {
  const at = location.hash.indexOf('?');
  const params = new URLSearchParams(at < 0 ? '' : location.hash.slice(at + 1));
  const filter: Filter = {};
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value) filter[name] = value;
  }
  // Without any filter, the last week.
  return Object.keys(filter).length ? filter : { days: '7' };
}

function queryOf(filter: Filter): AuditQuery {
  const { days, ...rest } = filter;
  return { ...rest, ...(days ? { days: Number(days) } : {}) } as AuditQuery;
}

function download(name: string, value: unknown) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Exports the events of the action and days filters, redacted, as a JSON download (admins). */
function ExportButton({ filter, exporting }: { filter: Filter; exporting: ReturnType<typeof useAction> }) {
  return (
    <button
      type="button"
      class="secondary"
      disabled={exporting.pending}
      onClick={() =>
        exporting.run(async () => {
          const query = { redact: true, ...(filter.days ? { days: Number(filter.days) } : {}), ...(filter.action ? { action: filter.action } : {}) };
          const exported = await call(rest.exportAuditEvents({ client, query }));
          download(`audit-${new Date().toISOString().slice(0, 10)}.json`, exported);
        }, 'Export downloaded')
      }
    >
      Export (redacted)
    </button>
  );
}

const text = (v: unknown) => (typeof v === 'string' ? v : null);

/** Why a call was refused: its class, the reason the agent got, the statement's fingerprint and (kept with `full`) its text. */
function RefusalFacts({ d }: { d: Record<string, unknown> }) {
  const fingerprintId = text(d.fingerprint_id);
  return (
    <>
      {text(d.reason_class) && (
        <>
          <dt>Reason class</dt>
          <dd>
            <code>{text(d.reason_class)}</code> <a href={auditHref({ reason_class: text(d.reason_class)! })}>Every refusal of this class</a>
          </dd>
        </>
      )}
      {text(d.reason) && (
        <>
          <dt>Reason</dt>
          <dd data-testid="event-reason">{text(d.reason)}</dd>
        </>
      )}
      {fingerprintId && (
        <>
          <dt>Fingerprint</dt>
          <dd>
            {text(d.fingerprint) ? (
              <code data-testid="event-fingerprint">{text(d.fingerprint)}</code>
            ) : (
              <span class="hint">not kept (audit statements: none)</span>
            )}{' '}
            <a href={auditHref({ fingerprint_id: fingerprintId })}>Every attempt of this statement</a>
          </dd>
        </>
      )}
      {text(d.statement) && (
        <>
          <dt>Statement</dt>
          <dd>
            <pre data-testid="event-statement">{text(d.statement)}</pre>
          </dd>
        </>
      )}
    </>
  );
}

/** Every field of the row as recorded. */
function RecordedFields({ e }: { e: AuditEvent }) {
  return (
    <details open>
      <summary>Every recorded field</summary>
      <dl class="facts event-fields" data-testid={`event-${e.seq}`}>
        {Object.entries({ ...e, actor: `${e.actor.type} ${e.actor.id ?? ''}` }).map(([k, v]) => (
          <>
            <dt key={`${k}-k`}>{k}</dt>
            <dd key={`${k}-v`}>{typeof v === 'object' && v !== null ? <pre>{JSON.stringify(v, null, 2)}</pre> : <code>{String(v)}</code>}</dd>
          </>
        ))}
      </dl>
    </details>
  );
}

/** A row's detail view: what happened, by whom, why it was refused, links to its like; then every recorded field. */
function EventDetail({ e }: { e: AuditEvent }) {
  const dir = useDirectory();
  const d = e.details as Record<string, unknown>;
  const connector = text(d.connector_id);
  const tool = e.target_type === 'tool' ? e.target_id : null;
  const actor = e.actor.id && ['api_key', 'oauth_client', 'user', 'operator'].includes(e.actor.type) ? `${e.actor.type}:${e.actor.id}` : null;
  return (
    <section class="event-detail" aria-label={`Event ${e.seq}`} data-testid={`event-detail-${e.seq}`}>
      <dl class="facts">
        <dt>When</dt>
        <dd>{when(e.created_at)}</dd>
        <dt>Who</dt>
        <dd>
          <Actor dir={dir} actor={e.actor} /> {actor && <a href={auditHref({ actor })}>Everything by this actor</a>}
        </dd>
        <dt>What</dt>
        <dd>
          <code>{e.action}</code> on <Target dir={dir} type={e.target_type} id={e.target_id} />{' '}
          {tool && <a href={auditHref({ tool })}>Every call of this tool</a>}
        </dd>
        {connector && (
          <>
            <dt>Connector</dt>
            <dd>
              {connectorName(dir, connector)} <a href={auditHref({ connector_id: connector })}>Everything on this connector</a>
            </dd>
          </>
        )}
        <dt>Outcome</dt>
        <dd>
          <span class={`status status-${e.outcome}`}>{e.outcome}</span>
        </dd>
        <RefusalFacts d={d} />
      </dl>
      <RecordedFields e={e} />
    </section>
  );
}

function AuditTable({ events }: { events: AuditEvent[] }) {
  const dir = useDirectory();
  const [open, setOpen] = useState<string | null>(null);
  const columns: Column<AuditEvent>[] = [
    { key: 'seq', label: '#', value: (e) => e.seq },
    { key: 'when', label: 'When', value: (e) => e.created_at, render: (e) => when(e.created_at) },
    { key: 'action', label: 'Action', value: (e) => e.action },
    { key: 'actor', label: 'Actor', value: (e) => `${e.actor.type} ${e.actor.id ?? ''}`, render: (e) => <Actor dir={dir} actor={e.actor} /> },
    {
      key: 'target',
      label: 'Target',
      value: (e) => `${e.target_type ?? ''} ${e.target_id ?? ''}`,
      render: (e) => <Target dir={dir} type={e.target_type} id={e.target_id} />,
    },
    { key: 'outcome', label: 'Outcome', value: (e) => e.outcome, render: (e) => <span class={`status status-${e.outcome}`}>{e.outcome}</span> },
    { key: 'reason', label: 'Reason class', value: (e) => text((e.details as Record<string, unknown>).reason_class) ?? '' },
    {
      key: 'details',
      label: 'Details',
      value: () => '',
      render: (e) => (
        <button type="button" class="secondary" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? null : e.id)}>
          {open === e.id ? 'Hide' : 'Show'}
          <span class="sr-only"> every field of event {e.seq}</span>
        </button>
      ),
    },
  ];
  return (
    <DataTable
      caption="Audit events"
      columns={columns}
      rows={events}
      rowKey={(e) => e.id}
      rowTestId={(e) => `audit-row-${e.seq}`}
      after={(e) => open === e.id && <EventDetail e={e} />}
    />
  );
}

/** The org's `audit_statements` (admins): how much of a refused statement its rows keep. */
function StatementsSetting() {
  const org = useLoad(() => call(rest.getOrg({ client })));
  const saving = useAction();
  const value = org.data?.audit_statements;
  return (
    <div class="field inline">
      <label for="a-statements">Refused statements keep</label>
      <select
        id="a-statements"
        value={value ?? ''}
        disabled={!value || saving.pending}
        onChange={(e) => {
          const next = e.currentTarget.value as AuditStatements;
          saving.run(() => call(rest.updateOrg({ client, body: { audit_statements: next } })), `Refused statements now keep: ${next}`).then(org.reload);
        }}
      >
        <option value="none">no text (class, reason, fingerprint id)</option>
        <option value="fingerprint">the fingerprint (literals removed)</option>
        <option value="full">the full statement</option>
      </select>
      <ErrorBox error={org.error ?? saving.error} />
    </div>
  );
}

/** The connector filter: a choice of the org's connectors by name (an id from a link that names none stays listed). */
function ConnectorFilter({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const dir = useDirectory();
  return (
    <div class="field inline">
      <label for="a-connector_id">Connector</label>
      <select id="a-connector_id" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {value && !dir?.connectors.some((c) => c.id === value) && <option value={value}>{value}</option>}
        {dir?.connectors.map((c) => (
          <option key={c.id} value={c.id}>
            {c.name}
          </option>
        ))}
      </select>
    </div>
  );
}

export function AuditPage({ session }: PageProps) {
  const filter = filterFromHash();
  const key = JSON.stringify(filter);
  // What is typed in the form, until the address changes (a submitted filter, a link, Clear): then the address's.
  const [typed, setTyped] = useState<Filter | null>(null);
  useEffect(() => setTyped(null), [location.hash]);
  const values = typed ?? filter;
  const [paging, setPaging] = useState<{ key: string; cursors: string[] }>({ key, cursors: [] });
  const cursors = paging.key === key ? paging.cursors : [];
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(() => call(rest.listAuditEvents({ client, query: { limit: 25, ...queryOf(filter), ...(cursor ? { cursor } : {}) } })), [key, cursor]);
  const exporting = useAction();
  const admin = session.org_level || session.roles.includes('admin');
  const events: AuditEvent[] = page.data?.events ?? [];
  const invalid = FILTERS.map((name) => schemaError(SCHEMAS[name], (values[name] ?? '').trim())).find(Boolean);
  const set = (name: FilterName) => (v: string) => setTyped({ ...values, [name]: v });
  return (
    <Page title="Audit">
      {admin && <StatementsSetting />}
      <form
        class="filters"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (invalid) return;
          const next = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, (v ?? '').trim()]));
          location.hash = auditHref(next);
        }}
      >
        {FILTERS.map((name) =>
          name === 'connector_id' ? (
            <ConnectorFilter key={name} value={values.connector_id ?? ''} onChange={set(name)} />
          ) : (
            <SchemaInput
              key={name}
              id={`a-${name}`}
              label={LABELS[name][0]}
              schema={SCHEMAS[name]}
              value={values[name] ?? ''}
              onInput={set(name)}
              hint={LABELS[name][1]}
              inline
            />
          ),
        )}
        <button type="submit" disabled={!!invalid}>
          Filter
        </button>
        <a href="#/audit?days=7">Clear</a>
        {admin && <ExportButton filter={filter} exporting={exporting} />}
      </form>
      <ErrorBox error={page.error ?? exporting.error} />
      <Loading loading={page.loading} />
      {page.data && events.length === 0 && <Empty>No events match. Widen the window or clear a filter.</Empty>}
      {events.length > 0 && <AuditTable events={events} />}
      <div class="buttons">
        <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setPaging({ key, cursors: cursors.slice(0, -1) })}>
          Newer
        </button>
        <button
          type="button"
          class="secondary"
          disabled={!page.data?.next_cursor}
          onClick={() => setPaging({ key, cursors: [...cursors, page.data!.next_cursor!] })}
        >
          Older
        </button>
      </div>
    </Page>
  );
}
