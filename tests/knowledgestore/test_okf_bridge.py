"""A folder written by FileKnowledgeStore, served read-only by OKFManager.

Real: the store writes real files; ``OKFManager`` reads them through a read-only
``LocalDocumentStore``, the way another agent would be given the same folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgestore import FileKnowledgeStore, NewPage, PageType

NOTE = PageType(name="note", dir="", template="<A note.>", index_section="Notes")


@pytest.fixture
def curated(tmp_path: Path) -> Path:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder, [NOTE])
    store.create_many(
        [
            NewPage(
                "summary",
                "knot-manual",
                "Knot manual",
                "The manual covers the [bowline](concept/bowline) and the [cleat](entity/cleat).",
                {"file": "manuals/knots.pdf"},
            ),
            NewPage(
                "concept",
                "bowline",
                "Bowline",
                "A fixed loop at the end of a rope, tied on a [cleat](entity/cleat#use).",
                {"aliases": "nœud de chaise"},
            ),
            NewPage("entity", "cleat", "Cleat", "## Use\nA fitting that holds a rope."),
            NewPage("concept", "reef-knot", "Reef knot", "Joins two ropes; often misused."),
            NewPage("concept", "granny-knot", "Granny knot", "A reef knot tied wrong."),
            NewPage("note", "todo", "To do", "Check the [bowline](concept/bowline) page."),
        ]
    )
    store.supersede("concept/granny-knot", "concept/reef-knot", "merged")
    store.retire("concept/reef-knot", "The manual was about sailing knots only")
    store.log("ingest", "Read the knot manual", ["summary/knot-manual", "concept/bowline"])
    store.log("update", "Retired the reef knot")
    store.write_overview("Knots for sailing: start at [Bowline](concept/bowline).")
    store.check()
    return folder


def test_the_folder_loads_in_okf_manager_with_zero_diagnostics(curated: Path) -> None:
    kb = OKFManager(LocalDocumentStore(curated, writable=False), name="Knowledge")
    assert kb.diagnostics == []
    schema = kb.schema()
    assert schema["diagnostics"] == 0
    assert schema["okf_version"] == "0.2"
    assert schema["types"] == {
        "summary": 1,
        "concept": 3,
        "entity": 1,
        "note": 1,
        "overview": 1,
    }


def test_pages_are_searchable_and_fetchable_there(curated: Path) -> None:
    kb = OKFManager(LocalDocumentStore(curated, writable=False), name="Knowledge")
    hits = kb.search("bowline loop", limit=3)
    assert hits[0]["metadata"]["id"] == "concepts/bowline"
    [record] = kb.fetch(["concepts/bowline"])
    assert "A fixed loop at the end of a rope" in record["text"]
    assert record["metadata"]["links"] == ["entities/cleat"]
    assert record["metadata"]["broken_links"] == []
    [summary] = kb.fetch(["summaries/knot-manual"])
    assert sorted(summary["metadata"]["links"]) == ["concepts/bowline", "entities/cleat"]
    [note] = kb.fetch(["todo"])
    assert note["metadata"]["links"] == ["concepts/bowline"]


def test_the_index_is_browsed_verbatim_and_the_log_is_no_concept(curated: Path) -> None:
    kb = OKFManager(LocalDocumentStore(curated, writable=False), name="Knowledge")
    [root] = kb.browse("")
    assert root["metadata"]["kind"] == "index"
    assert "* [Bowline](concepts/bowline.md) - A fixed loop at the end of a rope" in root["text"]
    assert "[Reef knot]" not in root["text"]
    [log] = kb.fetch(["log"])
    assert log["metadata"]["kind"] == "log"
    assert "* **update**: Retired the reef knot" in log["text"]
    assert [h["metadata"]["id"] for h in kb.search("manual", limit=10)].count("log") == 0
