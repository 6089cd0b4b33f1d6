"""Agents that write OKF: ``write_kb`` text opening with frontmatter becomes the concept it says.

Real: a writable ``OKFManager`` over a ``LocalDocumentStore`` on a folder in tmp, the tools
``KnowledgeBuilder`` builds from it (what every framework adapter binds), and the files on
disk. The same calls over a real MCP client session are in tests/mcp/test_write_okf.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.storage import frontmatter
from agentkernel.storage.local import LocalDocumentStore
from tests.knowledgebase.okf.helpers import Clock, write_bundle

PLAYBOOK = """---
type: Playbook
title: Freshness alert triage
description: What to do when the orders table is late.
tags: [ops, orders]
stale_after: 2027-03-31T00:00:00Z
verified: { by: process:nightly, at: '2026-05-02T10:00:00+02:00' }
runbook_owner: team:data-platform
---
# Freshness alert triage

Check the [orders table](/tables/orders.md), then rerun the loader.
"""

Tool = Callable[..., str]


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(
        tmp_path / "b",
        {
            "index.md": '---\nokf_version: "0.2"\n---\n# Ops\n\n* [Tables](tables/) - tables\n',
            "tables/orders.md": "---\ntype: Table\ntitle: Orders\n---\nOne row per order.\n",
        },
    )


@pytest.fixture
def tools(bundle: Path) -> dict[str, Tool]:
    kb = OKFManager(
        LocalDocumentStore(bundle),
        name="ops",
        clock=Clock(),
        refresh_seconds=None,
        write_actor="ingest_agent/1.0",
    )
    return {t.__name__: t for t in KnowledgeBuilder([kb]).build()}


def test_okf_text_is_written_as_the_concept_it_describes(
    bundle: Path, tools: dict[str, Tool]
) -> None:
    answer = tools["write_kb"]("ops", text=PLAYBOOK)
    assert answer == "Wrote 1 record(s) to 'ops': ['generated/freshness-alert-triage']"
    written = (bundle / "generated/freshness-alert-triage.md").read_text("utf-8")
    head = PLAYBOOK.split("---\n# Freshness")[0]
    assert written.startswith(head)  # every line the agent wrote, byte for byte
    assert written.endswith(
        "# Freshness alert triage\n\nCheck the [orders table]"
        "(/tables/orders.md), then rerun the loader.\n"
    )
    meta, _ = frontmatter.parse(written)
    assert meta["type"] == "Playbook" and meta["runbook_owner"] == "team:data-platform"
    assert meta["stale_after"] == "2027-03-31T00:00:00Z"  # as written
    assert meta["verified"] == {"by": "process:nightly", "at": "2026-05-02T10:00:00+02:00"}
    # what was missing is added: who wrote it, when, and where it came from
    assert meta["generated"] == {"by": "ingest_agent/1.0", "at": "2026-06-01T00:00:00Z"}
    assert meta["sources"] == [{"resource": "agent"}]

    found = tools["search_kb"]("ops", "freshness alert triage", 1)
    assert found == (
        "- [generated/freshness-alert-triage] Freshness alert triage (Playbook; "
        "machine-confirmed; fresh): What to do when the orders table is late."
    )
    fetched = tools["fetch_kb"]("ops", "generated/freshness-alert-triage")
    assert "links: tables/orders" in fetched and "---\ntype: Playbook\n" in fetched
    assert "[generated/freshness-alert-triage]" in tools["browse_kb"]("ops", "generated/")


def test_missing_title_and_description_come_from_the_body(
    bundle: Path, tools: dict[str, Tool]
) -> None:
    text = "---\ntype: Note\n---\n\n# Roaster 2 runs hot\n\nIt needs 5 degrees less. Always.\n"
    answer = tools["write_kb"]("ops", text=text, source="standup 2026-05-02")
    assert answer == "Wrote 1 record(s) to 'ops': ['generated/roaster-2-runs-hot']"
    written = (bundle / "generated/roaster-2-runs-hot.md").read_text("utf-8")
    assert written.startswith("---\ntype: Note\ntitle: Roaster 2 runs hot\n")
    meta, body = frontmatter.parse(written)
    assert meta["description"] == "It needs 5 degrees less."
    assert meta["sources"] == [{"resource": "standup 2026-05-02"}]
    assert body == "\n# Roaster 2 runs hot\n\nIt needs 5 degrees less. Always.\n"


def test_a_frontmatter_generated_block_is_kept(bundle: Path, tools: dict[str, Tool]) -> None:
    text = (
        "---\ntype: Note\ntitle: Kept\ngenerated: {by: reference_agent/2, at: "
        "2026-05-01T09:00:00Z}\nsources:\n  - {resource: https://example.com/x}\n---\nBody.\n"
    )
    tools["write_kb"]("ops", text=text)
    meta, _ = frontmatter.parse((bundle / "generated/kept.md").read_text("utf-8"))
    assert meta["generated"] == {"by": "reference_agent/2", "at": "2026-05-01T09:00:00Z"}
    assert meta["sources"] == [{"resource": "https://example.com/x"}]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("---\ntype: [unclosed\n---\nbody\n", "frontmatter is not a YAML mapping"),
        ("---\n- a list\n---\nbody\n", "frontmatter is not a YAML mapping"),
        ("---\ntitle: No type\n---\nbody\n", "has no 'type'"),
        ("---\ntype: ''\n---\nbody\n", "has no 'type'"),
        ("---\ntype: {a: b}\n---\nbody\n", "has no 'type'"),
        ("---\n---\nbody\n", "has no 'type'"),
        ("---\ntype: Note\ntitle: Never closed\nbody\n", "no second '---' line closes it"),
        ("---\ntype: Note\nid: ../../etc/passwd\n---\nx\n", "remove the 'id' key"),
        ("---\ntype: Note\nid: tables/orders\n---\nx\n", "remove the 'id' key"),
        ("---\ntype: Note\n---\n" + "x" * (5 * 1024 * 1024), "would never be served"),
    ],
)
def test_a_bad_okf_write_says_why_and_writes_nothing(
    bundle: Path, tools: dict[str, Tool], text: str, said: str
) -> None:
    before = _tree(bundle)
    answer = tools["write_kb"]("ops", text=text)
    assert answer.startswith("Error from backend 'ops' during write:"), answer
    assert said in answer and ("Not written" in answer or "Nothing was written" in answer)
    assert len(answer) < 1000
    assert _tree(bundle) == before


def test_a_hostile_title_is_slugged_inside_the_write_prefix(
    bundle: Path, tools: dict[str, Tool]
) -> None:
    for title in ("../../../etc/passwd", "/abs/path", "index", ".hidden"):
        answer = tools["write_kb"]("ops", text=f"---\ntype: Note\ntitle: '{title}'\n---\nx\n")
        assert answer.startswith("Wrote 1 record(s) to 'ops': ['generated/"), answer
    written = sorted(p for p in _tree(bundle) if p.startswith("generated/"))
    assert written == [
        "generated/abs-path.md",
        "generated/etc-passwd.md",
        "generated/hidden.md",
        "generated/index-note.md",
    ]
    assert set(_tree(bundle)) == {"index.md", "tables/orders.md", *written}


def test_plain_text_keeps_todays_behaviour(bundle: Path, tools: dict[str, Tool]) -> None:
    answer = tools["write_kb"]("ops", text="Decaf roasts\nDecaf beans roast 10% faster.")
    assert answer == "Wrote 1 record(s) to 'ops': ['generated/decaf-roasts']"
    meta, body = frontmatter.parse((bundle / "generated/decaf-roasts.md").read_text("utf-8"))
    assert meta["type"] == "Note" and meta["title"] == "Decaf roasts"
    assert meta["description"] == "Decaf beans roast 10% faster."
    assert body == "Decaf roasts\nDecaf beans roast 10% faster.\n"
    # a thematic break further down is no frontmatter
    tools["write_kb"]("ops", text="Shift notes\n---\nNothing else.\n")
    meta, _ = frontmatter.parse((bundle / "generated/shift-notes.md").read_text("utf-8"))
    assert meta["title"] == "Shift notes"
