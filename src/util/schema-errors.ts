/** One wording for every "this value does not match its schema" message: the failing field, by its path. */

export interface SchemaError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** e.g. `body.name is required`, `params.arguments.extra is not a known field`, `query.limit must be <= 500`. */
export function describeSchemaError(root: string, err: SchemaError | undefined | null): string {
  const path = [root, ...(err?.instancePath.split('/').filter(Boolean) ?? [])].join('.');
  if (err?.keyword === 'required') return `${path}.${String(err.params.missingProperty)} is required`;
  if (err?.keyword === 'additionalProperties') return `${path}.${String(err.params.additionalProperty)} is not a known field`;
  return `${path} ${err?.message ?? 'is invalid'}`;
}
