"""FileKnowledgeStore on folders it did not write: adopted when they are its layout, else read only.

Real: every test works on real files in a temporary folder. The agent-kit folder is written by
hand, file by file, the way agent-kit's ``createFileKnowledgeStore`` keeps one (typed pages in
their type folders, ``type:`` in the frontmatter, ``index.md``, ``log.md``), with no marker;
the foreign bundle is a copy of the real GA4 OKF bundle of ``../shared/data/okf-bundles``.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

import pytest

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStoreError
from tests.support import okf_bundle


def _tree(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` (hidden ones included) with its content's hash."""
    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        )
        for path in sorted(folder.rglob("*"))
    }


def _write(folder: Path, rel: str, text: str) -> None:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def agent_kit(tmp_path: Path) -> Path:
    """A knowledge folder in agent-kit's layout, written by hand, with no marker file."""
    folder = tmp_path / "knowledge"
    _write(
        folder,
        "concepts/tides.md",
        "---\ntype: concept\ntitle: Tides\n---\n\nThe sea rises and falls; see "
        "[the moon](../entities/moon.md).\n",
    )
    _write(
        folder,
        "concepts/neap-tide.md",
        "---\ntype: concept\ntitle: Neap tide\n---\n\nThe smallest [tides](tides.md).\n",
    )
    _write(
        folder,
        "entities/moon.md",
        "---\ntype: entity\ntitle: The Moon\n---\n\n"
        "Its pull makes the [tides](../concepts/tides.md).\n",
    )
    _write(
        folder,
        "summaries/almanac.md",
        "---\ntype: summary\ntitle: Almanac\nfile: almanac.pdf\n"
        "ingested: 2026-01-02T10:00:00Z\n---\n\n## Summary\n"
        "Tables of [tides](../concepts/tides.md) and the [moon](../entities/moon.md).\n",
    )
    _write(
        folder,
        "index.md",
        "# Knowledge Base Index\n\n## Concepts\n- [Tides](concepts/tides.md) - The sea rises.\n"
        "- [Neap tide](concepts/neap-tide.md) - The smallest tides.\n\n## Entities\n"
        "- [The Moon](entities/moon.md) - Its pull.\n\n## Summaries\n"
        "- [Almanac](summaries/almanac.md) - Tables.\n",
    )
    _write(
        folder,
        "log.md",
        "# Knowledge Base Log\n\n## 2026-01-02\n"
        "* **ingest**: Read the almanac — pages: [Almanac](summaries/almanac.md)\n",
    )
    return folder


def test_an_agent_kit_folder_is_adopted_without_ceremony(agent_kit: Path) -> None:
    store = FileKnowledgeStore(agent_kit)
    assert [i.id for i in store.list()] == [
        "summary/almanac",
        "concept/neap-tide",
        "concept/tides",
        "entity/moon",
    ]
    assert store.ignored_files() == []

    store.create("concept", "spring-tide", "Spring tide", "The largest [tides](concept/tides).")
    store.edit("concept/tides", "rises and falls", "rises and falls twice a day")
    store.create("concept", "neap", "Neap", "Small [tides](concept/tides), the new name.")
    store.supersede("concept/neap-tide", "concept/neap", "renamed")
    store.create("concept", "ebb", "Ebb", "Falling water; see [tides](concept/tides).")
    store.retire("concept/ebb", "merged into tides")
    store.log("update", "Adopted the folder", ["concept/tides"])

    tides = store.read("concept/tides")
    assert tides is not None and "twice a day" in tides.content
    assert "[the moon](entity/moon)" in tides.content  # the hand-written links still link
    assert set(tides.linked_from) >= {"concept/spring-tide", "entity/moon", "summary/almanac"}
    neap_tide = store.read("concept/neap-tide")
    assert neap_tide is not None and neap_tide.status == "superseded"
    retired = store.read("concept/ebb")
    assert retired is not None and retired.status == "retired"
    assert "concept/ebb" not in [i.id for i in store.list()]

    entries = store.recent_log(5)
    assert entries[0].startswith("## [") and "update | Adopted the folder" in entries[0]
    assert any("ingest | Read the almanac" in entry for entry in entries)
    report = store.check()
    assert report.broken_links == [] and report.unreadable_files == []

    # the layout is kept: pages in their type folders, links as relative file paths
    assert "[tides](tides.md)" in (agent_kit / "concepts/spring-tide.md").read_text("utf-8")
    index = (agent_kit / "index.md").read_text(encoding="utf-8")
    assert "concepts/spring-tide.md" in index and "concepts/ebb.md" not in index
    log = (agent_kit / "log.md").read_text(encoding="utf-8")
    assert log.index("Adopted the folder") < log.index("Read the almanac")  # newest first
    # another process opening the folder afterwards sees the same pages
    again = FileKnowledgeStore(agent_kit)
    assert [i.id for i in again.list()] == [i.id for i in store.list()]


def test_reading_an_agent_kit_folder_changes_no_byte(agent_kit: Path) -> None:
    before = _tree(agent_kit)
    store = FileKnowledgeStore(agent_kit)
    store.list()
    store.read("concept/tides")
    store.search("tides")
    store.index()
    store.recent_log()
    store.check()
    store.overview()
    assert _tree(agent_kit) == before


def test_one_markdown_file_the_store_cannot_read_keeps_the_folder_refused(agent_kit: Path) -> None:
    _write(agent_kit, "notes/todo.md", "---\ntype: note\n---\nTo do.\n")
    before = _tree(agent_kit)
    store = FileKnowledgeStore(agent_kit)
    with pytest.raises(KnowledgeStoreError, match=r"won't write in .*pages \(notes/todo\.md;"):
        store.create("concept", "x", "X", "A page.")
    with pytest.raises(KnowledgeStoreError, match="won't write"):
        store.log("update", "Nothing")
    assert _tree(agent_kit) == before
    report = store.check()
    assert [(u.path, u.reason) for u in report.unreadable_files] == [
        (
            "notes/todo.md",
            "not in a page folder (this store keeps its pages in "
            "concepts/, entities/, preferences/, summaries/, syntheses/)",
        )
    ]


def test_a_page_with_broken_frontmatter_is_named_with_why(agent_kit: Path) -> None:
    _write(agent_kit, "concepts/broken.md", "---\ntitle: [unclosed\n---\nBody.\n")
    store = FileKnowledgeStore(agent_kit)
    report = store.check()
    assert [u.path for u in report.unreadable_files] == ["concepts/broken.md"]
    assert "frontmatter" in report.unreadable_files[0].reason
    assert not report.clean
    with pytest.raises(KnowledgeStoreError, match="won't write"):
        store.create("concept", "x", "X", "A page.")


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    target = tmp_path / "ga4"
    shutil.copytree(okf_bundle("ga4"), target)
    return target


def test_a_foreign_bundle_says_what_it_cannot_read_and_keeps_every_byte(
    foreign: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = _tree(foreign)
    store = FileKnowledgeStore(foreign)
    with caplog.at_level(logging.WARNING, logger="agentkernel.knowledgestore.file_store"):
        assert store.list() == []
    assert "13 markdown file(s) that are not its pages (datasets/" in caplog.text

    report = store.check()
    assert not report.clean
    unreadable = {u.path: u.reason for u in report.unreadable_files}
    assert "datasets/ga4_obfuscated_sample_ecommerce.md" in unreadable
    assert "tables/events_.md" in unreadable
    assert all("not in a page folder" in reason for reason in unreadable.values())
    assert "index.md" not in unreadable
    assert report.to_dict()["unreadable_files"][0]["reason"]

    for write in (
        lambda: store.create("concept", "x", "X", "A page."),
        lambda: store.log("ingest", "Read the bundle"),
        lambda: store.write_overview("Overview."),
    ):
        with pytest.raises(KnowledgeStoreError, match="won't write in"):
            write()
    store.index()
    store.search("events")
    store.recent_log()
    assert _tree(foreign) == before  # not even a lock file


def test_a_clean_store_reports_no_unreadable_files(tmp_path: Path) -> None:
    store = FileKnowledgeStore(tmp_path / "knowledge")
    store.create("concept", "tides", "Tides", "Water.")
    report = store.check()
    assert report.unreadable_files == [] and "unreadable_files" not in report.to_dict()
    assert report.broken_links == [] and report.links_to_retired == []
    assert report.orphans == ["concept/tides"]
