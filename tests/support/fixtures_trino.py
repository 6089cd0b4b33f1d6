"""Fixtures: the Trino HTTP-protocol test server (see ``trino_server.py``) on 127.0.0.1.

``trino_server`` speaks plain HTTP without auth (a local Trino); ``trino_tls_server`` speaks
HTTPS with basic auth (Starburst Galaxy's shape), with a throw-away self-signed certificate
made by ``openssl`` for 127.0.0.1. Both page results two rows at a time and serve this data:

* ``kb.crm.clients``: eight clients (client_name, status, region, revenue, signed);
* ``kb_sheets.system.sheet(id => ...)``: a table function standing in for Starburst's Google
  Sheets connector, returning the rows of the sheet whose id is given.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import missing, require_extra, require_module

TLS_USER = "ada@example.com/accountadmin"
TLS_PASSWORD = "galaxy-s3cret"

CLIENTS = [
    ("Acme", "active", "EU", "1200.50", "2024-01-15"),
    ("Globex", "active", "US", "980.00", "2024-02-01"),
    ("Initech", "churned", "US", "120.00", "2023-11-30"),
    ("Umbrella", "active", "APAC", "4500.75", "2024-03-09"),
    ("Hooli", "prospect", "US", "0.00", "2024-04-20"),
    ("Stark", "active", "US", "9999.99", "2022-06-06"),
    ("Wayne", "churned", "EU", "310.10", "2021-09-09"),
    ("Tyrell", "active", "APAC", "777.00", "2024-05-05"),
]


def _database() -> Any:
    duckdb = require_module("duckdb")
    require_extra("sqlglot", "trino")
    db = duckdb.connect()
    db.execute("ATTACH ':memory:' AS kb")
    db.execute("CREATE SCHEMA kb.crm")
    db.execute(
        "CREATE TABLE kb.crm.clients (client_name VARCHAR, status VARCHAR, region VARCHAR, "
        "revenue DECIMAL(10,2), signed DATE)"
    )
    db.executemany("INSERT INTO kb.crm.clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    db.execute("ATTACH ':memory:' AS kb_sheets")
    db.execute("CREATE SCHEMA kb_sheets.system")
    db.execute(
        "CREATE TABLE kb_sheets.system.cells (sheet_id VARCHAR, product VARCHAR, stock INTEGER)"
    )
    db.executemany(
        "INSERT INTO kb_sheets.system.cells VALUES (?, ?, ?)",
        [("SHEET_ID", "widget", 12), ("SHEET_ID", "gadget", 0), ("OTHER", "gizmo", 5)],
    )
    db.execute(
        "CREATE MACRO kb_sheets.system.sheet(id) AS TABLE "
        "SELECT product, stock FROM kb_sheets.system.cells WHERE sheet_id = id"
    )
    return db


def _certificate(folder: Path) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        missing("openssl (for the test server's TLS certificate)", "apt-get install openssl")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.fixture(scope="session")
def trino_server() -> Iterator[Any]:
    """A plain-HTTP Trino protocol server without auth, like a local Trino."""
    from tests.support.trino_server import TrinoTestServer

    server = TrinoTestServer(_database(), page_size=2).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def trino_tls_server() -> Iterator[Any]:
    """An HTTPS Trino protocol server checking basic auth, like Starburst Galaxy.

    ``server.certfile`` is the CA bundle a client must trust.
    """
    from tests.support.trino_server import TrinoTestServer

    folder = Path(tempfile.mkdtemp(prefix="ak-trino-tls-"))
    cert, key = _certificate(folder)
    server = TrinoTestServer(
        _database(), page_size=2, users={TLS_USER: TLS_PASSWORD}, certfile=cert, keyfile=key
    ).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
