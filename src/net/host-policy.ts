/**
 * DNS-rebinding defence: which Host names the gateway answers to, and which browser Origins may call the MCP
 * endpoint and the console. Both derive from TOOLGATE_PUBLIC_URL (Origins: with its loopback spellings when its host is loopback;
 * Host: the loopback names always), TOOLGATE_ALLOWED_HOSTS and TOOLGATE_ALLOWED_ORIGINS. Decided in docs/decisions/0050-host-check.md.
 * A pure policy over the configuration; the router (Host, every route but /healthz), the MCP transport and the console
 * (Origin) apply it and write the HTTP answers.
 */
import { canonicalHostname, LOOPBACK_HOSTNAMES, originKey, parseOrigin } from './hostname.ts';

/**
 * The settings the policy reads, named here rather than imported: config.ts parses its values with net/, so net/ sits
 * below it and takes the whole Config as this narrower shape.
 */
interface HostSettings {
  publicUrl: string;
  allowedHosts: string[];
  allowedOrigins: string[];
}

export interface HostPolicy {
  /** Whether the request names this gateway: its Host header, or the URL's host when a request has none. */
  hostAllowed(request: Request): boolean;
  /** Whether a browser page of this Origin may call the MCP endpoint or the console; no Origin passes. */
  originAllowed(origin: string | null): boolean;
}

/** Verdicts are cached per header text; a flood of distinct spellings only resets the cache, never grows it. */
const MAX_CACHED_VERDICTS = 1024;

function cachedVerdict(cache: Map<string, boolean>, key: string, decide: (key: string) => boolean): boolean {
  let verdict = cache.get(key);
  if (verdict === undefined) {
    if (cache.size >= MAX_CACHED_VERDICTS) cache.clear();
    cache.set(key, (verdict = decide(key)));
  }
  return verdict;
}

function buildHostPolicy(config: HostSettings): HostPolicy {
  const publicUrl = new URL(config.publicUrl);
  const publicHostname = canonicalHostname(publicUrl.host)!;
  // A page on http://127.0.0.1:PORT reaches the very socket http://localhost:PORT names: same machine, same port.
  const ownHostnames = new Set(LOOPBACK_HOSTNAMES.includes(publicHostname) ? LOOPBACK_HOSTNAMES : [publicHostname]);
  const anyHost = config.allowedHosts.includes('*');
  // Loopback names always pass the Host check: no rebinding can produce them (they are not the attacker's to
  // resolve), and the CLI and local probes reach an embedded server at 127.0.0.1 whatever its public URL.
  const hostnames = new Set([publicHostname, ...LOOPBACK_HOSTNAMES, ...config.allowedHosts]);
  const ownScheme = publicUrl.protocol.slice(0, -1);
  const ownPort = publicUrl.port;
  const extraOrigins = new Set(config.allowedOrigins);
  const hostVerdicts = new Map<string, boolean>();
  const originVerdicts = new Map<string, boolean>();

  const decideHost = (host: string): boolean => {
    const hostname = canonicalHostname(host);
    return hostname !== null && (anyHost || hostnames.has(hostname));
  };
  const decideOrigin = (origin: string): boolean => {
    const parts = parseOrigin(origin);
    if (!parts) return false;
    if (parts.scheme === ownScheme && parts.port === ownPort && ownHostnames.has(parts.hostname)) return true;
    return extraOrigins.has(originKey(parts));
  };
  return {
    hostAllowed(request) {
      const host = request.headers.get('host') ?? new URL(request.url).host;
      return cachedVerdict(hostVerdicts, host, decideHost);
    },
    originAllowed(origin) {
      if (origin === null) return true;
      return cachedVerdict(originVerdicts, origin, decideOrigin);
    },
  };
}

const policies = new WeakMap<HostSettings, HostPolicy>();

/** The policy of a configuration, built once (config is read once at start and never changes). */
export function hostPolicyFor(config: HostSettings): HostPolicy {
  let policy = policies.get(config);
  if (!policy) policies.set(config, (policy = buildHostPolicy(config)));
  return policy;
}
