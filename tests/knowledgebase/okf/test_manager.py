"""OKFManager on temporary bundles in real directories, through the real LocalDocumentStore.

Everything here is real: files on disk, the store that reads them, the manager, the tool
layer. The clock is injected so refresh boundaries and staleness are decided by the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.knowledgebase.errors import (
    KnowledgeCapabilityError,
    KnowledgeError,
    KnowledgePathError,
)
from agentkernel.knowledgebase.testing import assert_backend_contract
from agentkernel.storage import frontmatter
from agentkernel.storage.base import DocumentStore, StoredFile, clean_path
from agentkernel.storage.local import LocalDocumentStore
from tests.knowledgebase.okf.helpers import (
    SMALL_BUNDLE,
    Clock,
    CountingStore,
    concept,
    write_bundle,
)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "bundle", SMALL_BUNDLE)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def manager(root: Path, clock: Clock, writable: bool = True, **kwargs: object) -> OKFManager:
    return OKFManager(
        LocalDocumentStore(root, writable=writable), name="OKF", clock=clock, **kwargs
    )


def ids(rows: list) -> list[str]:  # type: ignore[type-arg]
    return [r["metadata"]["id"] for r in rows]


# -- loading, schema, description ----------------------------------------------------------


def test_walk_loads_concepts_and_keeps_reserved_files_out(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    schema = kb.schema()
    assert schema["concepts"] == 4
    assert schema["types"] == {"BigQuery Table": 2, "Playbook": 1, "Metric": 1}
    assert schema["namespaces"] == ["metrics", "playbooks", "tables"]
    assert schema["reserved_files"] == ["index.md", "log.md"]
    assert schema["okf_version"] == "0.2"
    assert schema["diagnostics"] == 0
    assert schema["truncated"] is False
    keys = list(schema)
    assert keys[0] == "backend" and keys[-1] == "capabilities"
    json.dumps(schema)
    assert kb.fetch(["index"])[0]["metadata"]["kind"] == "index"
    assert kb.search("Log started creation", 5) == []


def test_declares_document_search_fetch_browse_and_folds_writability(
    bundle: Path, clock: Clock
) -> None:
    writable = manager(bundle, clock, writable=True)
    caps = writable.capabilities
    assert caps.kinds == ["document"]
    assert (caps.search, caps.search_mode, caps.fetch, caps.browse) == (True, "lexical", True, True)
    assert caps.writable and caps.derives_schema
    read_only = manager(bundle, clock, writable=False)
    assert read_only.capabilities.writable is False
    with pytest.raises(KnowledgeCapabilityError):
        read_only.write([{"text": "x", "metadata": {}}])


def test_trust_and_stale_are_on_every_record_and_never_filter(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    rows = {
        r["metadata"]["id"]: r["metadata"]
        for r in kb.search("orders customer revenue freshness alert", 10)
    }
    assert rows["tables/orders"]["trust"] == "human-reviewed"  # bare mapping = one-item list
    assert rows["tables/customers"]["trust"] == "machine-confirmed"
    assert rows["playbooks/freshness"]["trust"] == "unverified"
    assert rows["playbooks/freshness"]["stale"] is True  # an instant with an offset, past
    assert rows["metrics/revenue"]["stale"] is False  # a bare date: ignored (OKF 0.2 §5)
    clock.now += 400 * 86400  # 2027-07: past the bare date, which still decides nothing
    assert kb.fetch(["metrics/revenue"])[0]["metadata"]["stale"] is False
    legacy = manager(bundle, clock, legacy_dates=True)  # the operator reads it as midnight UTC
    assert legacy.fetch(["metrics/revenue"])[0]["metadata"]["stale"] is True
    assert legacy.search("revenue fiscal year", 1)[0]["metadata"]["stale"] is True
    assert legacy.browse("metrics/revenue")[0]["metadata"]["stale"] is True
    assert [r["metadata"]["stale"] for r in legacy.browse("metrics/")] == [True]


def test_timestamps_are_kept_as_written(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    record = kb.fetch(["tables/orders"])[0]
    verified = record["metadata"]["frontmatter"]["verified"]
    assert verified["at"] == "2026-05-02T10:00:00Z"
    assert record["text"] == (bundle / "tables/orders.md").read_text()


def test_description_and_schema_surface_diagnostics(tmp_path: Path, clock: Clock) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "good.md": concept("Note", "Good"),
            "bad.md": "no frontmatter here\n",
        },
    )
    kb = manager(root, clock)
    assert kb.schema()["diagnostics"] == 1
    description = kb.get_description()
    assert "1 diagnostic" in description and "bad.md" in description
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    assert "bad.md" in tools["get_all_kb_descriptions"]()


# -- search, browse, fetch --------------------------------------------------------------


def test_search_ranks_with_field_weights(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    assert ids(kb.search("freshness", 1)) == ["playbooks/freshness"]
    assert ids(kb.search("customer account", 1)) == ["tables/customers"]
    assert ids(kb.search("sales", 1)) == ["tables/orders"]  # a tag
    assert ids(kb.search("playbook", 1)) == ["playbooks/freshness"]  # the type
    assert kb.search("zebra unicorn", 3) == []
    assert len(kb.search("one row", 1)) == 1


def test_browse_returns_index_verbatim_else_a_derived_listing(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    root = kb.browse("")
    assert len(root) == 1
    assert root[0]["text"] == (bundle / "index.md").read_text()
    assert kb.browse("/") == root
    listing = kb.browse("tables")
    assert ids(listing) == ["tables/customers", "tables/orders"]
    assert listing[1]["metadata"]["title"] == "Customer Orders"
    assert listing[1]["text"] == "One row per completed customer order."
    assert kb.browse("tables/") == listing
    assert kb.browse("nowhere") == []
    assert ids(kb.browse("tables/orders")) == ["tables/orders"]
    assert ids(kb.browse("tables", limit=1)) == ["tables/customers"]


def test_derived_listing_shows_subdirectories_first(tmp_path: Path, clock: Clock) -> None:
    root = write_bundle(
        tmp_path / "b",
        {"a.md": concept(title="A"), "sub/b.md": concept(title="B"), "sub/deep/c.md": concept()},
    )
    kb = manager(root, clock)
    rows = kb.browse("")
    assert ids(rows) == ["sub/", "a"]
    assert rows[0]["metadata"]["concepts"] == 2
    assert ids(kb.fetch(["sub/"])) == ["sub/"]
    assert "[sub/b]" in kb.fetch(["sub/"])[0]["text"]


def test_fetch_reads_whole_document_and_resolves_links(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle, writable=False)
    kb = OKFManager(store, name="OKF", clock=clock)
    before = store.calls["read"]
    record = kb.fetch(["tables/orders"])[0]
    assert store.calls["read"] == before + 1
    metadata = record["metadata"]
    assert metadata["links"] == ["tables/customers", "playbooks/freshness", "metrics/revenue"]
    assert metadata["broken_links"] == ["tables/missing"]
    assert ids(kb.fetch(["/tables/orders.md", "missing", "log"])) == ["tables/orders", "log"]
    assert kb.fetch(["tables/orders"])[0]["metadata"]["title"] == "Customer Orders"


def test_search_and_browse_never_read_documents(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle, writable=False)
    kb = OKFManager(store, name="OKF", clock=clock)
    reads = store.reads()
    kb.search("orders", 3)
    kb.browse("tables")
    kb.browse("")  # the root index.md was cached by the walk
    kb.schema()
    assert store.reads() == reads


def test_unsafe_ids_and_paths_are_refused(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    for bad in ("../etc/passwd", "tables/../../x", "a\\b", "a\x00b"):
        with pytest.raises(KnowledgePathError):
            kb.fetch([bad])
        with pytest.raises(KnowledgePathError):
            kb.browse(bad)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    assert "Error from backend 'OKF'" in tools["fetch_kb"]("OKF", "../../etc/passwd")


def test_tools_show_id_title_type_trust_and_stale(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    assert list(tools) == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    found = tools["search_kb"]("OKF", "freshness alert", 1)
    assert found.startswith("- [playbooks/freshness] Freshness alert (Playbook; unverified; STALE)")
    fetched = tools["fetch_kb"]("OKF", "playbooks/freshness")
    assert fetched.startswith("[playbooks/freshness] Freshness alert (Playbook; unverified; STALE)")
    assert "rerun the loader" in fetched


# -- refresh ------------------------------------------------------------------------


def test_operations_between_boundaries_cost_no_store_calls(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle)
    kb = OKFManager(store, name="OKF", clock=clock, refresh_seconds=300)
    assert store.calls["walk"] == 1
    calls = dict(store.calls)
    clock.advance(299)
    kb.search("orders")
    kb.browse("tables")
    kb.get_description()
    assert dict(store.calls) == calls
    clock.advance(1)
    kb.search("orders")
    assert store.calls["walk"] == 2


def test_unchanged_refresh_reads_nothing(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle)
    kb = OKFManager(store, name="OKF", clock=clock)
    reads = store.reads()
    stats = kb.reload()
    assert store.reads() == reads
    assert (stats.reads, stats.changed, stats.dropped) == (0, 0, 0)


def test_refresh_rereads_only_changed_and_drops_deleted(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle)
    kb = OKFManager(store, name="OKF", clock=clock, refresh_seconds=60)
    (bundle / "tables/customers.md").write_text(concept("BigQuery Table", "Clients", "Renamed."))
    os.utime(bundle / "tables/customers.md", ns=(1, 1))  # a new token even within a tick
    (bundle / "playbooks/freshness.md").unlink()
    (bundle / "metrics/new.md").write_text(concept("Metric", "Churn", "Monthly churn."))
    reads = store.reads()
    clock.advance(60)
    assert ids(kb.search("clients", 1)) == ["tables/customers"]
    assert store.reads() == reads + 2
    assert kb.fetch(["playbooks/freshness"]) == []
    assert ids(kb.search("churn", 1)) == ["metrics/new"]
    assert kb.search("triage", 3) == []
    assert kb.schema()["namespaces"] == ["metrics", "tables"]


def test_failed_refresh_keeps_the_last_good_manifest(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock, refresh_seconds=60)
    moved = bundle.with_name("elsewhere")
    bundle.rename(moved)  # the root vanishes
    clock.advance(60)
    assert ids(kb.search("freshness", 1)) == ["playbooks/freshness"]
    assert any("refresh failed" in d for d in kb.diagnostics)
    assert "refresh failed" in kb.get_description()
    with pytest.raises(OSError):
        kb.reload()
    assert kb.schema()["concepts"] == 4
    moved.rename(bundle)
    clock.advance(60)
    assert kb.schema()["diagnostics"] == 0
    assert kb.schema()["concepts"] == 4


def test_refresh_none_never_walks_again_until_reload(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle)
    kb = OKFManager(store, name="OKF", clock=clock, refresh_seconds=None)
    (bundle / "late.md").write_text(concept(title="Late arrival"))
    clock.advance(10**9)
    assert kb.search("late arrival") == []
    assert store.calls["walk"] == 1
    kb.reload()
    assert ids(kb.search("late arrival", 1)) == ["late"]


def test_misconfigured_store_fails_at_construction(tmp_path: Path, clock: Clock) -> None:
    store = LocalDocumentStore(tmp_path)
    tmp_path.rmdir()
    with pytest.raises(OSError):
        OKFManager(store, clock=clock)


def test_max_concepts_truncates_and_says_so(tmp_path: Path, clock: Clock) -> None:
    root = write_bundle(tmp_path / "b", {f"c{i}.md": concept(title=f"C{i}") for i in range(5)})
    kb = manager(root, clock, max_concepts=3)
    schema = kb.schema()
    assert schema["concepts"] == 3 and schema["truncated"] is True
    assert "truncated" in kb.get_description()


def test_a_full_bundle_keeps_serving_what_it_served(tmp_path: Path, clock: Clock) -> None:
    # at max_concepts, nothing an agent could find is pushed out: a write is refused (and
    # writes nothing), and a document dropped into the bundle by someone else waits
    # outside instead of displacing a served concept, refresh after refresh
    root = write_bundle(tmp_path / "b", {f"m{i}.md": concept(title=f"M{i}") for i in range(3)})
    kb = manager(root, clock, max_concepts=3, refresh_seconds=60)
    served = sorted(ids(kb.search("m0 m1 m2", 10)))
    assert served == ["m0", "m1", "m2"]
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(KnowledgeError, match="max_concepts=3"):
        kb.write([{"text": "A new note\nabout alpha", "metadata": {}}])
    assert sorted(p.name for p in root.rglob("*")) == before
    tools = KnowledgeBuilder([kb]).build()
    write_kb = next(t for t in tools if t.__name__ == "write_kb")
    assert "max_concepts=3" in write_kb("OKF", "another note")  # the agent is told why
    kb.write([{"text": concept(title="M1 again"), "metadata": {"id": "m1"}}])  # a replacement fits

    (root / "a-first.md").write_text(concept(title="Alpha first"))  # sorts before every m*
    for _ in range(2):
        clock.advance(60)
        assert sorted(ids(kb.search("m0 m1 m2 alpha first again", 10))) == served
        assert kb.schema()["truncated"] is True
    (root / "m2.md").unlink()  # a place frees up: the waiting document takes it
    clock.advance(60)
    assert sorted(ids(kb.search("m0 m1 m2 alpha first again", 10))) == ["a-first", "m0", "m1"]
    assert kb.schema()["truncated"] is False


# -- tolerance --------------------------------------------------------------------------


def test_malformed_documents_are_skipped_with_a_diagnostic(tmp_path: Path, clock: Clock) -> None:
    class Small(OKFManager):
        max_document_bytes = 2048
        head_bytes = 1024

    files: dict[str, str | bytes] = {
        "ok.md": concept(title="Fine"),
        "nofm.md": "# just markdown\n",
        "badyaml.md": "---\ntype: [unclosed\n---\nbody\n",
        "emptytype.md": "---\ntype: ''\ntitle: x\n---\n",
        "notype.md": "---\ntitle: x\n---\n",
        "listfm.md": "---\n- a\n- b\n---\n",
        "latin1.md": "---\ntype: Note\ntitle: caf\xe9\n---\n".encode("latin-1"),
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "oversized.md": concept(body="x" * 5000),
        "longfm.md": "---\ntype: Note\ndescription: " + "y" * 3000 + "\n---\n",
        "unclosed.md": "---\ntype: Note\n",
        "notes.txt": "not a document",
    }
    root = write_bundle(tmp_path / "b", files)
    kb = Small(LocalDocumentStore(root), name="OKF", clock=clock)
    assert kb.schema()["concepts"] == 1
    diagnostics = kb.diagnostics
    assert len(diagnostics) == 10
    joined = "\n".join(diagnostics)
    for name in (
        "nofm",
        "badyaml",
        "emptytype",
        "notype",
        "listfm",
        "latin1",
        "binary",
        "oversized",
        "longfm",
        "unclosed",
    ):
        assert f"{name}.md:" in joined
    assert "not UTF-8" in joined and "binary" in joined and "oversized" in joined
    # fixing a file clears its diagnostic at the next refresh
    (root / "nofm.md").write_text(concept(title="Now fine"))
    kb.reload()
    assert kb.schema()["concepts"] == 2 and len(kb.diagnostics) == 9


def test_unchanged_malformed_documents_are_not_reread(tmp_path: Path, clock: Clock) -> None:
    root = write_bundle(tmp_path / "b", {"bad.md": "nothing\n", "ok.md": concept()})
    store = CountingStore(root)
    kb = OKFManager(store, clock=clock)
    reads = store.reads()
    kb.reload()
    assert store.reads() == reads


def test_reserved_files_with_frontmatter_are_never_concepts(tmp_path: Path, clock: Clock) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "sub/index.md": concept("Note", "Sub index"),
            "sub/LOG.md": concept("Note", "A log"),
            "sub/real.md": concept("Note", "Real"),
        },
    )
    kb = manager(root, clock)
    assert kb.schema()["concepts"] == 1
    assert kb.browse("sub")[0]["metadata"]["kind"] == "index"
    assert kb.browse("sub/index.md") == kb.browse("sub")


# -- writes -----------------------------------------------------------------------------


def test_write_through_is_visible_on_the_next_call(bundle: Path, clock: Clock) -> None:
    store = CountingStore(bundle)
    kb = OKFManager(store, name="OKF", clock=clock, write_actor="ingest_agent/1.0")
    walks = store.calls["walk"]
    written = kb.write(
        [
            {
                "text": "# Late orders\nOrders placed after 23:00 land the next day.\n",
                "metadata": {"source": "ticket-42"},
            }
        ]
    )
    assert written == ["generated/late-orders"]
    assert store.calls["walk"] == walks
    assert ids(kb.search("late orders", 1)) == ["generated/late-orders"]
    assert ids(kb.browse("generated")) == ["generated/late-orders"]
    record = kb.fetch(["generated/late-orders"])[0]
    meta, body = frontmatter.parse(record["text"])
    assert meta["type"] == "Note"
    assert meta["title"] == "Late orders"
    assert meta["description"] == "Orders placed after 23:00 land the next day."
    assert meta["generated"] == {"by": "ingest_agent/1.0", "at": "2026-06-01T00:00:00Z"}
    assert meta["sources"] == [{"resource": "ticket-42"}]
    assert body.startswith("# Late orders")
    assert record["metadata"]["trust"] == "unverified"


def test_slug_collisions_get_a_suffix_and_never_overwrite(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    first = kb.write([{"text": "Same title\none", "metadata": {}}])
    second = kb.write(
        [{"text": "Same title\ntwo", "metadata": {}}, {"text": "Same title\nthree", "metadata": {}}]
    )
    assert first + second == [
        "generated/same-title",
        "generated/same-title-2",
        "generated/same-title-3",
    ]
    texts = [kb.fetch([i])[0]["text"] for i in first + second]
    assert [t.rstrip().rsplit("\n", 1)[-1] for t in texts] == ["one", "two", "three"]
    # a file created behind the manifest's back is not overwritten either
    (bundle / "generated/other.md").write_text("precious")
    assert kb.write([{"text": "Other", "metadata": {}}]) == ["generated/other-2"]
    assert (bundle / "generated/other.md").read_text() == "precious"


def test_fetched_concept_written_back_is_byte_identical(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    path = bundle / "tables/orders.md"
    original = path.read_bytes()
    record = kb.fetch(["tables/orders"])[0]
    assert kb.write([record]) == ["tables/orders"]
    assert path.read_bytes() == original


def test_write_by_id_replaces_exactly_and_updates_the_index(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    text = concept("Metric", "Revenue", "Now about bananas.", body="Bananas.\n")
    assert kb.write([{"text": text, "metadata": {"id": "metrics/revenue"}}]) == ["metrics/revenue"]
    assert (bundle / "metrics/revenue.md").read_text() == text
    assert ids(kb.search("bananas", 1)) == ["metrics/revenue"]
    assert kb.search("fiscal", 3) == []


def test_bad_writes_are_refused_and_lose_nothing(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    before = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*"))
    bad_records = [
        [{"text": "no frontmatter", "metadata": {"id": "tables/orders"}}],
        [{"text": concept(), "metadata": {"id": "tables/index"}}],
        [{"text": concept(), "metadata": {"id": "../outside"}}],
        [{"text": concept(), "metadata": {"id": "a,b"}}],
        [{"text": "", "metadata": {}}],
        [{"text": "fine", "metadata": {}}, {"text": "no fm", "metadata": {"id": "x"}}],
    ]
    for records in bad_records:
        with pytest.raises(KnowledgeError):
            kb.write(records)
    after = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*"))
    assert after == before
    assert tools["write_kb"]("OKF", text="A tool note\nwritten by a tool.").startswith(
        "Wrote 1 record(s) to 'OKF': ['generated/a-tool-note']"
    )


def test_write_prefix_and_metadata_fields(tmp_path: Path, clock: Clock) -> None:
    root = tmp_path / "b"
    root.mkdir()
    kb = manager(root, clock, write_prefix="/notes/agents/")
    written = kb.write(
        [
            {
                "text": "Über café notes\nbody",
                "metadata": {
                    "type": "Playbook",
                    "tags": ["ops"],
                    "stale_after": "2026-01-01T00:00:00Z",
                },
            }
        ]
    )
    assert written == ["notes/agents/uber-cafe-notes"]
    row = kb.search("cafe notes", 1)[0]["metadata"]
    assert (row["type"], row["tags"], row["stale"]) == ("Playbook", ["ops"], True)


def test_concurrent_writers_never_collide(bundle: Path, clock: Clock) -> None:
    from concurrent.futures import ThreadPoolExecutor

    kb = manager(bundle, clock)
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(
                lambda i: kb.write([{"text": f"Shared title\nnumber {i}", "metadata": {}}])[0],
                range(24),
            )
        )
    assert len(set(results)) == 24
    bodies = {kb.fetch([r])[0]["text"].rstrip().rsplit("\n", 1)[-1] for r in results}
    assert bodies == {f"number {i}" for i in range(24)}
    assert kb.schema()["concepts"] == 4 + 24


# -- the contract ------------------------------------------------------------------------


def test_contract_read_only(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock, writable=False)
    assert_backend_contract(kb, search_query="orders", browse_path="tables")
    assert_backend_contract(kb, search_query="orders", browse_path="")


def test_contract_writable(bundle: Path, clock: Clock) -> None:
    kb = manager(bundle, clock, writable=True)
    assert_backend_contract(
        kb,
        search_query="customer",
        browse_path="",
        sample_write=[{"text": "Contract note\nwritten by the contract check", "metadata": {}}],
    )
    assert ids(kb.search("contract note", 1)) == ["generated/contract-note"]


def test_constructor_arguments_are_checked(bundle: Path, clock: Clock) -> None:
    store = LocalDocumentStore(bundle)
    for kwargs in ({"refresh_seconds": 0}, {"max_concepts": 0}, {"write_actor": ""}):
        with pytest.raises(ValueError):
            OKFManager(store, clock=clock, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(KnowledgePathError):
        OKFManager(store, clock=clock, write_prefix="../up")
    with pytest.raises(TypeError):
        OKFManager("not a store")  # type: ignore[arg-type]


def test_concurrent_reads_writes_and_refreshes_keep_the_manifest_whole(
    bundle: Path, clock: Clock
) -> None:
    import threading

    kb = manager(bundle, clock, refresh_seconds=1)
    errors: list[BaseException] = []
    stop = threading.Event()

    def guard(work):  # type: ignore[no-untyped-def]
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)
                stop.set()

        return run

    def reader() -> None:
        while not stop.is_set():
            for row in kb.search("orders customer note", 10):
                kb.fetch([row["metadata"]["id"]])
            kb.browse("generated")
            clock.advance(0.5)  # keeps crossing refresh boundaries

    def writer() -> None:
        for i in range(30):
            kb.write([{"text": f"Note {i}\nbody {i}", "metadata": {}}])
            (bundle / "tables" / f"extra{i}.md").write_text(concept(title=f"Extra {i}"))
        stop.set()

    threads = [threading.Thread(target=guard(f)) for f in (reader, reader, writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    kb.reload()
    assert kb.schema()["concepts"] == 4 + 30 + 30
    assert len(kb.browse("generated", 100)) == 30
    assert kb.diagnostics == []


class MemoryStore(DocumentStore):
    """A store of one's own (the ``python:`` kind): bytes in a dict, tokens from a counter."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = dict(files)
        self.tokens = {path: "1" for path in files}
        self.version = 1

    @property
    def writable(self) -> bool:
        return True

    @property
    def location(self) -> str:
        return "memory://test"

    def walk(self, prefix: str = ""):  # type: ignore[no-untyped-def]
        for path, data in sorted(self.files.items()):
            yield StoredFile(path, len(data), self.tokens[path])

    def read(self, path: str) -> bytes:
        return self.files[clean_path(path)]

    def read_head(self, path: str, max_bytes: int) -> bytes:
        return self.read(path)[:max_bytes]

    def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
        path = clean_path(path)
        if not overwrite and path in self.files:
            raise FileExistsError(path)
        self.version += 1
        self.files[path], self.tokens[path] = data, str(self.version)
        return StoredFile(path, len(data), self.tokens[path])


def test_any_document_store_serves_a_bundle(clock: Clock) -> None:
    files = {k: v.encode() if isinstance(v, str) else v for k, v in SMALL_BUNDLE.items()}
    kb = OKFManager(MemoryStore(files), name="MEM", clock=clock)
    assert kb.schema()["concepts"] == 4 and kb.schema()["location"] == "memory://test"
    assert kb.write([{"text": "Memo\nkept in memory", "metadata": {}}]) == ["generated/memo"]
    assert ids(kb.search("memo", 1)) == ["generated/memo"]
    assert_backend_contract(kb, search_query="orders", browse_path="tables")
