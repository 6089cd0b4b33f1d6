"""What an OKF bundle declares, in one place for every backend that serves one.

``OKFManager`` declares it (folded with its store's writability), and so does the lazy
per-agent view of a configured bundle, which must declare it before any manager exists. This
module imports nothing heavier than the capability model, so that view stays free to build.
"""

from __future__ import annotations

from agentkernel.knowledgebase.model import KnowledgeCapabilities


def okf_capabilities(writable: bool, semantic: bool = False) -> KnowledgeCapabilities:
    """The declaration of an OKF bundle.

    Args:
        writable: Whether writes are declared.
        semantic: Whether search is hybrid (an embedder is configured).

    Returns:
        Kinds ``["document"]``, search (``semantic`` when an embedder ranks too, else
        ``lexical``), fetch, browse, a derived schema, and ``writable`` as given.
    """
    return KnowledgeCapabilities(
        kinds=["document"],
        search=True,
        search_mode="semantic" if semantic else "lexical",
        fetch=True,
        browse=True,
        writable=writable,
        derives_schema=True,
    )
