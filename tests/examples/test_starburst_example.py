"""The starburst/ example: its KB_Router_Agent run offline, end to end.

Real: ``examples/cli/knowledgebase/openai/starburst/demo.py`` as shipped (its two backends,
instructions and agent, configured through the ``STARBURST_*`` variables the README documents),
the OpenAI Agents SDK runner and tool pipeline, the official ``trino`` client over HTTP on
127.0.0.1, sqlglot and DuckDB executing the SQL. Stand-ins: the Trino coordinator, replaced by
the Trino HTTP-protocol test server (``tests/support/fixtures_trino.py``), and the hosted LLM,
played by the SDK's own ``agents.testing.ScriptedModel``, which decides each step from the tool
results it was sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.examples import OPENAI_EXAMPLES, load_demo, record_lines, tool_outputs
from tests.support import require_extra, require_module
from tests.support.fixtures_trino import CLIENTS

require_extra("agents", "openai")
require_extra("trino", "trino")

from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.router import ROUTER_INSTRUCTIONS  # noqa: E402

# The test server's physical targets: the same logical placeholders, another deployment.
TEST_SERVER_MAP = {
    "<MONGO_SOURCE>": "kb.crm.clients",
    "<SHEETS_SOURCE>": "TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
}
TOP_CLIENT = (
    "SELECT client_name, revenue FROM <MONGO_SOURCE> WHERE status = 'active' ORDER BY revenue DESC"
)
OUT_OF_STOCK = "SELECT product FROM <SHEETS_SOURCE> WHERE stock = 0"


@pytest.fixture
def starburst_env(trino_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the demo at the test server the way its README does: STARBURST_* variables."""
    for name in ("PASSWORD", "CATALOG", "SCHEMA"):
        monkeypatch.delenv(f"STARBURST_{name}", raising=False)
    monkeypatch.setenv("STARBURST_HOST", "127.0.0.1")
    monkeypatch.setenv("STARBURST_PORT", str(trino_server.port))
    monkeypatch.setenv("STARBURST_HTTP_SCHEME", "http")
    monkeypatch.setenv("STARBURST_USER", "demo")
    return trino_server


def test_router_agent_reads_sql_through_placeholders_and_is_refused_a_write(
    starburst_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = load_demo("starburst")
    backends = demo.build_backends()
    seen: dict[str, str] = {}

    def read_clients(call: Any) -> Any:
        schemas = json.loads(tool_outputs(call)[-1])
        seen["sql"] = ",".join(n for n, s in schemas.items() if s["capabilities"]["query"])
        arguments = {"backend": "StarburstDB-mongo", "query": TOP_CLIENT, "limit": 1}
        return [function_call("read_kb", arguments, call_id="c-clients")]

    def read_stock(call: Any) -> Any:
        seen["clients"] = tool_outputs(call)[-1]
        arguments = {"backend": "StarburstDB-sheets", "query": OUT_OF_STOCK}
        return [function_call("read_kb", arguments, call_id="c-stock")]

    def try_write(call: Any) -> Any:
        seen["stock"] = tool_outputs(call)[-1]
        arguments = {"backend": "StarburstDB-mongo", "text": "Top active client: Stark"}
        return [function_call("write_kb", arguments, call_id="c-write")]

    def answer_step(call: Any) -> Any:
        seen["write"] = tool_outputs(call)[-1]
        top = record_lines(seen["clients"])[0].split(" (source:")[0]
        empty = record_lines(seen["stock"])[0].split(" (source:")[0]
        text = f"Top active client: {top}. Out of stock: {empty}. Not saved: read-only."
        return [assistant_message(text)]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="c-schemas")],
            ModelStep.respond(read_clients),
            ModelStep.respond(read_stock),
            ModelStep.respond(try_write),
            ModelStep.respond(answer_step),
        ]
    )
    agent = demo.build_agent(model, backends=backends, semantic_map=TEST_SERVER_MAP)
    answer = demo.ask(agent, demo.QUESTION)

    model.assert_complete()
    first = model.calls[0]
    assert agent.name == "KB_Router_Agent"
    assert first.system_instructions.startswith(ROUTER_INSTRUCTIONS)
    assert demo.ROUTING in first.system_instructions
    assert [tool.name for tool in first.tools] == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
    ]
    assert seen["sql"] == "StarburstDB-mongo,StarburstDB-sheets"
    # the placeholders reached the server as its own tables and the rows came back
    assert record_lines(seen["clients"]) == [
        "client_name: Stark | revenue: 9999.99 (source: StarburstDB-mongo)"
    ]
    assert record_lines(seen["stock"]) == ["product: gadget (source: StarburstDB-sheets)"]
    assert seen["write"] == (
        "Backend 'StarburstDB-mongo' is read-only. Knowledge bases that accept writes: []"
    )
    assert "client_name: Stark | revenue: 9999.99" in answer
    assert "product: gadget" in answer
    out = capsys.readouterr().out
    assert "<MONGO_SOURCE>" in out and "kb.crm.clients" not in out
    assert f"Answer: {answer}" in out
    for backend in backends:
        backend.close()


def test_the_galaxy_map_overrides_the_local_targets_and_keeps_the_placeholders() -> None:
    demo = load_demo("starburst")
    galaxy = OPENAI_EXAMPLES / "starburst" / "semantic_map.galaxy.json"
    mapping = demo.load_semantic_map(str(galaxy))
    assert set(mapping) == set(demo.SEMANTIC_MAP) == set(TEST_SERVER_MAP)
    assert mapping == json.loads(galaxy.read_text(encoding="utf-8"))
    assert demo.load_semantic_map(None) == demo.SEMANTIC_MAP


def test_seed_sql_gives_a_local_trino_the_test_servers_rows_under_the_default_map() -> None:
    """seed.sql (Trino dialect) run through sqlglot into DuckDB, whose default catalog is also
    called ``memory``: the default SEMANTIC_MAP targets hold the data the agent test reads."""
    duckdb = require_module("duckdb")
    sqlglot = require_extra("sqlglot", "trino")
    demo = load_demo("starburst")
    db = duckdb.connect()
    script = (OPENAI_EXAMPLES / "starburst" / "seed.sql").read_text(encoding="utf-8")
    for _ in range(2):  # rerunning the seed is harmless
        for statement in sqlglot.parse(script, read="trino"):
            if statement is not None:
                db.execute(statement.sql(dialect="duckdb"))

    def rows(sql: str) -> list[tuple[Any, ...]]:
        for token, target in demo.SEMANTIC_MAP.items():
            sql = sql.replace(token, target)
        resolved = sqlglot.transpile(sql, read="trino", write="duckdb")
        return [tuple(str(v) for v in row) for row in db.execute(resolved[0]).fetchall()]

    assert sorted(rows("SELECT * FROM <MONGO_SOURCE>")) == sorted(CLIENTS)
    assert rows(TOP_CLIENT + " LIMIT 1") == [("Stark", "9999.99")]
    assert rows(OUT_OF_STOCK) == [("gadget",)]


def test_without_a_model_the_demo_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_demo("starburst").main([]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().out
