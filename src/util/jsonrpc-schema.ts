/**
 * The $defs of jsonrpc-schema.json as code: their generated types, their compiled validators, a params check against
 * one, and a result serialised ahead of time. Below mcp/ and tools/ alike: the protocol and the tool runtime both check
 * params and the runtime caches a tools/list it builds.
 */
import * as rpc from '../../generated/validators/jsonrpc.ts';
import type { JsonRpcMessages } from '../../generated/jsonrpc-types.ts';
import { RpcCode, RpcError } from '../errors.ts';
import { describeSchemaError } from './schema-errors.ts';

type Validator = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; message?: string; params: Record<string, unknown>; keyword: string }> | null;
};
export const validators = rpc as unknown as Record<string, Validator>;

/** The $defs entries of jsonrpc-schema.json (each has a generated type and a compiled validator). */
export type Defs = { [K in keyof JsonRpcMessages]-?: NonNullable<JsonRpcMessages[K]> };
export type DefName = keyof Defs;

/**
 * Validates `value` (params, or with `where` another part of them) against a $defs entry of jsonrpc-schema.json and
 * narrows it to that entry's generated type; -32602 names the failing field.
 */
export function checkParams<D extends DefName>(def: D, value: unknown, where = 'params'): asserts value is Defs[D] {
  const validate = validators[def]!;
  if (validate(value)) return;
  throw new RpcError(RpcCode.InvalidParams, `Invalid params: ${describeSchemaError(where, validate.errors?.[0])}`);
}

/** A result serialised ahead of time (e.g. a cached tools/list): the protocol's success() splices the JSON text in as is. */
export class RawJson {
  constructor(readonly json: string) {}
}
