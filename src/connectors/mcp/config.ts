/**
 * The `mcp` config schema, owned once: the contract's McpConfig (openapi.yaml, via generated/openapi.json), the
 * McpConfig type generated from it. The driver adds no second copy; checks a schema cannot say (reserved headers,
 * the outbound policy) run at validation.
 */
import openapiDocument from '../../../generated/openapi.json' with { type: 'json' };

const { format: _format, ...url } = openapiDocument.components.schemas.McpConfig.properties.url;

/** McpConfig, with `format: uri` left to the outbound guard (it parses the URL with the same rules fetch uses). */
export const mcpConfigSchema: Record<string, unknown> = {
  ...openapiDocument.components.schemas.McpConfig,
  properties: { ...openapiDocument.components.schemas.McpConfig.properties, url },
};
