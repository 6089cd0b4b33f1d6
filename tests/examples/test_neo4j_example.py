"""The neo4j/ example: its KB_Router_Agent run offline, end to end.

Real: ``examples/cli/knowledgebase/openai/neo4j/demo.py`` as shipped (its backend, seed,
semantic_map, instructions and agent), the OpenAI Agents SDK runner and tool pipeline, the
official ``neo4j`` driver over Bolt, and Cypher executed by FalkorDB's Bolt server on 127.0.0.1
(``tests/support/fixtures_neo4j.py``; a real Neo4j when ``AK_TEST_NEO4J_URI`` is set), located
through the ``NEO4J_*`` variables the README documents. Stand-in: the hosted LLM, played by the
SDK's own ``agents.testing.ScriptedModel``, which decides each step from the tool results.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.examples import load_demo, record_lines, tool_outputs
from tests.support import require_extra

require_extra("agents", "openai")
require_extra("neo4j", "neo4j")

from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.router import ROUTER_INSTRUCTIONS  # noqa: E402
from tests.support.fixtures_neo4j import BoltServer  # noqa: E402

READ = "MATCH (p:Person)-[:MANAGES]->(c:<CLIENT> {name: 'Stark'}) RETURN p.name AS manager"
WRITE = (
    "MATCH (c:<CLIENT> {name: $client}) MERGE (p:Person {name: $person}) MERGE (p)-[:BACKS_UP]->(c)"
)


@pytest.fixture
def neo4j_env(bolt_clean: BoltServer, monkeypatch: pytest.MonkeyPatch) -> BoltServer:
    """Point the demo at the Bolt server the way its README does: NEO4J_* variables."""
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NEO4J_URI", bolt_clean.uri)
    if bolt_clean.password:
        monkeypatch.setenv("NEO4J_USERNAME", bolt_clean.user or "neo4j")
        monkeypatch.setenv("NEO4J_PASSWORD", bolt_clean.password)
    return bolt_clean


def test_router_agent_reads_and_writes_the_graph_through_a_placeholder(
    neo4j_env: BoltServer, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = load_demo("neo4j")
    backends = demo.build_backends()
    (graph,) = backends
    demo.seed(backends)
    demo.seed(backends)  # a rerun of the demo adds nothing
    seen: dict[str, str] = {}

    def read_step(call: Any) -> Any:
        schemas = json.loads(tool_outputs(call)[-1])
        (backend,) = [n for n, s in schemas.items() if s["capabilities"]["query_language"]]
        return [function_call("read_kb", {"backend": backend, "query": READ}, call_id="c-read")]

    def write_step(call: Any) -> Any:
        seen["read"] = tool_outputs(call)[-1]
        seen["manager"] = json.loads(record_lines(seen["read"])[0])["manager"]
        params = {"client": "Stark", "person": "Grace Hopper"}
        arguments = {"backend": "Neo4jDB", "query": WRITE, "params_json": json.dumps(params)}
        return [function_call("write_kb", arguments, call_id="c-write")]

    def answer_step(call: Any) -> Any:
        seen["write"] = tool_outputs(call)[-1]
        text = f"{seen['manager']} manages Stark; Grace Hopper now backs them up."
        return [assistant_message(text)]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="c-schemas")],
            ModelStep.respond(read_step),
            ModelStep.respond(write_step),
            ModelStep.respond(answer_step),
        ]
    )
    agent = demo.build_agent(model, backends=backends)
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
    # <CLIENT> was resolved to the seeded label, so the read found exactly one manager
    assert record_lines(seen["read"]) == ['{"manager": "Ada Lovelace"}']
    assert "Ada Lovelace" in answer
    assert seen["write"] == "Wrote 1 record to 'Neo4jDB'."
    rows = graph.query(
        "MATCH (p:Person)-[r]->(c:Client {name: 'Stark'}) "
        "RETURN p.name AS person, type(r) AS rel ORDER BY rel",
        limit=10,
    )
    assert [row["metadata"] for row in rows] == [
        {"person": "Grace Hopper", "rel": "BACKS_UP"},
        {"person": "Ada Lovelace", "rel": "MANAGES"},
    ]
    counts = graph.query("MATCH (n) RETURN count(n) AS nodes")[0]["metadata"]
    assert counts == {"nodes": 3 + 6 + 2}  # people, clients, products: seeding twice merged
    out = capsys.readouterr().out
    assert "-> read_kb(" in out and "<CLIENT>" in out
    assert f"Answer: {answer}" in out
    graph.close()


def test_without_a_model_the_demo_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_demo("neo4j").main([]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().out
