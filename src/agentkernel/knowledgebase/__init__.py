"""One knowledge-base contract in front of vector, graph, SQL and document stores.

Public names resolve lazily (PEP 562), so importing this package costs one module import and
pulls in no optional SDK. ``S3DocumentStore`` is the one name whose resolution imports an
SDK (boto3, the ``aws`` extra). ``ChromaManager``, ``Neo4jManager`` and ``StarburstManager``
are deliberately not exported here: import them from their own modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkernel.knowledgebase.base import KnowledgeBase
    from agentkernel.knowledgebase.errors import (
        KnowledgeCapabilityError,
        KnowledgeError,
        KnowledgePathError,
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

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "KnowledgeBase": "agentkernel.knowledgebase.base",
    "KnowledgeBuilder": "agentkernel.knowledgebase.knowledgebuilder",
    "KnowledgeCapabilities": "agentkernel.knowledgebase.model",
    "Record": "agentkernel.knowledgebase.model",
    "KnowledgeRecord": "agentkernel.knowledgebase.model",
    "KnowledgeMetadata": "agentkernel.knowledgebase.model",
    "KnowledgeError": "agentkernel.knowledgebase.errors",
    "KnowledgeCapabilityError": "agentkernel.knowledgebase.errors",
    "KnowledgePathError": "agentkernel.knowledgebase.errors",
    "DocumentStore": "agentkernel.storage.base",
    "LocalDocumentStore": "agentkernel.storage.local",
    "S3DocumentStore": "agentkernel.storage.s3",
    "OKFManager": "agentkernel.knowledgebase.okf.manager",
}

__all__ = [
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
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
