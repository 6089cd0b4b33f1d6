"""OKF timestamps, read as the format states them: ISO 8601 datetimes with a UTC offset.

OKF 0.2 (section 5) says every timestamp-valued key is an ISO 8601 datetime with an explicit
UTC offset (``2026-06-30T14:00:00Z``, ``2026-06-30T16:00:00+02:00``), and ``stale_after`` is an
absolute instant. A value without a ``T`` or without an offset (a bare date ``2026-09-23``, a
naive ``2026-12-07T10:00:00``, YAML 1.1's ``2026-06-30 14:00:00+00:00``) is ignored, as the
reference implementation does: reading a bare date as midnight UTC, or a naive time as UTC,
would silently pick one reading of a value its author may have meant otherwise. An operator
whose bundles predate the rule may read bare dates as midnight UTC (``legacy_dates``); that is
off by default, and ``agentkernel-kb check`` names every such value and its fix either way.

:func:`parse_timestamp` is the one reader of OKF timestamps in the package (staleness, the
conformance check, computations' ``stale_after``). Values reach it as the strings the author
wrote: the frontmatter loader resolves no YAML timestamps
(:mod:`agentkernel.storage.yamltext`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

__all__ = [
    "EXAMPLE",
    "parse_timestamp",
    "timestamp_fields",
    "timestamp_problem",
]

EXAMPLE = "2026-06-30T14:00:00Z"
"""A timestamp as OKF 0.2 writes one, for messages."""

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
# YAML 1.1's way of writing an instant back: a space (or spaces) where ISO 8601 has its 'T'
_SPACED = re.compile(r"(\d{4}-\d{2}-\d{2})[ \t]+(\d.*)")


def parse_timestamp(value: Any, *, legacy_dates: bool = False) -> datetime | None:
    """Read an OKF timestamp value as an instant, or ignore it.

    Args:
        value: The frontmatter value as written (normally a string).
        legacy_dates: Read a bare ``YYYY-MM-DD`` date as midnight UTC (for bundles written
            before OKF stated the rule); off by default, when a bare date is ignored.

    Returns:
        The instant in UTC; ``None`` when the value is absent or is not an ISO 8601 datetime
        with a ``T`` and an explicit offset (a bare date unless ``legacy_dates``, a naive
        datetime, anything else).
    """
    if isinstance(value, datetime):  # only from a caller's own mapping, never from a file
        return value.astimezone(UTC) if value.tzinfo is not None else None
    if isinstance(value, date):
        return _midnight(value) if legacy_dates else None
    if not isinstance(value, str):
        return None
    raw = value.strip()
    if _DATE_ONLY.fullmatch(raw):
        return _legacy_day(raw) if legacy_dates else None
    instant = _iso_datetime(raw)
    if instant is None or instant.tzinfo is None:
        return None
    return instant.astimezone(UTC)


def timestamp_problem(value: Any, *, legacy_dates: bool = False) -> str | None:
    """Say why a timestamp value is not one OKF consumers can use, and how to fix it.

    Args:
        value: The frontmatter value as written.
        legacy_dates: Whether bare dates are being read as midnight UTC.

    Returns:
        ``None`` for an ISO 8601 datetime with an offset; otherwise a clause to follow the key
        and the value in a message (``"is a date without a time ..."``), ending in the fix.
    """
    if parse_timestamp(value) is not None:
        return None
    rule = "OKF 0.2 §5: every timestamp is an ISO 8601 datetime with an explicit UTC offset"
    raw = value.strip() if isinstance(value, str) else ""
    if isinstance(value, date) and not isinstance(value, datetime):
        raw = value.isoformat()
    if _DATE_ONLY.fullmatch(raw) and _legacy_day(raw) is not None:
        if legacy_dates:
            effect = "read as midnight UTC only because legacy dates are turned on"
        else:
            effect = "ignored, so it decides nothing (staleness included)"
        return f"is a date without a time ({rule}); {effect}; write {raw}T00:00:00Z"
    spaced = _SPACED.fullmatch(raw)
    if spaced is not None:
        fixed = f"{spaced.group(1)}T{spaced.group(2)}"
        if parse_timestamp(fixed) is not None:
            return (
                f"has a space where ISO 8601 puts a 'T' (the form a YAML 1.1 writer produces; "
                f"{rule}); it is ignored; write {fixed}"
            )
    instant = _iso_datetime(raw)
    if isinstance(value, datetime):
        instant, raw = value, value.isoformat()
    if instant is not None and instant.tzinfo is None:
        return (
            f"has no UTC offset ({rule}); it is ignored, since the time zone it means is "
            f"unknown; write {raw}Z if it is UTC, or add its offset (+02:00)"
        )
    return f"is not an ISO 8601 instant ({rule}); it is ignored; write it like {EXAMPLE}"


def timestamp_fields(meta: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """List the timestamp-valued keys of a frontmatter that are present, with their values.

    The keys OKF 0.2 defines: ``stale_after`` (§5.5), ``generated.at`` and ``verified[].at``
    (§5.2, a bare ``verified`` mapping counting as one event), ``sources[].last_modified``,
    and the ``from`` and ``to`` of ``usage_window``, shared or per source (§5.1).

    Args:
        meta: The frontmatter mapping.

    Returns:
        ``(dotted key, value)`` pairs in document order of the families above.
    """
    found: list[tuple[str, Any]] = []
    if "stale_after" in meta:
        found.append(("stale_after", meta["stale_after"]))
    generated = meta.get("generated")
    if isinstance(generated, Mapping) and "at" in generated:
        found.append(("generated.at", generated["at"]))
    for event in _items(meta.get("verified")):
        if "at" in event:
            found.append(("verified.at", event["at"]))
    found += _window("usage_window", meta.get("usage_window"))
    for source in _items(meta.get("sources")):
        if "last_modified" in source:
            found.append(("sources.last_modified", source["last_modified"]))
        found += _window("sources.usage_window", source.get("usage_window"))
    return found


def _items(value: Any) -> list[Mapping[str, Any]]:
    events = [value] if isinstance(value, Mapping) else value
    if not isinstance(events, list):
        return []
    return [e for e in events if isinstance(e, Mapping)]


def _window(name: str, window: Any) -> list[tuple[str, Any]]:
    if not isinstance(window, Mapping):
        return []
    return [(f"{name}.{end}", window[end]) for end in ("from", "to") if end in window]


def _iso_datetime(raw: str) -> datetime | None:
    """An ISO 8601 date and time (``T`` between them), naive or not; ``None`` for anything else."""
    if "T" not in raw.upper() or any(ch.isspace() for ch in raw):
        return None  # ISO 8601 has no space anywhere (Python's parser tolerates some)
    try:
        # RFC 3339 allows a lower-case 't' and 'z'; fromisoformat wants them upper-case
        return datetime.fromisoformat(raw.upper())
    except ValueError:
        return None


def _legacy_day(raw: str) -> datetime | None:
    try:
        return _midnight(date.fromisoformat(raw))
    except ValueError:
        return None


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
