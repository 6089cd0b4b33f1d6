"""The dense half of an OKF bundle's hybrid search: what is embedded per concept, and when.

A concept's vector is the unit vector along the weighted sum of two embedded texts
(:func:`agentkernel.retrieval.embedders.document_texts`): its title, description and body
head, and its title and description alone (weights
:data:`agentkernel.retrieval.semantic.TEXT_WEIGHTS`, 0.8 and 0.2). Each text goes through the
vector cache, so a walk embeds only texts no process has embedded before. One vector per
concept: a 1-D unit array, compared by cosine similarity (a dot product).
Only imported when an ``OKFManager`` is given an embedder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.retrieval.embedders import document_texts
from agentkernel.retrieval.semantic import Progress, SemanticIndex


def concept_texts(concept: Concept) -> tuple[str, str]:
    """The texts embedded for a concept: the whole, then its name (see the module docstring)."""
    return document_texts(concept.title, concept.description, concept.body_head)


def embed_concepts(
    index: SemanticIndex, concepts: Sequence[Concept], progress: Progress | None = None
) -> dict[str, np.ndarray]:
    """Vectors of concepts, embedding only those the cache lacks.

    Args:
        index: The dense index.
        concepts: The concepts.
        progress: Called with the count of concepts done after each batch.

    Returns:
        One unit vector (a 1-D array) by concept id; empty when the embedder failed (logged
        by the index).
    """
    if not concepts:
        return {}
    vectors = index.document_vectors([concept_texts(c) for c in concepts], progress)
    if vectors is None:
        return {}
    return {c.id: v for c, v in zip(concepts, vectors, strict=True)}
