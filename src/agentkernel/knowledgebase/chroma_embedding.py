"""An agentkernel :class:`~agentkernel.retrieval.Embedder` as a chromadb ``EmbeddingFunction``.

So one embedder object configures an OKF bundle, a curated store and a Chroma collection.
Imports chromadb; only :class:`~agentkernel.knowledgebase.chroma.ChromaManager` imports this
module, when it opens a collection.

Chroma records a collection's function by name (``agentkernel``, registered with chromadb's
registry when this module is imported) and configuration, and rebuilds it when the
collection is opened without one. Only the packaged default model is rebuilt that way (no
path, URL or key is taken from a stored configuration), and only if its model id is still the
one the collection's vectors were made by; anything else is passed in code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from agentkernel.retrieval.embedders import Embedder, EmbedderError, default_model_path

DEFAULT = "default"
"""The one embedder a stored configuration may name, and rebuild: the packaged model."""

INT8_DEFAULT = "default-int8"
"""The packaged model on 8-bit products, rebuilt for a collection whose vectors it made."""


@register_embedding_function
class EmbedderFunction(EmbeddingFunction[Documents]):
    """Chroma's view of an embedder: documents in, the embedder's unit vectors out."""

    def __init__(self, embedder: Embedder) -> None:
        """Wrap an embedder.

        Args:
            embedder: The embedder.
        """
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        """Embed documents (and queries) with the embedder.

        Args:
            input: The texts.

        Returns:
            One float32 vector per text.
        """
        rows = self.embedder.embed(list(input))
        return [np.asarray(row, dtype=np.float32) for row in rows]

    @staticmethod
    def name() -> str:
        """The name chromadb records in a collection's configuration."""
        return "agentkernel"

    def get_config(self) -> dict[str, Any]:
        """What chromadb records: the model id, the dimension and, for the default, its name.

        Returns:
            The configuration.
        """
        config: dict[str, Any] = {
            "model_id": self.embedder.model_id,
            "dimension": self.embedder.dimension,
        }
        if _is_default(self.embedder):
            config["embedder"] = DEFAULT
        return config

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> EmbedderFunction:
        """Rebuild the packaged default model's function; refuse any other embedder.

        Args:
            config: The stored configuration.

        Returns:
            The default embedder's function, when it still makes the stored model id.

        Raises:
            ValueError: The configuration names another embedder (pass it in code) or a
                default whose vectors differ from this installation's.
        """
        from agentkernel.retrieval.embedders import load_embedder

        stored = config.get("model_id")
        if config.get("embedder") != DEFAULT:
            raise ValueError(
                f"the agentkernel embedder {stored!r} is passed to "
                "ChromaManager(embedder=...), not rebuilt from the collection"
            )
        # the packaged model in either precision (its model id tells them apart)
        candidates = [load_embedder(name) for name in (DEFAULT, INT8_DEFAULT)]
        for embedder in candidates:
            if embedder.model_id == stored:
                return EmbedderFunction(embedder)
        raise ValueError(
            f"the collection's vectors come from {stored!r}, the installed default model "
            f"is {candidates[0].model_id!r}: pass the original embedder or re-embed"
        )


def _is_default(embedder: Embedder) -> bool:
    """Whether the embedder is the packaged default model (a rebuildable configuration)."""
    path = getattr(embedder, "path", None)
    if path is None:
        return False
    try:
        return bool(Path(path).resolve() == default_model_path().resolve())
    except EmbedderError:
        return False
