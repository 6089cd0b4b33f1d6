"""Readiness and background loading of an OKF bundle: what a server's probes read.

Real: bundles on disk in ``tmp_path`` through ``LocalDocumentStore``, the vector cache on disk,
and a deterministic word-count embedder (``tests/support/vocab_embedder.py``, a real
``Embedder`` that counts its calls). Nothing is mocked.
"""

from __future__ import annotations

from pathlib import Path

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.model import READY, Readiness
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, write_bundle
from tests.support.vocab_embedder import VocabularyEmbedder

VOCABULARY = ["orders", "revenue", "freshness"]


def test_a_lexical_bundle_is_ready_with_nothing_to_embed(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    kb = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    state = kb.readiness()
    assert state.ready and state.lexical_ready and state.vectors_ready
    assert state.warming == "" and state.vectors_total == 0
    assert state.describe() == "ready"


def test_a_hybrid_bundle_counts_its_vectors(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    kb = OKFManager(
        LocalDocumentStore(root, writable=False),
        refresh_seconds=None,
        embedder=VocabularyEmbedder(VOCABULARY),
        cache_dir=tmp_path / "vectors",
    )
    kb.search("orders", 3)  # a search completes the vectors
    state = kb.readiness()
    concepts = len(kb.served_concepts())
    assert concepts > 0
    assert (state.vectors, state.vectors_total) == (concepts, concepts)
    assert state.vectors_ready and state.ready


def test_readiness_describes_a_step_under_way() -> None:
    state = Readiness(
        warming="vectors",
        done=120,
        total=2000,
        vectors=120,
        vectors_total=2000,
        vectors_ready=False,
    )
    assert state.ready
    assert state.describe() == "warming vectors: 120/2000 (6%); search is lexical until done"
    assert READY.ready and READY.describe() == "ready"
