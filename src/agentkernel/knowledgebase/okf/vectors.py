"""The dense half of an OKF bundle's hybrid search: what is embedded per concept, and when.

A concept is embedded as its title, description and body head
(:func:`agentkernel.retrieval.embedders.document_text`), through the vector cache, so a walk
embeds only concepts whose text no process has embedded before. Only imported when an
``OKFManager`` is given an embedder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.retrieval.embedders import document_text
from agentkernel.retrieval.semantic import Progress, SemanticIndex


def concept_text(concept: Concept) -> str:
    """The text embedded for a concept."""
    return document_text(concept.title, concept.description, concept.body_head)


def embed_concepts(
    index: SemanticIndex, concepts: Sequence[Concept], progress: Progress | None = None
) -> dict[str, np.ndarray]:
    """Vectors of concepts, embedding only those the cache lacks.

    Args:
        index: The dense index.
        concepts: The concepts.
        progress: Called with the count done after each batch.

    Returns:
        Vectors by concept id; empty when the embedder failed (logged by the index).
    """
    if not concepts:
        return {}
    vectors = index.vectors_for([concept_text(c) for c in concepts], progress)
    if vectors is None:
        return {}
    return {c.id: v for c, v in zip(concepts, vectors, strict=True)}
