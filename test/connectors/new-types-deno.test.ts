// The mongodb, mssql and oracle drivers under Deno (the gateway also runs there: src/deno.ts): each loads with its
// client package and reaches the network, answering an unreachable server in plain words. No server of these kinds
// runs here, so a port nothing listens on is the far end.
import { expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { verifies } from '../requirements.ts';
import { deadPort } from '../support/targets.ts';

const ROOT = resolve(import.meta.dir, '../..');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const present = existsSync(DENO);
if (!present) {
  if (process.env.CI) throw new Error(`deno is required in CI but ${DENO} is missing (npm install)`);
  console.warn(`[skip] ${DENO} is missing: the Deno driver check is skipped`);
}

test.skipIf(!present)(
  'under Deno the three drivers load and report an unreachable server without the password',
  async () => {
    verifies('CONN-NEW-TYPES-REST');
    const port = await deadPort();
    const script = `
import { getDriver } from ${JSON.stringify(join(ROOT, 'src/connectors/index.ts'))};
const out = [];
for (const type of ['mongodb', 'mssql', 'oracle']) {
  try {
    await getDriver(type).validate('deno', { host: '127.0.0.1', port: ${port}, database: 'FREEPDB1', user: 'u' }, 'Deno-Secret-Pw');
    out.push('connected?');
  } catch (e) { out.push(e.message); }
}
console.log(JSON.stringify(out));
Deno.exit(0);`;
    const child = Bun.spawn([DENO, 'eval', '--ext=ts', script], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        NO_COLOR: '1',
        ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err] = [await new Response(child.stdout).text(), await new Response(child.stderr).text()];
    expect(await child.exited, err).toBe(0);
    const refused = `could not connect to 127.0.0.1:${port}: connection refused`;
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual([refused, refused, refused]);
    expect(out).not.toContain('Deno-Secret-Pw');
  },
  90_000,
);
