r"""The SQL guard's allow-lists: built-in functions without side effects, per dialect.

``agentkernel.knowledgebase._sql.guard`` accepts a function call, or a function used as a table
source (``FROM fn(...)``, ``LATERAL fn(...)``, ``TABLE(fn(...))``), only when its name, resolved
the way the server resolves it, is listed here for the backend's dialect or was passed by the
user as ``allowed_functions=`` to ``SQLManager`` / ``StarburstManager``. The lists hold
aggregates, window functions, conditionals, string, math, date/time, JSON and array functions
that read their arguments and return a value: nothing that writes, sleeps, locks, signals,
reads a file or the server's configuration, or runs a query given as a string. A name missing
here is refused, not guessed at: every server release adds functions, and a deny list would
fall behind.

How a name is resolved before it is looked up:

* PostgreSQL: ``U&"..."`` identifiers are decoded (``\XXXX``, ``\+XXXXXX``, ``UESCAPE``),
  unquoted names are folded to lower case (ASCII only, as the server does), quoted names are
  kept exactly, and names are cut to 63 bytes. A built-in may be qualified as
  ``pg_catalog.fn`` (or ``db.pg_catalog.fn``).
* DuckDB, SQLite, Trino, MySQL and generic SQL: names are case-insensitive, quoted or not.
  DuckDB built-ins may be qualified as ``main.fn`` or ``system.main.fn``, Trino's as
  ``system.builtin.fn``; SQLite functions are never qualified.
* Any other qualification names a user function: it is accepted only when the user lists it
  (``allowed_functions=['public.bump']``; a bare ``'bump'`` matches only the unqualified call).

Besides functions, a few relations are refused by name because they expose server files,
configuration or credentials (``REFUSED_RELATIONS``); every other table and view is the
database's to protect, through the privileges of the role the manager connects as.
"""

from __future__ import annotations

# -- functions common to the dialects (ANSI and near-universal names) ---------------------

_AGGREGATES = frozenset(
    {
        "count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp",
        "variance", "var_pop", "var_samp", "covar_pop", "covar_samp", "corr", "regr_slope",
        "regr_intercept", "regr_count", "regr_r2", "regr_avgx", "regr_avgy", "regr_sxx",
        "regr_syy", "regr_sxy", "bool_and", "bool_or", "every", "array_agg", "string_agg",
        "percentile_cont", "percentile_disc", "mode", "any_value",
    }
)  # fmt: skip
_WINDOW = frozenset(
    {
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag",
        "lead", "first_value", "last_value", "nth_value",
    }
)  # fmt: skip
_CONDITIONALS = frozenset({"coalesce", "nullif", "greatest", "least", "cast", "try_cast"})
_STRING = frozenset(
    {
        "lower", "upper", "length", "char_length", "character_length", "octet_length",
        "bit_length", "substr", "substring", "replace", "trim", "ltrim", "rtrim", "lpad",
        "rpad", "concat", "concat_ws", "left", "right", "reverse", "repeat", "position",
        "strpos", "initcap", "split_part", "starts_with", "ascii", "chr", "md5", "sha256",
        "regexp_replace", "regexp_like", "translate", "format", "to_hex", "overlay",
    }
)  # fmt: skip
_MATH = frozenset(
    {
        "abs", "ceil", "ceiling", "floor", "round", "trunc", "truncate", "sign", "sqrt",
        "cbrt", "power", "pow", "exp", "ln", "log", "log10", "log2", "mod", "pi", "degrees",
        "radians", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh",
        "cosh", "tanh", "gcd", "lcm", "width_bucket", "random", "factorial",
    }
)  # fmt: skip
_DATETIME = frozenset(
    {
        "now", "current_date", "current_time", "current_timestamp", "localtime",
        "localtimestamp", "date_trunc", "date_part", "extract", "to_char", "to_date",
        "to_timestamp", "to_number",
    }
)  # fmt: skip
COMMON_FUNCTIONS = _AGGREGATES | _WINDOW | _CONDITIONALS | _STRING | _MATH | _DATETIME

# -- per dialect ---------------------------------------------------------------------------

_POSTGRES = frozenset(
    {
        # aggregates and ordered-set aggregates
        "bit_and", "bit_or", "bit_xor", "json_agg", "jsonb_agg", "json_object_agg",
        "jsonb_object_agg", "xmlagg", "range_agg", "range_intersect_agg",
        # strings
        "btrim", "regexp_match", "regexp_matches", "regexp_split_to_array",
        "regexp_split_to_table", "regexp_count", "regexp_instr", "regexp_substr",
        "string_to_array", "string_to_table", "quote_ident", "quote_literal",
        "quote_nullable", "encode", "decode", "convert_from", "convert_to", "unistr",
        "normalize", "to_ascii", "sha224", "sha384", "sha512", "get_byte", "get_bit",
        "bit_count", "text", "parse_ident",
        # math
        "div", "scale", "min_scale", "trim_scale", "erf", "erfc", "gen_random_uuid",
        # date/time
        "age", "clock_timestamp", "statement_timestamp", "transaction_timestamp",
        "timeofday", "date_bin", "make_date", "make_time", "make_timestamp",
        "make_timestamptz", "make_interval", "justify_days", "justify_hours",
        "justify_interval", "isfinite", "timezone", "date_add", "date_subtract",
        # JSON
        "to_json", "to_jsonb", "json_build_object", "jsonb_build_object", "json_build_array",
        "jsonb_build_array", "json_object", "jsonb_object", "json_array_length",
        "jsonb_array_length", "json_each", "jsonb_each", "json_each_text", "jsonb_each_text",
        "json_extract_path", "jsonb_extract_path", "json_extract_path_text",
        "jsonb_extract_path_text", "json_object_keys", "jsonb_object_keys",
        "json_array_elements", "jsonb_array_elements", "json_array_elements_text",
        "jsonb_array_elements_text", "json_typeof", "jsonb_typeof", "json_strip_nulls",
        "jsonb_strip_nulls", "jsonb_pretty", "jsonb_set", "jsonb_set_lax", "jsonb_insert",
        "jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first",
        "jsonb_path_exists", "jsonb_path_match", "row_to_json", "array_to_json",
        "json_populate_record", "jsonb_populate_record", "json_populate_recordset",
        "jsonb_populate_recordset", "json_to_record", "jsonb_to_record", "json_to_recordset",
        "jsonb_to_recordset",
        # arrays, ranges, sets
        "array_length", "array_position", "array_positions", "array_remove", "array_append",
        "array_prepend", "array_cat", "array_to_string", "array_dims", "array_lower",
        "array_upper", "array_ndims", "array_fill", "array_replace", "cardinality", "unnest",
        "generate_series", "generate_subscripts", "trim_array", "int4range", "int8range",
        "numrange", "daterange", "tsrange", "tstzrange", "isempty", "lower_inc", "upper_inc",
        "lower_inf", "upper_inf", "range_merge",
        # full-text search (ts_stat and ts_rewrite run SQL given as a string: not here)
        "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery",
        "websearch_to_tsquery", "ts_rank", "ts_rank_cd", "ts_headline", "setweight",
        "strip", "numnode", "querytree",
        # conditionals and introspection of values
        "num_nulls", "num_nonnulls", "pg_typeof", "current_database", "current_schema",
        "current_schemas", "current_user", "session_user", "current_role", "user",
        # constructors written as calls: ARRAY(SELECT ...), ROW(a, b)
        "array", "row",
        # what the server calls for SQL syntax: SIMILAR TO
        "similar_to_escape", "similar_escape",
    }
)  # fmt: skip
_DUCKDB = frozenset(
    {
        # aggregates
        "median", "quantile", "quantile_cont", "quantile_disc", "approx_count_distinct",
        "approx_quantile", "arg_max", "arg_min", "argmax", "argmin", "max_by", "min_by",
        "first", "last", "list", "histogram", "group_concat", "listagg", "bit_and", "bit_or",
        "bit_xor", "count_if", "countif", "product", "favg", "fsum", "sumkahan", "kahan_sum",
        "kurtosis", "kurtosis_pop", "skewness", "entropy", "mad", "count_star",
        # strings
        "regexp_matches", "regexp_extract", "regexp_extract_all", "regexp_full_match",
        "regexp_split_to_array", "string_split", "str_split", "string_split_regex",
        "str_split_regex", "string_to_array", "contains", "prefix", "suffix", "ends_with",
        "instr", "strip_accents", "levenshtein", "damerau_levenshtein", "hamming",
        "jaccard", "jaro_similarity", "jaro_winkler_similarity", "mismatches", "printf",
        "unicode", "ord", "lcase", "ucase", "len", "strlen", "array_to_string", "like_escape",
        "ilike_escape", "hash", "sha1", "base64", "to_base64", "from_base64", "hex", "unhex",
        "bin", "to_binary", "encode", "decode", "btrim", "nfc_normalize", "format_bytes",
        "formatreadablesize", "formatreadabledecimalsize", "bar", "url_encode", "url_decode",
        # math
        "even", "round_even", "roundbankers", "bit_count", "isnan", "isinf", "isfinite",
        "signbit", "fdiv", "fmod", "xor", "gamma", "lgamma", "nextafter", "uuid",
        "gen_random_uuid",
        # date/time
        "strftime", "strptime", "try_strptime", "epoch", "epoch_ms", "epoch_us", "epoch_ns",
        "make_date", "make_time", "make_timestamp", "make_timestamptz", "today",
        "get_current_timestamp", "get_current_time", "transaction_timestamp", "date_diff",
        "datediff", "date_sub", "datesub", "date_add", "datepart", "datetrunc", "dayname",
        "monthname", "year", "month", "day", "hour", "minute", "second", "millisecond",
        "microsecond", "nanosecond", "week", "weekofyear", "weekday", "dayofweek",
        "dayofmonth", "dayofyear", "quarter", "isodow", "isoyear", "yearweek", "decade",
        "century", "millennium", "era", "julian", "last_day", "time_bucket", "age",
        "timezone", "timezone_hour", "timezone_minute", "to_days", "to_hours", "to_minutes",
        "to_seconds", "to_months", "to_years", "to_weeks", "to_milliseconds",
        "to_microseconds", "to_centuries", "to_decades", "to_millennia", "to_quarters",
        "make_timestamp_ns",
        # JSON
        "json", "json_extract", "json_extract_string", "json_extract_path",
        "json_extract_path_text", "json_array_length", "json_keys", "json_type",
        "json_valid", "json_object", "json_array", "json_merge_patch", "json_structure",
        "json_contains", "json_exists", "json_value", "json_transform",
        "json_transform_strict", "json_serialize_sql", "json_group_array",
        "json_group_object", "json_group_structure", "to_json", "array_to_json",
        "row_to_json", "json_pretty",
        # lists, structs, maps
        "list_value", "list_pack", "list_aggregate", "list_aggr", "aggregate",
        "array_aggregate", "array_aggr", "list_sort", "array_sort", "list_reverse_sort",
        "array_reverse_sort", "list_reverse", "array_reverse", "list_distinct",
        "array_distinct", "list_unique", "array_unique", "list_contains", "array_contains",
        "list_has", "array_has", "list_has_any", "array_has_any", "list_has_all",
        "array_has_all", "list_extract", "array_extract", "list_element", "list_slice",
        "array_slice", "list_filter", "array_filter", "filter", "list_transform",
        "array_transform", "apply", "list_apply", "array_apply", "list_reduce",
        "array_reduce", "reduce", "list_concat", "list_cat", "array_concat", "array_cat",
        "array_append", "list_append", "array_prepend", "list_prepend", "array_push_back",
        "array_push_front", "array_pop_back", "array_pop_front", "list_position",
        "list_indexof", "array_position", "array_indexof", "list_zip", "array_zip",
        "flatten", "list_sum", "list_min", "list_max", "list_avg", "list_count",
        "list_first", "list_last", "list_string_agg", "list_median", "array_length",
        "array_value", "list_resize", "array_resize", "list_select", "array_select",
        "list_where", "array_where", "list_grade_up", "array_grade_up", "generate_series",
        "range", "unnest", "cardinality", "struct_pack", "struct_extract", "struct_insert",
        "struct_concat", "row", "map", "map_keys", "map_values", "map_entries",
        "map_extract", "map_from_entries", "map_concat", "map_contains", "element_at",
        "array_dot_product", "array_inner_product", "array_cosine_similarity",
        "array_distance",
        # conditionals and values
        "if", "ifnull", "nvl", "typeof", "try", "current_database", "current_schema",
        "current_schemas", "current_user", "user", "session_user", "md5_number",
        "string_agg", "columns",
    }
)  # fmt: skip
_SQLITE = frozenset(
    {
        "char", "glob", "like", "likelihood", "likely", "unlikely", "iif", "if", "ifnull",
        "instr", "hex", "unhex", "printf", "quote", "randomblob", "soundex", "total",
        "typeof", "unicode", "zeroblob", "group_concat", "date", "time", "datetime",
        "julianday", "unixepoch", "strftime", "timediff", "json", "jsonb", "json_array",
        "jsonb_array", "json_array_length", "json_error_position", "json_extract",
        "jsonb_extract", "json_insert", "jsonb_insert", "json_object", "jsonb_object",
        "json_patch", "jsonb_patch", "json_remove", "jsonb_remove", "json_replace",
        "jsonb_replace", "json_set", "jsonb_set", "json_type", "json_valid", "json_quote",
        "json_group_array", "jsonb_group_array", "json_group_object", "jsonb_group_object",
        "json_each", "json_tree", "median",
    }
)  # fmt: skip
_TRINO = frozenset(
    {
        # aggregates
        "approx_distinct", "approx_percentile", "approx_most_frequent", "approx_set",
        "arbitrary", "checksum", "count_if", "geometric_mean", "histogram", "map_agg",
        "map_union", "max_by", "min_by", "multimap_agg", "listagg", "bitwise_and_agg",
        "bitwise_or_agg", "kurtosis", "skewness", "numeric_histogram",
        # strings and binary
        "regexp_extract", "regexp_extract_all", "regexp_split", "regexp_count",
        "regexp_position", "split", "split_to_map", "split_to_multimap", "codepoint",
        "levenshtein_distance", "hamming_distance", "normalize", "to_utf8", "from_utf8",
        "luhn_check", "soundex", "word_stem", "from_hex", "to_base64", "from_base64",
        "to_base64url", "from_base64url", "sha1", "sha512", "crc32", "xxhash64",
        "murmur3", "url_extract_host", "url_extract_path", "url_extract_parameter",
        "url_extract_protocol", "url_extract_port", "url_extract_query",
        "url_extract_fragment", "url_encode", "url_decode", "format_number",
        # math
        "e", "rand", "infinity", "nan", "is_nan", "is_finite", "is_infinite", "beta_cdf",
        "inverse_beta_cdf", "normal_cdf", "inverse_normal_cdf", "wilson_interval_lower",
        "wilson_interval_upper", "cosine_similarity", "from_base", "to_base", "bit_count",
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "uuid",
        # date/time
        "date", "date_add", "date_diff", "date_format", "date_parse", "day", "day_of_month",
        "day_of_week", "dow", "day_of_year", "doy", "hour", "minute", "second",
        "millisecond", "month", "quarter", "week", "week_of_year", "year", "year_of_week",
        "yow", "from_unixtime", "from_unixtime_nanos", "to_unixtime", "from_iso8601_date",
        "from_iso8601_timestamp", "from_iso8601_timestamp_nanos", "to_iso8601",
        "current_timezone", "at_timezone", "with_timezone", "last_day_of_month",
        "format_datetime", "parse_datetime", "parse_duration", "human_readable_seconds",
        "to_milliseconds", "timezone_hour", "timezone_minute", "timezone",
        # JSON
        "json_extract", "json_extract_scalar", "json_format", "json_parse", "json_size",
        "json_array_length", "json_array_get", "json_array_contains", "is_json_scalar",
        "json_query", "json_value", "json_exists", "json_object", "json_array",
        # arrays and maps
        "cardinality", "contains", "contains_sequence", "element_at", "filter", "transform",
        "reduce", "zip", "zip_with", "array_distinct", "array_intersect", "array_union",
        "array_except", "array_join", "array_max", "array_min", "array_position",
        "array_remove", "array_sort", "array_histogram", "arrays_overlap", "all_match",
        "any_match", "none_match", "combinations", "ngrams", "flatten", "sequence",
        "shuffle", "slice", "trim_array", "map", "map_keys", "map_values", "map_entries",
        "map_concat", "map_filter", "map_from_entries", "map_zip_with",
        "transform_keys", "transform_values", "row", "unnest",
        # conditionals and values
        "if", "try", "typeof", "current_user", "current_catalog", "current_schema",
    }
)  # fmt: skip
_MYSQL = frozenset(
    {
        "if", "ifnull", "group_concat", "date_format", "str_to_date", "datediff",
        "date_add", "date_sub", "timestampdiff", "timestampadd", "year", "month", "day",
        "hour", "minute", "second", "dayofweek", "dayofmonth", "dayofyear", "weekofyear",
        "quarter", "last_day", "curdate", "curtime", "sysdate", "unix_timestamp",
        "from_unixtime", "instr", "locate", "lcase", "ucase", "json_extract",
        "json_unquote", "json_object", "json_array", "json_length", "json_keys",
        "json_contains", "json_valid", "json_type", "json_arrayagg", "json_objectagg",
        "truncate", "conv", "hex", "unhex", "char", "field", "elt", "substring_index",
        "bit_and", "bit_or", "bit_xor", "std", "uuid",
    }
)  # fmt: skip

BUILTIN_FUNCTIONS: dict[str | None, frozenset[str]] = {
    None: COMMON_FUNCTIONS,
    "postgres": COMMON_FUNCTIONS | _POSTGRES,
    "duckdb": COMMON_FUNCTIONS | _DUCKDB,
    "sqlite": COMMON_FUNCTIONS | _SQLITE,
    "trino": COMMON_FUNCTIONS | _TRINO,
    "mysql": COMMON_FUNCTIONS | _MYSQL,
}
"""Built-in functions accepted per dialect; other dialects get the generic list."""

# Qualifiers under which a dialect's built-ins may be called (``()``: unqualified). A ``"*"``
# part matches any name (the database or catalog the server checks for itself).
BUILTIN_QUALIFIERS: dict[str | None, tuple[tuple[str, ...], ...]] = {
    None: ((),),
    "postgres": ((), ("pg_catalog",), ("*", "pg_catalog")),
    "duckdb": ((), ("main",), ("system", "main")),
    "sqlite": ((),),
    "trino": ((), ("system", "builtin")),
    "mysql": ((),),
}

# Table functions of Trino connectors, called as ``catalog.system.<name>``: the Google Sheets
# connector's ``sheet`` reads a sheet; ``query`` / ``raw_query`` hand their string to the
# underlying database, so that string must pass the guard itself.
CONNECTOR_TABLE_FUNCTIONS = frozenset({"sheet"})
PASSTHROUGH_FUNCTIONS = frozenset({"query", "raw_query"})

# sqlglot node types for syntax that calls a built-in without naming it as ``fn(...)``:
# operators (``->>``, ``~``, ``::``), keywords (``CURRENT_DATE``) and special forms
# (``CAST(x AS t)``, ``EXTRACT(y FROM d)``, ``TRIM(BOTH ' ' FROM s)``, ``ARRAY[...]``).
SYNTAX_FUNCTIONS = frozenset(
    {
        "Cast", "TryCast", "Extract", "Trim", "Substring", "StrPosition", "Overlay",
        "CurrentDate", "CurrentTime", "CurrentTimestamp", "Localtime", "Localtimestamp",
        "CurrentUser", "CurrentSchema", "CurrentCatalog", "SessionUser", "CurrentRole",
        "Array", "ArrayContainsAll", "ArrayContains", "ArrayContained", "ArrayOverlaps",
        "Struct", "Unnest", "Explode", "JSONExtract", "JSONExtractScalar", "JSONBExtract",
        "JSONBExtractScalar", "JSONBContains", "JSONBContainsAnyTopKeys",
        "JSONBContainsAllTopKeys", "JSONBDeleteAtPath", "JSONBExists", "JSONExists",
        "JSONObject", "JSONArray", "JSONValue", "JSONFormat", "RegexpLike", "RegexpILike",
        "Coalesce", "Case", "If", "Count", "ToArray", "Interval", "AtTimeZone",
        "ConvertTimezone", "Collate", "Max", "Min",
        "Sum", "Avg", "ArrayAgg", "GroupConcat", "StringAgg", "Lambda", "VarMap", "Map",
        "MapFromEntries", "ToMap", "Bracket", "Distinct", "Exists", "Any", "All", "Nullif",
        "Greatest", "Least", "Round", "Abs", "Lower", "Upper", "Length", "Concat",
        "ConcatWs", "DateTrunc", "TimestampTrunc", "DatetimeTrunc", "Date", "DateAdd",
        "DateSub", "DateDiff", "TsOrDsAdd", "TsOrDsToDate", "TsOrDsDiff", "StrToTime",
        "StrToDate", "TimeToStr", "UnixToTime", "TimeStrToTime", "Pow", "Log", "Ln",
        "Sqrt", "Ceil", "Floor", "Mod", "Div", "SafeDivide", "Pad", "Repeat", "Replace",
        "Left", "Right", "Reverse", "Initcap", "SplitPart", "StartsWith", "EndsWith",
        "Levenshtein", "Sign", "Stddev", "StddevPop", "StddevSamp", "Variance",
        "VariancePop", "Corr", "CovarPop", "CovarSamp", "Quantile", "PercentileCont",
        "PercentileDisc", "ApproxDistinct", "ApproxQuantile", "First", "Last",
        "FirstValue", "LastValue", "NthValue", "Lag", "Lead", "RowNumber", "Rank",
        "DenseRank", "PercentRank", "CumeDist", "Ntile", "ArraySize", "ArrayToString",
        "StringToArray", "Split", "RegexpSplit", "RegexpReplace", "RegexpExtract",
        "GenerateSeries", "ExplodingGenerateSeries", "GenerateDateArray", "Year", "Month",
        "Day", "Quarter", "Week", "DayOfWeek", "DayOfMonth", "DayOfYear", "Hour", "Minute",
        "Second", "ToChar", "ToNumber", "TimeToUnix", "UnixToStr", "JSONArrayAgg",
        "JSONObjectAgg", "ParseJSON", "JSONArrayContains", "ArrayFilter", "Transform",
        "Xor", "And", "Or", "IfNull", "Nvl2", "Uuid", "MD5", "SHA2", "Hex", "Unhex",
        "ToBase64", "FromBase64", "LogicalAnd", "LogicalOr", "ArrayAll", "ArrayAny",
        "TimeAdd", "TimeSub", "TimeDiff", "Trunc", "Truncate", "Encode", "Decode",
        "Chr", "Ascii", "Unicode", "Normalize", "DateFromParts", "TimestampFromParts",
        "MakeInterval", "LastDay", "ArrayConcat", "ArrayFirst", "ArrayLast",
        "ArrayReverse", "ArraySlice", "ArraySort", "ArrayDistinct", "ArrayRemove",
        "ArrayPosition", "ArrayIntersect", "ArrayUnion", "ArrayExcept", "SortArray",
        "Flatten", "StructExtract", "Contains", "RegexpCount", "ArrayAppend",
        "ArrayPrepend", "Rand", "Random", "Pi", "Exp", "Cbrt", "Radians", "Degrees",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Atan2", "Cot", "Sinh", "Cosh",
        "Tanh", "ByteLength", "BitLength", "Translate", "Format", "Space", "Soundex",
        "ArgMax", "ArgMin", "TsOrDsToTimestamp", "TsOrDsToTime", "TimeStrToDate",
        "StrToUnix", "UnixToTimeStr", "JSONBContainsTopKey", "MatchAgainst",
    }
)  # fmt: skip

_REFUSED_POSTGRES = frozenset(
    {
        "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_file_settings",
        "pg_hba_file_rules", "pg_ident_file_mappings", "pg_settings", "pg_config",
        "pg_db_role_setting", "pg_largeobject", "pg_largeobject_metadata",
        "pg_available_extensions", "pg_available_extension_versions", "pg_replication_slots",
        "pg_replication_origin", "pg_replication_origin_status", "pg_stat_replication",
        "pg_stat_wal_receiver", "pg_stat_subscription", "pg_subscription", "pg_stat_activity",
        "pg_backend_memory_contexts", "pg_shmem_allocations", "pg_stat_archiver",
    }
)  # fmt: skip
_REFUSED_DUCKDB = frozenset(
    {
        "duckdb_settings", "duckdb_secrets", "duckdb_extensions", "duckdb_memory",
        "duckdb_temporary_files", "duckdb_databases", "pg_settings",
    }
)  # fmt: skip
# Trino: the runtime schema of the system catalog shows other users' queries and the cluster's
# nodes (refused in any catalog: see TRINO_REFUSED_SCHEMAS).
_REFUSED_TRINO = frozenset({"queries", "tasks", "transactions", "nodes"})
REFUSED_RELATIONS: dict[str | None, frozenset[str]] = {
    "postgres": _REFUSED_POSTGRES,
    "duckdb": _REFUSED_DUCKDB,
    "sqlite": frozenset({"sqlite_dbpage", "sqlite_stmt"}),
    "trino": _REFUSED_TRINO,
}
"""Relations that expose server files, configuration, credentials or replication state,
refused under any schema and in any letter case the server would resolve to them."""
TRINO_REFUSED_SCHEMAS = frozenset({"runtime"})
TRINO_REFUSED_SUFFIXES = (
    "$files", "$manifests", "$all_manifests", "$entries", "$all_entries", "$properties",
    "$metadata_log_entries", "$refs", "$snapshots", "$history",
)  # fmt: skip

# SHOW is accepted per dialect only in these forms (its first word, or for PostgreSQL the
# whole parameter name: SHOW of a file location or of ALL settings is refused).
_SHOW_TRINO = frozenset(
    {"TABLES", "SCHEMAS", "CATALOGS", "COLUMNS", "CREATE", "FUNCTIONS", "SESSION", "STATS",
     "GRANTS", "ROLES", "ROLE", "CURRENT", "BRANCHES"}
)  # fmt: skip
_SHOW_MYSQL = frozenset(
    {"TABLES", "FULL", "DATABASES", "SCHEMAS", "COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS",
     "CREATE", "TABLE"}
)  # fmt: skip
SHOW_WORDS: dict[str | None, frozenset[str]] = {
    None: frozenset({"TABLES", "SCHEMAS", "CATALOGS", "COLUMNS", "CREATE", "FUNCTIONS"}),
    "trino": _SHOW_TRINO,
    "duckdb": frozenset({"TABLES", "ALL", "DATABASES", "SCHEMAS"}),
    "mysql": _SHOW_MYSQL,
}
POSTGRES_SHOW_PARAMETERS = frozenset(
    {
        "search_path", "timezone", "time zone", "datestyle", "intervalstyle",
        "client_encoding", "server_encoding", "server_version", "server_version_num",
        "lc_collate", "lc_ctype", "lc_messages", "lc_monetary", "lc_numeric", "lc_time",
        "default_transaction_read_only", "transaction_read_only", "transaction_isolation",
        "transaction isolation level", "default_transaction_isolation", "statement_timeout",
        "lock_timeout", "idle_in_transaction_session_timeout", "standard_conforming_strings",
        "extra_float_digits", "bytea_output", "max_identifier_length", "integer_datetimes",
        "is_superuser", "application_name", "row_security", "default_text_search_config",
        "array_nulls", "session authorization", "session_authorization", "work_mem",
        "max_parallel_workers_per_gather", "jit", "enable_seqscan",
    }
)  # fmt: skip
