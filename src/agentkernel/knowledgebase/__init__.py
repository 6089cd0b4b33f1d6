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

_ERRORS = "agentkernel.knowledgebase.errors"
# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "KnowledgeBase": "agentkernel.knowledgebase.base",
    "DocumentKnowledgeBase": "agentkernel.knowledgebase.document",
    "KnowledgeBuilder": "agentkernel.knowledgebase.knowledgebuilder",
    "CutRecords": "agentkernel.knowledgebase._limits",
    "KnowledgeCapabilities": "agentkernel.knowledgebase.model",
    "Record": "agentkernel.knowledgebase.model",
    "KnowledgeRecord": "agentkernel.knowledgebase.model",
    "KnowledgeMetadata": "agentkernel.knowledgebase.model",
    "KnowledgeError": _ERRORS,
    "KnowledgeCapabilityError": _ERRORS,
    "KnowledgePathError": _ERRORS,
    "SQLQueryError": _ERRORS,
    "SQLRefusedError": _ERRORS,
    "DocumentStore": "agentkernel.storage.base",
    "LocalDocumentStore": "agentkernel.storage.local",
    "S3DocumentStore": "agentkernel.storage.s3",
    "OKFManager": "agentkernel.knowledgebase.okf.manager",
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


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
