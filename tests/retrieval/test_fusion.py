"""The pure half of dense retrieval: fusion and the vector cache, no model, no server.

Real: the vector cache's files in ``tmp_path`` and numpy; the fusion functions are pure. These
run in ``nox -s unit`` (no torch); the model-needing tests are in ``test_semantic.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentkernel.retrieval import EmbedderError
from agentkernel.retrieval._vectorcache import COMPACT_AT, VectorCache
from agentkernel.retrieval.ranking import TIER_TITLE, Hit
from agentkernel.retrieval.semantic import blend, fuse, fuse_hits


def test_a_dimension_change_under_the_same_model_id_is_refused(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "st:my-model:v1", 384)
    cache.put([b"k" * 32], np.ones((1, 384), dtype=np.float32) / np.sqrt(384))
    with pytest.raises(EmbedderError, match="never mixed"):
        VectorCache(tmp_path, "st:my-model:v1", 768)
    reopened = VectorCache(tmp_path, "st:my-model:v1", 384)
    assert len(reopened) == 1


def test_segments_are_compacted_and_nothing_is_lost(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "m", 4)
    for i in range(COMPACT_AT + 3):
        cache.put([bytes([i]) * 32], np.full((1, 4), 0.5, dtype=np.float32))
    reopened = VectorCache(tmp_path, "m", 4)
    assert len(reopened) == COMPACT_AT + 3
    assert len(list(reopened.folder.glob("*.vec"))) == 1
    assert len(VectorCache(tmp_path, "m", 4)) == COMPACT_AT + 3


def test_fusion_rewards_documents_both_rankings_agree_on() -> None:
    fused = fuse([["a", "b", "c"], ["c", "a", "d"]], 3)
    assert [key for key, _ in fused] == ["a", "c", "b"]


def test_blending_ranks_agreement_first_and_is_scale_free() -> None:
    lexical = [("a", 12.0), ("b", 11.5), ("c", 3.0)]  # BM25F: one scale
    dense = [("c", 0.61), ("a", 0.60), ("d", 0.20)]  # cosine: another
    fused = blend(lexical, dense, 4)
    assert [key for key, _ in fused][:2] == ["a", "c"]  # high in both, then top of one
    assert fused[0][1] == 1.0 and all(0.0 <= score <= 1.0 for _, score in fused)
    scaled = blend([(k, v * 1000) for k, v in lexical], dense, 4)
    assert [key for key, _ in scaled] == [key for key, _ in fused]
    tied = blend([("x", 1.0), ("y", 1.0)], [], 2)  # equal scores keep the lexical order
    assert [key for key, _ in tied] == ["x", "y"]


def test_fused_hits_keep_the_title_tier_whatever_the_dense_side_says() -> None:
    lexical = [Hit("title", 1.0, TIER_TITLE), Hit("a", 9.0), Hit("b", 8.0), Hit("c", 7.5)]
    dense = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("title", 0.1)]
    assert [key for key, _ in blend(lexical, dense, 4)][-1] == "title"  # fusion alone: last
    fused = fuse_hits(lexical, dense, 2)
    assert [hit.key for hit in fused] == ["title", "a"]
    assert fused[0].tier == TIER_TITLE and fused[1].tier == 0
