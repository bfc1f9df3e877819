/**
 * The toolgate CLI: every operator task (docs/operations.md). Each command runs through the operator API of a running
 * server (TOOLGATE_OPERATOR_URL, or the embedded server holding the data folder) or, offline, directly on the store.
 */
import { mailMemberLink } from './handlers/member-mail.ts';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { join } from 'node:path';
import { openStore } from './store/db.ts';
import { findOrgBySlug } from './orgs/repository.ts';
import { verifyChain } from './audit/verify.ts';
import { bindAuditKey, deriveAuditMacKey } from './audit/mac.ts';
import { decodeKey } from './config.ts';
import { isPlan, PLANS, type Plan } from './limits/plans.ts';
import { onboardOrg } from './orgs/service.ts';
import { onboardingView } from './handlers/views.ts';
import type { OrgOnboarding } from '../generated/client/types.gen.ts';
import { acquireDataDirLock, embeddedSecretKey, lockHolder } from './util/datadir.ts';
import { apiJson, chooseTarget, CliError, configOrFail, EXIT, onStore } from './cli/target.ts';
import { orgList, orgSetPlan, orgShow, orgSuspend, requireSlug } from './cli/orgs.ts';
import { auditExport, connectorRevalidate, keyList, keyRevoke } from './cli/admin.ts';
import {
  membersInvite,
  membersLink,
  membersList,
  membersPasskeys,
  membersRemove,
  membersRemovePasskey,
  membersSetRoles,
  membersSuspend,
} from './cli/members.ts';

const USAGE = `usage: toolgate <command> [options]

  start                                              serve the gateway (PORT, DATABASE_URL...: docs/configuration.md)
  org list [--limit N] [--cursor SLUG] [--json]      orgs in slug order, a page at a time
  org show --slug SLUG [--json]                      one org: plan, subscription, suspension, usage and limits
  org create --slug SLUG --name NAME [--plan ${PLANS.join('|')}] [--trial-days N] [--admin-email EMAIL] [--json]
                                                     (--admin-email: the first admin member, with a one-time invitation link)
  org set-plan --slug SLUG --plan PLAN [--json]     change the plan (the subscription becomes active)
  org suspend --slug SLUG [--json]                   refuse every credential of the org until resumed
  org resume --slug SLUG [--json]
  key list --org SLUG [--json]                       the org's API keys (id, prefix, state, name)
  key revoke --org SLUG --id KEY_ID [--json]         revoke one API key of the org
  connector revalidate --org SLUG --id CONNECTOR_ID [--json]
  members list --org SLUG [--json]                   the org's members: e-mail, status, roles, last sign-in
  members invite --org SLUG --email EMAIL [--roles admin,contributor,finance] [--json]
                                                     invite a person; prints the one-time invitation link (7 days)
  members set-roles --org SLUG --email EMAIL --roles ROLES [--json]
  members suspend --org SLUG --email EMAIL [--json]  their console sessions and MCP sign-ins end at once
  members resume --org SLUG --email EMAIL [--json]
  members remove --org SLUG --email EMAIL [--json]
  members link --org SLUG --email EMAIL [--json]     a new one-time link: invitation again, or password reset
  members passkeys --org SLUG --email EMAIL [--json] the member's passkeys: id, name, created, last used
  members remove-passkey --org SLUG --email EMAIL --passkey ID [--json]
                                                     remove one (a lost device): it signs nobody in any more
  audit verify --org SLUG [--incremental] [--json]   check the org's audit chain (on the store: server stopped);
                                                     --incremental: from the last verified checkpoint
  audit export --org SLUG [--out FILE] [--redact] [--days N] [--json]
                                                     the audit log as JSON, to stdout or FILE

Where a command runs: with TOOLGATE_OPERATOR_URL, the operator API of that server (TOOLGATE_OPERATOR_TOKEN); else, when an
embedded server holds the data folder, its operator API; else directly on the store (TOOLGATE_DATA_DIR, default
./data, or DATABASE_URL).

Exit codes: 0 done; 1 the command failed (no such org or key, refused, a broken audit chain, a failed connector);
2 usage error; 3 the gateway or its store cannot be used (server not answering, operator token refused, data
folder busy, invalid configuration).`;

type Onboarding = OrgOnboarding;

function printOnboarding(result: Onboarding, asJson: boolean): void {
  if (asJson) {
    console.log(
      JSON.stringify({
        org_id: result.org.id,
        slug: result.org.slug,
        endpoint: result.endpoint,
        api_key: result.api_key.key,
        api_key_id: result.api_key.id,
        client_id: result.oauth_client.client_id,
        client_secret: result.oauth_client.client_secret,
        ...(result.admin_invitation ? { admin_email: result.admin_invitation.member.email, admin_invitation_url: result.admin_invitation.invitation.url } : {}),
      }),
    );
    return;
  }
  console.log(`Created org ${result.org.slug} (${result.org.id}), plan ${result.org.plan}, ${result.org.provision_status}.
MCP endpoint:  ${result.endpoint}
API key:       ${result.api_key.key} (id ${result.api_key.id})
OAuth client:  ${result.oauth_client.client_id}
Client secret: ${result.oauth_client.client_secret}
The secrets are shown only now: store them safely.`);
  if (result.admin_invitation) {
    const { member, invitation } = result.admin_invitation;
    console.log(`Admin member:  ${member.email}, invited; the invitation link (one use, until ${invitation.expires_at}):\n${invitation.url}`);
  }
}

async function orgCreate(values: {
  slug?: string;
  name?: string;
  plan?: string;
  'trial-days'?: string;
  'admin-email'?: string;
  json?: boolean;
}): Promise<void> {
  const slug = requireSlug(values.slug, '--slug');
  if (!values.name) throw new CliError('--name is required', EXIT.usage);
  const plan = (values.plan ?? 'starter') as Plan;
  if (!isPlan(plan)) throw new CliError(`--plan must be one of ${PLANS.join(', ')}`, EXIT.usage);
  const trialDays = values['trial-days'] === undefined ? undefined : Number(values['trial-days']);
  if (trialDays !== undefined && (!Number.isInteger(trialDays) || trialDays < 0 || trialDays > 365)) {
    throw new CliError('--trial-days must be an integer from 0 to 365', EXIT.usage);
  }
  const adminEmail = values['admin-email'];
  if (adminEmail !== undefined && !adminEmail.includes('@')) throw new CliError('--admin-email must be an e-mail address', EXIT.usage);
  const target = chooseTarget();
  const result: Onboarding =
    target.kind === 'api'
      ? await apiJson(target, 'POST', '/operator/orgs', {
          slug,
          name: values.name,
          plan,
          ...(trialDays !== undefined ? { trial_days: trialDays } : {}),
          ...(adminEmail ? { admin_email: adminEmail } : {}),
        })
      : await onStore(target.config, async ({ deps }) => {
          const admin = adminEmail ? { email: adminEmail, publicUrl: deps.config.publicUrl } : undefined;
          const created = await onboardOrg(deps, { slug, name: values.name!, plan, trialDays, admin }, { type: 'operator', id: null });
          // With SMTP the first admin's invitation goes by mail too (decision 0385); the gateway's close waits for it.
          if (created.admin) mailMemberLink(deps, created.org.id, created.admin.member.id, created.admin.invitation);
          return onboardingView(created, deps.config);
        });
  printOnboarding(result, Boolean(values.json));
}

/**
 * `audit verify --org SLUG [--incremental]`: walks the org's audit chain on the store (from the last verified
 * checkpoint with --incremental, audit/verify-checkpoint-statements.ts) and names the first broken row. Exit 0 when
 * the chain is intact, 1 when it is broken (or the org is unknown). Reads the store directly: with the embedded
 * store, the server holding the data folder must be stopped first (PGlite allows one process).
 */
async function auditVerify(values: { org?: string; json?: boolean; incremental?: boolean }): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const config = configOrFail();
  const holder = config.databaseUrl ? null : lockHolder(config.dataDir);
  if (holder) {
    throw new CliError(
      `the data folder is in use by process ${holder.pid}; stop the server to verify the embedded store (or use DATABASE_URL)`,
      EXIT.unreachable,
    );
  }
  const release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir, { port: 0, url: 'cli' });
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.databaseUrl ? null : join(config.dataDir, 'pgdata'), poolSize: 2 });
  try {
    // The gateway's key (the embedded store's is in its data folder): rows are authenticated with a key derived from it.
    bindAuditKey(store.db, deriveAuditMacKey(decodeKey(config.secretKey ?? embeddedSecretKey(config.dataDir))!));
    const org = await findOrgBySlug(store.db, slug);
    if (!org) throw new CliError(`no org with slug ${slug}`);
    const report = await verifyChain(store.db, org.id, new Date(), { incremental: values.incremental === true });
    const b = report.broken;
    const from = report.fromSeq ? ` after the checkpoint at row ${report.fromSeq}` : '';
    if (values.json)
      console.log(
        JSON.stringify({ org: slug, ok: report.ok, checked: report.checked, ...(values.incremental ? { from_seq: report.fromSeq } : {}), broken: b ?? null }),
      );
    else if (report.ok) console.log(`audit chain of ${slug} is intact: ${report.checked} rows verified${from}`);
    else
      console.log(`audit chain of ${slug} is BROKEN at row ${b!.seq}${b!.id ? ` (id ${b!.id})` : ''}: ${b!.reason}; ${report.checked} rows before it verified`);
    if (!report.ok) process.exitCode = EXIT.failed;
  } finally {
    await store.close();
    release();
  }
}

type Values = Record<string, string | boolean | undefined>;
const JSON_FLAG = { json: { type: 'boolean' } } as const;
const SLUG_FLAG = { slug: { type: 'string' }, ...JSON_FLAG } as const;
const ORG_ID_FLAGS = { org: { type: 'string' }, id: { type: 'string' }, ...JSON_FLAG } as const;
const MEMBER_FLAGS = { org: { type: 'string' }, email: { type: 'string' }, roles: { type: 'string' }, ...JSON_FLAG } as const;

/** Each command: its options (parseArgs) and what it runs. */
const COMMANDS: Record<string, { options: ParseArgsOptionsConfig; run: (values: Values) => Promise<void> }> = {
  'org list': { options: { limit: { type: 'string' }, cursor: { type: 'string' }, ...JSON_FLAG }, run: orgList },
  'org show': { options: SLUG_FLAG, run: orgShow },
  'org create': {
    options: {
      slug: { type: 'string' },
      name: { type: 'string' },
      plan: { type: 'string' },
      'trial-days': { type: 'string' },
      'admin-email': { type: 'string' },
      ...JSON_FLAG,
    },
    run: orgCreate,
  },
  'org set-plan': { options: { ...SLUG_FLAG, plan: { type: 'string' } }, run: orgSetPlan },
  'org suspend': { options: SLUG_FLAG, run: (v) => orgSuspend(v, true) },
  'org resume': { options: SLUG_FLAG, run: (v) => orgSuspend(v, false) },
  'key list': { options: { org: { type: 'string' }, ...JSON_FLAG }, run: keyList },
  'key revoke': { options: ORG_ID_FLAGS, run: keyRevoke },
  'connector revalidate': { options: ORG_ID_FLAGS, run: connectorRevalidate },
  'members list': { options: { org: { type: 'string' }, ...JSON_FLAG }, run: membersList },
  'members invite': { options: MEMBER_FLAGS, run: membersInvite },
  'members set-roles': { options: MEMBER_FLAGS, run: membersSetRoles },
  'members suspend': { options: MEMBER_FLAGS, run: (v) => membersSuspend(v, true) },
  'members resume': { options: MEMBER_FLAGS, run: (v) => membersSuspend(v, false) },
  'members remove': { options: MEMBER_FLAGS, run: membersRemove },
  'members link': { options: MEMBER_FLAGS, run: membersLink },
  'members passkeys': { options: MEMBER_FLAGS, run: membersPasskeys },
  'members remove-passkey': { options: { ...MEMBER_FLAGS, passkey: { type: 'string' } }, run: membersRemovePasskey },
  'audit verify': { options: { org: { type: 'string' }, incremental: { type: 'boolean' }, ...JSON_FLAG }, run: auditVerify },
  'audit export': {
    options: { org: { type: 'string' }, out: { type: 'string' }, redact: { type: 'boolean' }, days: { type: 'string' }, ...JSON_FLAG },
    run: auditExport,
  },
};

async function main(argv: string[]): Promise<number> {
  const [group, command, ...rest] = argv;
  if (group === 'help' || group === '--help' || group === '-h') {
    console.log(USAGE);
    return EXIT.ok;
  }
  if (group === 'start') {
    // bin/toolgate.js runs src/main.ts for it; a checkout has `npm start`.
    console.error('toolgate: `start` runs through the installed toolgate bin (npx toolgate start); from a checkout, npm start');
    return EXIT.usage;
  }
  const entry = COMMANDS[`${group} ${command}`];
  if (!entry) {
    console.error(`toolgate: ${group ? `unknown command: ${[group, command].filter(Boolean).join(' ')}` : 'a command is required'}\n${USAGE}`);
    return EXIT.usage;
  }
  try {
    let values: Values;
    try {
      ({ values } = parseArgs({ args: rest, options: entry.options, strict: true, allowPositionals: false }) as { values: Values });
    } catch (err) {
      throw new CliError(`${(err as Error).message}\n${USAGE}`, EXIT.usage);
    }
    await entry.run(values);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    // A clear line, never a stack trace: domain and usage errors say what to do; anything else is named briefly.
    const message = err instanceof CliError ? err.message : `unexpected error: ${(err as Error)?.message ?? String(err)}`;
    console.error(`toolgate: ${message}`);
    return err instanceof CliError ? err.exitCode : EXIT.failed;
  }
}

// exitCode, not exit(): output piped to another process (an audit export) is flushed before the process ends.
process.exitCode = await main(process.argv.slice(2));
