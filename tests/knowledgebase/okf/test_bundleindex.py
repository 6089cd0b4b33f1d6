"""The shared bundle index (issue 17): a manager serving an index answers as a walking one.

Real: the bundles on disk (the two third-party bundles read in place, the example bundle,
and bundles written to tmp), the LocalDocumentStore, the indexer, LanceDB writing and reading
the dataset in a tmp folder, the managers and the tool layer. Each check compares the two
modes on the same bundle: the in-memory manager is the reference.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgeError  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.knowledgebase.testing import assert_backend_contract  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import (  # noqa: E402
    SMALL_BUNDLE,
    Clock,
    concept,
    write_bundle,
)
from tests.support import okf_bundle  # noqa: E402

INDEX_RANKING = "lexical (Lance's BM25 over the index's analysed terms, one field; not BM25F)"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples/cli/knowledgebase/openai/okf/bundle"
QUERIES = [
    "orders",
    "how many users purchased something?",
    "block height",
    "transactions fee",
    "gross margin",
    "active users in the last 7 days",
    "join blocks with transactions",
    "nightly load failed",
    "table",
]

HOSTILE: dict[str, str | bytes] = {
    **SMALL_BUNDLE,
    "notes/nofm.md": "# just markdown\n",
    "notes/notype.md": "---\ntitle: x\n---\n",
    "notes/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
    "notes/deep/er/leaf.md": concept("Note", "Leaf", body="see [orders](/tables/orders.md)"),
    "notes/it's.md": concept("Note", "Quote in the path"),
    "a,b.md": concept("Note", "Comma"),
    "notes/shout.MD": concept("Note", "Upper-case suffix"),
    "notes/stale.md": concept("Note", "Old", stale_after="2020-01-01T00:00:00Z"),
}


def pair(root: Path, index: Path, clock: Clock | None = None) -> tuple[OKFManager, OKFManager]:
    store = LocalDocumentStore(root, writable=False)
    index_bundle(store, str(index))
    kwargs: dict[str, Any] = {"refresh_seconds": None, "name": "OKF"}
    if clock is not None:
        kwargs["clock"] = clock
    walked = OKFManager(store, **kwargs)
    indexed = OKFManager(store, index=str(index), **kwargs)
    return walked, indexed


def without_index(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without what says where it is served from (the index, its ranking)."""
    # the search entry names the lexical engine: BM25F in memory, Lance's BM25 over an index
    ranking = str(schema.get("search", "")).replace("lexical (BM25F)", INDEX_RANKING)
    return {k: (ranking if k == "search" else v) for k, v in schema.items() if k != "index"}


def assert_same(walked: OKFManager, indexed: OKFManager) -> None:
    """Every tool answers alike: schema, description, diagnostics, browse, fetch, search."""
    assert without_index(indexed.schema()) == without_index(walked.schema())
    assert indexed.get_description() == walked.get_description()
    assert indexed.diagnostics == walked.diagnostics
    # the change tokens the view reads on demand are the walk's, path for path
    tokens = walked._served.tokens()
    assert indexed._served.tokens() == tokens
    assert {p: indexed._served.token_of(p) for p in tokens} == tokens
    assert indexed._served.token_of("tables/none.md") is None
    directories = [""]
    seen: set[str] = set()
    while directories:
        path = directories.pop()
        listing = walked.browse(path, limit=1000)
        assert indexed.browse(path, limit=1000) == listing, path
        for row in listing:
            rid = row["metadata"]["id"]
            if rid.endswith("/") and rid not in seen:
                seen.add(rid)
                directories.append(rid)
    every = [r["metadata"]["id"] for r in walked.search(" ".join(QUERIES), 10_000)]
    ids = sorted({r["metadata"]["id"] for r in walked.search("a the of note table", 10_000)})
    for cid in sorted(set(every) | set(ids)):
        assert indexed.fetch([cid]) == walked.fetch([cid]), cid
        assert indexed.browse(cid) == walked.browse(cid), cid
    for query in QUERIES:
        mine = {r["metadata"]["id"]: r for r in indexed.search(query, 5)}
        theirs = {r["metadata"]["id"]: r for r in walked.search(query, 50)}
        for cid, record in mine.items():
            # same record (the score is each engine's own)
            record["metadata"].pop("score")
            assert cid in theirs, (query, cid)
            theirs[cid]["metadata"].pop("score", None)
            assert record == theirs[cid]


@pytest.mark.parametrize("name", ["ga4", "crypto_bitcoin"])
def test_real_bundles_are_served_identically(name: str, tmp_path: Path) -> None:
    walked, indexed = pair(okf_bundle(name), tmp_path / "kb.lance")
    assert_same(walked, indexed)
    assert_backend_contract(indexed, search_query="transactions users", browse_path="tables")


def test_example_bundle_is_served_identically(tmp_path: Path) -> None:
    walked, indexed = pair(EXAMPLE, tmp_path / "kb.lance")
    assert_same(walked, indexed)
    assert_backend_contract(indexed, search_query="nightly load", browse_path="glossary")
    tools = {t.__name__: t for t in KnowledgeBuilder([indexed]).build()}
    assert "[metrics/roast_yield]" in tools["search_kb"]("OKF", "roast yield")


def test_skipped_reserved_and_odd_paths_are_served_identically(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", HOSTILE)
    walked, indexed = pair(root, tmp_path / "kb.lance", Clock())
    assert walked.diagnostics  # the hostile files are reported in both modes
    assert_same(walked, indexed)
    assert [r["metadata"]["stale"] for r in indexed.browse("notes/stale")] == [True]


def test_exact_title_match_ranks_first_and_deprecated_ranks_lower(tmp_path: Path) -> None:
    walked, indexed = pair(EXAMPLE, tmp_path / "kb.lance")
    for kb in (walked, indexed):
        top = kb.search("gross margin", 2)
        assert [r["metadata"]["id"] for r in top] == [
            "metrics/gross_margin",
            "metrics/gross_margin_legacy",
        ]


def test_indexer_reads_only_changed_documents_and_commits_one_version(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    index = str(tmp_path / "kb.lance")
    first = index_bundle(store, index)
    assert first.committed and first.reads == len(SMALL_BUNDLE) - 1  # log.md is only listed
    again = index_bundle(store, index)
    assert (again.committed, again.reads, again.version) == (False, 0, first.version)

    (root / "tables/orders.md").write_text(concept("Table", "Orders v2", "one row per order"))
    (root / "tables/new.md").write_text(concept("Table", "Refunds", "one row per refund"))
    (root / "log.md").unlink()
    reader = OKFManager(store, index=index, refresh_seconds=None, name="OKF")
    held = reader.schema()["index"]["version"]
    changed = index_bundle(store, index)
    assert (changed.reads, changed.deleted, changed.committed) == (2, 1, True)
    # the reader keeps its version until it refreshes, then serves the new one
    assert reader.schema()["index"]["version"] == held
    assert "tables/new" not in [r["metadata"]["id"] for r in reader.search("refunds", 3)]
    reader.reload()
    assert reader.search("refunds", 1)[0]["metadata"]["id"] == "tables/new"
    assert reader.browse("tables/orders")[0]["metadata"]["title"] == "Orders v2"
    assert "log.md" not in reader.schema()["reserved_files"]
    assert_same(OKFManager(store, refresh_seconds=None, name="OKF"), reader)


def test_write_through_upserts_the_row_before_acknowledging(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=True)
    index = str(tmp_path / "kb.lance")
    index_bundle(store, index)
    writer = OKFManager(store, index=index, refresh_seconds=None)
    other = OKFManager(store, index=index, refresh_seconds=None, name="OKF")
    [cid] = writer.write([{"text": "Shipping zones\nWhere parcels go.", "metadata": {}}])
    assert writer.search("shipping zones", 1)[0]["metadata"]["id"] == cid
    other.reload()  # another pod sees it from the index, without walking
    assert other.search("shipping zones", 1)[0]["metadata"]["id"] == cid
    assert other.fetch([cid])[0]["text"] == (root / f"{cid}.md").read_text()
    # nothing for the indexer to do: the row matches the document
    assert index_bundle(store, index).reads == 0
    assert_same(OKFManager(store, refresh_seconds=None, name="OKF"), other)


def test_missing_index_is_a_clear_error_or_an_announced_walk(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    missing = str(tmp_path / "none.lance")
    with pytest.raises(KnowledgeError, match=r"none\.lance.*agentkernel-kb index"):
        OKFManager(store, index=missing)
    kb = OKFManager(store, index=missing, index_fallback="walk", refresh_seconds=None)
    assert kb.search("orders", 1)[0]["metadata"]["id"] == "tables/orders"
    assert any("serving a walk" in d for d in kb.diagnostics)
    assert "serving a walk" in kb.get_description()
    with pytest.raises(ValueError, match="index_fallback"):
        OKFManager(store, index=missing, index_fallback="maybe")


def test_unreadable_index_is_a_clear_error(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    broken = tmp_path / "kb.lance"
    (broken / "_versions").mkdir(parents=True)
    (broken / "_versions" / "1.manifest").write_bytes(b"not a manifest")
    with pytest.raises(KnowledgeError, match="cannot be opened"):
        OKFManager(LocalDocumentStore(root, writable=False), index=str(broken))


def test_index_behind_the_bundle_is_served_as_indexed_until_the_indexer_runs(
    tmp_path: Path,
) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    index = str(tmp_path / "kb.lance")
    index_bundle(store, index)
    (root / "tables/a.md").write_text(concept("Table", "Aardvark"))
    kb = OKFManager(store, index=index, refresh_seconds=None)
    kb.reload()  # the index's newest version: the bundle is not listed
    assert kb.search("aardvark", 3) == []
    assert not [d for d in kb.diagnostics if "behind" in d]
    index_bundle(store, index)
    kb.reload()
    assert kb.search("aardvark", 3)[0]["metadata"]["id"] == "tables/a"


def test_failed_refresh_keeps_the_version_served(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    index = tmp_path / "kb.lance"
    index_bundle(store, str(index))
    clock = Clock()
    kb = OKFManager(store, index=str(index), refresh_seconds=60, clock=clock)
    before = kb.search("orders", 3)
    version = kb.schema()["index"]["version"]
    moved = tmp_path / "away.lance"
    shutil.move(index, moved)  # the object store fails under the pod
    with pytest.raises(Exception, match="Not found"):
        kb.reload()
    assert any("index refresh failed" in d for d in kb.diagnostics)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    assert isinstance(tools["search_kb"]("OKF", "orders"), str)  # a tool answers, never raises
    shutil.move(moved, index)
    assert kb.search("orders", 3) == before
    assert kb.schema()["index"]["version"] == version
    clock.advance(61)
    kb.search("orders", 3)  # the next scheduled refresh succeeds and clears the diagnostic
    assert not any("refresh failed" in d for d in kb.diagnostics)


def test_unchanged_refresh_opens_nothing_new(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    index = str(tmp_path / "kb.lance")
    index_bundle(store, index)
    clock = Clock()
    kb = OKFManager(store, index=index, refresh_seconds=60, clock=clock)
    view = kb._served
    clock.advance(61)
    kb.search("orders", 1)
    assert kb._served is view  # same version: the loaded view is kept, nothing reloaded


def test_cli_index_builds_then_reports_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkernel.cli import main

    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    index = str(tmp_path / "kb.lance")
    assert main(["index", str(root), "--to", index, "--quiet"]) == 0
    assert "version" in capsys.readouterr().out
    assert main(["index", str(root), "--to", index, "--quiet"]) == 0
    (summary,) = capsys.readouterr().out.splitlines()  # one line, never wrapped
    assert "unchanged; listed 6, read 0" in summary
    assert main(["index", str(root), "--to", index, "--index-option", "nonsense"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    kb = OKFManager(LocalDocumentStore(root, writable=False), index=index)
    assert kb.search("orders", 1)[0]["metadata"]["id"] == "tables/orders"


def test_config_index_is_served_and_resolved_against_the_config_file(tmp_path: Path) -> None:
    from agentkernel.config import load_config
    from agentkernel.errors import AKConfigError
    from agentkernel.roles import OKFCapability

    write_bundle(tmp_path / "bundle", SMALL_BUNDLE)
    index_bundle(
        LocalDocumentStore(tmp_path / "bundle", writable=False), str(tmp_path / "kb.lance")
    )
    (tmp_path / "config.yaml").write_text(
        "okf:\n  databases:\n    warehouse:\n      type: local\n      uri: ./bundle\n"
        "      index: ./kb.lance\n      consumer: [Agent]\n"
    )
    capability = OKFCapability.from_config(load_config(tmp_path / "config.yaml"))
    assert capability is not None
    kb = capability.manager("warehouse")
    assert kb.schema()["index"]["location"] == str(tmp_path / "kb.lance")
    assert kb.search("orders", 1)[0]["metadata"]["id"] == "tables/orders"
    with pytest.raises(AKConfigError, match="index_fallback"):
        load_config(
            {
                "okf": {
                    "databases": {
                        "w": {
                            "type": "local",
                            "uri": ".",
                            "index_fallback": "maybe",
                            "consumer": ["A"],
                        }
                    }
                }
            }
        )


def test_indexes_another_indexer_created_first_are_kept_not_an_error(tmp_path: Path) -> None:
    from agentkernel.knowledgebase.okf.bundleindex import indexer, lancesdk

    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    first = str(tmp_path / "first.lance")
    index_bundle(LocalDocumentStore(root, writable=False), first)
    # two indexers that both created the table (its rows, no index yet) race to index it
    database, name = lancesdk.connect(str(tmp_path / "kb.lance"), None)
    held = indexer.open_table(first, None).to_arrow()
    database.create_table(name, held, schema=held.schema)
    winner, loser = database.open_table(name), database.open_table(name)
    indexer._create_indexes(winner)
    indexer._create_indexes(loser)  # Lance: "preempted by concurrent transaction CreateIndex"
    expected = {"terms", *indexer._SCALAR_COLUMNS}
    assert indexer._indexed_columns(database.open_table(name)) == expected
    assert len(database.open_table(name).list_indices()) == len(expected)
    walked, indexed = pair(root, tmp_path / "kb.lance")
    assert_same(walked, indexed)


def test_a_bare_date_stale_after_is_ignored_from_the_index_as_from_the_walk(
    tmp_path: Path,
) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "notes/bare.md": concept("Note", "Bare", stale_after="2020-01-01"),
            "notes/naive.md": concept("Note", "Naive", stale_after="2020-01-01T00:00:00"),
            "notes/stale.md": concept("Note", "Old", stale_after="2020-01-01T00:00:00Z"),
        },
    )
    walked, indexed = pair(root, tmp_path / "kb.lance", Clock())
    assert_same(walked, indexed)
    stale = {r["metadata"]["id"]: r["metadata"]["stale"] for r in indexed.browse("notes/")}
    assert stale == {"notes/bare": False, "notes/naive": False, "notes/stale": True}
    legacy = OKFManager(
        LocalDocumentStore(root, writable=False),
        index=str(tmp_path / "kb.lance"),
        refresh_seconds=None,
        clock=Clock(),
        legacy_dates=True,
    )
    assert [r["metadata"]["stale"] for r in legacy.browse("notes/bare")] == [True]
    assert [r["metadata"]["stale"] for r in legacy.browse("notes/naive")] == [False]
