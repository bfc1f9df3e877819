/**
 * The one step that runs a catalog tool with already validated arguments: monthly quota, then the connector's driver
 * with the configured limits. tools/call and the execution of an approved call both go through it, so an approved
 * call meets exactly the same driver path, limits and quota rules as an immediate one.
 */
import { getDriver } from '../connectors/registry.ts';
import type { ToolResult } from '../connectors/types.ts';
import { monthlyQuotaFor } from '../limits/plans.ts';
import type { UsageMeter } from '../limits/usage.ts';
import type { CatalogTool } from './catalog.ts';

export interface ExecutionLimitsConfig {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  maxResultRows: number;
  maxResultBytes: number;
}

/** The monthly quota of the org's plan is used up: nothing ran. The caller maps it to its wire form. */
export class QuotaExceededError extends Error {
  constructor(
    readonly plan: string,
    readonly quota: number,
  ) {
    super(`Monthly tool-call quota exceeded: the ${plan} plan includes ${quota} tool calls per month. Upgrade the plan to continue.`);
    this.name = 'QuotaExceededError';
  }
}

/** Runs `tool` with `input` (validated against its inputSchema by the caller). Throws QuotaExceededError before running anything. */
export async function executeCatalogTool(
  env: { usage: UsageMeter; config: ExecutionLimitsConfig },
  org: { id: string; plan: string },
  tool: CatalogTool,
  input: Record<string, unknown>,
): Promise<ToolResult> {
  // Counted before the tool runs, so a used-up quota runs nothing.
  const quota = monthlyQuotaFor(org.plan);
  if (!(await env.usage.consume(org.id, quota))) throw new QuotaExceededError(org.plan, quota!);
  const driver = getDriver(tool.connector.type);
  if (!driver) return { isError: true, content: [{ type: 'text', text: `The connector type ${tool.connector.type} is not available on this gateway.` }] };
  const { config } = env;
  return driver.execute(tool.spec, input, {
    connectorId: tool.connector.id,
    config: tool.connector.config,
    credential: tool.connector.credential,
    allowWrite: tool.connector.allowWrite,
    allowDdl: tool.connector.allowDdl,
    readOnly: tool.readOnly,
    limits: {
      statementTimeoutMs: config.statementTimeoutMs,
      lockTimeoutMs: config.lockTimeoutMs,
      maxRows: config.maxResultRows,
      maxResultBytes: config.maxResultBytes,
    },
  });
}
