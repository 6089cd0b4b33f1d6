"""Fixture plugins, server markers and hypothesis profiles for the whole suite.

Every ``tests/support/fixtures_*.py`` module is loaded, so each area's server fixtures (S3,
Chroma, Bolt, PostgreSQL, ...) live in a module of its own. A test that uses one of those
fixtures is marked with the server's marker and with ``server``, so ``-m "not server"`` (the
``unit`` nox session) runs what needs no server, subprocess, browser or model; tests that start
such things themselves are listed by node id in ``SERVER_NODES``. Hypothesis runs few examples
locally and every example a test asks for under CI (``HYPOTHESIS_PROFILE`` overrides).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import load_hypothesis_profile

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
# Tests that start a process, a server or a model themselves, which no fixture above tells:
# node id prefix -> marker. A new test of that kind joins this table (CONTRIBUTING.md).
SERVER_NODES = {
    "tests/cli/test_cli.py": "subprocess",
    "tests/cli/test_messages.py": "subprocess",
    "tests/cli/test_serve_defaults.py": "mcp_process",
    "tests/cli/test_view.py": "subprocess",
    "tests/examples/test_okf_example.py": "subprocess",
    "tests/frameworks/test_openai.py::test_sdk_imports_are_the_installed": "subprocess",
    "tests/knowledgebase/okf/test_bundleindex_processes.py": "subprocess",
    "tests/knowledgestore/test_concurrency.py": "subprocess",
    "tests/knowledgestore/test_server.py": "mcp_process",
    "tests/knowledgestore/test_server_described.py": "mcp_process",
    "tests/mcp/test_auth": "mcp_process",
    "tests/mcp/test_cross_line.py": "mcp_process",
    "tests/mcp/test_stdio.py": "mcp_process",
    "tests/retrieval/test_semantic.py": "model",
    "tests/security/test_mcp_malformed.py": "mcp_process",
    "tests/security/test_read_paths.py": "subprocess",
    "tests/security/test_sql_guard_attacks.py::test_trino": "trino",
    "tests/test_docs.py::test_block_runs": "subprocess",
}
# Parameter values naming a server that the test fetches with ``request.getfixturevalue``.
SERVER_PARAMS = {"postgresql": "postgres"}
SERVER_MARKERS = sorted(set(SERVER_FIXTURES.values()) | set(SERVER_NODES.values()))

load_hypothesis_profile()


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
        for prefix, marker in SERVER_NODES.items():
            if item.nodeid.startswith(prefix):
                item.add_marker(marker)
        if any(item.get_closest_marker(marker) for marker in SERVER_MARKERS):
            item.add_marker("server")
