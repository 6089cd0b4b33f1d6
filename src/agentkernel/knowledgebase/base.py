"""The ``KnowledgeBase`` contract every backend implements.

Three members are abstract (``backend_name``, ``connect``, ``get_description``). The five
operations (``search``, ``query``, ``fetch``, ``browse``, ``write``) are optional: a backend
implements the ones it declares in its :class:`KnowledgeCapabilities`, and calling one it
does not declare raises :class:`KnowledgeCapabilityError`. That holds even where a subclass
defines the method but declares it false (an OKF bundle on a read-only store, say): the
declaration is checked here, once, for every backend.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from agentkernel.knowledgebase.errors import KnowledgeCapabilityError
from agentkernel.knowledgebase.model import READY, KnowledgeCapabilities, Readiness, Record

# method name -> the capability flag that declares it
_OPERATION_FLAGS: dict[str, str] = {
    "search": "search",
    "query": "query",
    "fetch": "fetch",
    "browse": "browse",
    "write": "writable",
}


def _declared_only(method: Callable[..., Any], flag: str) -> Callable[..., Any]:
    """Wrap a subclass's operation so it runs only while its capability is declared."""

    @functools.wraps(method)
    def guarded(self: KnowledgeBase, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self.capabilities, flag):
            raise self._undeclared(method.__name__)
        return method(self, *args, **kwargs)

    guarded.__ak_guarded__ = True  # type: ignore[attr-defined]
    return guarded


class KnowledgeBase(ABC):
    """A store of durable knowledge behind the agent tool set.

    Subclasses declare what they support to ``super().__init__`` and implement exactly
    those operations. See the manual's "Custom KnowledgeBase Adapters".
    """

    capabilities: KnowledgeCapabilities

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method_name, flag in _OPERATION_FLAGS.items():
            method = cls.__dict__.get(method_name)
            if callable(method) and not getattr(method, "__ak_guarded__", False):
                setattr(cls, method_name, _declared_only(method, flag))

    def __init__(self, capabilities: KnowledgeCapabilities, name: str | None = None) -> None:
        """Validate and record the backend's declaration.

        Args:
            capabilities: What this backend implements; checked against the two invariants.
            name: The backend's name. Subclasses usually return it from ``backend_name``;
                when omitted, errors name the class instead.

        Raises:
            ValueError: The declaration breaks an invariant; the message names the backend.
            TypeError: ``capabilities`` is not a ``KnowledgeCapabilities``.
        """
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a string, got {name!r}")
        self.validate_capabilities(capabilities, name or type(self).__name__)
        self.capabilities = capabilities
        if name is not None or not hasattr(self, "name"):
            self.name: str = name or ""
        self._dynamic_schema: dict[str, Any] = {}
        self._schema_given = False

    @staticmethod
    def validate_capabilities(capabilities: KnowledgeCapabilities, subject: str) -> None:
        """Check a declaration without constructing a backend.

        Args:
            capabilities: The declaration to check.
            subject: The backend name used in the error message.

        Raises:
            TypeError: ``capabilities`` is not a ``KnowledgeCapabilities``.
            ValueError: No operation is declared, or ``query`` and ``query_language`` disagree.
        """
        if not isinstance(capabilities, KnowledgeCapabilities):
            raise TypeError(
                f"Backend '{subject}': capabilities must be a KnowledgeCapabilities, "
                f"got {type(capabilities).__name__}"
            )
        if not capabilities.operations():
            raise ValueError(
                f"Backend '{subject}' declares no operation: set at least one of "
                "search, query, fetch, browse or writable in its KnowledgeCapabilities."
            )
        if capabilities.query and not capabilities.query_language:
            raise ValueError(
                f"Backend '{subject}' declares query=True without a query_language "
                "(for example 'sql' or 'cypher')."
            )
        if capabilities.query_language and not capabilities.query:
            raise ValueError(
                f"Backend '{subject}' declares query_language="
                f"{capabilities.query_language!r} but not query=True."
            )

    # -- the three abstract members ------------------------------------------------------

    @property
    @abstractmethod
    def backend_name(self) -> str:
        """Unique identifier of this backend, used by the tools and in schemas."""

    @abstractmethod
    def connect(self, **kwargs: Any) -> None:
        """Establish the underlying client connections.

        Args:
            **kwargs: Backend-specific connection options.
        """

    @abstractmethod
    def get_description(self) -> str:
        """Return a human-readable description the agent uses to choose a backend."""

    # -- the optional operations: declared ones are overridden ---------------------------

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Return the records most relevant to ``query``, best first.

        Args:
            query: Natural-language or keyword text.
            limit: The most records to return.
            **kwargs: Backend-specific options.

        Returns:
            Up to ``limit`` records; an empty list when nothing matches.

        Raises:
            KnowledgeCapabilityError: The backend does not declare ``search``.
        """
        raise self._undeclared("search")

    def query(self, statement: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Run a statement in the backend's ``query_language``.

        Args:
            statement: The statement (Cypher, SQL, ...).
            limit: The most records to return.
            **kwargs: Backend-specific options.

        Returns:
            Up to ``limit`` records.

        Raises:
            KnowledgeCapabilityError: The backend does not declare ``query``.
        """
        raise self._undeclared("query")

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        """Return the records with these identities.

        Args:
            ids: Comma-free identities, as found in ``metadata["id"]``.
            **kwargs: Backend-specific options.

        Returns:
            One record per identity found; unknown identities are left out.

        Raises:
            KnowledgeCapabilityError: The backend does not declare ``fetch``.
        """
        raise self._undeclared("fetch")

    def browse(self, path: str = "", limit: int = 50, **kwargs: Any) -> list[Record]:
        """Enumerate a namespace.

        Args:
            path: The namespace to list; ``""`` is the root.
            limit: The most entries to return.
            **kwargs: Backend-specific options.

        Returns:
            Records describing the entries under ``path``.

        Raises:
            KnowledgeCapabilityError: The backend does not declare ``browse``.
        """
        raise self._undeclared("browse")

    def write(self, records: Iterable[Record], **kwargs: Any) -> Sequence[str] | None:
        """Persist records.

        Args:
            records: Records of the shape ``{"text": str, "metadata": {...}}``.
            **kwargs: Backend-specific options.

        Returns:
            The identities written, where the backend has them; otherwise ``None``.

        Raises:
            KnowledgeCapabilityError: The backend does not declare ``writable``.
        """
        raise self._undeclared("write")

    # -- provided ------------------------------------------------------------------------

    def add_schema(self, config: Mapping[str, Any]) -> Self:
        """Merge a schema description into what ``schema()`` reports; chainable.

        Args:
            config: Keys describing the backend for the agent (tables, labels, usage, ...).

        Returns:
            This backend, so construction and schema can be one expression.

        Raises:
            TypeError: ``config`` is not a mapping.
        """
        if not isinstance(config, Mapping):
            raise TypeError(f"add_schema() takes a mapping, got {type(config).__name__}")
        self._dynamic_schema.update(config)
        self._schema_given = True
        return self

    def _derived_schema(self) -> dict[str, Any]:
        """Return what the backend can say about itself; override with ``derives_schema``."""
        return {}

    def schema(self) -> dict[str, Any]:
        """Return what ``get_schemas()`` shows the agent for this backend.

        Merges, in order: ``{"backend": backend_name}``, ``_derived_schema()``, the
        ``add_schema()`` content, and finally ``"capabilities"``, which is not overridable.

        Returns:
            The merged schema.

        Raises:
            ValueError: Neither ``add_schema()`` was called nor ``derives_schema`` declared.
        """
        if not self._schema_given and not self.capabilities.derives_schema:
            raise ValueError(
                f"Backend '{self.backend_name}' has no schema: call add_schema({{...}}) "
                "or declare derives_schema=True and override _derived_schema()."
            )
        merged: dict[str, Any] = {"backend": self.backend_name}
        merged.update(self._derived_schema())
        merged.update(self._dynamic_schema)
        merged["capabilities"] = self.capabilities.as_dict()
        return merged

    def format_results(self, rows: Sequence[Record]) -> str:
        """Render records for the agent: one bullet per record with its source.

        For a backend declaring ``fetch`` each line starts with ``[<id>]``, so the agent can
        feed a result straight back into ``fetch_kb``.

        Args:
            rows: Records as returned by an operation.

        Returns:
            The rendered text; ``"No results."`` for an empty list.
        """
        if not rows:
            return "No results."
        lines = []
        for row in rows:
            if not isinstance(row, Mapping):
                lines.append(f"- {row}")
                continue
            metadata = row.get("metadata") or {}
            record_id = metadata.get("id") if isinstance(metadata, Mapping) else None
            source = metadata.get("source") if isinstance(metadata, Mapping) else None
            prefix = f"[{record_id}] " if self.capabilities.fetch and record_id else ""
            suffix = f" (source: {source})" if source else ""
            lines.append(f"- {prefix}{row.get('text', '')}{suffix}")
        return "\n".join(lines)

    def readiness(self) -> Readiness:
        """How far this backend is from answering (cheap: a server asks on every probe).

        A backend that loads in the background (an OKF bundle) says what is still warming
        and how far it got; the default is ready.

        Returns:
            The loading state now.
        """
        return READY

    def close(self) -> None:
        """Release connections or flush buffers; the default does nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _undeclared(self, operation: str) -> KnowledgeCapabilityError:
        declared = self.capabilities.operations()
        return KnowledgeCapabilityError(
            self.backend_name, operation, f"It declares: {', '.join(declared) or 'nothing'}."
        )
