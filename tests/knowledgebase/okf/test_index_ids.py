"""A served version's concept ids held compactly (issue 24): it answers as the dicts it replaces.

Real: ``pyarrow`` arrays for the ids (as the view loads them), bundles on disk in ``tmp_path``,
the indexer writing a Lance dataset, managers serving it, refreshing to the next version and
writing through it; a walking manager over the same bundle is the reference.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")

import pyarrow as pa  # noqa: E402

from agentkernel.knowledgebase import OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex import view as view_module  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex._ids import ConceptIds  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, Clock, concept, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex import HOSTILE, QUERIES, assert_same  # noqa: E402


def _built(
    tmp_path: Path, files: dict[str, str | bytes], *, writable: bool = False
) -> tuple[Path, LocalDocumentStore, str]:
    """A bundle on disk, its store and its index, built."""
    root = write_bundle(tmp_path / "b", files)
    store = LocalDocumentStore(root, writable=writable)
    index = str(tmp_path / "kb.lance")
    index_bundle(store, index)
    return root, store, index


def _loaded(held: dict[str, str]) -> ConceptIds:
    ids = ConceptIds()
    names = list(held)
    directories = [name.rpartition("/")[0] for name in names]
    ids.load(pa.array(names), pa.array(directories), pa.array([held[n] for n in names]))
    return ids


def test_the_ids_answer_as_a_dict_through_adds_and_removes() -> None:
    rng = random.Random(7)
    folders = ["", "a", "a/b", "é/ü", "z"]
    reference = {
        f"{rng.choice(folders)}/{rng.randrange(10_000)}x".lstrip("/"): rng.choice(["T", "M", ""])
        for _ in range(3000)
    }
    ids = _loaded(reference)
    assert ids.type_counts() == {
        t: sum(1 for v in reference.values() if v == t) for t in set(reference.values())
    }
    for step in range(2000):
        cid = rng.choice(list(reference)) if step % 2 else f"{rng.choice(folders)}/n{step}"
        if step % 3 == 0:
            assert ids.remove(cid) == reference.pop(cid, None)
        else:
            reference[cid] = f"T{step % 4}"
            ids.remove(cid)  # as the view does: forget, then add
            ids.add(cid, reference[cid])
    assert len(ids) == len(reference)
    assert sorted(ids) == sorted(reference)
    assert all(ids.type_of(cid) == kind and cid in ids for cid, kind in reference.items())
    assert "nowhere/none" not in ids and ids.type_of("nowhere/none") is None
    assert 7 not in ids  # not a string: not held
    for folder in folders:
        in_folder = sorted(c for c in reference if c.rpartition("/")[0] == folder)
        added = set(ids._added)
        assert sorted({*ids.loaded_in(folder), *(c for c in added if c in in_folder)}) == (
            in_folder
        )
        assert ids.loaded_in(folder) == sorted(ids.loaded_in(folder))


def test_an_empty_version_holds_no_id() -> None:
    ids = ConceptIds()
    empty = pa.array([], pa.string())
    assert ids.load(empty, empty, empty) == {}
    assert len(ids) == 0 and list(ids) == [] and "a" not in ids and ids.loaded_in("") == []
    ids.add("a", "T")
    assert list(ids) == ["a"] and ids.type_of("a") == "T"


def test_ids_loaded_in_batches_with_odd_paths_are_served_as_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two rows a batch: plain batches are loaded in bulk, a batch with an odd path
    # (upper-case suffix, ...) one path at a time, both in one view
    monkeypatch.setattr(view_module, "_LOAD_BATCH", 2)
    _, store, index = _built(tmp_path, HOSTILE)
    walked = OKFManager(store, refresh_seconds=None, name="OKF", clock=Clock())
    indexed = OKFManager(store, index=index, refresh_seconds=None, name="OKF", clock=Clock())
    assert_same(walked, indexed)
    assert indexed._served._ids._added  # both ways were taken
    assert len(indexed._served._ids) > len(indexed._served._ids._added)


def _tree(kb: OKFManager) -> dict[str, object]:
    """Everything a served tree answers, directory by directory."""
    served = kb._served
    found: dict[str, object] = {
        "paths": sorted(served.paths()),
        "tokens": served.tokens(),
        "concepts": sorted(served.concepts),
        "count": len(served.concepts),
        "types": kb._types(),
    }
    directories = [""]
    while directories:
        directory = directories.pop()
        children = served.children(directory)
        found[directory] = (children, served.concepts_under(directory))
        directories += children.directories
    return found


def test_a_view_after_a_switch_answers_like_a_freshly_opened_one(tmp_path: Path) -> None:
    root, store, index = _built(tmp_path, HOSTILE)
    clock = Clock()
    pod = OKFManager(store, index=index, refresh_seconds=60, name="OKF", clock=clock)
    assert pod.search("orders", 3)
    (root / "notes/new/deeper").mkdir(parents=True)
    (root / "notes/new/deeper/fresh.md").write_text(concept("Note", "Fresh orders note"))
    (root / "tables/orders.md").write_text(concept("Table", "Orders v2", "Every order placed"))
    (root / "notes/deep/er/leaf.md").unlink()
    index_bundle(store, index)
    clock.advance(61)
    assert pod.search("fresh orders note", 1)[0]["metadata"]["id"] == "notes/new/deeper/fresh"
    fresh = OKFManager(store, index=index, refresh_seconds=None, name="OKF", clock=clock)
    assert pod.schema()["index"] == fresh.schema()["index"]
    assert _tree(pod) == _tree(fresh)
    for query in QUERIES:
        assert pod.search(query, 10) == fresh.search(query, 10), query
    assert_same(OKFManager(store, refresh_seconds=None, name="OKF", clock=clock), pod)


def test_a_write_through_replacing_a_loaded_concept_is_served_as_walked(tmp_path: Path) -> None:
    _, store, index = _built(tmp_path, SMALL_BUNDLE, writable=True)
    writer = OKFManager(store, index=index, refresh_seconds=None, name="OKF")
    text = concept("Table", "Orders rewritten", "Every order, rewritten")
    assert writer.write([{"text": text, "metadata": {"id": "tables/orders"}}]) == ["tables/orders"]
    [new] = writer.write([{"text": "Shipping zones\nWhere parcels go.", "metadata": {}}])
    token = {f.path: f.token for f in store.walk("")}["tables/orders.md"]
    assert writer._served.token_of("tables/orders.md") == token
    assert writer.search("orders rewritten", 1)[0]["metadata"]["id"] == "tables/orders"
    walked = OKFManager(store, refresh_seconds=None, name="OKF")
    assert_same(walked, writer)
    fresh = OKFManager(store, index=index, refresh_seconds=None, name="OKF")
    fresh.reload()  # the newest version (a write-through leaves it to the indexer to fold)
    assert_same(walked, fresh)
    assert _tree(writer) == _tree(fresh)
    assert new in writer._served.concepts


def test_loading_the_ids_takes_nothing_from_arrows_default_pool(tmp_path: Path) -> None:
    # pyarrow's default pool (jemalloc where built with it) would keep the load's pages for
    # the life of the process; the load allocates from the C allocator instead
    long = "a_concept_with_a_rather_long_name_to_fill_the_arrays"
    files: dict[str, str | bytes] = {
        f"notes/n{i // 500}/{long}_{i}.md": concept("Note", f"Note {i}") for i in range(2000)
    }
    _, store, index = _built(tmp_path, files)
    watched = pa.proxy_memory_pool(pa.default_memory_pool())
    previous = pa.default_memory_pool()
    pa.set_memory_pool(watched)
    try:
        kb = OKFManager(store, index=index, refresh_seconds=None)
    finally:
        pa.set_memory_pool(previous)
    assert len(kb._served.concepts) == 2000
    assert watched.max_memory() < 16 << 10  # the ids alone are over 100 KB
