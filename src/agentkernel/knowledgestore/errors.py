"""The errors a knowledge store raises on purpose.

::

    AKError                        (agentkernel.errors)
    └── KnowledgeError             (agentkernel.knowledgebase.errors)
        └── KnowledgeStoreError    a refusal: bad id or slug, a link to nowhere, an edit that
            │                      matches nothing or several places, a page that exists already
            ├── PageConflictError  another writer changed the page between this call's read and
            │                      its write (a store shared by several processes); retryable
            └── StoreAccessError   the store's files could not be read or written: a full disk,
                                   a read-only disk, a missing bucket, an endpoint that can't be
                                   reached; names the store and the page, nothing was kept

Every refusal carries a message a model can act on: what was wrong and how to fix it. The
knowledge tools pass it through as it is. Reading a page that does not exist is not an
error: ``read()`` returns ``None``.
"""

from __future__ import annotations

from agentkernel.knowledgebase.errors import KnowledgeError

__all__ = ["KnowledgeStoreError", "PageConflictError", "StoreAccessError"]


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


class StoreAccessError(KnowledgeStoreError, OSError):
    """The store's files could not be read or written; the message says what, where and why.

    A full disk, a file system turned read-only, a bucket that is gone, an endpoint that
    can't be reached or a read the network cut short. The message names the store (a
    folder's name or an ``s3://`` location, never an absolute local path) and the page or
    file concerned. Unless the message says otherwise nothing of the call was kept, so the
    same call, made again once the cause is gone, does what it would have done. It is an
    ``OSError`` too (without an ``errno``): code that caught the storage's own error still
    catches it; the storage's error is its ``__cause__``.

    Attributes:
        store: The store's name.
        page: The page id (or store file, such as ``log.md``) concerned; ``None``: the store.
        cause: What went wrong, in a few words.
    """

    def __init__(
        self, store: str, page: str | None, cause: str, *, writing: bool, kept: str = ""
    ) -> None:
        """Word the error.

        Args:
            store: The store's name.
            page: The page id or store file concerned; ``None``: the store's files.
            cause: What went wrong (no absolute path).
            writing: A write failed (else a read).
            kept: What of the change stayed, when something did; ``""``: nothing.
        """
        subject = page if page is not None else "its files"
        if writing:
            verb = "save" if page is not None else "write"
            outcome = (
                kept
                or "Nothing of this change was kept; make the same call again once that is fixed."
            )
        else:
            verb = "read"
            outcome = "Nothing was changed; try again once that is fixed."
        super().__init__(
            f"The knowledge store {store!r} could not {verb} {subject}: {cause}. {outcome}"
        )
        self.store = store
        self.page = page
        self.cause = cause
