"""The stores' in-memory catalog: kept current across processes, equal to a rebuild, ranked.

Real: every test uses real stores on real files in a temporary folder (a markdown folder, or a
SQLite database file), or a real PostgreSQL 15 server on 127.0.0.1 (a schema per test);
"another process" is a real Python subprocess writing through its own
store, and "a person" edits the files directly. No mocks.
"""

from __future__ import annotations

import contextlib
import random
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentkernel.bundle import listing
from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStore,
    KnowledgeStoreError,
    NewPage,
    SQLiteKnowledgeStore,
    create_knowledge_tools,
)
from agentkernel.knowledgestore._bundle import dangling_file_links, file_link_targets
from agentkernel.knowledgestore._catalog import IndexLines, render_catalog
from agentkernel.knowledgestore._pages import TypeRegistry
from agentkernel.knowledgestore.model import PageInfo, linked_ids
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.knowledgestore.postgres_store import (
    PostgreSQLKnowledgeStore,
    PostgreSQLPageBackend,
)
from tests.support import REPO

ROOT = REPO

Factory = Callable[[], KnowledgeStore]


@pytest.fixture(params=["file", "sqlite", "postgresql"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _open(kind: str, path: str) -> KnowledgeStore:
    if kind == "file":
        return FileKnowledgeStore(path)
    if kind == "postgresql":
        return PostgreSQLKnowledgeStore(path)
    return SQLiteKnowledgeStore(path)


@pytest.fixture
def make(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Factory]:
    """Open a new store object on the same folder or database each time it is called."""
    opened: list[KnowledgeStore] = []
    path = str(tmp_path / ("knowledge" if kind == "file" else "knowledge.db"))
    if kind == "postgresql":
        path = request.getfixturevalue("postgres_server").schema_url(f"t{uuid.uuid4().hex[:12]}")

    def factory() -> KnowledgeStore:
        store = _open(kind, path)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def _tool(store: KnowledgeStore, name: str) -> Callable[..., str]:
    return next(t for t in create_knowledge_tools(store) if t.__name__ == name)


def _store_path(store: KnowledgeStore) -> str:
    if isinstance(store, FileKnowledgeStore):
        return str(store.knowledge_dir)
    if isinstance(store, PostgreSQLKnowledgeStore):
        backend = store.backend
        assert isinstance(backend, PostgreSQLPageBackend)
        return backend.url
    assert isinstance(store, SQLiteKnowledgeStore)
    return store.path


def _kind(store: KnowledgeStore) -> str:
    if isinstance(store, FileKnowledgeStore):
        return "file"
    return "postgresql" if isinstance(store, PostgreSQLKnowledgeStore) else "sqlite"


def _in_another_process(store: KnowledgeStore, code: str) -> None:
    """Run ``code`` in a fresh Python process, with ``store`` opened there as ``other``."""
    prelude = f"""
        from tests.knowledgestore.test_catalog import _open
        other = _open({_kind(store)!r}, {_store_path(store)!r})
    """
    script = textwrap.dedent(prelude) + textwrap.dedent(code) + "\nother.close()\n"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_another_process_create_and_edit_show_up(make: Factory) -> None:
    store = make()
    store.create("concept", "tides", "Tides", "Water rises twice a day.")
    assert [h.id for h in store.search("tides")] == ["concept/tides"]  # the catalog is loaded
    _in_another_process(
        store,
        """
        other.create("concept", "moon", "Moon", "It pulls the [tides](concept/tides).")
        other.edit("concept/tides", "twice a day", "twice a lunar day")
        """,
    )
    assert [i.id for i in store.list()] == ["concept/moon", "concept/tides"]
    tides = store.read("concept/tides")
    assert tides is not None
    assert tides.content == "Water rises twice a lunar day."
    assert tides.linked_from == ["concept/moon"]
    assert [h.id for h in store.search("pulls")] == ["concept/moon"]
    assert [h.id for h in store.search("lunar")] == ["concept/tides"]
    assert "(concept/moon)" in store.index()
    assert store.check().orphans == ["concept/moon"]


def test_another_process_supersede_shows_up(make: Factory) -> None:
    store = make()
    store.create("concept", "old-margin", "Gross margin (old)", "Revenue less cost of goods.")
    store.create("concept", "margin", "Gross margin", "Revenue less cost of goods sold.")
    assert store.search("revenue")[0].status == "active"
    _in_another_process(store, 'other.supersede("concept/old-margin", "concept/margin")\n')
    hits = {h.id: h for h in store.search("revenue cost")}
    assert hits["concept/old-margin"].status == "superseded"
    assert "(superseded by concept/margin)" in store.index()


def _person_edits(store: KnowledgeStore) -> None:
    """Change the store behind its back, the way a person would."""
    if isinstance(store, FileKnowledgeStore):
        folder = store.knowledge_dir
        (folder / "concepts" / "neap.md").write_text(
            "---\ntype: concept\ntitle: Neap tides\n---\n\n"
            "Weak tides near the [Moon](/entities/moon.md).\n",
            encoding="utf-8",
        )
        (folder / "concepts" / "waves.md").unlink()
    else:
        with _behind(store) as db:
            db.execute("DELETE FROM pages WHERE id = 'concept/waves'")
            db.execute("UPDATE pages SET content = 'Weak tides.' WHERE id = 'concept/spring'")


class _Behind:
    """Another tool's connection to a store's database (SQLite's ``?`` marks, on either)."""

    def __init__(self, store: KnowledgeStore) -> None:
        self._pg = isinstance(store, PostgreSQLKnowledgeStore)
        if self._pg:
            import psycopg

            self._conn: Any = psycopg.connect(_store_path(store), autocommit=True)
        else:
            assert isinstance(store, SQLiteKnowledgeStore)
            self._conn = sqlite3.connect(store.path, isolation_level=None)

    def execute(self, statement: str, values: tuple[object, ...] = ()) -> None:
        self._conn.execute(statement.replace("?", "%s") if self._pg else statement, values)


@contextlib.contextmanager
def _behind(store: KnowledgeStore) -> Iterator[_Behind]:
    db = _Behind(store)
    try:
        yield db
    finally:
        db._conn.close()


def _state(store: KnowledgeStore) -> dict[str, object]:
    queries = ["tides", "moon water", "how do tides work?", "wave", "spring", "gone"]
    state: dict[str, object] = {
        "list": store.list(),
        "index": store.index(),
        "check": store.check().to_dict(),
        "search": {
            q: [(h.id, round(h.score, 9), h.snippet, h.status) for h in store.search(q)]
            for q in queries
        },
    }
    for info in store.list():
        state[info.id] = store.read(info.id)
    return state


def test_the_incremental_catalog_equals_a_rebuild(make: Factory) -> None:
    store = make()
    store.create_many(
        [
            NewPage("entity", "moon", "Moon", "Earth's satellite. It pulls the water."),
            NewPage("concept", "tides", "Tides", "Water pulled by the [Moon](entity/moon)."),
            NewPage("concept", "waves", "Waves", "Wind on water, not [tides](concept/tides)."),
            NewPage(
                "concept",
                "spring",
                "Spring tides",
                "Big [tides](concept/tides).",
                {"aliases": "king tides"},
            ),
            NewPage("concept", "gone", "Gone", "A page to retire."),
        ]
    )
    store.read("concept/tides")  # loads the catalog before the changes below
    store.edit("concept/tides", "Water pulled", "Sea water pulled")
    store.rewrite(
        "concept/spring",
        "The biggest [tides](concept/tides) of the month.",
        {"aliases": "king tides, perigean"},
    )
    store.create(
        "concept", "tides-2", "Tides explained", "How the [Moon](entity/moon) lifts water."
    )
    store.supersede("concept/tides", "concept/tides-2", "clearer")
    store.retire("concept/gone", "Made up")
    store.write_overview("Start at [Tides explained](concept/tides-2).")
    _person_edits(store)
    incremental = _state(store)
    rebuilt = _state(make())
    assert incremental == rebuilt
    assert "concept/gone" not in incremental["index"]  # type: ignore[operator]


def test_index_md_on_disk_follows_every_change(tmp_path: Path) -> None:
    store = FileKnowledgeStore(tmp_path / "k")
    store.create("entity", "moon", "Moon", "Satellite.")
    store.create("concept", "tides", "Tides", "Pulled by the [Moon](entity/moon).")
    store.read("entity/moon")
    store.edit("concept/tides", "Pulled", "Lifted", {"title": "Ocean tides"})
    store.create("concept", "neap", "Neap tides", "Weak [tides](concept/tides).")
    store.supersede("concept/neap", "concept/tides")
    on_disk = (tmp_path / "k" / "index.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    as_ids = re.sub(
        r"\]\((\w+)/([a-z0-9-]+)\.md\)", lambda m: f"]({_type_of(m[1])}/{m[2]})", on_disk
    )
    assert as_ids.strip() == FileKnowledgeStore(tmp_path / "k").index().strip()
    assert "* [Ocean tides](concept/tides)" in as_ids


def _type_of(folder: str) -> str:
    return {"concepts": "concept", "entities": "entity"}[folder]


def test_a_page_whose_title_is_the_query_ranks_first(make: Factory) -> None:
    store = make()
    pages = [
        NewPage(
            "concept",
            f"batch-{n}",
            f"Batch {n}",
            "Roast yield, roast yield: the roast yield of this batch was low. " * 3,
        )
        for n in range(8)
    ]
    pages.append(NewPage("concept", "roast-yield", "Roast yield", "Weight out over weight in."))
    store.create_many(pages)
    for query in ("roast yield", "Roast yields", "what is the roast yield?"):
        assert store.search(query, 3)[0].id == "concept/roast-yield", query
    hits = store.search("roast yield")
    assert hits[0].score > hits[1].score


def test_superseded_ranks_below_current_but_is_found(make: Factory) -> None:
    store = make()
    body = "Gross margin is revenue less the cost of goods sold, over revenue."
    store.create("concept", "margin-2019", "Gross margin", body)
    store.create("concept", "margin-current", "Gross margin", body)
    store.supersede("concept/margin-2019", "concept/margin-current", "new cost rules")
    hits = store.search("how is gross margin computed?")
    assert [h.id for h in hits] == ["concept/margin-current", "concept/margin-2019"]
    assert [h.status for h in hits] == ["active", "superseded"]
    assert hits[0].score > hits[1].score
    legacy = store.search("legacy gross margin definition", 5)
    assert "concept/margin-2019" in [h.id for h in legacy]
    tool = _tool(store, "knowledge_search")
    lines = tool("gross margin").splitlines()
    assert lines[0].startswith("- concept/margin-current — Gross margin: ")
    assert lines[1].startswith(
        "- concept/margin-2019 — Gross margin (superseded by concept/margin-current): "
    )


def test_retired_pages_leave_search_but_keep_their_status(make: Factory) -> None:
    store = make()
    store.create("concept", "margin", "Gross margin", "Revenue less cost.")
    store.create("concept", "margin-wrong", "Gross margin (wrong)", "Revenue plus cost.")
    store.retire("concept/margin-wrong", "Copied from a wrong table")
    assert [h.id for h in store.search("gross margin revenue")] == ["concept/margin"]
    retired = store.read("concept/margin-wrong")
    assert retired is not None and retired.status == "retired"
    read = _tool(store, "knowledge_read")("concept/margin-wrong")
    assert "status: retired" in read


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x" * 1_048_576, "characters"),
        (b"\x00\x01binary", "must be text"),
        ("tides\x00\x01\x02", "binary"),
    ],
)
def test_bad_queries_get_a_clear_message(make: Factory, query: object, message: str) -> None:
    store = make()
    store.create("concept", "tides", "Tides", "Water.")
    with pytest.raises(KnowledgeStoreError, match=message):
        store.search(query, 5)  # type: ignore[arg-type]
    answer = _tool(store, "knowledge_search")(query)
    assert message in answer
    assert [h.id for h in store.search("tides")] == ["concept/tides"]  # nothing broke


def test_an_empty_query_finds_nothing_and_the_tool_says_what_to_give(make: Factory) -> None:
    store = make()
    store.create("concept", "tides", "Tides", "Water.")
    assert store.search("") == [] and store.search("   \n") == []
    assert "Give some words" in _tool(store, "knowledge_search")("  ")


def test_index_lines_kept_page_by_page_equal_a_full_render() -> None:
    registry = TypeRegistry()
    kept = IndexLines(registry, lambda info: info.id)
    pages: dict[str, PageInfo] = {}
    rng = random.Random(7)
    statuses = ["active", "active", "superseded", "retired"]
    for step in range(3000):
        n = rng.randrange(1500)
        page_type = rng.choice(["concept", "entity"])
        page_id = f"{page_type}/p{n}"
        if rng.random() < 0.2:
            kept.drop(page_id)
            pages.pop(page_id, None)
            continue
        title = rng.choice(["Tides", "moon", "Écluse", "tides"]) + f" {rng.randrange(50)}"
        fields = {"superseded_by": "concept/p1"} if step % 5 == 0 else {}
        info = PageInfo(page_id, page_type, f"p{n}", title, "d", rng.choice(statuses), fields)
        version = kept.version
        before = kept.render() if step % 97 == 0 and step > 1000 else None
        kept.put(info)
        pages[page_id] = info
        if before is not None:  # the version moves exactly when the rendering does
            assert (kept.render() != before) == (kept.version != version)
        if step in (1000, 2000):  # the first render lays out ~700 pages at once
            assert kept.render() == render_catalog(registry, pages.values(), lambda i: i.id)
    assert kept.render() == render_catalog(registry, pages.values(), lambda i: i.id)


def test_index_lines_move_their_version_only_when_the_index_changes() -> None:
    kept = IndexLines(TypeRegistry(), lambda info: info.id)
    tides = PageInfo("concept/tides", "concept", "tides", "Tides", "The sea", "active", {})
    kept.put(tides)
    kept.render()
    version = kept.version
    kept.put(tides)  # again, unchanged (a body edit)
    assert kept.version == version
    kept.put(PageInfo("concept/tides", "concept", "tides", "Tides", "The ocean", "active", {}))
    assert kept.version > version and "The ocean" in kept.render()
    version = kept.version
    kept.drop("concept/moon")  # not there
    assert kept.version == version
    kept.drop("concept/tides")
    assert kept.version > version and kept.render() == ""


def test_a_row_changed_by_another_tool_shows_up(tmp_path: Path) -> None:
    store = SQLiteKnowledgeStore(tmp_path / "k.db")
    store.create("concept", "tides", "Tides", "Water rises.")
    store.create("concept", "moon", "Moon", "A satellite.")
    assert store.search("satellite")[0].id == "concept/moon"
    with sqlite3.connect(store.path) as db:  # no revision given: the store's trigger adds one
        db.execute("UPDATE pages SET content = 'A rock in orbit.' WHERE id = 'concept/moon'")
    assert store.search("satellite") == []
    assert [h.id for h in store.search("orbit")] == ["concept/moon"]
    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT INTO pages (id, type, slug, title, fields, content, status, description) "
            "VALUES ('concept/neap', 'concept', 'neap', 'Neap', '{}', 'Weak tides.', 'active', '')"
        )
    assert [h.id for h in store.search("weak")] == ["concept/neap"]
    store.close()


def test_a_row_replaced_by_hand_shows_up_even_when_it_was_the_newest(tmp_path: Path) -> None:
    store = SQLiteKnowledgeStore(tmp_path / "k.db")
    store.create("concept", "tides", "Tides", "Water rises.")
    store.create("concept", "moon", "Moon", "A satellite.")  # the newest revision
    assert store.check().broken_links == []
    # a deleted row's revision is never handed out again: the new row is not mistaken for it
    _by_hand(store, "moon", "A rock near [Mars](concept/mars).")
    assert [h.id for h in store.search("rock")] == ["concept/moon"]
    assert store.check().broken_links[0].target == "concept/mars"
    store.create("concept", "mars", "Mars", "A planet.")
    assert store.check().broken_links == []
    store.close()


def test_a_file_edited_in_place_shows_up_in_read_and_after_check(tmp_path: Path) -> None:
    store = FileKnowledgeStore(tmp_path / "k")
    store.create("concept", "tides", "Tides", "Water rises.")
    assert [h.id for h in store.search("water")] == ["concept/tides"]
    page = tmp_path / "k" / "concepts" / "tides.md"
    inode = page.stat().st_ino
    with page.open("r+", encoding="utf-8") as handle:  # the same file, not a rename
        text = handle.read().replace("Water rises.", "Seas swell.")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    assert page.stat().st_ino == inode
    read = store.read("concept/tides")
    assert read is not None and read.content == "Seas swell."
    assert [h.id for h in store.search("seas")] == ["concept/tides"]
    assert store.search("water") == []


def test_check_sees_an_in_place_edit_at_the_next_full_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check()`` compares only moved folders; an in-place edit waits for the timed sweep."""
    store = FileKnowledgeStore(tmp_path / "k")
    store.create("concept", "tides", "Tides", "Water rises.")
    assert store.check().broken_links == []
    page = tmp_path / "k" / "concepts" / "tides.md"
    with page.open("r+", encoding="utf-8") as handle:  # the same file: no folder token moves
        text = handle.read().replace("Water rises.", "See [Mars](/concepts/mars.md).")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    assert store.check().broken_links == []  # no folder moved: the file is not compared yet
    later = time.monotonic() + 2 * listing.FULL_SWEEP_SECONDS
    monkeypatch.setattr(
        listing, "time", SimpleNamespace(monotonic=lambda: later, time_ns=time.time_ns)
    )
    assert [(b.page, b.target) for b in store.check().broken_links] == [
        ("concept/tides", "concept/mars")
    ]


def _check(store: KnowledgeStore) -> dict[str, object]:
    return store.check().to_dict()


def _full_check(store: KnowledgeStore) -> dict[str, object]:
    """The report worked out from every page afresh, from the live store's own catalog."""
    assert isinstance(store, PagesStore)
    catalog = store._catalog
    backend = store.backend
    overview = store.overview()
    report = catalog.check(
        linked_ids(overview),
        lambda entry: file_link_targets(entry.content, backend.file_of(entry.info.id)),
        backend.is_listing,
        dangling_file_links(overview, backend.file_of("overview"), backend.is_listing),
        afresh=True,
    )
    return report.to_dict()  # type: ignore[no-any-return]


def _by_hand(store: KnowledgeStore, slug: str, content: str | None) -> None:
    """Write (or with ``None`` delete) the page ``concept/<slug>`` behind the store's back."""
    if isinstance(store, FileKnowledgeStore):
        page = store.knowledge_dir / "concepts" / f"{slug}.md"
        if content is None:
            page.unlink(missing_ok=True)
        else:
            disk = re.sub(r"\]\(concept/([a-z]+)\)", r"](/concepts/\1.md)", content)
            # saved the way editors and tools save safely (a rename), which moves the folder's
            # token; an edit in place waits for the timed sweep (the test above)
            temp = page.with_name(f"{slug}.draft")
            temp.write_text(f"---\ntype: concept\ntitle: {slug}\n---\n\n{disk}\n", "utf-8")
            temp.replace(page)
        return
    with _behind(store) as db:
        db.execute("DELETE FROM pages WHERE id = ?", (f"concept/{slug}",))
        if content is not None:
            db.execute(
                "INSERT INTO pages (id, type, slug, title, fields, content, status, description)"
                " VALUES (?, 'concept', ?, ?, '{}', ?, 'active', '')",
                (f"concept/{slug}", slug, slug, content),
            )


def test_check_follows_another_process_and_a_person(make: Factory) -> None:
    store = make()
    store.create("concept", "tides", "Tides", "Water rises.")
    store.create("concept", "moon", "Moon", "It pulls the [tides](concept/tides).")
    assert _check(store)["orphans"] == ["concept/moon"]
    _in_another_process(
        store,
        """
        other.create("concept", "neap", "Neap", "Weak [tides](concept/tides).")
        other.retire("concept/tides", "merged into neap")
        """,
    )
    report = _check(store)
    assert report["links_to_retired"] == [
        {"page": "concept/moon", "target": "concept/tides"},
        {"page": "concept/neap", "target": "concept/tides"},
    ]
    assert report["orphans"] == ["concept/moon", "concept/neap"]
    _by_hand(store, "neap", "See [moon](concept/moon) and [notes](notes/a.md).")
    _by_hand(store, "tides", None)  # deleted: moon's link is now broken
    report = _check(store)
    assert report == _full_check(store) == _check(make())
    assert {"page": "concept/moon", "target": "concept/tides"} in report["broken_links"]  # type: ignore[operator]
    assert {"page": "concept/neap", "target": "notes/a.md"} in report["broken_links"]  # type: ignore[operator]
    assert report["orphans"] == ["concept/neap"]
    _in_another_process(store, 'other.edit("concept/moon", "[tides](concept/tides)", "tides")\n')
    _by_hand(store, "neap", "See [moon](concept/moon).")
    report = _check(store)
    assert report == {"broken_links": [], "orphans": ["concept/neap"], "links_to_retired": []}


@pytest.mark.parametrize("seed", [12, 7])
def test_check_kept_page_by_page_equals_a_full_and_a_cold_check(make: Factory, seed: int) -> None:
    rng = random.Random(seed)
    store = make()
    slugs = ["tides", "moon", "neap", "spring", "waves", "wind", "sun", "sea"]
    store.create("concept", "tides", "Tides", "Water rises.")
    for step in range(60):
        live = sorted(i.slug for i in store.list() if i.status != "retired")
        links = " ".join(f"[{s}](concept/{s})" for s in rng.sample(slugs, rng.randint(0, 3)))
        extra = rng.choice(["", " [n](notes/a.md)", " [i](/index.md)", " [l](../log.md)"])
        action = rng.choice(["hand", "hand", "delete", "create", "retire", "overview"])
        slug = rng.choice(slugs)
        if action == "hand":
            _by_hand(store, slug, f"Step {step}: {links}{extra}")
        elif action == "delete":
            _by_hand(store, slug, None)
        elif action == "create" and live and store.read(f"concept/{slug}") is None:
            store.create("concept", slug, slug.title(), f"About [{live[0]}](concept/{live[0]}).")
        elif action == "retire" and live:
            store.retire(f"concept/{rng.choice(live)}", "step")
        elif action == "overview" and live:
            try:
                store.write_overview(f"Start at [{live[-1]}](concept/{live[-1]}).{extra}")
            except KnowledgeStoreError as refused:  # a file link to no page: as check says
                assert extra and extra.split("(")[1].rstrip(")") in str(refused)
        report = _check(store)
        assert report == _full_check(store) == _check(make()), step


def test_a_quoted_line_finds_the_page_that_says_it(make: Factory) -> None:
    store = make()
    pages = [
        NewPage("concept", "apart", "Apart", "language haskell the programming of language"),
        NewPage("concept", "ordered", "Ordered", "a library for the Haskell programming language"),
    ]
    pages += [NewPage("concept", f"n{i}", f"N {i}", f"unrelated note {i}") for i in range(20)]
    store.create_many(pages)
    # BM25 alone ranks "apart" first (more of the words, a shorter text): the order decides
    assert store.search("the Haskell programming language", 1)[0].id == "concept/ordered"
    assert store.search("haskell language", 1)[0].id == "concept/apart"
