// Unit tests of the helpers shared by the SQL guards.
import { describe, expect, test } from 'bun:test';
import { VerdictCache, allowedPhrase, clip } from '../../src/connectors/shared/sqlguard/common.ts';
import type { GuardOptions } from '../../src/connectors/shared/sqlguard/types.ts';

const opts: GuardOptions = { table: { schema: 'public', name: 'users' }, allowWrite: false, allowDdl: false, readOnly: true };

describe('sqlguard helpers', () => {
  test('the verdict cache is bounded in entries and ignores huge keys', () => {
    const cache = new VerdictCache(8, 100);
    for (let i = 0; i < 100; i++) cache.set(VerdictCache.key(`SELECT ${i}`, opts), { ok: true, kind: 'select', readOnly: true });
    expect(cache.size).toBe(8);
    // The most recent entries survive, the oldest are gone.
    expect(cache.get(VerdictCache.key('SELECT 99', opts))).toBeDefined();
    expect(cache.get(VerdictCache.key('SELECT 0', opts))).toBeUndefined();
    cache.set(VerdictCache.key(`SELECT ${'x'.repeat(200)}`, opts), { ok: false, reason: 'x' });
    expect(cache.size).toBe(8);
  });

  test('a cache hit refreshes recency', () => {
    const cache = new VerdictCache(2, 1000);
    const a = VerdictCache.key('a', opts);
    const b = VerdictCache.key('b', opts);
    const c = VerdictCache.key('c', opts);
    cache.set(a, { ok: false, reason: 'a' });
    cache.set(b, { ok: false, reason: 'b' });
    cache.get(a);
    cache.set(c, { ok: false, reason: 'c' });
    expect(cache.get(a)).toBeDefined();
    expect(cache.get(b)).toBeUndefined();
  });

  test('cache keys differ by table and permissions', () => {
    const keys = new Set([
      VerdictCache.key('SELECT 1', opts),
      VerdictCache.key('SELECT 1', { ...opts, readOnly: false }),
      VerdictCache.key('SELECT 1', { ...opts, allowWrite: true }),
      VerdictCache.key('SELECT 1', { ...opts, allowDdl: true }),
      VerdictCache.key('SELECT 1', { ...opts, table: { schema: 'public', name: 'other' } }),
      VerdictCache.key('SELECT 1', { ...opts, table: { schema: 'other', name: 'users' } }),
    ]);
    expect(keys.size).toBe(6);
  });

  test('clip shortens and flattens quoted text', () => {
    expect(clip('a\n  b')).toBe('a b');
    const long = clip('x'.repeat(500));
    expect(long.length).toBe(80);
    expect(long.endsWith('…')).toBe(true);
  });

  test('the allowed phrase lists what the tool may do', () => {
    expect(allowedPhrase(opts, 'public.users')).toBe('Only a single SELECT on table "public.users" is allowed (read-only tool)');
    expect(allowedPhrase({ ...opts, readOnly: false }, 'public.users')).toBe('Only a single SELECT on table "public.users" is allowed (read-only connector)');
    expect(allowedPhrase({ ...opts, readOnly: false, allowWrite: true }, 'public.users')).toBe(
      'Only a single SELECT, INSERT, UPDATE or DELETE on table "public.users" is allowed',
    );
  });
});
