"""One knowledge-base contract in front of vector, graph, SQL and document stores.

Public names resolve lazily (PEP 562), so importing this package costs one module import and
pulls in no optional SDK. ``S3DocumentStore`` is the one name whose resolution imports an
SDK (boto3, the ``aws`` extra). ``ChromaManager``, ``Neo4jManager`` and ``StarburstManager``
are deliberately not exported here: import them from their own modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkernel import _lazy_exports

if TYPE_CHECKING:
    from agentkernel.knowledgebase._limits import CutRecords
    from agentkernel.knowledgebase.base import KnowledgeBase
    from agentkernel.knowledgebase.document import DocumentKnowledgeBase
    from agentkernel.knowledgebase.errors import (
        KnowledgeCapabilityError,
        KnowledgeError,
        KnowledgePathError,
        SQLQueryError,
        SQLRefusedError,
    )
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
    from agentkernel.knowledgebase.model import (
        KnowledgeCapabilities,
        KnowledgeMetadata,
        KnowledgeRecord,
        Record,
    )
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.base import DocumentStore
    from agentkernel.storage.local import LocalDocumentStore
    from agentkernel.storage.s3 import S3DocumentStore

# module -> the public names it defines, imported on first access
_HOMES: dict[str, tuple[str, ...]] = {
    "agentkernel.knowledgebase.base": ("KnowledgeBase",),
    "agentkernel.knowledgebase.document": ("DocumentKnowledgeBase",),
    "agentkernel.knowledgebase.knowledgebuilder": ("KnowledgeBuilder",),
    "agentkernel.knowledgebase._limits": ("CutRecords",),
    "agentkernel.knowledgebase.model": (
        "KnowledgeCapabilities",
        "Record",
        "KnowledgeRecord",
        "KnowledgeMetadata",
    ),
    "agentkernel.knowledgebase.errors": (
        "KnowledgeError",
        "KnowledgeCapabilityError",
        "KnowledgePathError",
        "SQLQueryError",
        "SQLRefusedError",
    ),
    "agentkernel.storage.base": ("DocumentStore",),
    "agentkernel.storage.local": ("LocalDocumentStore",),
    "agentkernel.storage.s3": ("S3DocumentStore",),
    "agentkernel.knowledgebase.okf.manager": ("OKFManager",),
}

__all__ = [
    "CutRecords",
    "DocumentKnowledgeBase",
    "DocumentStore",
    "KnowledgeBase",
    "KnowledgeBuilder",
    "KnowledgeCapabilities",
    "KnowledgeCapabilityError",
    "KnowledgeError",
    "KnowledgeMetadata",
    "KnowledgePathError",
    "KnowledgeRecord",
    "LocalDocumentStore",
    "OKFManager",
    "Record",
    "S3DocumentStore",
    "SQLQueryError",
    "SQLRefusedError",
]


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
