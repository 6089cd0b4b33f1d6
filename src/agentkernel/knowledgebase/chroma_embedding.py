"""An agentkernel :class:`~agentkernel.retrieval.Embedder` as a chromadb ``EmbeddingFunction``.

So one embedder object configures an OKF bundle, a curated store and a Chroma collection.
Imports chromadb; only :class:`~agentkernel.knowledgebase.chroma.ChromaManager` imports this
module, and only when it is given ``embedder=``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

from agentkernel.retrieval.embedders import Embedder


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
        """What chromadb records: the model id and dimension (not a way to rebuild it)."""
        return {"model_id": self.embedder.model_id, "dimension": self.embedder.dimension}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> EmbedderFunction:
        """Refuse: an embedder is passed in code, never rebuilt from a stored configuration.

        Args:
            config: The stored configuration.

        Raises:
            ValueError: Always.
        """
        raise ValueError(
            f"the agentkernel embedder {config.get('model_id')!r} is passed to "
            "ChromaManager(embedder=...), not rebuilt from the collection"
        )
