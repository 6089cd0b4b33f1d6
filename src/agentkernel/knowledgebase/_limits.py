"""Limits shared by the query backends: a time limit, a row cap and a size cap on results.

Every query backend (SQL, Starburst, Neo4j, Chroma) takes ``timeout_seconds`` (default 30 s;
``None`` disables it, and must be given explicitly) and ``max_result_bytes`` (default 1 MB of
record text; ``None`` disables it). Results are pulled from the driver in batches
(:func:`take_rows`), never fetched whole: a batch is sized from the rows already seen so that
it stays near the remaining byte budget, and reading stops at the first row past either cap.

What was cut is never silent. The records come back as :class:`CutRecords`, a list whose
``notice`` says which cap cut the result, how many rows are shown and what was left out;
``KnowledgeBuilder`` appends that notice to the tool's text, so the agent reads it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agentkernel.errors import AKConfigError, AKError
from agentkernel.knowledgebase.model import Record

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESULT_BYTES = 1_000_000

_FIRST_BATCH = 16  # rows fetched before any row size is known; one round trip for most reads


class DeadlinePassed(AKError):
    """The wall-clock limit passed while rows were read; the backend words the message."""


class CutRecords(list[Record]):
    """Records of a result that a cap cut short; ``notice`` tells the agent what was cut."""

    def __init__(self, records: Sequence[Record], notice: str) -> None:
        """Keep the records and the notice.

        Args:
            records: The records that fit.
            notice: What was cut and by which cap, in one bracketed sentence.
        """
        super().__init__(records)
        self.notice = notice


class Watchdog:
    """One daemon thread that calls callbacks at their deadlines.

    Scheduling is a heap push under a lock (no thread is started per statement: on a busy
    machine starting one costs about a millisecond); a cancelled entry is only marked and
    dropped when it reaches the top. The thread starts with the first deadline, never at
    import. Every backend shares one (:func:`at_deadline`); a callback that blocks delays the
    others, so a party that must not wait on the backends' callbacks (a test server running
    in the same process, whose stop a client's cancel waits for) keeps its own.
    """

    def __init__(self, name: str = "agentkernel-deadlines") -> None:
        """Prepare the heap; the thread starts with the first deadline.

        Args:
            name: The thread's name, as debuggers and thread dumps show it.
        """
        self._name = name
        self._due = threading.Condition()
        self._heap: list[list[Any]] = []  # [deadline, sequence, callback or None]
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` from this watchdog's thread after ``seconds``.

        Args:
            seconds: How long from now.
            callback: What to call then; an exception it raises is logged and dropped.

        Returns:
            A function that cancels the call; cheap, and harmless after it ran.
        """
        entry: list[Any] = [time.monotonic() + seconds, next(self._order), callback]
        with self._due:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._due.notify()

        def cancel() -> None:
            entry[2] = None

        return cancel

    def _serve(self) -> None:
        while True:
            with self._due:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._due.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay > 0:
                    self._due.wait(delay)
                    continue
                callback = heapq.heappop(self._heap)[2]
            try:
                callback()
            except Exception:  # a failed stop must not end the thread that serves the others
                logging.getLogger(__name__).debug("a deadline callback failed", exc_info=True)


_WATCHDOG = Watchdog()


def at_deadline(seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` from the shared watchdog thread after ``seconds``.

    Args:
        seconds: How long from now.
        callback: What stops the statement (``interrupt()``, a query's ``cancel()``).

    Returns:
        A function that cancels the call; cheap, and harmless after it ran.
    """
    return _WATCHDOG.schedule(seconds, callback)


def is_positive(value: object, *, whole: bool = False) -> bool:
    """Whether a setting or argument is a positive number; a bool is not a number here.

    Args:
        value: What the caller gave.
        whole: Require a whole number (an ``int``).

    Returns:
        ``True`` for a positive ``int`` (or, unless ``whole``, a positive ``float``; NaN is not).
    """
    kinds = int if whole else int | float
    return not isinstance(value, bool) and isinstance(value, kinds) and value > 0


def check_limits(
    owner: str, timeout_seconds: float | None, max_result_bytes: int | None
) -> tuple[float | None, int | None]:
    """Validate the two limit settings of a backend.

    Args:
        owner: The backend, for the message (``"SQLManager 'sql'"``).
        timeout_seconds: Seconds a query may run, or ``None`` for no limit.
        max_result_bytes: Bytes of record text a result may carry, or ``None`` for no cap.

    Returns:
        The two settings, the timeout as a float.

    Raises:
        AKConfigError: A setting that is not a positive number.
    """
    if timeout_seconds is not None and not is_positive(timeout_seconds):
        raise AKConfigError(
            f"{owner}: timeout_seconds must be a positive number of seconds, or None for no "
            f"limit; got {timeout_seconds!r}."
        )
    if max_result_bytes is not None and not is_positive(max_result_bytes, whole=True):
        raise AKConfigError(
            f"{owner}: max_result_bytes must be a positive whole number, or None for no cap; "
            f"got {max_result_bytes!r}."
        )
    return (None if timeout_seconds is None else float(timeout_seconds)), max_result_bytes


def check_limit(limit: object) -> None:
    """Refuse a row limit that is not a whole number of at least 1.

    Args:
        limit: The ``limit`` a caller passed to ``search`` or ``query``.

    Raises:
        ValueError: ``limit`` is not a positive whole number.
    """
    if not is_positive(limit, whole=True):
        raise ValueError(f"limit must be a whole number of at least 1, got {limit!r}")


def take_rows(
    fetchmany: Callable[[int], Sequence[Any]],
    to_record: Callable[[Any, int], Record],
    *,
    max_rows: int,
    max_bytes: int | None,
    row_cap: str,
    deadline: float | None = None,
) -> list[Record]:
    """Read rows in batches until the result ends or a cap is reached.

    One row more than ``max_rows`` is asked for, so a result the row cap cut is told apart
    from one that had exactly ``max_rows`` rows. The first row that would take the record
    text past ``max_bytes`` is not kept; when it is the first row, it is kept with its text
    shortened to the cap, so the agent sees something of it.

    Args:
        fetchmany: The driver's ``fetchmany``: up to ``n`` rows, fewer only at the end.
        to_record: Builds the record of a row and its 1-based number.
        max_rows: The most rows kept.
        max_bytes: The most bytes of record text (UTF-8) kept, or ``None``.
        row_cap: How the row cap is named in the notice (``"limit=3"``).
        deadline: A ``time.monotonic()`` time after which reading stops, or ``None``.

    Returns:
        The records, as :class:`CutRecords` with a notice when a cap cut the result.

    Raises:
        DeadlinePassed: ``deadline`` passed before the rows were read and converted.
    """
    records: list[Record] = []
    used = 0
    notice = ""
    done = False
    while not done:
        wanted = max_rows + 1 - len(records)
        if max_bytes is not None:
            if records:
                average = max(1, used // len(records))
                wanted = min(wanted, (max_bytes - used) // average + 1)
            else:
                wanted = min(wanted, _FIRST_BATCH)
        batch = fetchmany(max(1, wanted))
        for row in batch:
            if deadline is not None and time.monotonic() > deadline:
                raise DeadlinePassed
            if len(records) == max_rows:
                notice = (
                    f"[Cut by the row cap ({row_cap}): {len(records)} rows shown; the rows "
                    "after them were not read. Narrow the query to see others.]"
                )
                done = True
                break
            record = to_record(row, len(records) + 1)
            size = _text_bytes(record)
            if max_bytes is not None and used + size > max_bytes:
                if not records:
                    records.append(_shortened(record, max_bytes))
                    used = max_bytes
                    shown = f"1 row shown with its text cut from {size:,} to {max_bytes:,} bytes"
                else:
                    shown = f"{len(records)} rows shown ({used:,} bytes)"
                notice = (
                    f"[Cut by the size cap (max_result_bytes={max_bytes:,}): {shown}; the rows "
                    "after them were not read. Select fewer or shorter columns, or fewer rows.]"
                )
                done = True
                break
            records.append(record)
            used += size
        if len(batch) < max(1, wanted):
            done = True
    return CutRecords(records, notice) if notice else records


def _text_bytes(record: Record) -> int:
    text = record.get("text", "")
    return len(text.encode("utf-8", "replace")) + 1 if isinstance(text, str) else 1


def _shortened(record: Record, max_bytes: int) -> Record:
    """The record with its text cut to ``max_bytes`` bytes (on a character boundary)."""
    text = str(record.get("text", ""))
    cut = text.encode("utf-8", "replace")[: max(0, max_bytes - 1)].decode("utf-8", "ignore")
    metadata = dict(record.get("metadata") or {})
    metadata["text_cut"] = True
    return {**record, "text": cut, "metadata": metadata}
