r"""Hostile and benign SQL for the guard's attack suite, per dialect.

Hostile statements are what an attacker (or a prompt injection) would send to a read-only SQL
backend: writes and DDL in every disguise, comments and stacked statements, and every family
of PostgreSQL 15 functions with an effect outside the query (files, large objects, advisory
locks, replication slots and origins, backup control, statistics resets, signalling, server
configuration, logging, sleeps, sequences, dblink, transaction ids, notifications, SQL run
from a string), DuckDB's and SQLite's file and extension functions, and Trino's procedures and
system tables. Each function attack is spelled every way the server would still resolve to
the same function: plain, upper case, quoted, schema-qualified, as a PostgreSQL ``U&"..."``
identifier with escapes (``\XXXX``, ``\+XXXXXX``, ``UESCAPE``), in a subquery, a CTE, a
``FROM`` or ``LATERAL`` source, a ``WHERE`` or ``ORDER BY`` clause, and under ``EXPLAIN
ANALYZE``.

Benign statements are what an analyst writes: joins, CTEs, window functions, aggregates, JSON,
date/time, string, math and casts. They must all pass the guard and run.

Tables the statements use: ``clients(client_name, status, region, revenue, signed)`` and
``orders(order_id, client_name, amount, ordered_at, channel, details)`` (``details`` is JSON).
"""

from __future__ import annotations

from tests.support.hostile_sql import HOSTILE

CANARY = "/tmp/ak-security-canary"
"""A path hostile statements try to write; it must never exist."""

# -- statement shapes every dialect must refuse ---------------------------------------------

_COMMON_SHAPES = [
    "INSERT INTO clients (client_name) VALUES ('x')",
    "insert into clients select * from clients",
    "UPDATE clients SET revenue = 0",
    "DELETE FROM orders",
    "DROP TABLE orders",
    "CREATE TABLE ak_stolen AS SELECT * FROM clients",
    "CREATE VIEW ak_view AS SELECT 1 AS x",
    "ALTER TABLE clients RENAME TO ak_gone",
    "TRUNCATE orders",
    "SELECT * INTO ak_stolen FROM clients",
    "WITH w AS (DELETE FROM orders RETURNING *) SELECT * FROM w",
    "WITH w AS (UPDATE clients SET revenue = 0 RETURNING *) SELECT count(*) FROM w",
    "WITH w AS (INSERT INTO clients (client_name) VALUES ('x') RETURNING *) SELECT * FROM w",
    "WITH a AS (SELECT 1) DELETE FROM orders",
    "SELECT 1; DELETE FROM orders",
    "SELECT 1;DELETE FROM orders;",
    "SELECT 1 -- \n; DELETE FROM orders",
    "SELECT 1 /* */; DELETE FROM orders",
    "SELECT /* hidden */ client_name FROM clients",
    "SELECT client_name FROM clients -- trailing",
    "/* leading */ SELECT 1",
    "SELECT 1 /* nested /* */ ; DELETE FROM orders */",
    "SELECT 1 /*! ; DELETE FROM orders */",
    "SELECT 'x' -- '; DELETE FROM orders",
    "SELECT * FROM clients FOR UPDATE",
    "SELECT * FROM clients FOR SHARE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "START TRANSACTION READ WRITE",
    "GRANT ALL ON clients TO PUBLIC",
    "REVOKE SELECT ON clients FROM PUBLIC",
    "EXPLAIN ANALYZE DELETE FROM orders",
    "EXPLAIN ANALYZE INSERT INTO clients (client_name) VALUES ('x')",
    "DESCRIBE (DELETE FROM orders)",
    "SELECT 'a\\'; DELETE FROM orders; SELECT '",
    "SELECT 1 UNION ALL SELECT 2; DROP TABLE clients",
    "(SELECT 1); DELETE FROM orders",
    "VALUES (1); DELETE FROM orders",
    "SHOW TABLES; DELETE FROM orders",
    "SELECT 1\u00a0FROM clients",
    "SELECT\u2028client_name FROM clients",
]
COMMON_HOSTILE = _COMMON_SHAPES + [statement for statement, _ in HOSTILE if statement.strip(" ;")]


def _u_escape(name: str) -> str:
    """A PostgreSQL ``U&"..."`` spelling of ``name`` with its second letter escaped."""
    return 'U&"' + name[0] + f"\\{ord(name[1]):04x}" + name[2:] + '"'


def _function_variants(call: str, *, table: bool, postgres: bool, schema: str) -> list[str]:
    """Every disguise of one function call; ``call`` is ``name(args)``."""
    name, args = call.split("(", 1)
    args = "(" + args
    spellings = [name, name.upper(), f'"{name}"', f"{schema}.{name}"]
    if postgres:
        spellings += [
            _u_escape(name),
            f"{schema}.{_u_escape(name)}",
            'u&"' + f"\\+{ord(name[0]):06x}" + name[1:] + '"',
            'U&"' + f"!{ord(name[0]):04x}" + name[1:] + "\" UESCAPE '!'",
        ]
    out = [f"SELECT {spelling}{args}" for spelling in spellings]
    out += [
        f"SELECT client_name FROM clients WHERE {call} IS NOT NULL",
        f"SELECT (SELECT {call}) AS x",
        f"WITH x AS (SELECT {call} AS v) SELECT v FROM x",
        f"SELECT client_name FROM clients ORDER BY {call}",
        f"EXPLAIN ANALYZE SELECT {call}",
        f"SELECT count(*) FROM clients GROUP BY client_name HAVING {call} IS NULL",
    ]
    if table:
        out += [f"SELECT * FROM {call} AS t", f"SELECT * FROM clients, LATERAL {call} AS t"]
    return out


# -- PostgreSQL 15 -------------------------------------------------------------------------

POSTGRES_FUNCTIONS = {
    "file access": [
        "pg_read_file('/etc/passwd')",
        "pg_read_file('postgresql.conf', 0, 200)",
        "pg_read_binary_file('/etc/passwd')",
        "pg_ls_dir('.')",
        "pg_stat_file('postgresql.conf')",
        "pg_ls_logdir()",
        "pg_ls_waldir()",
        "pg_ls_tmpdir()",
        "pg_ls_archive_statusdir()",
        "pg_ls_logicalsnapdir()",
        "pg_ls_logicalmapdir()",
        "pg_current_logfile()",
        f"pg_file_write('{CANARY}', 'x', false)",
    ],
    "large objects": [
        "lo_import('/etc/passwd')",
        f"lo_export(1, '{CANARY}')",
        "lo_create(0)",
        "lo_creat(-1)",
        "lo_from_bytea(0, 'x')",
        "lo_put(1, 0, 'x')",
        "lo_get(1)",
        "lo_unlink(1)",
        "lo_open(1, 131072)",
    ],
    "advisory locks": [
        "pg_advisory_lock(42)",
        "pg_advisory_lock_shared(42)",
        "pg_try_advisory_lock(42)",
        "pg_try_advisory_lock_shared(42)",
        "pg_advisory_xact_lock(42)",
        "pg_advisory_xact_lock_shared(42)",
        "pg_try_advisory_xact_lock(42)",
        "pg_advisory_unlock_all()",
    ],
    "replication": [
        "pg_create_physical_replication_slot('ak_slot', true)",
        "pg_create_logical_replication_slot('ak_slot', 'test_decoding')",
        "pg_drop_replication_slot('ak_slot')",
        "pg_replication_origin_create('ak_origin')",
        "pg_replication_origin_drop('ak_origin')",
        "pg_replication_origin_session_setup('ak_origin')",
        "pg_logical_emit_message(true, 'ak', 'x')",
        "pg_logical_slot_get_changes('ak_slot', NULL, NULL)",
    ],
    "backup control": [
        "pg_backup_start('ak', true)",
        "pg_backup_stop()",
        "pg_create_restore_point('ak')",
        "pg_switch_wal()",
        "pg_promote()",
        "pg_wal_replay_pause()",
    ],
    "statistics resets": [
        "pg_stat_reset()",
        "pg_stat_reset_shared('bgwriter')",
        "pg_stat_reset_single_table_counters(1259)",
        "pg_stat_reset_single_function_counters(1)",
        "pg_stat_reset_slru(NULL)",
        "pg_stat_reset_replication_slot(NULL)",
        "pg_stat_clear_snapshot()",
    ],
    "signalling": [
        "pg_terminate_backend(pg_backend_pid())",
        "pg_cancel_backend(1)",
        "pg_reload_conf()",
        "pg_rotate_logfile()",
        "pg_log_backend_memory_contexts(1)",
    ],
    "configuration": [
        "set_config('default_transaction_read_only', 'off', false)",
        "set_config('log_statement', 'none', false)",
        "current_setting('data_directory')",
        "pg_show_all_settings()",
        "pg_show_all_file_settings()",
        "pg_hba_file_rules()",
        "pg_config()",
        "pg_control_system()",
    ],
    "sleeps": ["pg_sleep(5)", "pg_sleep_for('5 seconds')", "pg_sleep_until(now())"],
    "sequences": [
        "nextval('ak_ids')",
        "setval('ak_ids', 100)",
        "currval('ak_ids')",
        "lastval()",
    ],
    "dblink": [
        "dblink('dbname=postgres', 'SELECT 1')",
        "dblink_exec('dbname=postgres', 'DROP TABLE clients')",
        "dblink_connect('c', 'dbname=postgres')",
        "dblink_send_query('c', 'SELECT 1')",
    ],
    "transaction ids": ["txid_current()", "pg_current_xact_id()"],
    "notifications": ["pg_notify('ak', 'x')"],
    "SQL from a string": [
        "query_to_xml('DELETE FROM orders RETURNING 1', true, false, '')",
        "query_to_xml_and_xmlschema('SELECT 1', true, false, '')",
        "table_to_xml('clients', true, false, '')",
        "cursor_to_xml('c', 1, true, false, '')",
        "ts_stat('SELECT to_tsvector(client_name) FROM clients')",
        "ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')",
    ],
    "other state": ["pg_import_system_collations('pg_catalog')", "setseed(0.5)", "version()"],
}
_TABLE_FUNCTIONS = ("pg_ls_", "pg_show_all", "pg_hba", "pg_config", "dblink(", "ts_stat", "lo_")

_POSTGRES_SHAPES = [
    f"COPY clients TO '{CANARY}'",
    "COPY clients FROM '/etc/passwd'",
    "COPY (SELECT 1) TO PROGRAM 'id'",
    "COPY clients TO STDOUT",
    "SELECT * FROM clients FOR NO KEY UPDATE",
    "SELECT * FROM clients FOR KEY SHARE NOWAIT",
    "SELECT * FROM clients FOR UPDATE SKIP LOCKED",
    "SELECT * FROM clients c JOIN orders o USING (client_name) FOR UPDATE OF c",
    "DO $$ BEGIN DELETE FROM orders; END $$",
    "PREPARE p AS DELETE FROM orders",
    "EXECUTE p",
    "DECLARE c CURSOR FOR SELECT 1",
    "LISTEN ak",
    "NOTIFY ak, 'x'",
    "VACUUM clients",
    "ANALYZE clients",
    "CLUSTER clients",
    "REINDEX TABLE clients",
    "CHECKPOINT",
    "LOAD 'auto_explain'",
    "SET ROLE postgres",
    "SET default_transaction_read_only = off",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "RESET ALL",
    "DISCARD ALL",
    "ALTER SYSTEM SET log_statement = 'none'",
    "CREATE EXTENSION dblink",
    "REFRESH MATERIALIZED VIEW ak_view",
    "SECURITY LABEL ON TABLE clients IS 'x'",
    "COMMENT ON TABLE clients IS 'x'",
    "LOCK TABLE clients IN ACCESS EXCLUSIVE MODE",
    "TABLE clients; DELETE FROM orders",
    "SELECT * FROM pg_settings",
    "SELECT * FROM pg_catalog.pg_settings",
    'SELECT * FROM "pg_settings"',
    'SELECT * FROM PG_CATALOG."pg_file_settings"',
    "SELECT * FROM pg_file_settings",
    "SELECT * FROM pg_hba_file_rules",
    "SELECT * FROM pg_authid",
    "SELECT rolpassword FROM pg_catalog.pg_authid",
    "SELECT * FROM pg_shadow",
    "SELECT * FROM pg_user_mappings",
    "SELECT * FROM pg_config",
    "SELECT * FROM pg_replication_slots",
    "SELECT * FROM pg_stat_activity",
    "SELECT * FROM pg_largeobject",
    'SELECT * FROM U&"pg_s\\0065ttings"',
    "SELECT * FROM clients WHERE EXISTS (SELECT 1 FROM pg_authid)",
    "SHOW data_directory",
    "SHOW config_file",
    "SHOW hba_file",
    "SHOW ALL",
    "SHOW log_directory",
    "SELECT E'\\'; DELETE FROM orders; SELECT '",
    "SELECT 'x\\'', pg_read_file('/etc/passwd'), '\\'",
    "SELECT U&\"pg_r\\0065ad_file\"('/etc/passwd')",
    "SELECT pg_catalog.U&\"pg_r\\0065ad_file\"('/etc/passwd')",
    "SELECT U&\"pg_r\\0065ad_file\" ('/etc/passwd')",
    'SELECT U&"\\0070\\0067_sleep"(5)',
    'SELECT U&"pg_sleep\\d800"(5)',
    "SELECT U&\"pg_sleep\" UESCAPE '\\\\' (5)",
    'SELECT "PG_SLEEP"(1)',
    "SELECT public.lower('x')",
    "SELECT pg_catalog.pg_sleep(1)",
    "SELECT kb_security.pg_catalog.pg_sleep(1)",
    "SELECT * FROM ROWS FROM (pg_ls_dir('.'))",
    "SELECT * FROM generate_series(1, 2) g, LATERAL pg_ls_dir('.') d",
    "SELECT array_agg(x) FROM pg_ls_dir('.') x",
    "SELECT pg_read_file(f) FROM (VALUES ('/etc/passwd')) v(f)",
    "VALUES (pg_sleep(1))",
    "SELECT CASE WHEN true THEN pg_sleep(1) END",
    "SELECT coalesce(NULL, pg_read_file('/etc/passwd'))",
    "SELECT (pg_stat_file('postgresql.conf')).size",
    "EXPLAIN (ANALYZE, FORMAT JSON) SELECT pg_sleep(1)",
    "SELECT 1 OPERATOR(public.+) 2",
    'SELECT 1 OPERATOR("public".=) 2',
    "SELECT ARRAY(SELECT pg_sleep(1))",
    "SELECT ROW(pg_sleep(1), 2)",
    "SELECT * FROM clients TABLESAMPLE BERNOULLI (pg_sleep(1))",
    "SELECT xmlparse(document pg_read_file('/etc/passwd'))",
]


def postgres_hostile() -> list[str]:
    """Every hostile statement for PostgreSQL."""
    out = list(COMMON_HOSTILE) + _POSTGRES_SHAPES
    for calls in POSTGRES_FUNCTIONS.values():
        for call in calls:
            table = call.startswith(_TABLE_FUNCTIONS)
            out += _function_variants(call, table=table, postgres=True, schema="pg_catalog")
    return _unique(out)


# -- DuckDB ---------------------------------------------------------------------------------

DUCKDB_FUNCTIONS = [
    "read_csv('/etc/passwd')",
    "read_csv_auto('/etc/passwd')",
    "read_text('/etc/passwd')",
    "read_blob('/etc/passwd')",
    "read_json('/etc/passwd')",
    "read_json_auto('/etc/passwd')",
    "read_ndjson('/etc/passwd')",
    "read_parquet('/etc/passwd')",
    "parquet_scan('/etc/passwd')",
    "parquet_metadata('/etc/passwd')",
    "glob('/etc/*')",
    "sniff_csv('/etc/passwd')",
    "getenv('HOME')",
    "current_setting('home_directory')",
    "duckdb_settings()",
    "duckdb_secrets()",
    "duckdb_extensions()",
    "duckdb_databases()",
    "duckdb_temporary_files()",
    "pragma_database_list()",
    "which_secret('s3://x', 's3')",
    "query('DELETE FROM orders')",
    "query_table('clients')",
    "nextval('ak_ids')",
    "setseed(0.5)",
    "version()",
]
_DUCKDB_SHAPES = [
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM 'data.csv'",
    'SELECT * FROM "/etc/passwd"',
    'SELECT * FROM "x.parquet"',
    "SELECT * FROM 's3://bucket/x.parquet'",
    "FROM '/etc/hosts'",
    "DESCRIBE '/etc/passwd'",
    'DESCRIBE "/etc/passwd.csv"',
    'SHOW "/etc/passwd.csv"',
    "SUMMARIZE clients",
    f"COPY clients TO '{CANARY}'",
    "COPY clients FROM '/etc/passwd'",
    f"EXPORT DATABASE '{CANARY}'",
    "IMPORT DATABASE '/tmp'",
    f"ATTACH '{CANARY}' AS ak",
    "DETACH kb",
    "INSTALL httpfs",
    "LOAD httpfs",
    "FORCE INSTALL httpfs",
    "SET enable_external_access = true",
    "RESET enable_external_access",
    "PRAGMA enable_profiling",
    "PRAGMA database_list",
    "CHECKPOINT",
    "FORCE CHECKPOINT",
    "CREATE SECRET (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "CREATE MACRO ak(x) AS x",
    "USE memory",
    "CALL pragma_version()",
    "SELECT * FROM duckdb_settings",
    "SELECT * FROM clients, read_csv('/etc/passwd')",
    "EXPLAIN ANALYZE SELECT * FROM read_text('/etc/passwd')",
    "DESCRIBE SELECT * FROM read_text('/etc/passwd')",
    "SELECT list_transform([1], x -> getenv('HOME'))",
    "SHOW ALL TABLES; DELETE FROM orders",
]


def duckdb_hostile() -> list[str]:
    """Every hostile statement for DuckDB."""
    out = list(COMMON_HOSTILE) + _DUCKDB_SHAPES
    for call in DUCKDB_FUNCTIONS:
        out += _function_variants(call, table=True, postgres=False, schema="main")
    return _unique(out)


# -- SQLite ---------------------------------------------------------------------------------

SQLITE_FUNCTIONS = [
    "load_extension('/tmp/ak.so')",
    "fts3_tokenizer('simple')",
    "readfile('/etc/passwd')",
    f"writefile('{CANARY}', 'x')",
    "edit('x')",
    "fsdir('/')",
    "zipfile('/tmp/x.zip')",
    "sqlite_compileoption_used('ENABLE_DBPAGE_VTAB')",
    "sqlite_version()",
    "changes()",
    "total_changes()",
    "last_insert_rowid()",
    "pragma_compile_options()",
    "pragma_database_list()",
    "pragma_function_list()",
    "pragma_module_list()",
    "sqlite_source_id()",
    "sqlite_compileoption_get(0)",
    "sqlite_offset(client_name)",
    "load_extension('/tmp/ak.so', 'sqlite3_ak_init')",
    "dbstat('main')",
    "sqlite_dbdata('main')",
]
_SQLITE_SHAPES = [
    f"ATTACH DATABASE '{CANARY}' AS ak",
    "DETACH DATABASE main",
    "PRAGMA query_only = 0",
    "PRAGMA writable_schema = 1",
    "PRAGMA journal_mode = WAL",
    f"VACUUM INTO '{CANARY}'",
    "VACUUM",
    "REPLACE INTO clients (client_name) VALUES ('x')",
    "INSERT OR REPLACE INTO clients (client_name) VALUES ('x')",
    "CREATE TEMP TABLE ak (x)",
    "CREATE VIRTUAL TABLE ak USING fts5(x)",
    "SELECT * FROM sqlite_dbpage",
    "SELECT * FROM 'sqlite_dbpage'",
    "REINDEX",
    "ANALYZE",
    "SHOW TABLES",
    "SELECT [load_extension]('/tmp/ak.so')",
    "SELECT `fts3_tokenizer`('simple')",
]


def sqlite_hostile() -> list[str]:
    """Every hostile statement for SQLite."""
    out = list(COMMON_HOSTILE) + _SQLITE_SHAPES
    for call in SQLITE_FUNCTIONS:
        out += _function_variants(call, table=True, postgres=False, schema="main")
    return _unique(out)


# -- Trino ----------------------------------------------------------------------------------

TRINO_FUNCTIONS = ["version()", "pg_sleep(1)", "sleep(1)", "current_setting('x')"]
_TRINO_SHAPES = [
    "CALL system.runtime.kill_query(query_id => '1', message => 'x')",
    "CALL system.flush_metadata_cache()",
    "CALL kb.system.create_empty_partition('crm', 'clients', ARRAY['x'], ARRAY['y'])",
    "SELECT * FROM system.runtime.queries",
    "SELECT query FROM system.runtime.queries",
    "SELECT * FROM system.runtime.nodes",
    "SELECT * FROM system.runtime.tasks",
    'SELECT * FROM "SYSTEM"."RUNTIME"."QUERIES"',
    'SELECT * FROM "clients$files"',
    'SELECT * FROM kb.crm."clients$properties"',
    'SELECT * FROM kb.crm."clients$manifests"',
    "SELECT * FROM TABLE(pg.system.query(query => 'DELETE FROM orders'))",
    "SELECT * FROM TABLE(pg.system.query(query => 'SELECT pg_read_file(''/etc/passwd'')'))",
    "SELECT * FROM TABLE(pg.system.query(query => 'SELECT 1; DELETE FROM orders'))",
    "SELECT * FROM TABLE(pg.system.query(query => U&'\\0044ELETE FROM orders'))",
    "SELECT * FROM TABLE(pg.system.query(query => 'DEL' || 'ETE FROM orders'))",
    "SELECT * FROM TABLE(pg.system.raw_query(query => 'DROP TABLE clients'))",
    "SELECT * FROM TABLE(system.query(query => 'SELECT * INTO x FROM clients'))",
    "SELECT * FROM TABLE(kb.system.other(x => 1))",
    "SELECT * FROM TABLE(exclude_columns(input => TABLE(clients), columns => DESCRIPTOR(x)))",
    "EXECUTE IMMEDIATE 'DELETE FROM orders'",
    "PREPARE p FROM DELETE FROM orders",
    "DEALLOCATE PREPARE p",
    "SET SESSION query_max_run_time = '1h'",
    "RESET SESSION query_max_run_time",
    "SET ROLE admin",
    "SET PATH kb.crm",
    "SET TIME ZONE 'UTC'",
    "USE kb.other",
    "ALTER TABLE clients EXECUTE optimize",
    "ANALYZE clients",
    "COMMENT ON TABLE clients IS 'x'",
    "DENY SELECT ON clients TO analyst",
    "CREATE SCHEMA kb.ak",
    "CREATE FUNCTION ak() RETURNS int RETURN 1",
    "SHOW STATS FOR (SELECT * FROM clients)",
    "DESCRIBE INPUT p; DELETE FROM orders",
    "SHOW SESSION; DELETE FROM orders",
]


def trino_hostile() -> list[str]:
    """Every hostile statement for Trino."""
    out = list(COMMON_HOSTILE) + _TRINO_SHAPES
    for call in TRINO_FUNCTIONS:
        out += _function_variants(call, table=False, postgres=False, schema="kb.crm")
    # the pass-through table functions hand their string to another database: every hostile
    # shape must be refused inside them too
    for inner in COMMON_HOSTILE + [f"SELECT {call}" for call in POSTGRES_FUNCTIONS["file access"]]:
        quoted = inner.replace("'", "''")
        out += [
            f"SELECT * FROM TABLE(pg.system.query(query => '{quoted}'))",
            f"SELECT * FROM TABLE(pg.system.raw_query(query => '{quoted}'))",
        ]
    return _unique(out)


def _unique(statements: list[str]) -> list[str]:
    return list(dict.fromkeys(statements))


# -- benign: what an analyst writes ------------------------------------------------------------

_COMMON_BENIGN = [
    "SELECT * FROM clients",
    "SELECT client_name, status FROM clients WHERE status = 'active' ORDER BY client_name",
    "SELECT region, count(*) AS n, sum(revenue) AS total FROM clients GROUP BY region",
    "SELECT region, avg(revenue) FROM clients GROUP BY region HAVING count(*) > 1",
    "SELECT c.client_name, sum(o.amount) AS spent FROM clients c "
    "JOIN orders o ON o.client_name = c.client_name GROUP BY c.client_name ORDER BY spent DESC",
    "SELECT c.client_name, o.order_id FROM clients c LEFT JOIN orders o "
    "ON o.client_name = c.client_name WHERE o.order_id IS NULL",
    "SELECT DISTINCT region FROM clients",
    "SELECT count(DISTINCT region) FROM clients",
    "WITH active AS (SELECT * FROM clients WHERE status = 'active') "
    "SELECT region, count(*) FROM active GROUP BY region",
    "WITH t AS (SELECT client_name, sum(amount) AS s FROM orders GROUP BY client_name), "
    "u AS (SELECT * FROM t WHERE s > 100) SELECT * FROM u ORDER BY s DESC",
    "SELECT client_name, revenue, rank() OVER (ORDER BY revenue DESC) AS r FROM clients",
    "SELECT client_name, row_number() OVER (PARTITION BY region ORDER BY revenue DESC) AS rn "
    "FROM clients",
    "SELECT order_id, amount, sum(amount) OVER (PARTITION BY client_name ORDER BY order_id "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM orders",
    "SELECT order_id, lag(amount) OVER (ORDER BY order_id) AS prev, "
    "lead(amount, 1) OVER (ORDER BY order_id) AS next FROM orders",
    "SELECT client_name, dense_rank() OVER (ORDER BY region) AS d, "
    "ntile(2) OVER (ORDER BY revenue) AS half FROM clients",
    "SELECT client_name, first_value(amount) OVER (PARTITION BY client_name ORDER BY order_id) "
    "AS first_amount FROM orders",
    "SELECT client_name FROM clients WHERE revenue > (SELECT avg(revenue) FROM clients)",
    "SELECT client_name FROM clients c WHERE EXISTS "
    "(SELECT 1 FROM orders o WHERE o.client_name = c.client_name)",
    "SELECT client_name FROM clients WHERE region IN ('EU', 'US') AND revenue BETWEEN 100 AND 5000",
    "SELECT client_name FROM clients WHERE client_name LIKE 'A%' OR client_name LIKE '%x%'",
    "SELECT upper(client_name), lower(status), length(client_name) FROM clients",
    "SELECT substr(client_name, 1, 3), replace(status, 'active', 'live'), trim(region) "
    "FROM clients",
    "SELECT client_name || ' (' || region || ')' AS label FROM clients",
    "SELECT coalesce(NULL, region), nullif(status, 'active') FROM clients",
    "SELECT CASE WHEN revenue > 1000 THEN 'big' WHEN revenue > 100 THEN 'mid' ELSE 'small' "
    "END AS size FROM clients",
    "SELECT abs(-revenue), round(revenue, 1), floor(revenue), ceil(revenue) FROM clients",
    "SELECT revenue * 1.2 AS grossed, revenue / 12 AS monthly, revenue - 100 FROM clients",
    "SELECT CAST(revenue AS INTEGER), CAST(signed AS VARCHAR) FROM clients",
    "SELECT max(revenue), min(revenue), sum(revenue) FROM clients",
    "SELECT region FROM clients UNION SELECT channel FROM orders",
    "SELECT client_name FROM clients UNION ALL SELECT client_name FROM orders",
    "SELECT client_name FROM clients INTERSECT SELECT client_name FROM orders",
    "SELECT client_name FROM clients EXCEPT SELECT client_name FROM orders",
    "SELECT * FROM clients ORDER BY revenue DESC LIMIT 3",
    "SELECT * FROM clients ORDER BY revenue DESC LIMIT 2 OFFSET 1",
    "SELECT * FROM (SELECT client_name, revenue FROM clients) AS sub WHERE revenue > 500",
    "SELECT client_name, count(order_id) FROM orders GROUP BY client_name "
    "ORDER BY count(order_id) DESC",
    "SELECT count(*) FILTER (WHERE status = 'active') AS active FROM clients",
    "SELECT channel, count(*) FROM orders GROUP BY channel ORDER BY 2 DESC",
    "SELECT 1 AS one, 'two' AS two, 3.5 AS three",
    "VALUES (1, 'a'), (2, 'b')",
]

POSTGRES_BENIGN = [
    *_COMMON_BENIGN,
    "TABLE clients",
    "SELECT client_name, revenue::numeric(12, 2), signed::text FROM clients",
    "SELECT date_trunc('month', ordered_at) AS month, sum(amount) FROM orders GROUP BY 1",
    "SELECT extract(year FROM signed) AS y, count(*) FROM clients GROUP BY 1",
    "SELECT age(DATE '2025-01-01', signed), signed + INTERVAL '30 days' FROM clients",
    "SELECT to_char(ordered_at, 'YYYY-MM'), date_part('dow', ordered_at) FROM orders",
    "SELECT now() > ordered_at, current_date - signed FROM orders JOIN clients USING (client_name)",
    "SELECT details->>'sku' AS sku, details->'qty' AS qty FROM orders",
    "SELECT details #>> '{sku}' FROM orders WHERE details ? 'sku'",
    "SELECT jsonb_build_object('name', client_name, 'rev', revenue) FROM clients",
    "SELECT jsonb_agg(client_name) FROM clients",
    "SELECT key, value FROM orders, jsonb_each_text(details)",
    "SELECT jsonb_typeof(details), jsonb_array_length('[1,2]'::jsonb) FROM orders",
    "SELECT string_agg(client_name, ', ' ORDER BY client_name) FROM clients",
    "SELECT array_agg(DISTINCT region) FROM clients",
    "SELECT unnest(ARRAY[1, 2, 3]) AS n",
    "SELECT * FROM generate_series(1, 5) AS g(n)",
    "SELECT g::date FROM generate_series(DATE '2024-01-01', DATE '2024-01-05', "
    "INTERVAL '1 day') AS g",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY revenue) FROM clients",
    "SELECT mode() WITHIN GROUP (ORDER BY region) FROM clients",
    "SELECT split_part(client_name, 'e', 1), strpos(client_name, 'e'), "
    "initcap(lower(client_name)) FROM clients",
    "SELECT regexp_replace(client_name, '[aeiou]', '', 'g'), client_name ~ '^[A-H]' FROM clients",
    "SELECT lpad(client_name, 10, '.'), rpad(region, 6, '-'), left(client_name, 2) FROM clients",
    "SELECT md5(client_name), encode(convert_to(client_name, 'UTF8'), 'hex') FROM clients",
    "SELECT power(2, 10), sqrt(revenue), ln(revenue + 1), mod(order_id, 3) FROM orders "
    "JOIN clients USING (client_name)",
    "SELECT width_bucket(revenue, 0, 10000, 4), stddev(revenue), variance(revenue) FROM clients "
    "GROUP BY revenue",
    "SELECT corr(revenue, extract(epoch FROM signed)) FROM clients",
    "SELECT c.client_name, x.total FROM clients c, LATERAL (SELECT sum(amount) AS total "
    "FROM orders o WHERE o.client_name = c.client_name) x",
    "SELECT client_name FROM clients WHERE client_name ILIKE 'a%' OR client_name SIMILAR TO 'G%'",
    "SELECT client_name, revenue FROM clients ORDER BY revenue DESC NULLS LAST "
    "FETCH FIRST 2 ROWS ONLY",
    "SELECT bool_and(revenue > 0), bool_or(status = 'churned') FROM clients",
    "SELECT region, count(*) FROM clients GROUP BY ROLLUP (region)",
    "SELECT DISTINCT ON (region) region, client_name FROM clients ORDER BY region, revenue DESC",
    "SELECT make_date(2024, 1, 31), date_bin('1 hour', ordered_at, TIMESTAMP '2024-01-01') "
    "FROM orders",
    "SELECT to_tsvector('english', client_name) @@ to_tsquery('english', 'acme') FROM clients",
    'SELECT pg_catalog.upper(client_name), "lower"(region) FROM clients',
    'SELECT U&"client_n\\0061me" FROM clients',
    "SELECT cardinality(ARRAY[1, 2]), array_to_string(ARRAY['a', 'b'], '-')",
    "SELECT * FROM clients WHERE region = ANY (ARRAY['EU', 'APAC'])",
    "SELECT ordered_at AT TIME ZONE 'UTC' FROM orders",
    "SELECT client_name, revenue FROM clients WHERE signed BETWEEN '2023-01-01' AND '2024-12-31'",
    "SELECT num_nonnulls(region, status), pg_typeof(revenue) FROM clients",
    "SELECT greatest(revenue, 1000), least(revenue, 1000) FROM clients",
    "SELECT client_name, revenue FROM clients WHERE signed >= DATE '2024-01-01'",
    "SELECT current_database(), current_user, current_schema()",
    "SELECT ARRAY(SELECT client_name FROM clients ORDER BY 1), ROW(1, 'a')",
    "SELECT 1 OPERATOR(pg_catalog.+) 2",
    "SELECT client_name FROM clients TABLESAMPLE SYSTEM (100)",
    "SELECT 'abc' COLLATE \"C\" < 'abd'",
    "SHOW search_path",
    "SHOW TimeZone",
    "EXPLAIN SELECT * FROM clients WHERE revenue > 100",
    "EXPLAIN ANALYZE SELECT count(*) FROM orders",
]

DUCKDB_BENIGN = [
    *_COMMON_BENIGN,
    "FROM clients",
    "SELECT client_name, revenue::DECIMAL(12, 2), signed::VARCHAR FROM clients",
    "SELECT date_trunc('month', ordered_at) AS month, sum(amount) FROM orders GROUP BY ALL",
    "SELECT year(signed), month(signed), dayname(signed) FROM clients",
    "SELECT strftime(ordered_at, '%Y-%m'), date_diff('day', signed, DATE '2025-01-01') "
    "FROM orders JOIN clients USING (client_name)",
    "SELECT signed + INTERVAL 30 DAY, extract(year FROM signed) FROM clients",
    "SELECT details->>'sku' AS sku, json_extract(details, '$.qty') AS qty FROM orders",
    "SELECT json_extract_string(details, '$.sku'), json_type(details) FROM orders",
    "SELECT to_json(client_name), json_object('name', client_name) FROM clients",
    "SELECT list(client_name ORDER BY client_name) FROM clients",
    "SELECT string_agg(client_name, ', ') FROM clients",
    "SELECT unnest([1, 2, 3]) AS n",
    "SELECT * FROM range(5) AS r(n)",
    "SELECT * FROM generate_series(1, 3)",
    "SELECT median(revenue), quantile_cont(revenue, 0.9), mode(region) FROM clients",
    "SELECT arg_max(client_name, revenue), max_by(client_name, revenue) FROM clients",
    "SELECT list_sort([3, 1, 2]), list_sum([1, 2]), greatest(revenue, 1000) FROM clients",
    "SELECT client_name, revenue FROM clients WHERE signed >= DATE '2024-01-01'",
    "SELECT regexp_matches(client_name, '^[A-H]'), regexp_replace(client_name, '[aeiou]', '', "
    "'g') FROM clients",
    "SELECT split_part(client_name, 'e', 1), contains(client_name, 'e'), "
    "starts_with(client_name, 'A') FROM clients",
    "SELECT lpad(client_name, 10, '.'), left(client_name, 2), reverse(client_name) FROM clients",
    "SELECT md5(client_name), hash(client_name) FROM clients",
    "SELECT power(2, 10), sqrt(revenue), ln(revenue + 1), order_id % 3 FROM orders "
    "JOIN clients USING (client_name)",
    "SELECT stddev(revenue), corr(revenue, epoch(signed)) FROM clients",
    "SELECT c.client_name, x.total FROM clients c, LATERAL (SELECT sum(amount) AS total "
    "FROM orders o WHERE o.client_name = c.client_name) x",
    "SELECT client_name FROM clients WHERE client_name ILIKE 'a%'",
    "SELECT client_name, revenue FROM clients QUALIFY row_number() OVER "
    "(PARTITION BY region ORDER BY revenue DESC) = 1",
    "SELECT region, count(*) FROM clients GROUP BY ROLLUP (region)",
    "SELECT if(revenue > 1000, 'big', 'small'), ifnull(region, '?') FROM clients",
    "SELECT {'a': 1, 'b': 2} AS s, [1, 2, 3][2] AS second",
    "SELECT count_if(status = 'active'), bool_and(revenue > 0) FROM clients",
    "SELECT make_date(2024, 1, 31), last_day(DATE '2024-02-01'), today() > signed FROM clients",
    "SELECT time_bucket(INTERVAL '1 hour', ordered_at), count(*) FROM orders GROUP BY 1",
    'SELECT main.upper(client_name), "lower"(region) FROM clients',
    "SELECT try_cast('x' AS INTEGER), typeof(revenue) FROM clients",
    "SELECT levenshtein(client_name, 'Acme'), jaro_winkler_similarity(client_name, 'Acme') "
    "FROM clients",
    "SHOW TABLES",
    "DESCRIBE clients",
    "DESCRIBE SELECT * FROM orders",
    "EXPLAIN SELECT * FROM clients",
    "SELECT epoch_ms(ordered_at), strptime('2024-01-01', '%Y-%m-%d') FROM orders",
    "SELECT string_split(client_name, 'e'), array_length([1, 2]) FROM clients",
    "SELECT struct_pack(a := 1, b := client_name) FROM clients",
    "SELECT * FROM clients WHERE region IN (SELECT region FROM clients GROUP BY region "
    "HAVING count(*) > 1)",
    "SELECT approx_count_distinct(region), product(2), histogram(region) FROM clients",
    "SELECT region, sum(revenue) FILTER (WHERE status = 'active') FROM clients GROUP BY region",
]

SQLITE_BENIGN = [
    *_COMMON_BENIGN,
    "SELECT date(signed), strftime('%Y-%m', ordered_at) FROM orders JOIN clients "
    "USING (client_name)",
    "SELECT julianday('2025-01-01') - julianday(signed) AS days FROM clients",
    "SELECT datetime(ordered_at, '+1 day'), unixepoch(ordered_at) FROM orders",
    "SELECT strftime('%w', ordered_at) AS dow, count(*) FROM orders GROUP BY 1",
    "SELECT json_extract(details, '$.sku'), details ->> '$.qty' FROM orders",
    "SELECT json_object('name', client_name, 'rev', revenue) FROM clients",
    "SELECT json_group_array(client_name) FROM clients",
    "SELECT key, value FROM orders, json_each(orders.details)",
    "SELECT json_type(details), json_valid(details), json_array_length('[1,2]') FROM orders",
    "SELECT group_concat(client_name, ', ') FROM clients",
    "SELECT instr(client_name, 'e'), substr(client_name, 2), printf('%.2f', revenue) FROM clients",
    "SELECT iif(revenue > 1000, 'big', 'small'), ifnull(region, '?') FROM clients",
    "SELECT typeof(revenue), hex(client_name), quote(client_name) FROM clients",
    "SELECT total(revenue), avg(revenue), count(*) FROM clients",
    "SELECT client_name FROM clients WHERE client_name GLOB 'A*'",
    "SELECT client_name, revenue FROM clients ORDER BY revenue DESC NULLS LAST",
    'SELECT "upper"(client_name), [lower](region) FROM clients',
    "SELECT round(revenue / 3.0, 2), abs(-1), max(1, 2), min(3, 4) FROM clients",
    "SELECT percent_rank() OVER (ORDER BY revenue), cume_dist() OVER (ORDER BY revenue) "
    "FROM clients",
    "SELECT client_name, nth_value(client_name, 2) OVER (ORDER BY revenue) FROM clients",
    "SELECT char(65, 66), unicode('A'), zeroblob(2), likely(1)",
    "SELECT * FROM clients WHERE rowid > 1",
    "SELECT ltrim('  x'), rtrim('x  '), trim('  x  ') ",
    "SELECT cast(revenue AS INTEGER) AS whole, cast(signed AS TEXT) FROM clients",
    "SELECT coalesce(sum(amount), 0) FROM orders WHERE client_name = 'nobody'",
    "SELECT client_name FROM clients WHERE signed > date('2023-06-01')",
    "SELECT client_name, time('12:00:00', '+1 hour') FROM clients",
    "SELECT json_set('{\"a\": 1}', '$.b', 2), json_remove('{\"a\": 1}', '$.a')",
    "SELECT * FROM clients WHERE region IN (SELECT region FROM clients GROUP BY region "
    "HAVING count(*) > 1)",
    "EXPLAIN SELECT * FROM clients",
    "EXPLAIN QUERY PLAN SELECT * FROM clients",
]

TRINO_BENIGN = [
    *_COMMON_BENIGN,
    "SELECT client_name, CAST(revenue AS DOUBLE), CAST(signed AS VARCHAR) FROM clients",
    "SELECT date_trunc('month', ordered_at) AS month, sum(amount) FROM orders GROUP BY 1",
    "SELECT year(signed), month(signed), day_of_week(signed) FROM clients",
    "SELECT date_diff('day', signed, DATE '2025-01-01') FROM clients",
    "SELECT date_add('day', 30, signed) FROM clients",
    "SELECT json_extract_scalar(details, '$.sku') FROM orders",
    "SELECT array_agg(client_name) FROM clients",
    "SELECT approx_distinct(region), arbitrary(client_name) FROM clients",
    "SELECT max_by(client_name, revenue), min_by(client_name, revenue) FROM clients",
    "SELECT count_if(status = 'active') FROM clients",
    "SELECT if(revenue > 1000, 'big', 'small') FROM clients",
    "SELECT regexp_like(client_name, '^[A-H]') FROM clients",
    "SELECT split_part(client_name, 'e', 1), strpos(client_name, 'e') FROM clients",
    "SELECT lpad(client_name, 10, '.'), reverse(client_name) FROM clients",
    "SELECT power(2, 10), sqrt(revenue), ln(revenue + 1) FROM clients",
    "SELECT stddev(revenue), variance(revenue) FROM clients",
    "SELECT element_at(ARRAY[1, 2, 3], 2), cardinality(ARRAY[1, 2])",
    "SELECT * FROM UNNEST(ARRAY[1, 2, 3]) AS t(n)",
    "SELECT client_name FROM clients CROSS JOIN UNNEST(ARRAY[1, 2]) AS t(n)",
    "SELECT * FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
    "SELECT typeof(revenue), try(CAST('x' AS INTEGER)) FROM clients",
    "SELECT current_date > signed FROM clients",
    "SELECT client_name FROM clients WHERE signed >= DATE '2024-01-01' AND region <> 'EU'",
    "SHOW TABLES",
    "SHOW SCHEMAS",
    "DESCRIBE kb.crm.orders",
    "DESCRIBE clients",
    "EXPLAIN SELECT * FROM clients",
    "SELECT client_name, revenue FROM clients ORDER BY revenue DESC FETCH FIRST 2 ROWS ONLY",
    "SELECT greatest(1, 2), least(3, 4), round(2.5), truncate(2.7)",
]
