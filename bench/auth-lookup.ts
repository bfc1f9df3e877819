/**
 * The MCP credential lookup on its own (mcp/lookup.ts + mcp/auth-cache.ts), in this process: 16 concurrent callers,
 * interleaved rounds of the cache off and on, lookups per second, mean latency and CPU of this process per lookup
 * (PostgreSQL and Redis run in their own processes and are not counted). Real services: a fresh PostgreSQL store
 * database (dropped at the end), Redis on 127.0.0.1:6379 for the auth epoch.
 *
 *   bun bench/auth-lookup.ts [--keys=valid|sprayed] [--seconds=3] [--rounds=3]
 *   valid: the org's API key (hits once cached); sprayed: a new random key each time (every lookup a miss: the miss
 *   path must cost what the lookup cost before the cache).
 */
import { randomBytes } from 'node:crypto';
import { findMcpOrgWithApiKey } from '../src/mcp/lookup.ts';
import { onboard, startTestGateway } from '../test/support/gateway.ts';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const SECONDS = Number(arg('seconds') ?? 3);
const ROUNDS = Number(arg('rounds') ?? 3);
const SPRAYED = arg('keys') === 'sprayed';
const CALLERS = 16;

const gateway = await startTestGateway('postgres', { REDIS_URL: 'redis://127.0.0.1:6379', TOOLGATE_WEBHOOK_WORKER: '0' });
try {
  const org = await onboard(gateway);
  const cache = gateway.deps.authCache;

  async function run(cached: boolean, seconds: number) {
    let lookups = 0;
    let waited = 0;
    const end = performance.now() + seconds * 1000;
    const cpuBefore = process.cpuUsage();
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (performance.now() < end) {
          const key = SPRAYED ? `tgk_${randomBytes(32).toString('base64url')}` : org.apiKey;
          const startedAt = performance.now();
          await findMcpOrgWithApiKey(gateway.deps.store.db, org.slug, key, cached ? cache : undefined);
          waited += performance.now() - startedAt;
          lookups++;
        }
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    return { perSecond: Math.round(lookups / seconds), meanMs: (waited / lookups).toFixed(3), cpuUs: ((cpu.user + cpu.system) / lookups).toFixed(1) };
  }

  await run(true, 1);
  await run(false, 1);
  console.log(`| keys | cache | lookups/s | mean ms | CPU µs/lookup |\n|:--|:--|--:|--:|--:|`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const cached of [false, true]) {
      const r = await run(cached, SECONDS);
      console.log(`| ${SPRAYED ? 'sprayed' : 'valid'} | ${cached ? 'on' : 'off'} | ${r.perSecond} | ${r.meanMs} | ${r.cpuUs} |`);
    }
  }
  console.log(`cache: ${cache.stats.hits} hits, ${cache.stats.misses} misses`);
} finally {
  await gateway.close();
}
process.exit(0);
