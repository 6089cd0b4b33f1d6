"""Storage for document-shaped knowledge: bytes at bundle-relative paths.

:class:`DocumentStore` is the contract (paths, containment, change tokens, atomic writes);
:class:`LocalDocumentStore` keeps a directory and :class:`S3DocumentStore` a bucket prefix.
Names resolve lazily (PEP 562): only touching ``S3DocumentStore`` imports boto3 (the ``aws``
extra). ``agentkernel.knowledgebase`` exports the same three names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkernel import _lazy_exports

if TYPE_CHECKING:
    from agentkernel.storage.base import DocumentStore, StoredFile
    from agentkernel.storage.local import LocalDocumentStore
    from agentkernel.storage.s3 import S3DocumentStore

# module -> the public names it defines, imported on first access
_HOMES: dict[str, tuple[str, ...]] = {
    "agentkernel.storage.base": ("DocumentStore", "StoredFile"),
    "agentkernel.storage.local": ("LocalDocumentStore",),
    "agentkernel.storage.s3": ("S3DocumentStore",),
}

__all__ = ["DocumentStore", "LocalDocumentStore", "S3DocumentStore", "StoredFile"]

__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
