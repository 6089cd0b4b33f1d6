"""Fixture: a real PostgreSQL server (the machine's ``initdb`` + ``pg_ctl``) on 127.0.0.1.

The cluster lives in a private temporary directory with its socket there too, listens on a
free TCP port of 127.0.0.1 only, trusts local connections (the test session runs in its own
network namespace), and is stopped and deleted at the end of the session. ``initdb`` refuses
to run as root, so as root the cluster is created and run as the unprivileged ``nobody``.
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


@dataclass(frozen=True)
class PostgresServer:
    """Where the test cluster listens; ``superuser`` may create databases."""

    host: str
    port: int
    superuser: str = "postgres"

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{self.superuser}@{self.host}:{self.port}/{database}"

    def conninfo(self, database: str = "postgres") -> str:
        return f"host={self.host} port={self.port} user={self.superuser} dbname={database}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """Start a throw-away PostgreSQL cluster and yield where it listens."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not on PATH")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="ak-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("runuser is needed to run initdb as an unprivileged user")
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
