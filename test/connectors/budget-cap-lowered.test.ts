/**
 * Decision 0409: a server's cap lowered below what its pools hold (the store's server, shared by one more instance)
 * closes that server's idle pools at once, least recently used first, never a busy one nor another server's; no token
 * is granted on it until it fits; raised again, a waiting call gets its token. Pure logic, with fake pools.
 */
import { expect, test } from 'bun:test';
import { ConnectionBudget, type Evictable } from '../../src/connectors/shared/budget.ts';

interface FakePool {
  name: string;
  server: string;
  tokens: number;
  lastUsed: number;
  busy: boolean;
  closed: boolean;
}

function budgetWith(pools: FakePool[]) {
  const budget = new ConnectionBudget();
  budget.settings = { total: 100, perServer: 100, waitMs: 200 };
  const closedOrder: string[] = [];
  budget.addSource((server) => {
    const idle = pools.filter((p) => !p.busy && !p.closed && p.tokens > 0 && (server === undefined || p.server === server));
    idle.sort((a, b) => a.lastUsed - b.lastUsed);
    const pool = idle[0];
    if (!pool) return null;
    const evictable: Evictable = {
      server: pool.server,
      lastUsed: pool.lastUsed,
      tokens: pool.tokens,
      evict: async () => {
        pool.closed = true;
        closedOrder.push(pool.name);
        await Bun.sleep(5); // the pool's connections close
        budget.release(pool.server, pool.tokens);
      },
    };
    return evictable;
  });
  return { budget, closedOrder };
}

test('a lowered cap closes idle pools of that server at once, LRU first; no token until it fits; raised, waiters get one', async () => {
  const pools: FakePool[] = [
    { name: 'old', server: 's:1', tokens: 3, lastUsed: 1, busy: false, closed: false },
    { name: 'busy', server: 's:1', tokens: 4, lastUsed: 0, busy: true, closed: false },
    { name: 'mid', server: 's:1', tokens: 2, lastUsed: 2, busy: false, closed: false },
    { name: 'new', server: 's:1', tokens: 2, lastUsed: 3, busy: true, closed: false },
    { name: 'other', server: 'o:1', tokens: 2, lastUsed: 0, busy: false, closed: false },
  ];
  const { budget, closedOrder } = budgetWith(pools);
  for (const p of pools) for (let i = 0; i < p.tokens; i++) await budget.acquire(p.server);
  expect(budget.usage('s:1')).toBe(11);

  // Cap 6: 5 too many; the idle 'old' (3) then 'mid' (2) close; the busy pools and the other server are untouched.
  budget.capServer('s:1', 6);
  expect(closedOrder).toEqual(['old', 'mid']);
  expect(budget.capOf('s:1')).toBe(6);

  // No idle pool left there, and 6 held once those closed (= the cap): a call waits, then gets the budget error.
  const refused = await budget.acquire('s:1').then(
    () => 'granted',
    (err: Error) => err.message,
  );
  expect(refused).toBe('CONNECTION_BUDGET');
  expect(budget.usage('s:1')).toBe(6);
  expect(budget.usage('o:1')).toBe(2);

  // Raised: a waiting call gets its token at once (its pool is 'new').
  const waiting = budget.acquire('s:1');
  budget.capServer('s:1', 7);
  await waiting;
  pools[3]!.tokens++;
  expect(budget.usage('s:1')).toBe(7);

  // Lowered to 3 while both pools are busy: nothing closes until one goes idle, then it does (poolIdle).
  budget.capServer('s:1', 3);
  expect(closedOrder).toEqual(['old', 'mid']);
  pools[3]!.busy = false;
  budget.poolIdle('s:1');
  expect(closedOrder).toEqual(['old', 'mid', 'new']);
  pools[1]!.busy = false;
  budget.poolIdle('s:1');
  expect(closedOrder).toEqual(['old', 'mid', 'new', 'busy']);
  await Bun.sleep(20);
  expect(budget.usage('s:1')).toBe(0);
  expect(budget.usage('o:1')).toBe(2);
});

test('several setters of one server (gateways of one process): the largest cap holds; a withdrawn one no longer counts', () => {
  const budget = new ConnectionBudget();
  budget.settings = { total: 100, perServer: 50, waitMs: 200 };
  expect(budget.capOf('s:1')).toBe(50);
  budget.capServer('s:1', 6, 'one');
  budget.capServer('s:1', 0, 'two');
  expect(budget.capOf('s:1')).toBe(6);
  budget.dropCap('s:1', 'one');
  expect(budget.capOf('s:1')).toBe(0);
  budget.dropCap('s:1', 'two');
  expect(budget.capOf('s:1')).toBe(50);
});
