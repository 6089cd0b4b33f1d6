"""A tool's result carries the records it shows; code that calls a tool reads them, not the text.

Real: the example OKF bundle read in place by ``OKFManager`` (walked, and served from a Lance
bundle index built into a temporary folder), ChromaDB embedded on a temporary folder with the
packaged MiniLM model, a SQLite database file behind ``SQLManager``, FalkorDB speaking Bolt on
127.0.0.1 behind ``Neo4jManager`` (``tests/support/fixtures_neo4j.py``), the
``agentkernel-kb ask`` command run in-process, and ``KnowledgeBuilder`` tools. The one thing
changed is how the OKF backend renders records (monkeypatched), to show that no caller in the
package reads ids from the text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkernel._tooling.result import ToolResult, is_error
from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf._walkthrough import retrieval_run
from agentkernel.storage import LocalDocumentStore
from tests.support import require_extra

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/cli/knowledgebase/openai/okf/bundle"
QUESTION = "How do I recover when the nightly load fails?"
BEST = "runbooks/nightly_load_failure"


def _tools(*backends: KnowledgeBase, answer_chars: int | None = 20_000) -> dict[str, Any]:
    builder = KnowledgeBuilder(backends, answer_chars=answer_chars)
    return {tool.__name__: tool for tool in builder.build()}


def _ids(result: str) -> list[str]:
    assert isinstance(result, ToolResult) and not is_error(result), result
    return list(result.ids)


def _okf() -> OKFManager:
    return OKFManager(LocalDocumentStore(EXAMPLE, writable=False), name="OKF")


def _plain_rendering(self: KnowledgeBase, rows: Sequence[Record]) -> str:
    """A rendering that names no id at all: titles and texts only."""
    return "\n".join(f"* {row['metadata'].get('title')}: {row['text']}" for row in rows)


def test_okf_search_browse_fetch_and_read_carry_the_records_they_show() -> None:
    tools = _tools(_okf())
    found = tools["search_kb"]("OKF", QUESTION, 3)
    assert _ids(found)[0] == BEST and len(found.records) == 3
    assert found.records[0]["metadata"]["trust"] == "human-reviewed"
    assert all(f"[{ident}]" in found for ident in found.ids)  # the text shows the same records
    read = tools["read_kb"]("OKF", QUESTION, 2)
    assert _ids(read) == _ids(found)[:2]
    fetched = tools["fetch_kb"]("OKF", f"{BEST},metrics/roast_yield")
    assert _ids(fetched) == [BEST, "metrics/roast_yield"]
    assert "Steps to recover" in fetched.records[0]["text"]
    assert "frontmatter" in fetched.records[0]["metadata"]
    root = tools["browse_kb"]("OKF", "")
    assert _ids(root) == ["index"]  # the root's index.md, returned verbatim
    listed = tools["browse_kb"]("OKF", "glossary")
    assert _ids(listed) and all(i.startswith("glossary/") for i in listed.ids)
    assert tools["get_all_kb_descriptions"]().records == ()


def test_refusals_and_misses_carry_no_records() -> None:
    tools = _tools(_okf())
    for refused in (
        tools["search_kb"]("Nope", QUESTION),
        tools["fetch_kb"]("OKF", "no/such/concept"),
        tools["browse_kb"]("OKF", "no-such-directory"),
        tools["read_kb"]("OKF", QUESTION, 0),
    ):
        assert is_error(refused) and refused.records == (), refused


def test_a_cut_answer_carries_only_the_records_it_shows() -> None:
    tools = _tools(_okf(), answer_chars=2_000)
    found = tools["search_kb"]("OKF", "the", 40)
    assert "\n[cut] " in found  # more records than fit
    assert 0 < len(found.records) < 40
    assert all(f"[{ident}]" in found for ident in found.ids)
    long_read = tools["fetch_kb"]("OKF", f"{BEST}#offset=40")
    assert _ids(long_read) == [BEST]  # a part read from an offset still names its record
    everything = _tools(_okf(), answer_chars=None)["search_kb"]("OKF", "the", 40)
    assert found.ids == everything.ids[: len(found.ids)]


def test_records_from_the_lance_bundle_index(tmp_path: Path) -> None:
    require_extra("lancedb", "lancedb")
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    store = LocalDocumentStore(EXAMPLE, writable=False)
    index_bundle(store, str(tmp_path / "index"))
    indexed = OKFManager(store, index=str(tmp_path / "index"), refresh_seconds=None, name="OKF")
    tools = _tools(indexed)
    found = tools["search_kb"]("OKF", "nightly load failure", 3)
    assert BEST in _ids(found)
    assert _ids(tools["fetch_kb"]("OKF", BEST)) == [BEST]
    assert _ids(tools["browse_kb"]("OKF", "")) == ["index"]


def test_records_from_chroma(tmp_path: Path, minilm_embedding_function: Any) -> None:
    require_extra("chromadb", "chromadb")
    from agentkernel.knowledgebase.chroma import ChromaManager

    kb = ChromaManager(
        name="Vectors",
        collection="records",
        path=tmp_path / "chroma",
        embedding_function=minilm_embedding_function,
    ).add_schema({"description": "test vectors"})
    try:
        tools = _tools(kb)
        wrote = tools["write_kb"]("Vectors", text="Invoices are settled within thirty days.")
        assert len(_ids(wrote)) == 1 and wrote.ids[0] in wrote  # the id the backend gave it
        assert wrote.records[0]["text"] == "Invoices are settled within thirty days."
        tools["write_kb"]("Vectors", text="The office cat sleeps on the printer.")
        found = tools["search_kb"]("Vectors", "when are invoices paid?", 2)
        assert len(_ids(found)) == 2 and found.ids[0] == wrote.ids[0]
        assert "thirty days" in found.records[0]["text"]
        assert _ids(tools["read_kb"]("Vectors", "when are invoices paid?", 1)) == _ids(found)[:1]
    finally:
        kb.close()


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "clients.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE clients (name TEXT, region TEXT)")
        connection.executemany(
            "INSERT INTO clients VALUES (?, ?)", [("Acme", "EU"), ("Hooli", "US")]
        )
    connection.close()
    yield f"sqlite:///{path}"


def test_records_from_sql(sqlite_file: str) -> None:
    require_extra("sqlalchemy", "sql")
    require_extra("sqlglot", "sql")
    from agentkernel.knowledgebase.sql import SQLManager

    with SQLManager(sqlite_file, name="Clients").add_schema({"tables": {"clients": "name"}}) as kb:
        read = _tools(kb)["read_kb"]("Clients", "SELECT name, region FROM clients ORDER BY name", 5)
        assert isinstance(read, ToolResult) and not is_error(read), read
        assert [r["metadata"]["row"]["name"] for r in read.records] == ["Acme", "Hooli"]


def test_records_from_neo4j(request: pytest.FixtureRequest) -> None:
    require_extra("neo4j", "neo4j")
    from agentkernel.knowledgebase.neo4j import Neo4jManager

    server = request.getfixturevalue("bolt_clean")
    kb = Neo4jManager(
        uri=server.uri,
        user=server.user,
        password=server.password,
        name="Graph",
        connection_timeout=5.0,
        max_transaction_retry_time=1.0,
    ).add_schema({"description": "test graph"})
    try:
        tools = _tools(kb)
        assert not is_error(tools["write_kb"]("Graph", text="Tides follow the moon."))
        read = tools["read_kb"]("Graph", "MATCH (n) RETURN n.text AS text", 5)
        assert isinstance(read, ToolResult) and not is_error(read), read
        assert len(read.records) == 1, read.records
        assert "Tides follow the moon." in read.records[0]["text"]
    finally:
        kb.close()


def test_the_walkthrough_fetches_the_best_record_whatever_the_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(OKFManager, "format_results", _plain_rendering)
    calls = retrieval_run(_tools(_okf()).values(), "OKF", QUESTION)
    assert "[" not in calls[2].result  # the search answer names no id
    assert [c.name for c in calls] == ["get_schemas", "browse_kb", "search_kb", "fetch_kb"]
    assert calls[3].arguments["ids"] == BEST
    assert "Steps to recover" in calls[3].result


def test_ask_fetches_the_best_records_whatever_the_rendering(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkernel.cli.command import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(OKFManager, "format_results", _plain_rendering)
    assert main(["ask", QUESTION, str(EXAMPLE), "--fetch", "1"]) == 0
    out = capsys.readouterr().out
    matches, _, fetched = out.partition("## bundle: fetched")
    assert "* Nightly load failure:" in matches and "[" not in matches.split("\n", 2)[2]
    assert "dbt build --select" in fetched  # the best record, fetched whole


def test_ask_fetches_nothing_from_a_backend_that_cannot_fetch(
    tmp_path: Path, minilm_embedding_function: Any
) -> None:
    require_extra("chromadb", "chromadb")
    from agentkernel.cli._sources import Sources
    from agentkernel.cli.ask import retrieve
    from agentkernel.knowledgebase.chroma import ChromaManager

    vectors = ChromaManager(
        name="Vectors",
        collection="ask",
        path=tmp_path / "chroma",
        embedding_function=minilm_embedding_function,
    ).add_schema({"description": "test vectors"})
    try:
        vectors.write([{"text": "Rerun the nightly load with dbt.", "metadata": {"source": "x"}}])
        builder = KnowledgeBuilder([_okf(), vectors])
        sources = Sources(builder.build(), list(builder.backends), builder=builder)
        answer = retrieve(QUESTION, sources, limit=2, fetch=1)
    finally:
        vectors.close()
    # the search records carry ids, but Chroma declares no fetch: nothing is asked of it
    assert "## OKF: fetched" in answer and "## Vectors: fetched" not in answer
    assert "Rerun the nightly load" in answer
