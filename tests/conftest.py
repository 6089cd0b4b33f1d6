"""Fixture plugins, server markers and hypothesis profiles for the whole suite.

Every ``tests/support/fixtures_*.py`` module is loaded, so each area's server fixtures (S3,
Chroma, Bolt, PostgreSQL, ...) live in a module of its own. A test that uses one of those
fixtures is marked with the server's marker and with ``server``, so ``-m "not server"`` (the
``unit`` nox session) runs what needs no server, subprocess, browser or model. A test that
starts such things itself (a child process, an MCP server over stdio, a model), directly or
through a helper, is marked from what its code reaches (:mod:`tests.support.markers`): no list
to keep. Hypothesis runs few examples locally and every example a test asks for under CI
(``HYPOTHESIS_PROFILE`` overrides).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import load_hypothesis_profile
from tests.support.markers import STARTERS, reached

pytest_plugins = sorted(
    f"tests.support.{path.stem}"
    for path in (Path(__file__).parent / "support").glob("fixtures_*.py")
)

# Which marker a fixture's test gets: the fixture starts that server (or loads that model).
SERVER_FIXTURES = {
    "postgres_server": "postgres",
    "bolt_server": "falkordb",
    "chroma_server": "chroma",
    "minilm_embedding_function": "model",
    "s3_endpoint": "s3",
    "trino_server": "trino",
    "trino_tls_server": "trino",
    "browser": "chromium",
    "mcp_http_server": "mcp_process",
}
# Parameter values naming a server that the test fetches with ``request.getfixturevalue``.
SERVER_PARAMS = {"postgresql": "postgres", "bundle-s3": "s3"}
SERVER_MARKERS = sorted(set(SERVER_FIXTURES.values()) | set(STARTERS.values()))

load_hypothesis_profile()


@pytest.fixture(autouse=True, scope="session")
def _no_warm_start() -> Iterator[None]:
    """No OKF warm-start file in ~/.cache, and no test served by another test's walk.

    Every OKFManager walks its bundle; the warm-start tests turn it on for themselves.
    """
    earlier = os.environ.get("AGENTKERNEL_LEXICAL_CACHE")
    os.environ["AGENTKERNEL_LEXICAL_CACHE"] = "off"
    yield
    if earlier is None:
        del os.environ["AGENTKERNEL_LEXICAL_CACHE"]
    else:
        os.environ["AGENTKERNEL_LEXICAL_CACHE"] = earlier


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVER_FIXTURES.items():
            if fixture in fixtures:
                item.add_marker(marker)
        callspec = getattr(item, "callspec", None)
        for value in callspec.params.values() if callspec else ():
            if isinstance(value, str) and value in SERVER_PARAMS:
                item.add_marker(SERVER_PARAMS[value])
        name = getattr(item, "originalname", None)
        if name is not None:
            for marker in reached(Path(item.path), [name, *sorted(fixtures)]):
                item.add_marker(marker)
        if any(item.get_closest_marker(marker) for marker in SERVER_MARKERS):
            item.add_marker("server")
