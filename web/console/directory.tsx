/**
 * Names for the ids other answers carry (GET /api/org/directory), loaded once per page view and shared: audit actors
 * and targets, approval requesters, connectors of tools and usage. Ids stay on hover and copy (Named).
 */
import { useEffect, useState } from 'preact/hooks';
import { call, client, rest, type OrgDirectory } from './api.ts';
import { Named } from './controls.tsx';

let loaded: Promise<OrgDirectory | null> | null = null;
let loadedAt = 0;
/** Names change rarely; a page opened after this long reads them again (new connectors, tools, keys). */
const FRESH_MS = 5000;

/** The directory, or null when this role may not read it (finance); `refresh` after a create or rename. */
export function loadDirectory(refresh = false): Promise<OrgDirectory | null> {
  if (!loaded || refresh || Date.now() - loadedAt > FRESH_MS) {
    loaded = call(rest.getOrgDirectory({ client })).catch(() => null);
    loadedAt = Date.now();
  }
  return loaded;
}

export function useDirectory(): OrgDirectory | null {
  const [dir, setDir] = useState<OrgDirectory | null>(null);
  useEffect(() => {
    let live = true;
    loadDirectory().then((d) => live && setDir(d));
    return () => {
      live = false;
    };
  }, []);
  return dir;
}

/** The name behind a principal (`api_key`, `oauth_client`, `user`, …) and its id. */
function principalName(dir: OrgDirectory | null, type: string, id: string | null): string {
  if (!id) return type === 'system' ? 'the gateway' : type;
  if (type === 'api_key') return `API key ${dir?.api_keys.find((k) => k.id === id)?.name ?? id.slice(0, 8)}`;
  if (type === 'oauth_client') return `client ${dir?.oauth_clients.find((c) => c.client_id === id)?.name ?? id}`;
  return id;
}

/** "api_key:<uuid>" as approvals write it. */
export function Requester({ dir, value }: { dir: OrgDirectory | null; value: string }) {
  const at = value.indexOf(':');
  const [type, id] = at > 0 ? [value.slice(0, at), value.slice(at + 1)] : ['user', value];
  return <Named name={principalName(dir, type, id)} id={id} />;
}

export function Actor({ dir, actor }: { dir: OrgDirectory | null; actor: { type: string; id: string | null } }) {
  return <Named name={principalName(dir, actor.type, actor.id)} id={actor.id} />;
}

function targetName(dir: OrgDirectory | null, type: string | null, id: string | null): string {
  if (!type) return '—';
  if (!id) return type;
  const found =
    type === 'connector'
      ? dir?.connectors.find((c) => c.id === id)?.name
      : type === 'api_key'
        ? dir?.api_keys.find((k) => k.id === id)?.name
        : type === 'oauth_client'
          ? dir?.oauth_clients.find((c) => c.client_id === id)?.name
          : type === 'webhook'
            ? dir?.webhooks.find((w) => w.id === id)?.url
            : type === 'tool'
              ? (dir?.tools.find((t) => t.id === id)?.name ?? id)
              : undefined;
  return `${type.replace('_', ' ')} ${found ?? (id.length > 20 ? `${id.slice(0, 8)}…` : id)}`;
}

export function Target({ dir, type, id }: { dir: OrgDirectory | null; type: string | null; id: string | null }) {
  return <Named name={targetName(dir, type, id)} id={id} />;
}

export const connectorName = (dir: OrgDirectory | null, id: string | null | undefined) =>
  id ? (dir?.connectors.find((c) => c.id === id)?.name ?? `${id.slice(0, 8)}…`) : '—';
