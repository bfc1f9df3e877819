/** `key revoke`, `connector revalidate` and `audit export` of one org: through the operator API or on the store. */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { auditExportStream } from '../audit/export.ts';
import { getConnector, revalidateConnector } from '../connectors/service.ts';
import { apiKeyView } from '../handlers/views.ts';
import * as credentials from '../orgs/credentials.ts';
import { orgBySlug } from '../orgs/operator.ts';
import type { ApiKey } from '../../generated/client/types.gen.ts';
import { print, requireSlug } from './orgs.ts';
import { apiJson, callApi, chooseTarget, CliError, EXIT, onStore } from './target.ts';

const OPERATOR = { type: 'operator', id: null } as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function requireId(value: string | undefined): string {
  if (!value || !UUID.test(value)) throw new CliError('--id must be a uuid', EXIT.usage);
  return value.toLowerCase();
}

export async function keyList(values: { org?: string; json?: boolean }): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const target = chooseTarget();
  const listed: { api_keys: ApiKey[] } =
    target.kind === 'api'
      ? await apiJson(target, 'GET', `/operator/orgs/${slug}/api-keys`)
      : await onStore(target.config, async ({ deps }) => {
          const org = await orgBySlug(deps, slug);
          return { api_keys: (await credentials.listApiKeys(deps, org.id)).map(apiKeyView) };
        });
  print(
    Boolean(values.json),
    listed,
    () =>
      listed.api_keys.map((k) => `${k.id}  ${k.prefix}…  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}  ${k.name}`).join('\n') ||
      `${slug} has no API keys`,
  );
}

export async function keyRevoke(values: { org?: string; id?: string; json?: boolean }): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const id = requireId(values.id);
  const target = chooseTarget();
  const key: ApiKey =
    target.kind === 'api'
      ? await apiJson(target, 'POST', `/operator/orgs/${slug}/api-keys/${id}/revoke`)
      : await onStore(target.config, async ({ deps }) => {
          const org = await orgBySlug(deps, slug);
          const row = await credentials.revokeApiKey(deps, org.id, id, OPERATOR);
          // The router tells the instances after a write; on the store the CLI does (PostgreSQL shared with servers).
          await deps.authCache.changed();
          return apiKeyView(row);
        });
  print(Boolean(values.json), key, () => `API key ${key.name} (${key.prefix}…, ${key.id}) of ${slug} is revoked: it is refused from the next request.`);
}

export async function connectorRevalidate(values: { org?: string; id?: string; json?: boolean }): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const id = requireId(values.id);
  const target = chooseTarget();
  let result: { id: string; status: string; error?: string | null };
  if (target.kind === 'api') {
    // The server validates in the background: its outcome shows in the connector (GET /api/connectors/{id}).
    result = await apiJson(target, 'POST', `/operator/orgs/${slug}/connectors/${id}/revalidate`);
  } else {
    result = await onStore(target.config, async ({ deps }) => {
      const org = await orgBySlug(deps, slug);
      await revalidateConnector(deps, org.id, id, OPERATOR);
      // No server keeps running here: wait for the validation and report its outcome.
      await deps.jobs.idle();
      const row = await getConnector(deps, org.id, id);
      await deps.authCache.changed();
      return { id: row.id, status: row.status, error: row.statusReason ?? null };
    });
  }
  print(Boolean(values.json), result, () =>
    result.status === 'validating'
      ? `connector ${id} of ${slug}: validation started`
      : `connector ${id} of ${slug}: ${result.status}${result.error ? ` (${result.error})` : ''}`,
  );
  if (result.status === 'failed') process.exitCode = EXIT.failed;
}

/** The export document to stdout or to `--out` (never inside the repository by default: the operator names the file). */
export async function auditExport(values: { org?: string; out?: string; redact?: boolean; days?: string; json?: boolean }): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const days = values.days === undefined ? undefined : Number(values.days);
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > 36500)) throw new CliError('--days must be an integer from 1 to 36500', EXIT.usage);
  const redact = Boolean(values.redact);
  const target = chooseTarget();
  const sink = values.out ? createWriteStream(values.out, { mode: 0o600 }) : process.stdout;
  const write = (stream: ReadableStream<Uint8Array>) => pipeline(Readable.fromWeb(stream as never), sink, { end: Boolean(values.out) });
  if (target.kind === 'api') {
    const query = new URLSearchParams({ redact: String(redact), ...(days ? { days: String(days) } : {}) });
    const response = await callApi(target, 'GET', `/operator/orgs/${slug}/audit/export-json?${query}`);
    await write(response.body!);
  } else {
    await onStore(target.config, async ({ deps }) => {
      const org = await orgBySlug(deps, slug);
      const now = new Date();
      const since = days ? { since: new Date(now.getTime() - days * 86_400_000) } : {};
      await write(auditExportStream(deps.store.db, org.id, since, redact, now));
    });
  }
  if (values.out) print(Boolean(values.json), { org: slug, file: values.out, redacted: redact }, () => `audit log of ${slug} written to ${values.out}`);
}
