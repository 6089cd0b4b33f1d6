"""The audit trail: one JSON line per tool call, refusal and failed authentication.

Each line says when, who (the authenticated identity), which tool on which backend, what it
touched (ids and page names as given; a statement, query or text only as a SHA-256 digest),
the outcome, how long it took and how many bytes it returned. For a tool that writes, the
first line of its answer is kept too (``Wrote 1 record(s) to 'GA4': ['generated/churn']``),
so ``grep generated/churn audit.jsonl`` answers "who wrote this concept, and when".

Never written: a bearer token, an ``Authorization`` header, an argument's text, or anything
from the environment. Lines are appended whole (one ``write`` of one line under a lock, the
file opened for appending), so concurrent calls never interleave.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO, Any

logger = logging.getLogger(__name__)

__all__ = ["AuditLog"]

#: Arguments recorded as given: they name what a call touched.
_NAMED = ("backend", "ids", "id", "page", "pages", "path", "type", "slug")
#: Arguments recorded as a digest only: they may hold data or secrets.
_DIGESTED = ("query", "statement", "text", "content", "records", "fields", "body", "reason")
_MAX_NAMED = 400
_MAX_SUMMARY = 300


class AuditLog:
    """Appends audit records as JSON lines to a file, or to stderr (``-``)."""

    def __init__(self, target: str) -> None:
        """Open the trail.

        Args:
            target: A file path (created if missing, appended to), or ``-`` for stderr.

        Raises:
            OSError: The file cannot be opened for appending.
        """
        self.target = target
        self._lock = threading.Lock()
        self._stream: IO[str]
        if target == "-":
            self._stream = sys.stderr
            self._owned = False
        else:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._stream = os.fdopen(fd, "a", encoding="utf-8")
            self._owned = True

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (a ``time`` field is put first).

        Args:
            record: JSON-serialisable fields.
        """
        line = json.dumps(
            {"time": _now(), **record}, ensure_ascii=True, default=str, separators=(",", ":")
        )
        with self._lock:
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError):  # a full disk never ends a call
                logger.exception("could not write the audit trail to %s", self.target)

    def call(
        self,
        *,
        identity: str,
        tool: str,
        arguments: Mapping[str, Any] | None,
        outcome: str,
        started: float,
        text: str,
        writes: bool,
    ) -> None:
        """Record one tool call.

        Args:
            identity: Who called.
            tool: The tool name.
            arguments: The arguments as the client sent them.
            outcome: ``ok``, ``error`` (the tool refused or failed), ``refused`` (no such
                tool for this identity) or ``limit`` (over the identity's limits).
            started: ``time.perf_counter()`` when the call began.
            text: The answer's text.
            writes: Whether the tool may change knowledge (its answer's first line is kept).
        """
        record: dict[str, Any] = {
            "event": "call",
            "identity": identity,
            "tool": tool,
        }
        record.update(describe_arguments(arguments))
        record["outcome"] = outcome
        record["duration_ms"] = round((time.perf_counter() - started) * 1000, 2)
        record["bytes"] = len(text.encode("utf-8", "surrogatepass"))
        if writes or outcome != "ok":
            record["summary"] = _cut(text.split("\n", 1)[0], _MAX_SUMMARY)
        self.write(record)

    def refused_authentication(self, *, reason: str, client: str, method: str) -> None:
        """Record a request refused for want of a valid token.

        Args:
            reason: Why (``missing``, ``expired``, ``wrong audience``...), never the token.
            client: The peer's address.
            method: The HTTP method.
        """
        self.write(
            {
                "event": "auth",
                "outcome": "refused",
                "reason": reason,
                "client": client,
                "method": method,
            }
        )

    def close(self) -> None:
        """Close the file (stderr stays open)."""
        if self._owned:
            with self._lock:
                self._stream.close()


def describe_arguments(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the trail keeps of a call's arguments: names as given, contents as digests.

    Args:
        arguments: The arguments as the client sent them.

    Returns:
        ``backend`` and the ids or pages named, and ``<name>_sha256`` for each statement,
        query or text argument.
    """
    if not isinstance(arguments, Mapping):
        return {}
    kept: dict[str, Any] = {}
    for name in _NAMED:
        value = arguments.get(name)
        if isinstance(value, str | int | float | bool):
            kept[name] = _cut(str(value), _MAX_NAMED)
        elif isinstance(value, list):
            shown = [_cut(str(v), 120) for v in value[:20] if isinstance(v, str | int)]
            kept[name] = shown + ([f"... {len(value) - 20} more"] if len(value) > 20 else [])
    for name in _DIGESTED:
        value = arguments.get(name)
        if value is not None:
            raw = (
                value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            )
            digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
            kept[f"{name}_sha256"] = digest[:32]
    return kept


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
