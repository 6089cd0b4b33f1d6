"""One lexical retrieval engine for OKF bundles and the curated knowledge stores.

:mod:`agentkernel.retrieval.analysis` turns documents and queries into the same terms
(folding, identifiers whole and split, Snowball stemming, a query stop list that never
empties a query); :class:`SearchIndex` ranks documents over weighted fields with BM25F, puts
exact title matches first and ranks ``deprecated``, ``superseded`` and ``retired`` documents
below current ones of equal relevance.

Example:
    >>> from agentkernel.retrieval import SearchIndex
    >>> index = SearchIndex()
    >>> index.add("gross-margin", {"title": "Gross margin", "body": "revenue less cost"})
    >>> index.add(
    ...     "gross-margin-legacy",
    ...     {"title": "Gross margin", "body": "revenue less cost"},
    ...     status="deprecated",
    ... )
    >>> [hit.key for hit in index.search("how is gross margin computed?", 2)]
    ['gross-margin', 'gross-margin-legacy']

Dense and hybrid retrieval (optional): an :class:`Embedder` (texts in, unit vectors out;
:func:`load_embedder` builds one from ``"default"``, a model folder or an endpoint URL),
:class:`agentkernel.retrieval.semantic.SemanticIndex` (vectors cached by content in
:mod:`agentkernel.retrieval._vectorcache`) and reciprocal-rank fusion. Nothing here imports a
model SDK until an embedder is built.
"""

from __future__ import annotations

from agentkernel.retrieval.analysis import QUERY_STOPWORDS, analyze, analyze_query
from agentkernel.retrieval.embedders import (
    Embedder,
    EmbedderError,
    default_model_path,
    document_text,
    document_texts,
    load_embedder,
)
from agentkernel.retrieval.index import DEFAULT_WEIGHTS, SearchIndex
from agentkernel.retrieval.ranking import STATUS_PENALTY, Hit

__all__ = [
    "DEFAULT_WEIGHTS",
    "QUERY_STOPWORDS",
    "STATUS_PENALTY",
    "Embedder",
    "EmbedderError",
    "Hit",
    "SearchIndex",
    "analyze",
    "analyze_query",
    "default_model_path",
    "document_text",
    "document_texts",
    "load_embedder",
]
