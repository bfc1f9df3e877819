/** The Billing page's money (decision 0392): the plan's price, the period's charges as line items, usage per agent. */
import type { Subscription, Usage } from './api.ts';
import { DataTable, Named } from './controls.tsx';
import { agentLabel } from './insights-tables.tsx';

/** An amount in the currency's minor unit, as money. */
function money(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount / 100);
}

export function PlanPrice({ s }: { s: Subscription }) {
  const p = s.price;
  if (!p) return <>set by contract</>;
  const over = p.overage_per_block > 0 ? `, then ${money(p.overage_per_block, p.currency)} per ${p.overage_block.toLocaleString('en-US')} calls` : '';
  return (
    <>
      {money(p.monthly_base, p.currency)} a month, {p.included_tool_calls.toLocaleString('en-US')} tool calls included{over}
    </>
  );
}

export function Charges({ u }: { u: Usage }) {
  const c = u.charges;
  if (!c.priced || c.currency === null || c.amount === null) {
    return <p class="hint">This plan has no list price: the charges are those of the org's contract.</p>;
  }
  const currency = c.currency;
  return (
    <section aria-labelledby="charges-title">
      <h2 id="charges-title">
        Charges this period so far: <span data-testid="charges-amount">{money(c.amount, currency)}</span>
      </h2>
      <DataTable
        caption="Line items"
        columns={[
          { key: 'd', label: 'Item', value: (l) => l.description },
          { key: 'q', label: 'Quantity', value: (l) => l.quantity },
          { key: 'u', label: 'Unit price', value: (l) => l.unit_amount, render: (l) => money(l.unit_amount, currency) },
          { key: 'a', label: 'Amount', value: (l) => l.amount, render: (l) => money(l.amount, currency) },
        ]}
        rows={c.line_items}
        rowKey={(l) => l.kind}
      />
    </section>
  );
}

export function AgentUsage({ u }: { u: Usage }) {
  if (u.by_agent.length === 0) return null;
  return (
    <DataTable
      caption="Tool calls by agent"
      columns={[
        { key: 'a', label: 'Agent', value: (r) => agentLabel(r.agent), render: (r) => <Named name={agentLabel(r.agent)} id={r.agent.id} /> },
        { key: 'n', label: 'Tool calls', value: (r) => r.tool_calls },
        { key: 's', label: 'Share', value: (r) => r.tool_calls, render: (r) => `${((r.tool_calls / Math.max(1, u.tool_calls)) * 100).toFixed(1)}%` },
      ]}
      rows={u.by_agent}
      rowKey={(r) => `${r.agent.type}:${r.agent.id}`}
    />
  );
}
