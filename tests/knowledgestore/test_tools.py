"""The knowledge_* tools as plain callables over real stores.

Real: the tools run over a real file store (a temporary folder), a real SQLite store and a
real PostgreSQL store (a PostgreSQL 15 server on 127.0.0.1, a schema per test); a store
failure is produced by pointing the file store at a path that is a file.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStore,
    SQLiteKnowledgeStore,
    create_knowledge_tools,
)

Tools = dict[str, Callable[..., str]]


def _tools(store: KnowledgeStore, **options: object) -> Tools:
    return {tool.__name__: tool for tool in create_knowledge_tools(store, **options)}  # type: ignore[arg-type]


@pytest.fixture(params=["file", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> KnowledgeStore:
    if request.param == "file":
        return FileKnowledgeStore(tmp_path / "knowledge")
    if request.param == "postgresql":
        from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore

        server = request.getfixturevalue("postgres_server")
        return PostgreSQLKnowledgeStore(server.schema_url(f"t{uuid.uuid4().hex[:12]}"))
    return SQLiteKnowledgeStore(tmp_path / "knowledge.db")


def test_tool_names_and_order(store: KnowledgeStore) -> None:
    names = [t.__name__ for t in create_knowledge_tools(store)]
    assert names == [
        "knowledge_index",
        "knowledge_search",
        "knowledge_read",
        "knowledge_create",
        "knowledge_edit",
        "knowledge_rewrite",
        "knowledge_supersede",
        "knowledge_log",
        "knowledge_check",
    ]
    interactive = [t.__name__ for t in create_knowledge_tools(store, True, confirm=lambda q: False)]
    assert interactive == [*names[:7], "knowledge_retire", *names[7:]]


def test_interactive_without_a_way_to_ask_is_refused(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="confirm"):
        create_knowledge_tools(store, interactive=True)


def test_every_parameter_is_documented(store: KnowledgeStore) -> None:
    for tool in create_knowledge_tools(store, True, confirm=lambda q: False):
        doc = inspect.getdoc(tool) or ""
        assert doc and doc.splitlines()[0].strip()
        parameters = inspect.signature(tool).parameters
        if parameters:
            args = doc.split("Args:", 1)[1]
            for name in parameters:
                assert f"{name}:" in args, (tool.__name__, name)
    create = _tools(store)["knowledge_create"]
    assert "summary (" in (create.__doc__ or "") and "concept" in (create.__doc__ or "")


def test_a_round_trip_through_the_tools(store: KnowledgeStore) -> None:
    tools = _tools(store)
    assert tools["knowledge_index"]() == "The knowledge base is empty."
    template = tools["knowledge_create"]("concept", "tides", "Tides")
    assert template.startswith("Template for a concept page") and "## Explanation" in template
    created = tools["knowledge_create"](
        "concept",
        "tides",
        "Tides",
        "Driven by the [Moon](entity/moon).\\nTwice a day.",
        fields='{"aliases": "tide"}',
        also=[
            {
                "type": "entity",
                "slug": "moon",
                "title": "Moon",
                "content": "Satellite.",
                "fields": [{"name": "kind", "value": "satellite"}],
            }
        ],
    )
    assert created == "Created concept/tides, entity/moon."
    page = tools["knowledge_read"]("concept/tides")
    assert page.splitlines()[:3] == ["id: concept/tides", "title: Tides", "status: active"]
    assert "aliases: tide" in page and "linked from: (nothing)" in page
    assert page.endswith("Driven by the [Moon](entity/moon).\nTwice a day.")
    assert "linked from: concept/tides" in tools["knowledge_read"]("entity/moon")
    assert "kind: satellite" in tools["knowledge_read"]("entity/moon")
    assert tools["knowledge_search"]("moon").splitlines()[0].startswith("- entity/moon — Moon: ")
    assert tools["knowledge_edit"]("concept/tides", "Twice", "Two times") == "Edited concept/tides."
    assert "* [Tides](concept/tides)" in tools["knowledge_index"]()
    assert tools["knowledge_rewrite"]("overview", "See [Tides](concept/tides).") == (
        "Rewrote the overview."
    )
    assert tools["knowledge_read"]("overview") == "See [Tides](concept/tides)."
    assert tools["knowledge_log"]("ingest", "Read about tides", ["concept/tides"]) == "Logged."
    assert tools["knowledge_read"]("log").endswith(
        "ingest | Read about tides\n- pages: concept/tides"
    )
    assert json.loads(tools["knowledge_check"]()) == {
        "broken_links": [],
        "orphans": [],
        "links_to_retired": [],
    }


def test_refusals_come_back_as_strings(store: KnowledgeStore) -> None:
    tools = _tools(store)
    assert tools["knowledge_read"]("concept/none").startswith("There's no page 'concept/none'")
    assert "overview yet" in tools["knowledge_read"]("overview")
    assert "log is empty" in tools["knowledge_read"]("log")
    refused = tools["knowledge_create"]("concept", "tides", "Tides", "See [Moon](entity/moon).")
    assert "entity/moon" in refused and "don't exist" in refused
    assert "isn't a page type" in tools["knowledge_create"]("recipe", "x", "X", "y")
    assert "limit" in tools["knowledge_search"]("x", limit=0)
    assert "fields must be" in tools["knowledge_create"]("concept", "a", "A", "b", fields="[1")
    tools["knowledge_create"]("concept", "tides", "Tides", "Water water.")
    assert "2 times" in tools["knowledge_edit"]("concept/tides", "ater", "ave")
    assert "itself" in tools["knowledge_supersede"]("concept/tides", "concept/tides")


def test_a_store_failure_comes_back_as_a_string(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file", encoding="utf-8")
    tools = _tools(FileKnowledgeStore(blocker))
    answer = tools["knowledge_create"]("concept", "tides", "Tides", "Water.")
    # a storage failure is a StoreAccessError: it says which store, which page, and what to do
    assert answer.startswith("The knowledge store 'not-a-folder' could not save concept/tides: ")
    assert "Nothing of this change was kept" in answer and str(tmp_path) not in answer


def test_retire_asks_the_person_and_refuses_without_a_yes(store: KnowledgeStore) -> None:
    questions: list[str] = []
    answers = iter([False, True])

    def confirm(question: str) -> bool:
        questions.append(question)
        return next(answers)

    tools = _tools(store, interactive=True, confirm=confirm)
    tools["knowledge_create"]("concept", "tides", "Tides", "Water.")
    said_no = tools["knowledge_retire"]("concept/tides", "Wrong source")
    assert said_no == "The person said no: the page stays."
    assert "concept/tides" in [i.id for i in store.list()]
    assert tools["knowledge_retire"]("concept/tides", "Wrong source").startswith(
        "Retired concept/tides"
    )
    assert questions[0] == "Retire the page 'Tides' (concept/tides)? Reason: Wrong source"
    assert store.list() == []
    assert "There's no page" in tools["knowledge_retire"]("concept/none", "x")
    assert len(questions) == 2


def test_the_tools_answer_the_same_over_either_store(tmp_path: Path) -> None:
    def transcript(store: KnowledgeStore) -> list[str]:
        tools = _tools(store)
        return [
            tools["knowledge_create"](
                "concept",
                "tides",
                "Tides",
                "Driven by the [Moon](entity/moon).",
                also=[{"type": "entity", "slug": "moon", "title": "Moon", "content": "Satellite."}],
            ),
            tools["knowledge_create"]("concept", "waves", "Waves", "Not tides."),
            tools["knowledge_supersede"]("concept/waves", "concept/tides", "merged"),
            tools["knowledge_search"]("tides"),
            tools["knowledge_index"](),
            tools["knowledge_read"]("concept/tides"),
            tools["knowledge_check"](),
            tools["knowledge_edit"]("concept/none", "a", "b"),
        ]

    from_files = transcript(FileKnowledgeStore(tmp_path / "knowledge"))
    from_sqlite = transcript(SQLiteKnowledgeStore(tmp_path / "knowledge.db"))
    assert from_files == from_sqlite
