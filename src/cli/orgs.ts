/**
 * `org list | show | set-plan | suspend | resume`: the operator API of a running server, or the store itself. Both
 * paths print the same wire objects (handlers/views.ts), so `--json` output does not depend on the path.
 */
import { isPlan, PLANS, type Plan } from '../limits/plans.ts';
import { changeOrg, listOrgs, orgBySlug, orgDetail, type OrgChange } from '../orgs/operator.ts';
import { operatorOrgView } from '../handlers/views.ts';
import type { OperatorOrg, OperatorOrgDetail } from '../../generated/client/types.gen.ts';
import { apiJson, chooseTarget, CliError, EXIT, onStore } from './target.ts';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function requireSlug(value: string | undefined, flag: string): string {
  if (!value) throw new CliError(`${flag} is required`, EXIT.usage);
  if (!SLUG.test(value)) throw new CliError(`${flag} must be a slug: 1-63 characters of a-z, 0-9 and inner hyphens`, EXIT.usage);
  return value;
}

export function print(asJson: boolean, value: unknown, text: () => string): void {
  console.log(asJson ? JSON.stringify(value) : text());
}

const quota = (calls: number | null) => (calls === null ? 'unlimited' : String(calls));

function orgLine(org: OperatorOrg): string {
  const state = org.suspended_at ? 'SUSPENDED' : org.subscription_status;
  return `${org.slug.padEnd(24)} ${org.plan.padEnd(11)} ${state.padEnd(9)} ${org.name}`;
}

function detailText(detail: OperatorOrgDetail): string {
  const { org, limits } = detail;
  return [
    `${org.slug} (${org.id}): ${org.name}`,
    `plan:          ${org.plan}, subscription ${org.subscription_status}${org.trial_expires_at ? `, trial until ${org.trial_expires_at}` : ''}`,
    `suspended:     ${org.suspended_at ?? 'no'}`,
    `tool calls:    ${limits.tool_calls_used} this month of ${quota(limits.monthly_tool_calls)}`,
    `connectors:    ${limits.connectors_used} of ${limits.connectors_max ?? 'unlimited'}`,
    `burst:         ${limits.burst_limit_per_second} calls per second`,
  ].join('\n');
}

export async function orgList(values: { limit?: string; cursor?: string; json?: boolean }): Promise<void> {
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new CliError('--limit must be an integer from 1 to 200', EXIT.usage);
  const cursor = values.cursor === undefined ? null : requireSlug(values.cursor, '--cursor');
  const target = chooseTarget();
  let page: { orgs: OperatorOrg[]; next_cursor: string | null };
  if (target.kind === 'api') {
    page = await apiJson(target, 'GET', `/operator/orgs?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
  } else {
    page = await onStore(target.config, async ({ deps }) => {
      const found = await listOrgs(deps, cursor, limit);
      return { orgs: found.orgs.map((org) => operatorOrgView(org, deps.config.customBurstPerSecond)), next_cursor: found.next };
    });
  }
  print(
    Boolean(values.json),
    page,
    () => [...page.orgs.map(orgLine), ...(page.next_cursor ? [`more: toolgate org list --cursor ${page.next_cursor}`] : [])].join('\n') || 'no orgs',
  );
}

/** The org's detail after `change` (none: as it is), by the API or on the store. */
async function detailOf(slug: string, change: OrgChange | null): Promise<OperatorOrgDetail> {
  const target = chooseTarget();
  if (target.kind === 'api') {
    const path = `/operator/orgs/${slug}`;
    return change ? apiJson(target, 'PATCH', path, change) : apiJson(target, 'GET', path);
  }
  return onStore(target.config, async ({ deps }) => {
    const org = change ? await changeOrg(deps, slug, change) : await orgBySlug(deps, slug);
    const detail = await orgDetail(deps, org);
    return { org: operatorOrgView(detail.org, deps.config.customBurstPerSecond), limits: detail.limits as OperatorOrgDetail['limits'] };
  });
}

export async function orgShow(values: { slug?: string; json?: boolean }): Promise<void> {
  const detail = await detailOf(requireSlug(values.slug, '--slug'), null);
  print(Boolean(values.json), detail, () => detailText(detail));
}

export async function orgSetPlan(values: { slug?: string; plan?: string; json?: boolean }): Promise<void> {
  const slug = requireSlug(values.slug, '--slug');
  if (!values.plan || !isPlan(values.plan)) throw new CliError(`--plan must be one of ${PLANS.join(', ')}`, EXIT.usage);
  const detail = await detailOf(slug, { plan: values.plan as Plan });
  const { limits } = detail;
  // A downgrade is allowed over the new figures (decision 0210): say what it means now.
  const over = [
    ...(limits.monthly_tool_calls !== null && limits.tool_calls_used >= limits.monthly_tool_calls
      ? [
          `the org has used ${limits.tool_calls_used} tool calls this month, the ${limits.plan} quota is ${limits.monthly_tool_calls}: tools/call is refused until the month ends`,
        ]
      : []),
    ...(limits.connectors_max !== null && limits.connectors_used > limits.connectors_max
      ? [
          `the org has ${limits.connectors_used} connectors, the ${limits.plan} plan allows ${limits.connectors_max}: they keep serving, no new one can be added`,
        ]
      : []),
  ];
  for (const warning of over) console.error(`toolgate: warning: ${warning}`);
  print(
    Boolean(values.json),
    detail,
    () => `${slug} is now on the ${detail.org.plan} plan (subscription ${detail.org.subscription_status}).\n${detailText(detail)}`,
  );
}

export async function orgSuspend(values: { slug?: string; json?: boolean }, suspended: boolean): Promise<void> {
  const slug = requireSlug(values.slug, '--slug');
  const detail = await detailOf(slug, { suspended });
  print(Boolean(values.json), detail, () =>
    suspended
      ? `${slug} is suspended since ${detail.org.suspended_at}: its MCP endpoint, REST API and token endpoint refuse every credential.`
      : `${slug} is active again: its credentials are accepted.`,
  );
}
