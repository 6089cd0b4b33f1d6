"""What FileKnowledgeStore leaves on disk: an OKF bundle, relative links, atomic files.

Real: every test writes and reads real files in a temporary folder; "another process" is a
second store object on the same folder, and "a person" edits the files directly.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStoreError,
    NewPage,
    PageInfo,
    PageType,
    create_file_knowledge_store,
)
from agentkernel.knowledgestore._bundle import rel_of
from agentkernel.knowledgestore._catalog import render_catalog
from agentkernel.knowledgestore._pages import TypeRegistry
from agentkernel.storage import frontmatter

_INDEX_LINE = re.compile(r"^(# .+|\* \[[^\]]+\]\([^)]+\)( - .*)?)$")
_LOG_LINE = re.compile(r"^(# .+|## \d{4}-\d{2}-\d{2}|\* \*\*[^*]+\*\*: .+)$")


def _fill(folder: Path) -> FileKnowledgeStore:
    store = create_file_knowledge_store(folder)
    store.create_many(
        [
            NewPage(
                "summary",
                "tables",
                "Tide tables",
                "Feeds [Tides](concept/tides).",
                {"file": "t.pdf"},
            ),
            NewPage("concept", "tides", "Tides", "Driven by the [Moon](entity/moon#orbit)."),
            NewPage("entity", "moon", "Moon", "## Orbit\nEarth's satellite."),
        ]
    )
    store.log("ingest", "Read the tide tables", ["summary/tables", "concept/tides"])
    store.write_overview("Start at [Tides](concept/tides).")
    return store


def test_the_folder_is_an_okf_bundle(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    _fill(folder)
    concepts = [p for p in folder.rglob("*.md") if p.name not in ("index.md", "log.md")]
    assert sorted(p.relative_to(folder).as_posix() for p in concepts) == [
        "concepts/tides.md",
        "entities/moon.md",
        "overview.md",
        "summaries/tables.md",
    ]
    for path in concepts:
        meta, _ = frontmatter.parse(path.read_text(encoding="utf-8"))
        assert isinstance(meta.get("type"), str) and meta["type"].strip()
    meta, body = frontmatter.parse((folder / "index.md").read_text(encoding="utf-8"))
    assert meta == {"okf_version": "0.2"}
    lines = [line for line in body.splitlines() if line.strip()]
    assert all(_INDEX_LINE.match(line) for line in lines), lines
    for target in re.findall(r"\]\(([^)]+)\)", body):
        assert (folder / target).is_file()
    log_lines = [x for x in (folder / "log.md").read_text().splitlines() if x.strip()]
    assert all(_LOG_LINE.match(line) for line in log_lines), log_lines


def test_links_are_relative_files_on_disk_and_ids_for_the_tools(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = _fill(folder)
    on_disk = (folder / "concepts" / "tides.md").read_text(encoding="utf-8")
    assert "[Moon](../entities/moon.md#orbit)" in on_disk
    assert "[Tides](concepts/tides.md)" in (folder / "overview.md").read_text(encoding="utf-8")
    page = store.read("concept/tides")
    assert page is not None and page.content == "Driven by the [Moon](entity/moon#orbit)."


def test_log_groups_dates_newest_first(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    (folder / "log.md").write_text(
        "# Knowledge Base Log\n\n## 2020-01-02\n* **lint**: Checked links\n\n"
        "## 2020-01-01\n* **ingest**: First source\n",
        encoding="utf-8",
    )
    (folder / ".knowledgestore").touch()  # a hand-written log, handed over to the store
    store = FileKnowledgeStore(folder)
    store.log("update", "Today's change")
    store.log("query", "Today's question")
    text = (folder / "log.md").read_text(encoding="utf-8")
    dates = re.findall(r"^## (\d{4}-\d{2}-\d{2})$", text, flags=re.MULTILINE)
    assert dates == sorted(dates, reverse=True) and len(dates) == 3
    entries = store.recent_log(10)
    assert [e.split("] ", 1)[1] for e in entries] == [
        "query | Today's question",
        "update | Today's change",
        "lint | Checked links",
        "ingest | First source",
    ]
    assert entries[2].startswith("## [2020-01-02]")


def test_files_written_by_people_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = _fill(folder)
    (folder / "concepts" / "neap-tides.md").write_text(
        "---\ntype: concept\ntitle: Neap tides\ntags: [sea, moon]\n---\n\n"
        "Weak tides, see [the moon](/entities/moon.md).\n",
        encoding="utf-8",
    )
    (folder / "concepts" / "broken.md").write_text(
        "---\ntype: [unclosed\n---\nx\n", encoding="utf-8"
    )
    page = store.read("concept/neap-tides")
    assert page is not None
    assert page.fields["tags"] == "sea, moon"
    assert page.content == "Weak tides, see [the moon](entity/moon)."
    moon = store.read("entity/moon")
    assert moon is not None and "concept/neap-tides" in moon.linked_from
    assert "concept/broken" not in [i.id for i in store.list()]


def test_another_store_on_the_same_folder_sees_every_change(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    first = _fill(folder)
    second = FileKnowledgeStore(folder)
    second.edit("concept/tides", "Driven", "Pulled")
    page = first.read("concept/tides")
    assert page is not None and page.content.startswith("Pulled by the")
    first.create("concept", "currents", "Currents", "Water moving.")
    assert "concept/currents" in [i.id for i in second.list()]
    assert "[Currents](concepts/currents.md)" in (folder / "index.md").read_text()


def test_a_failed_write_leaves_no_page_behind(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    topic = PageType(name="topic", dir="topics", template="<t>", index_section="Topics")
    store = FileKnowledgeStore(folder, [topic])
    store.create("concept", "tides", "Tides", "Water.")
    (folder / "topics").write_text("a file where the folder should be", encoding="utf-8")
    index_before = (folder / "index.md").read_text(encoding="utf-8")
    with pytest.raises(OSError):
        store.create_many(
            [
                NewPage("concept", "moon", "Moon", "Satellite."),
                NewPage("topic", "sea", "Sea", "Links [Moon](concept/moon)."),
            ]
        )
    assert not (folder / "concepts" / "moon.md").exists()
    assert [i.id for i in store.list()] == ["concept/tides"]
    assert (folder / "index.md").read_text(encoding="utf-8") == index_before
    assert not list(folder.rglob("*.tmp"))


def test_root_types_cannot_take_the_store_files_names(tmp_path: Path) -> None:
    note = PageType(name="note", dir="", template="<n>", index_section="Notes")
    store = FileKnowledgeStore(tmp_path / "knowledge", [note])
    for reserved in ("index", "log", "overview"):
        with pytest.raises(KnowledgeStoreError, match="reserved"):
            store.create("note", reserved, "Reserved", "x")
    assert store.create("note", "todo", "To do", "x") == "note/todo"
    assert (tmp_path / "knowledge" / "todo.md").is_file()


def test_two_types_cannot_share_a_folder(tmp_path: Path) -> None:
    clash = PageType(name="idea", dir="concepts", template="<i>", index_section="Ideas")
    with pytest.raises(KnowledgeStoreError, match="share directory"):
        FileKnowledgeStore(tmp_path, [clash])


def _index_as_rendered_in_full(store: FileKnowledgeStore) -> bytes:
    """``index.md`` as the store rendered it before it kept its lines: every page sorted anew."""
    registry = TypeRegistry()

    def link(info: PageInfo) -> str:
        page_type = registry.get(info.type)
        assert page_type is not None
        return rel_of(page_type, info.slug)

    head = frontmatter.render({"okf_version": "0.2"}, "")
    return (head + render_catalog(registry, store.list(), link)).encode("utf-8")


def test_index_md_stays_byte_for_byte_the_full_rendering_through_any_changes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "knowledge"
    stores = [FileKnowledgeStore(folder), FileKnowledgeStore(folder)]  # two writers
    rng = random.Random(12)
    ids: list[str] = []
    for step in range(240):
        store = rng.choice(stores)
        action = rng.choice(
            ["create", "create", "edit", "describe", "rewrite", "supersede", "retire"]
        )
        try:
            if action == "create" or not ids:
                page_type = rng.choice(["concept", "entity"])
                slug = f"p{step}"
                title = rng.choice(["Tides", "moon", "Écluse", "tides", "Zeta"]) + f" {step % 7}"
                store.create(page_type, slug, title, f"Body {step}.\nEND.")
                ids.append(f"{page_type}/{slug}")
            elif action == "edit":  # the body only: no index line changes
                store.edit(rng.choice(ids), "END.", f"Line {step}.\nEND.")
            elif action == "describe":
                store.edit(rng.choice(ids), "END.", "END.", {"description": f"What {step} is"})
            elif action == "rewrite":
                store.rewrite(rng.choice(ids), f"Anew {step}.\nEND.")
            elif action == "supersede":
                old, new = rng.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
                store.supersede(old, new, "newer")
            else:
                store.retire(rng.choice(ids), "gone")
        except KnowledgeStoreError:
            pass  # refused (a retired page, superseded by itself): nothing may have changed
        assert (folder / "index.md").read_bytes() == _index_as_rendered_in_full(stores[0]), step


def test_an_edit_that_changes_no_index_line_leaves_index_md_alone(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water rises.", {"description": "The sea"})
    before = (folder / "index.md").stat()
    store.edit("concept/tides", "rises", "rises twice a day")
    after = (folder / "index.md").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    store.edit("concept/tides", "twice", "twice", {"description": "The ocean"})
    assert "The ocean" in (folder / "index.md").read_text(encoding="utf-8")


def test_index_md_replaced_by_hand_is_written_again_by_the_next_change(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water rises.")
    store.create("concept", "moon", "Moon", "A satellite.")
    for spoil, old, new in (("", "rises", "rose"), ("# Mine\n", "rose", "rises")):
        (folder / "index.md").write_text(spoil, encoding="utf-8")  # in place, same inode
        store.edit("concept/tides", old, new)  # changes no index line
        assert (folder / "index.md").read_bytes() == _index_as_rendered_in_full(store)
    (folder / "index.md").unlink()
    store.edit("concept/tides", "rises", "rose")
    assert (folder / "index.md").read_bytes() == _index_as_rendered_in_full(store)
