"""All-or-none ``create_many`` for the stores over files: an intent record before the pages.

A batch of several pages is many writes, and a writer can die between two of them. Before its
first page, ``create_many`` stores an *intent*: a small JSON record in the document store's
hidden records folder (``.agentkernel-batches/<id>.json``, see
:meth:`~agentkernel.storage.base.DocumentStore._records`; no walk lists it, no bundle file can
sit there), naming each page's file and the SHA-256 of the bytes it will write. The record is
removed once the pages and ``index.md`` are written, or once the pages are undone.

While a record is there, its batch is *complete* when every page file holds exactly the bytes
the record names, and *incomplete* otherwise. Every reader and writer of the store leaves the
pages of an incomplete batch out (they are not listed, read, searched or indexed), so half a
batch is never seen. A writer that finds the record of a writer that is gone (its process no
longer runs on this host, or the record is older than :data:`ABANDONED_SECONDS`) finishes the
batch: a complete one is kept and indexed, an incomplete one undone (each page file that still
holds the record's bytes is removed), and the record removed. Reading never writes: only a
writer finishes a batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agentkernel.storage.base import MAX_RECORD_BYTES
from agentkernel.storage.fs import host_tag, process_alive

logger = logging.getLogger(__name__)

ABANDONED_SECONDS = 60.0
"""A batch record of another host this old is abandoned (a writer on another host, a pod)."""

_PID_REUSE_SECONDS = 3600.0  # a running pid this long after its record: another process now


def digest(data: bytes) -> str:
    """The SHA-256 (hex) a batch record names a page file's bytes by."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Intent:
    """A batch record: who writes which page files with which bytes."""

    name: str
    host: str
    pid: int
    at: float
    pages: tuple[tuple[str, str], ...]
    """``(bundle-relative file, digest of its bytes)`` per page, in writing order."""

    @property
    def rels(self) -> tuple[str, ...]:
        """The page files of the batch."""
        return tuple(rel for rel, _ in self.pages)

    def encoded(self) -> bytes:
        """The record's bytes."""
        record = {"host": self.host, "pid": self.pid, "at": self.at, "pages": self.pages}
        return json.dumps(record, separators=(",", ":")).encode("utf-8")

    def abandoned(self, now: float | None = None) -> bool:
        """Whether its writer is gone.

        On this host the process decides: a batch of a running process (this one included:
        several stores may write in one process) is never taken, unless its record is so old
        that the pid must have been reused. A record of another host is gone once older than
        :data:`ABANDONED_SECONDS`; one dated in the future (a skewed clock, or planted) is
        nobody's batch in progress.
        """
        age = (time.time() if now is None else now) - self.at
        if age < -ABANDONED_SECONDS:
            return True
        if self.host == host_tag():
            return not process_alive(self.pid) or age > _PID_REUSE_SECONDS
        return age > ABANDONED_SECONDS


def new_intent(files: Iterable[tuple[str, bytes]]) -> Intent:
    """The record of a batch about to write ``files`` (``(rel, bytes)`` each).

    Args:
        files: The page files, in writing order.

    Returns:
        The intent, named afresh.
    """
    pages = tuple((rel, digest(data)) for rel, data in files)
    return Intent(f"{secrets.token_hex(8)}.json", host_tag(), os.getpid(), time.time(), pages)


def parse_intent(name: str, data: bytes) -> Intent | None:
    """Read a record; ``None`` (logged) when it is not one this module wrote."""
    if len(data) > MAX_RECORD_BYTES:
        logger.warning("ignoring the batch record %s: over %d bytes", name, MAX_RECORD_BYTES)
        return None
    try:
        record = json.loads(data.decode("utf-8"))
        pages = tuple((str(rel), str(sha)) for rel, sha in record["pages"])
        return Intent(name, str(record["host"]), int(record["pid"]), float(record["at"]), pages)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        logger.warning("ignoring the batch record %s: it can't be read (%s)", name, exc)
        return None


def holds_all(intent: Intent, read: Callable[[str], bytes | None]) -> bool:
    """Whether every page file of a batch holds exactly the bytes its record names.

    Args:
        intent: The batch.
        read: A file's bytes; ``None`` when it is missing (or can't be read now).

    Returns:
        True for a complete batch.
    """
    for rel, sha in intent.pages:
        data = read(rel)
        if data is None or digest(data) != sha:
            return False
    return True
