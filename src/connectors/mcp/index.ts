/** Registers the `mcp` connector type (an external MCP server over Streamable HTTP); its driver loads with the gateway (hot path, no lazy step). */
import { registerConnector } from '../registry.ts';
import { mcpDriver } from './driver.ts';

registerConnector(mcpDriver);
