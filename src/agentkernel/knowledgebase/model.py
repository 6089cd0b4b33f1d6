"""The data of the contract: capability declarations and record shapes.

No I/O and no third-party import happens here; these types are read by the tool layer to
decide which tools exist and how ``read_kb`` routes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
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


@dataclass(frozen=True)
class KnowledgeCapabilities:
    """What a backend declares it can do; the tool layer routes on nothing else.

    The fields, their types and defaults are the manual's table (``kinds`` is a
    ``list[str]`` defaulting to ``[]``). The declaration is frozen and keeps its own copy
    of ``kinds``, so changing the list it was given changes nothing.

    Attributes:
        kinds: Open taxonomy of what the backend holds (``vector``, ``structured``, ``graph``,
            ``document``, ...). Default ``[]``.
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

    kinds: list[str] = field(default_factory=list)
    search: bool = False
    search_mode: SearchMode | None = None
    query: bool = False
    query_language: str | None = None
    fetch: bool = False
    browse: bool = False
    writable: bool = False
    derives_schema: bool = False

    def __post_init__(self) -> None:
        """Check the declaration and keep a copy of ``kinds`` as a list.

        Raises:
            TypeError: ``kinds`` is not an iterable of strings, a flag is not a bool, or
                ``query_language`` is not a string.
            ValueError: ``search_mode`` is not one of the two modes.
        """
        kinds: object = self.kinds
        if isinstance(kinds, str | bytes) or not isinstance(kinds, Iterable):
            raise TypeError(f"kinds must be an iterable of strings, got {kinds!r}")
        kept = list(kinds)
        if not all(isinstance(k, str) for k in kept):
            raise TypeError(f"kinds must be an iterable of strings, got {kinds!r}")
        object.__setattr__(self, "kinds", kept)
        for flag in ("search", "query", "fetch", "browse", "writable", "derives_schema"):
            value = getattr(self, flag)
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool, got {value!r}")
        if self.search_mode is not None and self.search_mode not in _SEARCH_MODES:
            raise ValueError(
                f"search_mode must be one of {list(_SEARCH_MODES)} or None, "
                f"got {self.search_mode!r}"
            )
        if self.query_language is not None and not isinstance(self.query_language, str):
            raise TypeError(f"query_language must be a string, got {self.query_language!r}")

    def __hash__(self) -> int:
        """Hash the declaration by value (``kinds`` as a tuple)."""
        return hash(
            tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in vars(self).items())
        )

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
            Every field with its value.
        """
        return asdict(self)


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


PROGRESS_LOGGER = "agentkernel.progress"
"""The logger of loading progress lines (counts, rate, ETA); the command line shows its INFO
lines whatever the log level (``--quiet`` hides them)."""


@dataclass(frozen=True)
class Readiness:
    """A database's loading state, at one moment.

    Attributes:
        warming: What is still loading, or ``""`` when nothing is: ``"walk"`` (reading the
            bundle), ``"index"`` (opening or downloading a bundle index), ``"vectors"``
            (embedding concepts, or reading an index's vectors).
        done: Units of that step done (documents walked, concepts with a vector).
        total: Units of that step in all; ``0`` when not known yet (a walk before its
            listing ends).
        lexical_ready: Every operation answers: search lexically at least, fetch and browse
            fully. A server is ready once every database says so.
        vectors_ready: Search is as complete as configured: hybrid with every concept's
            vector, or lexical by configuration (no embedder).
        vectors: Concepts holding a vector now (``0`` without an embedder).
        vectors_total: Concepts served that want one (``0`` without an embedder).
        error: Why loading failed (the database cannot answer), or ``""``.
    """

    warming: str = ""
    done: int = 0
    total: int = 0
    lexical_ready: bool = True
    vectors_ready: bool = True
    vectors: int = 0
    vectors_total: int = 0
    error: str = ""

    @property
    def ready(self) -> bool:
        """Whether the database answers every operation (lexically at least)."""
        return self.lexical_ready and not self.error

    def describe(self) -> str:
        """One line for a probe's body or a log: ``ready``, or what is warming and how far.

        Returns:
            For example ``warming vectors: 120/2000 (6%); search is lexical until done``.
        """
        if self.error:
            return f"failed: {self.error}"
        if not self.warming:
            if not self.lexical_ready:
                return "loading"
            if not self.vectors_ready:  # between two steps, or a refill about to start
                return (
                    f"vectors: {self.vectors}/{self.vectors_total} held; search is lexical "
                    "until done"
                )
            return "ready"
        if self.total:
            far = f"{self.done}/{self.total} ({100 * self.done // self.total}%)"
        else:
            far = f"{self.done} so far"
        text = f"warming {self.warming}: {far}"
        if self.lexical_ready and not self.vectors_ready:
            text += "; search is lexical until done"
        return text


READY = Readiness()
"""A database with nothing to load (the default of :meth:`KnowledgeBase.readiness`)."""
