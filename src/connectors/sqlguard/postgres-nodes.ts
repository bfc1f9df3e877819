/** PostgreSQL guard: the allow-lists of what the tree walk accepts (node types, fields, ALTER sub-commands, casts). */

/** Raw-parse-tree node types the guard understands. Anything else in a statement is refused. */
export const QUERY_NODES: ReadonlySet<string> = new Set([
  'Integer', 'Float', 'Boolean', 'String', 'BitString', 'List', 'A_Const', 'A_Star', 'ParamRef',
  'SQLValueFunction', 'SetToDefault',
  'SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt', 'ResTarget', 'MultiAssignRef', 'ColumnRef',
  'A_Expr', 'BoolExpr', 'SubLink', 'NullTest', 'BooleanTest', 'CaseExpr', 'CaseWhen', 'CoalesceExpr',
  'MinMaxExpr', 'RowExpr', 'A_ArrayExpr', 'A_Indirection', 'A_Indices', 'TypeCast', 'TypeName',
  'CollateClause', 'FuncCall', 'NamedArgExpr', 'SortBy', 'WindowDef', 'RangeVar', 'RangeSubselect',
  'JoinExpr', 'Alias', 'GroupingSet', 'GroupingFunc', 'WithClause', 'CommonTableExpr', 'CTESearchClause',
  'CTECycleClause', 'OnConflictClause', 'InferClause', 'IndexElem', 'ReturningClause', 'ReturningOption',
  'RangeTableSample', 'LockingClause',
  'JsonObjectConstructor', 'JsonArrayConstructor', 'JsonArrayQueryConstructor', 'JsonAggConstructor',
  'JsonObjectAgg', 'JsonArrayAgg', 'JsonKeyValue', 'JsonValueExpr', 'JsonFormat', 'JsonOutput',
  'JsonReturning', 'JsonIsPredicate', 'JsonFuncExpr', 'JsonArgument', 'JsonBehavior', 'JsonParseExpr',
  'JsonScalarExpr', 'JsonSerializeExpr',
]);

/** Extra node types that may appear in the DDL statements we accept. */
export const DDL_NODES: ReadonlySet<string> = new Set([
  'CreateStmt', 'AlterTableStmt', 'AlterTableCmd', 'ATAlterConstraint', 'DropStmt', 'TruncateStmt',
  'IndexStmt', 'RenameStmt', 'ColumnDef', 'Constraint', 'DefElem', 'PartitionSpec', 'PartitionElem',
]);

/**
 * Fields whose value is an *unwrapped* struct (the JSON form only wraps fields typed as a generic Node):
 * `Parent.field` → type of the struct. An unwrapped struct in a field not listed here is refused.
 */
export const UNWRAPPED_FIELDS: Readonly<Record<string, string>> = {
  'RangeVar.alias': 'Alias',
  'JoinExpr.alias': 'Alias',
  'JoinExpr.join_using_alias': 'Alias',
  'RangeSubselect.alias': 'Alias',
  'TypeCast.typeName': 'TypeName',
  'FuncCall.over': 'WindowDef',
  'SelectStmt.intoClause': 'IntoClause',
  'SelectStmt.withClause': 'WithClause',
  'SelectStmt.larg': 'SelectStmt',
  'SelectStmt.rarg': 'SelectStmt',
  'InsertStmt.relation': 'RangeVar',
  'InsertStmt.onConflictClause': 'OnConflictClause',
  'InsertStmt.returningClause': 'ReturningClause',
  'InsertStmt.withClause': 'WithClause',
  'UpdateStmt.relation': 'RangeVar',
  'UpdateStmt.returningClause': 'ReturningClause',
  'UpdateStmt.withClause': 'WithClause',
  'DeleteStmt.relation': 'RangeVar',
  'DeleteStmt.returningClause': 'ReturningClause',
  'DeleteStmt.withClause': 'WithClause',
  'OnConflictClause.infer': 'InferClause',
  'CommonTableExpr.search_clause': 'CTESearchClause',
  'CommonTableExpr.cycle_clause': 'CTECycleClause',
  'JsonReturning.format': 'JsonFormat',
  'JsonValueExpr.format': 'JsonFormat',
  'JsonIsPredicate.format': 'JsonFormat',
  'JsonOutput.typeName': 'TypeName',
  'JsonOutput.returning': 'JsonReturning',
  'JsonArgument.val': 'JsonValueExpr',
  'JsonFuncExpr.context_item': 'JsonValueExpr',
  'JsonFuncExpr.output': 'JsonOutput',
  'JsonFuncExpr.on_empty': 'JsonBehavior',
  'JsonFuncExpr.on_error': 'JsonBehavior',
  'JsonKeyValue.value': 'JsonValueExpr',
  'JsonParseExpr.expr': 'JsonValueExpr',
  'JsonParseExpr.output': 'JsonOutput',
  'JsonScalarExpr.output': 'JsonOutput',
  'JsonSerializeExpr.expr': 'JsonValueExpr',
  'JsonSerializeExpr.output': 'JsonOutput',
  'JsonObjectConstructor.output': 'JsonOutput',
  'JsonArrayConstructor.output': 'JsonOutput',
  'JsonArrayQueryConstructor.output': 'JsonOutput',
  'JsonArrayQueryConstructor.format': 'JsonFormat',
  'JsonAggConstructor.output': 'JsonOutput',
  'JsonAggConstructor.over': 'WindowDef',
  'JsonObjectAgg.constructor': 'JsonAggConstructor',
  'JsonObjectAgg.arg': 'JsonKeyValue',
  'JsonArrayAgg.constructor': 'JsonAggConstructor',
  'JsonArrayAgg.arg': 'JsonValueExpr',
  // DDL
  'ColumnDef.typeName': 'TypeName',
  'ColumnDef.identitySequence': 'RangeVar',
  'ColumnDef.collClause': 'CollateClause',
  'AlterTableStmt.relation': 'RangeVar',
  'CreateStmt.relation': 'RangeVar',
  'CreateStmt.partspec': 'PartitionSpec',
  'Constraint.pktable': 'RangeVar',
  'IndexStmt.relation': 'RangeVar',
  'RenameStmt.relation': 'RangeVar',
};

/** ALTER TABLE sub-commands that only change the table itself. */
export const SAFE_ALTER_SUBTYPES: ReadonlySet<string> = new Set([
  'AT_AddColumn', 'AT_ColumnDefault', 'AT_DropNotNull', 'AT_SetNotNull', 'AT_DropColumn',
  'AT_AlterColumnType', 'AT_AddConstraint', 'AT_DropConstraint', 'AT_ValidateConstraint',
  'AT_AlterConstraint', 'AT_SetStatistics',
]);

/**
 * The only type names a statement may name (casts, `type 'literal'`, JSON RETURNING, column types in DDL), matched
 * unqualified or qualified with pg_catalog, exactly as written (a quoted "INT4" is not int4). An allow-list of
 * built-in scalar, range and geometric types: a row type (`null::other_table`, `(null::pg_authid).*`) would reveal
 * another relation's columns or existence, reg* types (`'x'::regclass`) look objects up in the catalogs, and a
 * domain's CHECK can call any function. Keyword spellings (`integer`, `double precision`, `timestamp with time
 * zone`) reach us as their pg_catalog names. Unqualified names are still resolved by the server along the
 * search_path, where a user type of the same name in the tool's schema comes first: the server-side resolution
 * check (postgresql/resolution.ts) refuses any such non-built-in type.
 */
export const SAFE_TYPE_NAMES: ReadonlySet<string> = new Set([
  'bool', 'boolean', 'int2', 'int4', 'int8', 'smallint', 'integer', 'int', 'bigint', 'float4', 'float8', 'real',
  'float', 'numeric', 'decimal', 'text', 'varchar', 'bpchar', 'char', 'character', 'name', 'date', 'time', 'timetz',
  'timestamp', 'timestamptz', 'interval', 'json', 'jsonb', 'jsonpath', 'uuid', 'bytea', 'bit', 'varbit', 'inet',
  'cidr', 'macaddr', 'macaddr8', 'money', 'tsvector', 'tsquery', 'int4range', 'int8range', 'numrange', 'tsrange',
  'tstzrange', 'daterange', 'int4multirange', 'int8multirange', 'nummultirange', 'tsmultirange', 'tstzmultirange',
  'datemultirange', 'point', 'line', 'lseg', 'box', 'path', 'polygon', 'circle',
]);

/** Column types that only exist in CREATE TABLE / ADD COLUMN (they stand for an integer column with a sequence). */
export const DDL_ONLY_TYPE_NAMES: ReadonlySet<string> = new Set([
  'serial', 'serial4', 'bigserial', 'serial8', 'smallserial', 'serial2',
]);

export const SAFE_TABLESAMPLE_METHODS: ReadonlySet<string> = new Set(['bernoulli', 'system']);
