/**
 * The licence policy of what Toolgate ships (decision 0310): the packages `npm install` of the gateway brings (its
 * dependencies and optional dependencies, transitively, as installed) and the files vendored into the repository.
 * A licence is accepted when it is permissive and compatible with distributing the whole under Apache-2.0; copyleft
 * (GPL, AGPL, LGPL), source-available (SSPL, BUSL, Commons Clause), non-commercial, missing or unknown licences fail,
 * unless the package is in the reviewed allow-list below with the reason it was accepted.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** SPDX identifiers accepted without review: permissive, and compatible with Apache-2.0 one way or the other. */
const ACCEPTED = new Set([
  'MIT',
  'MIT-0',
  'ISC',
  'BSD-2-Clause',
  'BSD-3-Clause',
  '0BSD',
  'Apache-2.0',
  'BlueOak-1.0.0',
  'CC0-1.0',
  'Unlicense',
  'Python-2.0',
  'Zlib',
  'CC-BY-3.0',
  'CC-BY-4.0',
  'UPL-1.0',
]);

/**
 * Packages whose licence field is missing, non-SPDX or not in ACCEPTED, accepted after reading their licence text.
 * Key: package name; `licence` is what the field must still say (a change re-opens the review).
 */
const REVIEWED: Record<string, { licence: string; reason: string }> = {};

export interface Entry {
  name: string;
  version: string;
  licence: string;
  /** Where it is: the package folder relative to the root, or the vendored file. */
  where: string;
}

export interface Verdict {
  ok: boolean;
  why: string;
}

/** The SPDX expression's verdict: OR needs one accepted side, AND (and WITH's base) needs every side. */
export function judgeLicence(name: string, licence: string): Verdict {
  const reviewed = REVIEWED[name];
  if (reviewed && reviewed.licence === licence) return { ok: true, why: `reviewed: ${reviewed.reason}` };
  if (!licence || licence === 'UNKNOWN') return { ok: false, why: 'no licence declared' };
  return expression(licence.replace(/[()]/g, ' ').trim());
}

function expression(text: string): Verdict {
  const alternatives = text.split(/\s+OR\s+/);
  if (alternatives.length > 1) {
    const verdicts = alternatives.map(expression);
    const chosen = verdicts.find((v) => v.ok);
    return chosen ? { ok: true, why: `chosen from ${alternatives.join(' OR ')}` } : { ok: false, why: verdicts.map((v) => v.why).join('; ') };
  }
  const all = text.split(/\s+AND\s+/);
  if (all.length > 1) {
    const refused = all.map(expression).filter((v) => !v.ok);
    return refused.length ? { ok: false, why: refused.map((v) => v.why).join('; ') } : { ok: true, why: 'every part accepted' };
  }
  const id = text.split(/\s+WITH\s+/)[0]!.trim();
  return ACCEPTED.has(id) ? { ok: true, why: 'accepted' } : { ok: false, why: `${id} is not accepted with Apache-2.0` };
}

interface Manifest {
  name?: string;
  version?: string;
  license?: string | { type?: string };
  licenses?: { type?: string }[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

function declaredLicence(manifest: Manifest): string {
  const { license, licenses } = manifest;
  if (typeof license === 'string') return license;
  if (license && typeof license.type === 'string') return license.type;
  if (Array.isArray(licenses) && licenses.length) return licenses.map((l) => l.type ?? 'UNKNOWN').join(' OR ');
  return 'UNKNOWN';
}

/** Node's lookup: the nearest node_modules/<name> from `from` up to `root`. */
function locate(root: string, from: string, name: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === dirname(dir)) return null;
  }
}

/**
 * The installed runtime closure of the package at `root`: every package its dependencies and optional dependencies
 * bring, as resolved on disk. A missing required dependency throws (the tree is not installed); a missing optional
 * one (another platform's binary, a driver left out) is skipped.
 */
export function installedRuntimePackages(root: string): Entry[] {
  const seen = new Map<string, Entry>();
  const walk = (dir: string, manifest: Manifest) => {
    const wanted = [
      ...Object.keys(manifest.dependencies ?? {}).map((name) => ({ name, optional: false })),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((name) => ({ name, optional: true })),
    ];
    for (const { name, optional } of wanted) {
      const found = locate(root, dir, name);
      if (!found) {
        if (optional) continue;
        throw new Error(`${name} (a dependency of ${manifest.name ?? 'the root'}) is not installed: run npm install first`);
      }
      if (seen.has(found)) continue;
      const child = JSON.parse(readFileSync(join(found, 'package.json'), 'utf8')) as Manifest;
      seen.set(found, { name: child.name ?? name, version: child.version ?? '?', licence: declaredLicence(child), where: relative(root, found) });
      walk(found, child);
    }
  };
  walk(root, JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest);
  return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version) || a.where.localeCompare(b.where));
}

/** Files copied into the repository from other projects (each folder's README names package, version and licence). */
export const VENDORED: Entry[] = [
  { name: '@scalar/api-reference (standalone bundle)', version: '1.46.0', licence: 'MIT', where: 'vendor/scalar-api-reference/standalone.js' },
];
