"""agentkernel: durable, cross-session knowledge for AI agents.

The documented entry points are importable from here (``from agentkernel import OKFManager,
KnowledgeBuilder, FileKnowledgeStore``), each from the package the manual places it in and
resolved on first touch (PEP 562): importing the root costs one module, no I/O and no optional
SDK. The root also holds one helper, the lazy export table every package uses: here, because
the root is imported anyway, so a package that exports its names lazily costs one module
import, as the manual promises.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkernel.errors import AKError
    from agentkernel.knowledgebase import (
        DocumentStore,
        KnowledgeBase,
        KnowledgeBuilder,
        KnowledgeCapabilities,
        KnowledgeError,
        LocalDocumentStore,
        OKFManager,
        Record,
        S3DocumentStore,
    )
    from agentkernel.knowledgestore import (
        BundleKnowledgeStore,
        FileKnowledgeStore,
        KnowledgeStore,
        SQLiteKnowledgeStore,
        create_file_knowledge_store,
        create_knowledge_server,
        create_knowledge_tools,
    )

__version__ = "0.1.0"

# the package the manual names each entry point in -> those names (each package's own table
# then finds the defining module)
_HOMES: dict[str, tuple[str, ...]] = {
    "agentkernel.errors": ("AKError",),
    "agentkernel.knowledgebase": (
        "DocumentStore",
        "KnowledgeBase",
        "KnowledgeBuilder",
        "KnowledgeCapabilities",
        "KnowledgeError",
        "LocalDocumentStore",
        "OKFManager",
        "Record",
        "S3DocumentStore",
    ),
    "agentkernel.knowledgestore": (
        "BundleKnowledgeStore",
        "FileKnowledgeStore",
        "KnowledgeStore",
        "SQLiteKnowledgeStore",
        "create_file_knowledge_store",
        "create_knowledge_server",
        "create_knowledge_tools",
    ),
}

__all__ = [
    "AKError",
    "BundleKnowledgeStore",
    "DocumentStore",
    "FileKnowledgeStore",
    "KnowledgeBase",
    "KnowledgeBuilder",
    "KnowledgeCapabilities",
    "KnowledgeError",
    "KnowledgeStore",
    "LocalDocumentStore",
    "OKFManager",
    "Record",
    "S3DocumentStore",
    "SQLiteKnowledgeStore",
    "create_file_knowledge_store",
    "create_knowledge_server",
    "create_knowledge_tools",
]


def _lazy_exports(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's ``__getattr__`` and ``__dir__`` that import its names on first touch.

    PEP 562: a name is looked up in the module that defines it the first time it is read
    from the package, then kept in the package's namespace, so later reads are plain
    attribute reads.

    Args:
        package: The package's ``__name__``.
        homes: Each module that defines public names -> those names.

    Returns:
        ``(__getattr__, __dir__)``, to assign at the package's top level.
    """
    namespace = sys.modules[package].__dict__
    exports = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
