// The mongodb, mssql and oracle client packages are optional dependencies (docs/install.md): a gateway installed
// without one still starts, and that type answers 422 connector_type_unavailable naming the package. Absence is
// simulated with the driver's loader pointed at a package that is really not installed, so the runtime's own
// "cannot find package" error is what gets recognised.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { getDriver } from '../../src/connectors/registry.ts';
import { createConnector, listConnectors } from '../../src/connectors/service.ts';
import { lazyDriver } from '../../src/connectors/shared/lazy.ts';
import { AppError } from '../../src/errors.ts';
import { verifies } from '../requirements.ts';
import { onboard, startTestGateway, type Onboarded, type TestGateway } from '../support/gateway.ts';

setDefaultTimeout(60_000);

const ABSENT = 'toolgate-absent-driver-package';
const meta = { type: 'mongodb', kind: 'database' as const, readOnly: true, configSchema: {} };

/** A loader that imports a package this install lacks, as driver.ts does when `mongodb` is not installed. */
function absentLoader(): Promise<never> {
  // A variable, so neither the type checker nor the bundler resolves it ahead of time.
  const name: string = ABSENT;
  return import(name) as Promise<never>;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function expectUnavailable(err: unknown, pkg: string): void {
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).status).toBe(422);
  expect((err as AppError).code).toBe('connector_type_unavailable');
  expect((err as AppError).message).toContain(`npm package ${pkg}`);
  expect((err as AppError).message).toContain(`npm install ${pkg}`);
}

describe('a connector type whose client package is missing', () => {
  test('ready and validate reject with 422 connector_type_unavailable naming the package', async () => {
    verifies('CONN-DRIVER-MISSING');
    const driver = lazyDriver(meta, ABSENT, absentLoader);
    expectUnavailable(await rejection(driver.ready!()), ABSENT);
    expectUnavailable(await rejection(driver.validate('c1', {}, null)), ABSENT);
    // Nothing loaded, nothing to close.
    await driver.closeAll();
  });

  test('another load failure is passed on as it is, not dressed as a missing package', async () => {
    const boom = new Error('driver.ts threw while loading');
    const driver = lazyDriver(meta, 'mongodb', () => Promise.reject(boom));
    expect(await rejection(driver.ready!())).toBe(boom);
  });

  test('the installed drivers are ready', async () => {
    for (const type of ['mongodb', 'mssql', 'oracle']) await getDriver(type)!.ready!();
  });
});

describe('creating a connector of that type', () => {
  let g: TestGateway;
  let org: Onboarded;
  beforeAll(async () => {
    g = await startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
    org = await onboard(g);
  }, 120_000);
  afterAll(async () => {
    await g?.close();
  }, 60_000);

  test('is refused with 422 before anything is written', async () => {
    verifies('CONN-DRIVER-MISSING');
    const driver = getDriver('mongodb')!;
    const ready = driver.ready;
    driver.ready = lazyDriver(meta, ABSENT, absentLoader).ready;
    try {
      const config = { host: '127.0.0.1', port: 27017, database: 'shop', user: 'reader' };
      const input = { name: 'no-driver', type: 'mongodb', config };
      expectUnavailable(await rejection(createConnector(g.deps as never, org.orgId, input, { type: 'system' } as never)), ABSENT);
    } finally {
      driver.ready = ready;
    }
    const rows = await listConnectors(g.deps as never, org.orgId);
    expect(rows.map((r) => r.name)).not.toContain('no-driver');
  });
});
