"""Servers for the backends bench, started with the test suite's own support code.

The fixtures in ``tests/support`` are pytest generator fixtures; :func:`fixture_context`
runs one outside pytest as a context manager (the function under the fixture decorator, with
a minimal ``tmp_path_factory``), so the bench starts PostgreSQL, FalkorDB and the offline
embedding function exactly as the tests do. The Trino-protocol test server runs in a child
process (its ``TrinoTestServer`` and the fixture's DuckDB data), so its request handling does
not share this process's interpreter lock with the client being measured.
"""

from __future__ import annotations

import contextlib
import inspect
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class _TmpPathFactory:
    """The part of pytest's ``TempPathFactory`` the server fixtures use."""

    def __init__(self, base: Path) -> None:
        self._base = base

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self._base))


def _unwrap(fixture: Any) -> Callable[..., Any]:
    """The plain function under a ``@pytest.fixture`` decorator (pytest 8 and 9)."""
    getter = getattr(fixture, "_get_wrapped_function", None)
    if callable(getter):
        return getter()  # type: ignore[no-any-return]
    wrapped = getattr(fixture, "__pytest_wrapped__", None)
    if wrapped is not None:
        return wrapped.obj  # type: ignore[no-any-return]
    return getattr(fixture, "__wrapped__", fixture)  # type: ignore[no-any-return]


@contextlib.contextmanager
def fixture_context(fixture: Any, **kwargs: Any) -> Iterator[Any]:
    """Run a test-support fixture outside pytest; ``pytest.skip`` becomes ``RuntimeError``.

    Args:
        fixture: A ``@pytest.fixture`` function from ``tests.support``.
        **kwargs: Its arguments; ``tmp_path_factory`` is supplied when it takes one.
    """
    import pytest

    function = _unwrap(fixture)
    work = Path(tempfile.mkdtemp(prefix="ak-bbench-"))
    try:
        if "tmp_path_factory" in inspect.signature(function).parameters:
            kwargs.setdefault("tmp_path_factory", _TmpPathFactory(work))
        try:
            made = function(**kwargs)
            if not inspect.isgenerator(made):
                yield made
                return
            value = next(made)
        except pytest.skip.Exception as exc:
            raise RuntimeError(str(exc)) from None
        try:
            yield value
        finally:
            with contextlib.suppress(StopIteration):
                next(made)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def postgres() -> Iterator[Any]:
    """A throw-away PostgreSQL cluster on 127.0.0.1 (``tests/support/fixtures_postgres.py``)."""
    from tests.support import fixtures_postgres

    with fixture_context(fixtures_postgres.postgres_server) as server:
        yield server


@contextlib.contextmanager
def bolt() -> Iterator[Any]:
    """FalkorDB's Bolt server (``tests/support/fixtures_neo4j.py``; needs ``AK_PREP_DIR``)."""
    from tests.support import fixtures_neo4j

    with fixture_context(fixtures_neo4j.bolt_server) as server:
        yield server


def minilm() -> Any:
    """The offline all-MiniLM-L6-v2 embedding function (``tests/support/fixtures_chroma.py``)."""
    from tests.support import fixtures_chroma

    with fixture_context(fixtures_chroma.minilm_embedding_function) as function:
        return function


_TRINO_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.support.fixtures_trino import _database
from tests.support import trino_server
from tests.support.trino_server import TrinoTestServer
# header and body go out as two writes on a keep-alive connection: without TCP_NODELAY,
# Nagle's algorithm and the client's delayed ACK add ~40 ms per response
trino_server._Handler.disable_nagle_algorithm = True
server = TrinoTestServer(_database(), page_size=int(sys.argv[2])).start()
print(server.port, flush=True)
sys.stdin.read()
server.stop()
"""


@contextlib.contextmanager
def trino_server(page_size: int) -> Iterator[int]:
    """The Trino-protocol test server over DuckDB, in a child process; yields its port.

    Args:
        page_size: Rows per result page (the tests use 2; a real coordinator sends far more).
    """
    process = subprocess.Popen(
        [sys.executable, "-c", _TRINO_CHILD, str(ROOT), str(page_size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(f"the Trino test server did not start (got {line!r})")
        yield int(line)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
