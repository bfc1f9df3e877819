/**
 * The toolgate CLI. `org create` onboards an org: through the operator API when an embedded server holds
 * the data folder (PGlite allows one process per folder), otherwise directly on the store.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { openStore } from './store/db.ts';
import { findOrgBySlug } from './orgs/repository.ts';
import { verifyChain } from './audit/verify.ts';
import { bindAuditKey, deriveAuditMacKey } from './audit/mac.ts';
import { ConfigError, decodeKey, loadConfig, type Config } from './config.ts';
import { createGateway } from './gateway.ts';
import { isPlan, PLANS, type Plan } from './limits/plans.ts';
import { onboardOrg } from './orgs/service.ts';
import { onboardingView } from './handlers/views.ts';
import type { OrgOnboarding } from '../generated/client/types.gen.ts';
import { AppError } from './errors.ts';
import { acquireDataDirLock, DataDirBusyError, embeddedOperatorToken, embeddedSecretKey, lockHolder } from './util/datadir.ts';

const USAGE = `usage: toolgate org create --slug SLUG --name NAME [--plan ${PLANS.join('|')}] [--trial-days N] [--json]
       toolgate audit verify --org SLUG

Environment: TOOLGATE_DATA_DIR (embedded store, default ./data), DATABASE_URL (PostgreSQL),
PORT, TOOLGATE_OPERATOR_TOKEN (operator API of a running server).`;

type Onboarding = OrgOnboarding;

function fail(message: string, code = 1): never {
  console.error(`toolgate: ${message}`);
  process.exit(code);
}

/** The config, or the process ends with the variable's problem named (no stack trace). */
function configOrFail(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

async function viaOperatorApi(url: string, token: string, body: Record<string, unknown>): Promise<Onboarding> {
  let response: Response;
  try {
    response = await fetch(`${url}/operator/orgs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  } catch (err) {
    fail(`the server holding the data folder does not answer at ${url} (${(err as Error).message}); try again`);
  }
  const payload = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) fail(`${String(payload.message ?? payload.error ?? response.status)}`);
  return payload as unknown as Onboarding;
}

async function direct(config: Config, input: { slug: string; name: string; plan: Plan; trialDays?: number }): Promise<Onboarding> {
  const release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir, { port: 0, url: 'cli' });
  const gateway = await createGateway({ ...config, logLevel: 'error' });
  try {
    return onboardingView(await onboardOrg(gateway.deps, input, { type: 'operator', id: null }), gateway.deps.config);
  } catch (err) {
    if (err instanceof AppError) fail(err.message);
    throw err;
  } finally {
    await gateway.close();
    release();
  }
}

function print(result: Onboarding, asJson: boolean): void {
  if (asJson) {
    console.log(
      JSON.stringify({
        org_id: result.org.id,
        slug: result.org.slug,
        endpoint: result.endpoint,
        api_key: result.api_key.key,
        client_id: result.oauth_client.client_id,
        client_secret: result.oauth_client.client_secret,
      }),
    );
    return;
  }
  console.log(`Created org ${result.org.slug} (${result.org.id}), plan ${result.org.plan}, ${result.org.provision_status}.
MCP endpoint:  ${result.endpoint}
API key:       ${result.api_key.key}
OAuth client:  ${result.oauth_client.client_id}
Client secret: ${result.oauth_client.client_secret}
The secrets are shown only now: store them safely.`);
}

async function orgCreate(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { slug: { type: 'string' }, name: { type: 'string' }, plan: { type: 'string' }, 'trial-days': { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
  });
  if (!values.slug || !values.name) fail(`--slug and --name are required\n${USAGE}`, 2);
  const plan = (values.plan ?? 'starter') as Plan;
  if (!isPlan(plan)) fail(`--plan must be one of ${PLANS.join(', ')}`, 2);
  const trialDays = values['trial-days'] === undefined ? undefined : Number(values['trial-days']);
  if (trialDays !== undefined && (!Number.isInteger(trialDays) || trialDays < 0 || trialDays > 365)) fail('--trial-days must be an integer from 0 to 365', 2);
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(values.slug)) fail('--slug must be 1-63 characters of a-z, 0-9 and inner hyphens', 2);

  const config = configOrFail();
  const input = { slug: values.slug, name: values.name, plan, trialDays };
  const holder = config.databaseUrl ? null : lockHolder(config.dataDir);
  let result: Onboarding;
  // Another CLI command holds the folder (it serves no operator API): wait for it rather than calling port 0.
  if (holder && holder.port === 0) fail(`the data folder is in use by process ${holder.pid} (another toolgate command); try again`);
  if (holder) {
    const token = config.operatorToken ?? embeddedOperatorToken(config.dataDir);
    result = await viaOperatorApi(`http://127.0.0.1:${holder.port}`, token, {
      slug: input.slug,
      name: input.name,
      plan,
      ...(trialDays !== undefined ? { trial_days: trialDays } : {}),
    });
  } else {
    try {
      result = await direct(config, input);
    } catch (err) {
      if (err instanceof DataDirBusyError) fail(`${err.message}; try again`);
      throw err;
    }
  }
  print(result, Boolean(values.json));
}

/**
 * `audit verify --org SLUG`: walks the org's audit chain on the store and names the first broken row. Exit 0 when
 * the chain is intact, 1 when it is broken (or the org is unknown). Reads the store directly: with the embedded
 * store, the server holding the data folder must be stopped first (PGlite allows one process).
 */
async function auditVerify(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { org: { type: 'string' } }, strict: true });
  if (!values.org) fail(`--org is required\n${USAGE}`, 2);
  const config = configOrFail();
  const holder = config.databaseUrl ? null : lockHolder(config.dataDir);
  if (holder) fail(`the data folder is in use by process ${holder.pid}; stop the server to verify the embedded store (or use DATABASE_URL)`);
  const release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir, { port: 0, url: 'cli' });
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.databaseUrl ? null : join(config.dataDir, 'pgdata'), poolSize: 2 });
  try {
    // The gateway's key (the embedded store's is in its data folder): rows are authenticated with a key derived from it.
    bindAuditKey(store.db, deriveAuditMacKey(decodeKey(config.secretKey ?? embeddedSecretKey(config.dataDir))!));
    const org = await findOrgBySlug(store.db, values.org);
    if (!org) fail(`no org with slug ${values.org}`);
    const report = await verifyChain(store.db, org.id);
    if (report.ok) console.log(`audit chain of ${values.org} is intact: ${report.checked} rows verified`);
    else {
      const b = report.broken!;
      console.log(
        `audit chain of ${values.org} is BROKEN at row ${b.seq}${b.id ? ` (id ${b.id})` : ''}: ${b.reason}; ${report.checked} rows before it verified`,
      );
      process.exitCode = 1;
    }
  } finally {
    await store.close();
    release();
  }
}

const [group, command, ...rest] = process.argv.slice(2);
if (group === 'org' && command === 'create') await orgCreate(rest);
else if (group === 'audit' && command === 'verify') await auditVerify(rest);
else fail(USAGE, 2);
