"""One OKF document read into a manifest entry: frontmatter, title, trust, staleness, tokens.

Parsing works on a bounded leading read of the document (the *head*), so building a manifest
never reads a whole body. A document that cannot be a concept raises :class:`ConceptError`
with the reason the manifest records as a diagnostic; the bundle still loads.
"""

from __future__ import annotations

import codecs
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentkernel.bundle.timestamps import parse_timestamp
from agentkernel.errors import AKError
from agentkernel.storage import frontmatter

RESERVED_NAMES = frozenset({"index.md", "log.md"})
"""File names that are never concepts, at any level of a bundle (OKF 0.2, section 3.1)."""

TRUST_UNVERIFIED = "unverified"
TRUST_MACHINE = "machine-confirmed"
TRUST_HUMAN = "human-reviewed"


class ConceptError(AKError, ValueError):
    """A document cannot be read as an OKF concept; the message says why."""


@dataclass
class Concept:
    """What the manifest keeps about one concept (never its whole body).

    Attributes:
        id: The concept id: its bundle-relative path without ``.md``.
        path: Its bundle-relative path.
        token: The store's change token for the bytes this entry was built from.
        size: Size in bytes, as listed.
        type: The required ``type``.
        title: ``title``, or one derived from the file name.
        description: ``description`` (``""`` when absent).
        tags: ``tags`` as strings.
        trust: The trust tier derived from ``verified``.
        stale_after: The instant from ``stale_after`` (UTC), or ``None``: absent, or not an
            ISO 8601 datetime with an offset (see :mod:`agentkernel.bundle.timestamps`).
        frontmatter: The whole frontmatter mapping, values as written.
        body_head: The part of the body within the leading read.
        complete: Whether the leading read held the whole document.
        status: The lifecycle ``status`` (OKF 0.2, section 5.4), lower-cased; ``stable``
            when absent.
    """

    id: str
    path: str
    token: str
    size: int
    type: str
    title: str
    description: str
    tags: list[str]
    trust: str
    stale_after: datetime | None
    frontmatter: dict[str, Any] = field(repr=False)
    body_head: str = field(repr=False, default="")
    complete: bool = True
    status: str = "stable"

    def is_stale(self, now: datetime, *, legacy_dates: bool = False) -> bool:
        """Tell whether the concept is past its ``stale_after`` at ``now``.

        Args:
            now: The current instant (timezone-aware).
            legacy_dates: Read a bare-date ``stale_after`` as midnight UTC (an operator's
                setting for bundles older than the rule); by default it is ignored.

        Returns:
            ``True`` when ``now >= stale_after``; ``False`` when there is no usable
            ``stale_after`` (absent, a bare date, a datetime without an offset).
        """
        instant = self.stale_after
        if instant is None and legacy_dates:
            instant = parse_timestamp(self.frontmatter.get("stale_after"), legacy_dates=True)
        return instant is not None and now >= instant


def is_reserved(path: str) -> bool:
    """Tell whether a bundle path names a reserved file (``index.md`` or ``log.md``).

    Args:
        path: A bundle-relative path.

    Returns:
        ``True`` for ``index.md`` and ``log.md`` at any level.
    """
    return posixpath.basename(path).lower() in RESERVED_NAMES


def is_document(path: str) -> bool:
    """Tell whether a bundle path is a markdown document (``.md``, any case).

    Args:
        path: A bundle-relative path.

    Returns:
        ``True`` for markdown files.
    """
    return path.lower().endswith(".md")


def concept_id(path: str) -> str:
    """Return the concept id of a document path: the path without its ``.md`` suffix.

    Args:
        path: A bundle-relative path ending in ``.md``.

    Returns:
        The id.
    """
    return path[:-3] if is_document(path) else path


def decode_head(data: bytes, *, complete: bool) -> str:
    """Decode a leading read as UTF-8, tolerating a character cut at the end of a partial read.

    Args:
        data: The bytes read.
        complete: Whether ``data`` is the whole document.

    Returns:
        The text.

    Raises:
        ConceptError: The bytes are binary (hold a NUL byte) or are not UTF-8.
    """
    if b"\x00" in data:
        raise ConceptError("binary content (a NUL byte), not a markdown document")
    try:
        if complete:
            return data.decode("utf-8")
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError as exc:
        raise ConceptError(f"not UTF-8 text (byte {exc.start}: {exc.reason})") from exc


def parse_concept(path: str, token: str, size: int, data: bytes, *, complete: bool) -> Concept:
    """Parse the leading bytes of a document into a manifest entry.

    Args:
        path: The document's bundle-relative path.
        token: The store's change token for these bytes.
        size: The document's size.
        data: The leading bytes (the whole document when ``complete``).
        complete: Whether ``data`` is the whole document.

    Returns:
        The concept.

    Raises:
        ConceptError: No frontmatter, invalid YAML, no non-empty ``type``, binary or not
            UTF-8, or frontmatter that does not close within the leading read.
    """
    text = decode_head(data, complete=complete)
    parts = frontmatter.split(text)
    if parts is None:
        if not complete and text.lstrip("\ufeff").startswith("---"):
            raise ConceptError(
                f"frontmatter does not close within the first {len(data)} bytes (oversized)"
            )
        raise ConceptError("no YAML frontmatter (a concept must open with a '---' line)")
    raw, body = parts
    try:
        meta = frontmatter.read_mapping(raw)
    except frontmatter.FrontmatterError as exc:
        raise ConceptError(" ".join(str(exc).split())) from exc
    return concept_from(path, token, size, meta, body, complete=complete)


def concept_from(
    path: str, token: str, size: int, meta: dict[str, Any], body: str, *, complete: bool
) -> Concept:
    """Build a manifest entry from parsed frontmatter.

    Args:
        path: The document's bundle-relative path.
        token: The store's change token.
        size: The document's size.
        meta: The frontmatter mapping.
        body: The body (or its leading part).
        complete: Whether ``body`` is the whole body.

    Returns:
        The concept.

    Raises:
        ConceptError: ``type`` is missing, empty or not a scalar.
    """
    kind = meta.get("type")
    if isinstance(kind, bool) or not isinstance(kind, str | int | float) or not str(kind).strip():
        raise ConceptError("frontmatter has no non-empty 'type' (the one required key)")
    title = _text(meta.get("title")) or _title_from_path(path)
    return Concept(
        id=concept_id(path),
        path=path,
        token=token,
        size=size,
        type=str(kind).strip(),
        title=title,
        description=_text(meta.get("description")),
        tags=_tags(meta.get("tags")),
        trust=trust_tier(meta.get("verified")),
        stale_after=parse_timestamp(meta.get("stale_after")),
        frontmatter=meta,
        body_head=body,
        complete=complete,
        status=_text(meta.get("status")).lower() or "stable",
    )


def trust_tier(verified: Any) -> str:
    """Derive the trust tier from a ``verified`` value (OKF 0.2, section 5.3).

    A bare mapping counts as a one-item list. An actor starting with ``human:`` makes the
    concept human-reviewed; any other verifier makes it machine-confirmed.

    Args:
        verified: The frontmatter value (absent is ``None``).

    Returns:
        ``unverified``, ``machine-confirmed`` or ``human-reviewed``.
    """
    if verified is None:
        return TRUST_UNVERIFIED
    events = [verified] if isinstance(verified, Mapping) else verified
    if not isinstance(events, list) or not events:
        return TRUST_UNVERIFIED
    actors = [str(e.get("by", "")).strip() for e in events if isinstance(e, Mapping)]
    actors = [a for a in actors if a]
    if not actors:
        return TRUST_UNVERIFIED
    if any(a.startswith("human:") for a in actors):
        return TRUST_HUMAN
    return TRUST_MACHINE


def _text(value: Any) -> str:
    if value is None or isinstance(value, Mapping | list):
        return ""
    return " ".join(str(value).split())


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list):
        return []
    return [t for t in (_text(v) for v in value) if t]


def _title_from_path(path: str) -> str:
    stem = posixpath.basename(concept_id(path))
    words = stem.replace("_", " ").replace("-", " ").split()
    return " ".join(words) or stem
