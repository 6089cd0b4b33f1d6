"""A database as one agent sees it, opened on first touch.

Each agent's ``KnowledgeBuilder`` registers one ``LazyBundle`` per database it holds a role
in. The declaration is fixed from configuration (so tools and prompts need no I/O); every
operation asks the capability for the shared ``OKFManager``, which is created, and the bundle
walked, the first time any agent touches the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf.declared import okf_capabilities

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.manager import OKFManager


class LazyBundle(KnowledgeBase):
    """One agent's view of one configured bundle; the manager behind it is shared."""

    def __init__(self, database: str, may_write: bool, manager: Callable[[], OKFManager]) -> None:
        """Declare the bundle without opening it.

        Args:
            database: The database name from configuration; the backend name agents use.
            may_write: Whether this agent is a producer or curator of the database.
            manager: Returns the shared manager, creating it on the first call.
        """
        super().__init__(okf_capabilities(writable=may_write), name=database)
        self._manager = manager

    @property
    def backend_name(self) -> str:
        """The database name."""
        return self.name

    def connect(self, **kwargs: Any) -> None:
        """Open the shared manager now instead of on first use.

        Args:
            **kwargs: Unused; the manager is configured from the okf block.
        """
        self._manager()

    def get_description(self) -> str:
        """Describe the bundle (opening it: the description reports its diagnostics)."""
        return self._manager().get_description()

    def schema(self) -> dict[str, Any]:
        """Return the bundle's own schema with this agent's declaration as capabilities."""
        merged = dict(self._manager().schema())
        merged.pop("capabilities", None)
        merged.update(self._dynamic_schema)
        declared = self.capabilities.as_dict()
        declared["writable"] = declared["writable"] and self._manager().capabilities.writable
        merged["capabilities"] = declared
        return merged

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Delegate to the shared manager (see ``OKFManager.search``)."""
        return self._manager().search(query, limit=limit, **kwargs)

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        """Delegate to the shared manager (see ``OKFManager.fetch``)."""
        return self._manager().fetch(ids, **kwargs)

    def browse(self, path: str = "", limit: int = 50, **kwargs: Any) -> list[Record]:
        """Delegate to the shared manager (see ``OKFManager.browse``)."""
        return self._manager().browse(path, limit=limit, **kwargs)

    def write(self, records: Iterable[Record], **kwargs: Any) -> Sequence[str] | None:
        """Delegate to the shared manager (see ``OKFManager.write``)."""
        return self._manager().write(records, **kwargs)

    def format_results(self, rows: Sequence[Record]) -> str:
        """Render as the manager does, so agents see the same text either way."""
        return self._manager().format_results(rows)
