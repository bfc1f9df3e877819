/**
 * Databases the gateway serves in-process (the demo's sample database): reached through a private socket, never a
 * network listener, and only by connectors of the org that owns them. Their hosts end in `.invalid` (RFC 6761),
 * a name no resolver answers, so outside this registry they lead nowhere.
 */
import type net from 'node:net';

export const EMBEDDED_HOST_SUFFIX = '.embedded.invalid';

interface EmbeddedDatabase {
  orgId: string;
  connect: () => Promise<net.Socket>;
}

const databases = new Map<string, EmbeddedDatabase>();

/** Registers an in-process database under `host` for `orgId`; returns the function that removes it. */
export function registerEmbeddedDatabase(host: string, orgId: string, connect: () => Promise<net.Socket>): () => void {
  if (!host.endsWith(EMBEDDED_HOST_SUFFIX)) throw new Error(`an embedded database host must end in ${EMBEDDED_HOST_SUFFIX}`);
  const entry = { orgId, connect };
  databases.set(host, entry);
  return () => {
    if (databases.get(host) === entry) databases.delete(host);
  };
}

/** The connect function of `host` when it is an embedded database of `orgId`; null for anything else. */
export function embeddedDatabaseFor(host: string, orgId: string | undefined): (() => Promise<net.Socket>) | null {
  const entry = databases.get(host.trim().toLowerCase());
  return entry && orgId !== undefined && entry.orgId === orgId ? entry.connect : null;
}
