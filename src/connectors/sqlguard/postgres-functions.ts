/** PostgreSQL guard: the allow-list of functions an agent may call, and the check applied to each call. */

import { Refusal, clip } from './common.ts';

/** Side-effect-free built-in functions an agent may call (matched after stripping `pg_catalog.`). */
export const SAFE_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates
  'count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg',
  'json_agg', 'jsonb_agg', 'json_agg_strict', 'jsonb_agg_strict', 'json_object_agg', 'jsonb_object_agg',
  'json_object_agg_strict', 'jsonb_object_agg_strict', 'json_object_agg_unique', 'jsonb_object_agg_unique',
  'json_object_agg_unique_strict', 'jsonb_object_agg_unique_strict',
  'stddev', 'stddev_pop', 'stddev_samp', 'variance', 'var_pop', 'var_samp', 'corr', 'covar_pop', 'covar_samp',
  'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept', 'regr_r2', 'regr_slope', 'regr_sxx', 'regr_sxy',
  'regr_syy', 'percentile_cont', 'percentile_disc', 'mode', 'bit_and', 'bit_or', 'bit_xor', 'any_value',
  'range_agg', 'range_intersect_agg',
  // window functions
  'row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value',
  'last_value', 'nth_value',
  // strings
  'lower', 'upper', 'initcap', 'casefold', 'length', 'char_length', 'character_length', 'octet_length',
  'bit_length', 'substring', 'substr', 'left', 'right', 'btrim', 'ltrim', 'rtrim', 'trim', 'lpad', 'rpad',
  'concat', 'concat_ws', 'replace', 'translate', 'reverse', 'repeat', 'split_part', 'strpos', 'position',
  'starts_with', 'overlay', 'format', 'quote_ident', 'quote_literal', 'quote_nullable', 'ascii', 'chr',
  'to_hex', 'md5', 'sha224', 'sha256', 'sha384', 'sha512', 'encode', 'decode', 'convert_from', 'convert_to',
  'regexp_replace', 'regexp_match', 'regexp_matches', 'regexp_split_to_array', 'regexp_split_to_table',
  'regexp_like', 'regexp_count', 'regexp_substr', 'regexp_instr', 'string_to_array', 'string_to_table',
  'array_to_string', 'unistr', 'normalize', 'is_normalized', 'similar_to_escape', 'pg_collation_for',
  // full-text search
  'to_tsvector', 'to_tsquery', 'plainto_tsquery', 'phraseto_tsquery', 'websearch_to_tsquery', 'ts_rank',
  'ts_rank_cd', 'ts_headline', 'setweight', 'strip', 'numnode', 'querytree', 'tsvector_to_array',
  'array_to_tsvector',
  // null handling and comparison
  'coalesce', 'nullif', 'greatest', 'least', 'num_nulls', 'num_nonnulls',
  // date and time
  'now', 'current_date', 'current_time', 'current_timestamp', 'localtime', 'localtimestamp',
  'clock_timestamp', 'statement_timestamp', 'transaction_timestamp', 'timeofday', 'date_trunc', 'date_part',
  'extract', 'date_bin', 'age', 'to_char', 'to_date', 'to_timestamp', 'to_number', 'make_date', 'make_time',
  'make_timestamp', 'make_timestamptz', 'make_interval', 'justify_days', 'justify_hours', 'justify_interval',
  'isfinite', 'timezone', 'overlaps', 'date_add', 'date_subtract', 'system_user',
  // math
  'abs', 'round', 'floor', 'ceil', 'ceiling', 'trunc', 'mod', 'power', 'pow', 'sqrt', 'cbrt', 'exp', 'ln',
  'log', 'log10', 'sign', 'pi', 'degrees', 'radians', 'div', 'width_bucket', 'gcd', 'lcm', 'factorial',
  'scale', 'min_scale', 'trim_scale', 'random', 'random_normal', 'sin', 'cos', 'tan', 'cot', 'asin', 'acos',
  'atan', 'atan2', 'sind', 'cosd', 'tand', 'cotd', 'asind', 'acosd', 'atand', 'atan2d', 'sinh', 'cosh',
  'tanh', 'asinh', 'acosh', 'atanh', 'erf', 'erfc',
  // json
  'to_json', 'to_jsonb', 'row_to_json', 'array_to_json', 'json_build_object', 'jsonb_build_object',
  'json_build_array', 'jsonb_build_array', 'json_object', 'jsonb_object', 'json_extract_path',
  'json_extract_path_text', 'jsonb_extract_path', 'jsonb_extract_path_text', 'json_array_length',
  'jsonb_array_length', 'json_typeof', 'jsonb_typeof', 'json_strip_nulls', 'jsonb_strip_nulls', 'jsonb_set',
  'jsonb_set_lax', 'jsonb_insert', 'jsonb_pretty', 'json_array_elements', 'json_array_elements_text',
  'jsonb_array_elements', 'jsonb_array_elements_text', 'json_each', 'json_each_text', 'jsonb_each',
  'jsonb_each_text', 'json_object_keys', 'jsonb_object_keys', 'jsonb_path_exists', 'jsonb_path_match',
  'jsonb_path_query', 'jsonb_path_query_array', 'jsonb_path_query_first',
  // arrays and ranges
  'array_length', 'array_lower', 'array_upper', 'array_dims', 'array_ndims', 'cardinality', 'array_append',
  'array_prepend', 'array_cat', 'array_position', 'array_positions', 'array_remove', 'array_replace',
  'array_fill', 'array_reverse', 'array_sort', 'trim_array', 'unnest', 'isempty', 'lower_inc', 'upper_inc',
  'lower_inf', 'upper_inf', 'range_merge', 'int4range', 'int8range', 'numrange', 'tsrange', 'tstzrange',
  'daterange',
  // misc (not pg_typeof: it names the type of any value, e.g. a row type, a metadata oracle)
  'gen_random_uuid', 'uuidv4', 'uuidv7', 'uuid_extract_timestamp', 'uuid_extract_version',
]);

/** Refuses a call unless its name (`f` or `pg_catalog.f`, given as name parts) is on SAFE_FUNCTIONS. */
export function checkFunction(parts: string[]): void {
  const label = clip(parts.join('.'));
  const name = parts.length === 2 && parts[0] === 'pg_catalog' ? parts[1] : parts.length === 1 ? parts[0] : undefined;
  if (name === undefined || !SAFE_FUNCTIONS.has(name)) {
    throw new Refusal(`function ${label}() is not on the list of allowed functions (plain aggregates, string, date, math and JSON functions)`);
  }
}
