/**
 * What the console knows of each connector type, read from the contract's `x-toolgate-types` (openapi.yaml, through
 * generated/contract-schemas.ts), never listed here: a type added to the contract gets its form, its write switch and
 * its policy section without a change to the console. test/connector-shape.test.ts checks these lists against the
 * registered drivers.
 */
import { schemas } from '../../generated/contract-schemas.ts';
import type { ConnectorType } from './api.ts';

const typesOf = (schema: object): readonly string[] => (schema as { 'x-toolgate-types'?: readonly string[] })['x-toolgate-types'] ?? [];

/** Every connector type, in the contract's order (its ConnectorType enum). */
export const CONNECTOR_TYPES = schemas.ConnectorType.enum as readonly ConnectorType[];

const CONFIG_SCHEMAS = [schemas.DatabaseConfig, schemas.McpConfig];

/** The type's config schema: the one whose `x-toolgate-types` lists it. */
export const configSchemaOf = (type: string): object => CONFIG_SCHEMAS.find((s) => typesOf(s).includes(type)) ?? schemas.DatabaseConfig;

/** A database type (its config is DatabaseConfig; its tools take SQL or a pipeline), not an MCP server. */
export const isDatabaseType = (type: string): boolean => typesOf(schemas.DatabaseConfig).includes(type);

/** The type can write when its connector allows it (the others only read, decision 0116). */
export const typeWrites = (type: string): boolean => typesOf(schemas.CreateConnectorRequest.properties.allow_write).includes(type);

/** The type takes the `single` tool layout: one SQL tool for the whole connector (decision 0299). */
export const takesLayout = (type: string): boolean => typesOf(schemas.ToolLayout).includes(type);

/** The type's tools take a column/row policy (docs/tool-policies.md). */
export const takesPolicy = (type: string): boolean => typesOf(schemas.ToolPolicy).includes(type);

/** The type applies a policy's masks and row filter too (the others: hidden columns only). */
export const fullPolicy = (type: string): boolean =>
  typesOf(schemas.ToolPolicy.properties.masked_columns).includes(type) && typesOf(schemas.ToolPolicy.properties.row_filter).includes(type);
