"""Hostile SQL shared by the guard, Starburst and SQLManager tests.

Each entry is a statement an agent (or a prompt injection) might send to a read-only SQL
backend, with the fragment of the refusal that names why. Every one must be refused before
it reaches a database, in every dialect the backends use.
"""

from __future__ import annotations

HOSTILE: list[tuple[str, str]] = [
    ("INSERT INTO clients VALUES ('Evil', 'active', 'EU', 1, DATE '2024-01-01')", "INSERT"),
    ("UPDATE clients SET status = 'churned'", "UPDATE"),
    ("DELETE FROM clients", "DELETE"),
    (
        "MERGE INTO clients c USING clients s ON c.client_name = s.client_name "
        "WHEN MATCHED THEN DELETE",
        "MERGE",
    ),
    ("CREATE TABLE stolen AS SELECT * FROM clients", "CREATE"),
    ("DROP TABLE clients", "DROP"),
    ("ALTER TABLE clients ADD COLUMN pwned INTEGER", "ALTER"),
    ("TRUNCATE TABLE clients", "TRUNCATE"),
    ("GRANT SELECT ON clients TO PUBLIC", "GRANT"),
    ("CALL system.flush_metadata_cache()", "CALL"),
    ("SET SESSION query_max_run_time = '1h'", "SET"),
    ("USE kb.other", "USE"),
    ("START TRANSACTION", "TRANSACTION"),
    ("SELECT 1; DROP TABLE clients", "more than one statement"),
    ("SELECT client_name FROM clients; DELETE FROM clients", "more than one statement"),
    ("SHOW TABLES; DELETE FROM clients", "more than one statement"),
    ("SELECT 1 -- harmless?\n; DROP TABLE clients", "comment"),
    ("SELECT 1 /* ; DROP TABLE clients */", "comment"),
    ("WITH gone AS (DELETE FROM clients RETURNING *) SELECT * FROM gone", "DELETE"),
    ("WITH x AS (SELECT 1) INSERT INTO clients SELECT * FROM clients", "INSERT"),
    ("SELECT * INTO stolen FROM clients", "INTO"),
    ("EXPLAIN ANALYZE DELETE FROM clients", "EXPLAIN"),
    ("SELECT * FROM TABLE(pg.system.query(query => 'DELETE FROM clients'))", "query()"),
    ("EXECUTE IMMEDIATE 'DELETE FROM clients'", "EXECUTE"),
    ("COPY clients TO '/tmp/stolen.csv'", "COPY"),
    ("SELECT nextval('client_ids')", "nextval"),
    ("SELECT pg_notify('channel', 'payload')", "pg_notify"),
    ("SELECT ts_stat('SELECT 1')", "ts_stat"),
    ("", "empty"),
    (";", "empty"),
]
