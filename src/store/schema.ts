/**
 * Table definitions of the gateway's own state, for the query layer. Written once: the migrations (migrations.ts)
 * are the schema, and generated/store-schema.ts is printed from what they create on a fresh PGlite
 * (scripts/lib/store-schema.ts, run by `bun scripts/gen.ts`; `gen --check` in CI fails when it is stale). Doc
 * comments and jsonb types come from schema-notes.ts. This module re-exports it, so imports keep one path.
 */
export * from '../../generated/store-schema.ts';
