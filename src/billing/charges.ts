/**
 * What an org is charged for a billing period (decision 0392), from its plan's price (limits/plans.ts PLAN_PRICES),
 * its subscription status and the period's counted tool calls: line items in the currency's minor unit that add up to
 * the amount. Pure: the caller reads the counter (the one the quota is enforced on) and the status.
 */
import { planPriceFor, type PlanPrice } from '../limits/plans.ts';

interface LineItem {
  kind: 'base' | 'overage' | 'credit';
  description: string;
  quantity: number;
  unit_amount: number;
  amount: number;
}

export type Charges =
  | { priced: true; currency: PlanPrice['currency']; amount: number; line_items: LineItem[] }
  | { priced: false; currency: null; amount: null; line_items: LineItem[] };

/** Statuses under which nothing is charged: a trial (running or ended) and a canceled subscription. */
const NOT_CHARGED: Record<string, string> = {
  trialing: 'Trial: nothing is charged until the subscription starts',
  expired: 'Trial ended: nothing is charged until the org subscribes',
  canceled: 'Subscription canceled: nothing is charged',
};

const PLAN_NAMES: Record<string, string> = { starter: 'Starter', growth: 'Growth', scale: 'Scale' };
const count = (n: number) => n.toLocaleString('en-US');

/** The period's charges so far: the base, the calls beyond the included ones (per started block), any credit. */
export function chargesFor(plan: string, status: string, toolCalls: number): Charges {
  const price = planPriceFor(plan);
  if (!price) return { priced: false, currency: null, amount: null, line_items: [] };
  const items: LineItem[] = [
    { kind: 'base', description: `${PLAN_NAMES[plan] ?? plan} plan, monthly base`, quantity: 1, unit_amount: price.monthlyBase, amount: price.monthlyBase },
  ];
  const beyond = Math.max(0, toolCalls - price.includedToolCalls);
  if (beyond > 0 && price.overagePerBlock > 0) {
    const blocks = Math.ceil(beyond / price.overageBlock);
    items.push({
      kind: 'overage',
      description: `${count(beyond)} tool calls beyond the ${count(price.includedToolCalls)} included, per started ${count(price.overageBlock)}`,
      quantity: blocks,
      unit_amount: price.overagePerBlock,
      amount: blocks * price.overagePerBlock,
    });
  }
  const subtotal = items.reduce((sum, item) => sum + item.amount, 0);
  const waived = NOT_CHARGED[status];
  if (waived) items.push({ kind: 'credit', description: waived, quantity: 1, unit_amount: -subtotal, amount: -subtotal });
  return { priced: true, currency: price.currency, amount: items.reduce((sum, item) => sum + item.amount, 0), line_items: items };
}
