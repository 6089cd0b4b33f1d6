"""The one error a knowledge store raises on purpose.

::

    AKError                        (agentkernel.errors)
    └── KnowledgeError             (agentkernel.knowledgebase.errors)
        └── KnowledgeStoreError    a refusal: bad id or slug, a link to nowhere, an edit that
                                   matches nothing or several places, a page that exists already

Every refusal carries a message a model can act on: what was wrong and how to fix it. The
knowledge tools pass it through as it is. Reading a page that does not exist is not an
error: ``read()`` returns ``None``.
"""

from __future__ import annotations

from agentkernel.knowledgebase.errors import KnowledgeError

__all__ = ["KnowledgeStoreError"]


class KnowledgeStoreError(KnowledgeError):
    """A knowledge store refused an operation; the message says why and what to do instead."""
