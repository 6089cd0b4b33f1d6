"""The ``Embedder`` protocol, its error, and the texts and keys every embedder shares.

The implementations (:mod:`~agentkernel.retrieval.minilm`, :mod:`~agentkernel.retrieval._sentence`,
:mod:`~agentkernel.retrieval._openai_embeddings`) import from here, and the factory
(:mod:`~agentkernel.retrieval.embedders`) imports them: no module imports its importer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentkernel.errors import AKError

MAX_EMBED_CHARS = 2_000
"""The most characters of a document embedded: small models read ~256 word pieces anyway."""


class EmbedderError(AKError, RuntimeError):
    """An embedder could not be built or could not embed (bad model, failing endpoint)."""


@runtime_checkable
class Embedder(Protocol):
    """Texts in, unit vectors out.

    Attributes:
        model_id: A stable name of the model and its output (cache key); two embedders with
            the same id must return the same vectors.
        dimension: The length of every vector.
    """

    model_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts.

        Args:
            texts: The texts, in order.

        Returns:
            One unit vector (``dimension`` floats) per text, in the same order.

        Raises:
            EmbedderError: The model or endpoint failed.
        """
        ...


def document_text(title: str, description: str, body: str) -> str:
    """The text embedded for a concept or a page: title, description, then the body's start.

    Args:
        title: The title.
        description: The one-line description (may be empty).
        body: The body (only its start is used).

    Returns:
        At most :data:`MAX_EMBED_CHARS` characters.
    """
    parts = [part.strip() for part in (title, description, body) if part and part.strip()]
    return "\n".join(parts)[:MAX_EMBED_CHARS]


def document_texts(title: str, description: str, body: str) -> tuple[str, str]:
    """The texts embedded for a concept or a page: the whole, then its name alone.

    The whole is :func:`document_text` (title, description, the body's start); the name is
    the title and the description. A document's vector mixes theirs
    (:meth:`agentkernel.retrieval.semantic.SemanticIndex.document_vectors`): a mean-pooled
    vector of the whole dilutes what the document is among what its body says, and a
    question usually asks for the former.

    Args:
        title: The title.
        description: The one-line description (may be empty).
        body: The body (only its start is used).

    Returns:
        ``(whole, name)``; the same text twice when the body is empty (embedded once).
    """
    return document_text(title, description, body), document_text(title, description, "")


def text_hash(text: str) -> bytes:
    """The 32-byte content key of an embedded text (SHA-256 of its UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).digest()
