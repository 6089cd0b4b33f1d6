"""Fixture: a real PostgreSQL server (the machine's ``initdb`` + ``pg_ctl``) on 127.0.0.1.

The cluster lives in a private temporary directory with its socket there too, listens on a
free TCP port of 127.0.0.1 only, trusts local connections (the test session runs in its own
network namespace), and is stopped and deleted at the end of the session. ``initdb`` refuses
to run as root, so as root the cluster is created and run as the unprivileged ``nobody``.

Tests that serve a database to agents connect as the least-privilege role ``kb_reader``
(``PostgresServer.reader_url(database)``: LOGIN, CONNECT, USAGE and SELECT only, read-only by
default), the way the manual tells users to; the superuser URL (``url``) is for setting up
data and for tests that pass ``allow_privileged_role=True`` on purpose.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import missing

READER = "kb_reader"


@dataclass(frozen=True)
class PostgresServer:
    """Where the test cluster listens; ``superuser`` may create databases."""

    host: str
    port: int
    superuser: str = "postgres"
    reader: str = READER

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        """The superuser's URL: for setting up data, or with ``allow_privileged_role=True``."""
        return f"{driver}://{self.superuser}@{self.host}:{self.port}/{database}"

    def conninfo(self, database: str = "postgres") -> str:
        """The superuser's libpq connection string."""
        return f"host={self.host} port={self.port} user={self.superuser} dbname={database}"

    def reader_url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        """The least-privilege role's URL, after granting it read access to ``database``.

        Grants SELECT on every table of the ``public`` schema, now and later created by the
        superuser, so a test may create its tables before or after calling this.
        """
        self.grant_reader(database)
        return f"{driver}://{self.reader}@{self.host}:{self.port}/{database}"

    def reader_conninfo(self, database: str = "postgres") -> str:
        """The least-privilege role's libpq connection string (no grants made)."""
        return f"host={self.host} port={self.port} user={self.reader} dbname={database}"

    def schema_url(self, schema: str, database: str = "postgres", role: str | None = None) -> str:
        """A ``postgresql://`` URL whose tables live in a new, empty ``schema`` of ``database``.

        Each test gets its own schema instead of a database (much cheaper to make); ``role``
        connects as that role instead of the superuser.
        """
        import psycopg

        with psycopg.connect(self.conninfo(database), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        user = role or self.superuser
        options = f"?options=-csearch_path%3D{schema}"
        return f"postgresql://{user}@{self.host}:{self.port}/{database}{options}"

    def grant_reader(self, database: str) -> None:
        """Give the read-only role CONNECT, USAGE and SELECT on ``database`` (idempotent)."""
        import psycopg  # the test extra; imported here so the fixture module stays light

        with psycopg.connect(self.conninfo(database), autocommit=True) as conn:
            for statement in reader_grants(self.reader, database):
                conn.execute(statement)


def reader_grants(role: str, database: str) -> list[str]:
    """The statements that make ``role`` a least-privilege reader of ``database``."""
    return [
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
        f"THEN CREATE ROLE {role} LOGIN; END IF; END $$",
        f"ALTER ROLE {role} SET default_transaction_read_only = on",
        f'GRANT CONNECT ON DATABASE "{database}" TO {role}',
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {role}",
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """Start a throw-away PostgreSQL cluster and yield where it listens."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        missing(
            "PostgreSQL's initdb and pg_ctl", "apt-get install postgresql (or put its bin on PATH)"
        )
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="ak-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            missing("runuser (to run initdb as an unprivileged user)", "apt-get install util-linux")
        as_user = [runuser, "-u", "nobody", "--"]
        shutil.chown(folder, user="nobody")
    data, log = folder / "data", folder / "server.log"
    port = _free_port()
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
         "--no-sync"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(log), "-w", "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield PostgresServer("127.0.0.1", port)
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_reader(postgres_server: PostgresServer) -> PostgresServer:
    """The session's server with its least-privilege role ``kb_reader`` created.

    Call ``postgres_reader.reader_url(database)`` for a URL that role may read ``database``
    with (the grants are made then).
    """
    postgres_server.grant_reader("postgres")
    return postgres_server
