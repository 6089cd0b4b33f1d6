"""Knowledge-base errors: the ``KnowledgeError`` branch of the tree in :mod:`agentkernel.errors`.

``KnowledgeError`` and ``KnowledgePathError`` are defined in :mod:`agentkernel.errors` (the
document stores of :mod:`agentkernel.storage`, below this package, raise the path error) and
are this module's names as well.

::

    AKError                        (agentkernel.errors)
    └── KnowledgeError             base of every knowledge-base failure
        ├── KnowledgeCapabilityError   an operation the backend does not declare
        ├── KnowledgePathError         a path escaped a DocumentStore, or is unusable as an id
        ├── SQLRefusedError            a SQL statement refused before execution (not read-only)
        └── SQLQueryError              the database reported an error for an accepted statement

Finding nothing is not a failure: a read that matches no records returns an empty list.
``KnowledgeCapabilityError`` is deliberately not a ``NotImplementedError``, so it stays
distinguishable from an unimplemented abstract method. ``KnowledgeBuilder`` turns every one
of these into a string at the tool boundary.
"""

from __future__ import annotations

from agentkernel.errors import KnowledgeError as KnowledgeError  # the same class, this name too
from agentkernel.errors import KnowledgePathError as KnowledgePathError  # the same class

__all__ = [
    "KnowledgeCapabilityError",
    "SQLQueryError",
    "SQLRefusedError",
]


class KnowledgeCapabilityError(KnowledgeError):
    """An operation was called on a backend that does not declare it."""

    def __init__(self, backend: str, operation: str, detail: str = "") -> None:
        """Create the error.

        Args:
            backend: The backend's name.
            operation: The operation that is not declared (``search``, ``query``, ...).
            detail: Extra guidance appended to the message.
        """
        self.backend = backend
        self.operation = operation
        message = f"Backend '{backend}' does not support {operation}."
        super().__init__(f"{message} {detail}".strip())


class SQLRefusedError(KnowledgeError):
    """A statement was refused before execution: it is not exactly one read-only statement."""


class SQLQueryError(KnowledgeError):
    """The database reported an error for an accepted statement (syntax, missing table, ...)."""
