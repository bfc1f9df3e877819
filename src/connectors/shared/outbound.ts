/**
 * The connect-time outbound check for drivers that cannot hand every socket to the policy (mongodb, mssql, oracle):
 * the host is resolved and checked right before the driver connects. postgresql and mysql pin their sockets instead
 * (net/dial.ts); docs/outbound-policy.md lists what each driver can and cannot pin.
 */
import { checkedAddresses } from '../../net/dial.ts';
import type { OutboundPolicy } from '../../net/policy.ts';
import type { DatabaseConfig } from '../types.ts';
import { refusalOf, targetRefusedText } from './errors.ts';

/** Throws the policy's refusal (drivers word it through describeNetworkError) when the target is not allowed now. */
export async function assertConnectTarget(outbound: OutboundPolicy | undefined, config: DatabaseConfig, defaultPort: number): Promise<void> {
  if (!outbound) return;
  await checkedAddresses(outbound, { host: config.host, port: config.port ?? defaultPort, database: config.database });
}

/** For execute: the tool-error text when the target is not allowed now, else null. */
export async function refusedTargetText(outbound: OutboundPolicy | undefined, config: DatabaseConfig, defaultPort: number): Promise<string | null> {
  try {
    await assertConnectTarget(outbound, config, defaultPort);
    return null;
  } catch (err) {
    if (refusalOf(err)) return `The database is unavailable: ${targetRefusedText(config.host)}.`;
    throw err;
  }
}
