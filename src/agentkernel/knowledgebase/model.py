"""The data of the contract: capability declarations and record shapes.

No I/O and no third-party import happens here; these types are read by the tool layer to
decide which tools exist and how ``read_kb`` routes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypedDict

Record = Mapping[str, Any]
"""A knowledge record: ``{"text": str, "metadata": {...}}``. Never validated at runtime."""

SearchMode = Literal["semantic", "lexical"]

_SEARCH_MODES = ("semantic", "lexical")
_OPERATIONS = ("search", "query", "fetch", "browse", "writable")


class KnowledgeMetadata(TypedDict, total=False):
    """Conventional metadata keys of a record; documentation only, never validated.

    Attributes:
        id: Comma-free identity; required on every record of a fetch-capable backend.
        source: Where the record came from.
        title: A human-readable title.
        kind: What sort of thing the record is (a concept type, a node label, ...).
        trust: ``unverified``, ``machine-confirmed`` or ``human-reviewed`` (OKF).
        stale: Whether the record is past its ``stale_after`` (OKF).
        status: Its lifecycle: ``stable``, ``draft`` or ``deprecated`` (OKF); ``superseded``
            or ``retired`` (curated store). Search ranks ``deprecated`` and ``superseded``
            below current records of equal relevance; it never filters on status.
        links: Identities the record links to, known after a fetch (OKF).
    """

    id: str
    source: str
    title: str
    kind: str
    trust: str
    stale: bool
    status: str
    links: list[str]


class KnowledgeRecord(TypedDict):
    """The shape of a record: text plus conventional metadata."""

    text: str
    metadata: KnowledgeMetadata


@dataclass(frozen=True, init=False)
class KnowledgeCapabilities:
    """What a backend declares it can do; the tool layer routes on nothing else.

    Immutable: a declaration is shared by every tool built from it, so ``kinds`` is kept as a
    tuple whatever iterable of strings it was given (``kinds=["vector"]`` as in the manual).

    Attributes:
        kinds: Open taxonomy of what the backend holds (``vector``, ``structured``, ``graph``,
            ``document``, ...). Default ``()``.
        search: Implements ``search(query, limit)``. Default ``False``.
        search_mode: ``"semantic"``, ``"lexical"`` or ``None``; advisory only, it does not
            imply ``search``. Default ``None``.
        query: Implements ``query(statement, limit)``. Default ``False``.
        query_language: The language ``query`` takes, for example ``"cypher"`` or ``"sql"``;
            required exactly when ``query`` is true. Default ``None``.
        fetch: Implements ``fetch(ids)``. Default ``False``.
        browse: Implements ``browse(path, limit)``. Default ``False``.
        writable: Implements ``write(records)``. Default ``False``.
        derives_schema: ``schema()`` self-describes without ``add_schema()``. Default ``False``.
    """

    kinds: tuple[str, ...]
    search: bool
    search_mode: SearchMode | None
    query: bool
    query_language: str | None
    fetch: bool
    browse: bool
    writable: bool
    derives_schema: bool

    def __init__(
        self,
        kinds: Iterable[str] = (),
        search: bool = False,
        search_mode: SearchMode | None = None,
        query: bool = False,
        query_language: str | None = None,
        fetch: bool = False,
        browse: bool = False,
        writable: bool = False,
        derives_schema: bool = False,
    ) -> None:
        """Check and keep the declaration (see the class attributes).

        Args:
            kinds: Any iterable of strings; kept as a tuple.
            search: Implements ``search``.
            search_mode: ``"semantic"``, ``"lexical"`` or ``None``.
            query: Implements ``query``.
            query_language: The language ``query`` takes.
            fetch: Implements ``fetch``.
            browse: Implements ``browse``.
            writable: Implements ``write``.
            derives_schema: ``schema()`` self-describes.

        Raises:
            TypeError: ``kinds`` is not an iterable of strings, a flag is not a bool, or
                ``query_language`` is not a string.
            ValueError: ``search_mode`` is not one of the two modes.
        """
        if isinstance(kinds, str | bytes) or not isinstance(kinds, Iterable):
            raise TypeError(f"kinds must be an iterable of strings, got {kinds!r}")
        kept = tuple(kinds)
        if not all(isinstance(k, str) for k in kept):
            raise TypeError(f"kinds must be an iterable of strings, got {kinds!r}")
        flags = {"search": search, "query": query, "fetch": fetch, "browse": browse}
        flags |= {"writable": writable, "derives_schema": derives_schema}
        for flag, value in flags.items():
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool, got {value!r}")
        if search_mode is not None and search_mode not in _SEARCH_MODES:
            raise ValueError(
                f"search_mode must be one of {list(_SEARCH_MODES)} or None, got {search_mode!r}"
            )
        if query_language is not None and not isinstance(query_language, str):
            raise TypeError(f"query_language must be a string, got {query_language!r}")
        fields: dict[str, object] = {"kinds": kept, "search_mode": search_mode}
        fields |= {"query_language": query_language, **flags}
        for name, kept_value in fields.items():
            object.__setattr__(self, name, kept_value)

    def operations(self) -> list[str]:
        """Return the declared operations, in contract order.

        Returns:
            The names among ``search``, ``query``, ``fetch``, ``browse``, ``writable`` that
            are declared true.
        """
        return [op for op in _OPERATIONS if getattr(self, op)]

    def as_dict(self) -> dict[str, Any]:
        """Return the declaration as a JSON-serialisable dict (what ``schema()`` reports).

        Returns:
            Every field with its value; ``kinds`` as a list, as JSON has it.
        """
        declared = asdict(self)
        declared["kinds"] = list(self.kinds)
        return declared


def stable_id(text: str, source: str | None) -> str:
    """Return the id a record without ``metadata["id"]`` is stored under, so writes are idempotent.

    Args:
        text: The record's text.
        source: Its ``metadata["source"]``, if any.

    Returns:
        32 hex characters of a SHA-256 over text and source: the same record, the same id.
    """
    payload = json.dumps([text, source or ""], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:32]
