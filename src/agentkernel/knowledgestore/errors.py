"""The errors a knowledge store raises on purpose.

::

    AKError                        (agentkernel.errors)
    └── KnowledgeError             (agentkernel.knowledgebase.errors)
        └── KnowledgeStoreError    a refusal: bad id or slug, a link to nowhere, an edit that
            │                      matches nothing or several places, a page that exists already
            └── PageConflictError  another writer changed the page between this call's read and
                                   its write (a store shared by several processes); retryable

Every refusal carries a message a model can act on: what was wrong and how to fix it. The
knowledge tools pass it through as it is. Reading a page that does not exist is not an
error: ``read()`` returns ``None``.
"""

from __future__ import annotations

from agentkernel.knowledgebase.errors import KnowledgeError

__all__ = ["KnowledgeStoreError", "PageConflictError"]


class KnowledgeStoreError(KnowledgeError):
    """A knowledge store refused an operation; the message says why and what to do instead."""


class PageConflictError(KnowledgeStoreError):
    """Another writer changed a page first; nothing of this call was written. Retry it.

    Attributes:
        page: The page id (or the store's file, such as ``log.md``) that was contended.
        retryable: Always ``True``: the same call, made again, starts from the new version.
    """

    retryable = True

    def __init__(self, page: str) -> None:
        """Word the refusal for ``page``.

        Args:
            page: The contended page id or file.
        """
        super().__init__(
            f"{page!r} was changed by another writer at the same moment; nothing was written. "
            "Read it again and retry the change."
        )
        self.page = page
