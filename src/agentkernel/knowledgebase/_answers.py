"""Fit a knowledge tool's records into the answer budget, saying how to read what was cut.

Used by :class:`~agentkernel.knowledgebase.knowledgebuilder.KnowledgeBuilder`; the budget
and the ``id#offset=N`` reference are :mod:`agentkernel._tooling.budget`'s.

A cut answer ends with one line starting ``[cut]`` that names the call reading the rest.
A ``fetch_kb`` answer for ``id#offset=N`` opens with one line
``[id#offset=N] characters N to M of T of id:`` followed by exactly those characters of the
record as ``fetch_kb`` of the id alone renders it, so the parts read one after another are
that rendering, character for character.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentkernel._tooling.budget import cut_text, listed, split_offset, with_offset
from agentkernel._tooling.errors import ToolRefusal
from agentkernel._tooling.result import ReadOn, ToolResult
from agentkernel.errors import echo
from agentkernel.knowledgebase.base import KnowledgeBase

MAX_FETCH_IDS = 50
"""The most distinct ids one ``fetch_kb`` call reads; the rest are named for further calls."""

FETCH_BATCH = 10
"""Ids asked of the backend at once, so a call stops reading once its budget is spent."""

NOTE_ROOM = 1_800
"""Characters kept free for the notes of a cut answer."""

_MIN_PIECE = 400  # a later record is cut only when at least this much of it fits

FETCH_SECONDS = 10.0
"""How long one ``fetch_kb`` call goes on reading further ids (one batch always completes)."""

CUT = "[cut] "
"""How the line naming the call that reads the rest begins."""


class Renderings:
    """The last few records too long for one answer, rendered, so reading on re-reads nothing.

    An agent reads a long record in parts, one call each; without this every part would
    read and parse the whole record again. A rendering is kept for ``seconds`` (so every
    part of one read comes from the same version), at most ``size`` of them; thread-safe.
    """

    def __init__(self, size: int = 4, seconds: float = 60.0) -> None:
        """Create an empty cache.

        Args:
            size: The most renderings kept.
            seconds: How long one is served after it was read.
        """
        self._size = size
        self._seconds = seconds
        self._held: OrderedDict[tuple[str, str], tuple[float, Rendered]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, backend: str, record: str) -> Rendered | None:
        """The rendering of ``record`` read less than ``seconds`` ago, or ``None``."""
        with self._lock:
            held = self._held.get((backend, record))
            if held is None or time.monotonic() - held[0] > self._seconds:
                return None
            return held[1]

    def put(self, backend: str, record: str, rendered: Rendered) -> None:
        """Keep a rendering, dropping the oldest beyond ``size``."""
        with self._lock:
            self._held[(backend, record)] = (time.monotonic(), rendered)
            self._held.move_to_end((backend, record))
            while len(self._held) > self._size:
                self._held.popitem(last=False)


@dataclass(frozen=True)
class Rendered:
    """A record as the backend returned it, and its whole rendering."""

    row: Any
    text: str


@dataclass(frozen=True)
class Ref:
    """One id asked of ``fetch_kb``, and the character it is read from."""

    id: str
    offset: int

    @property
    def text(self) -> str:
        """The reference as the agent writes it."""
        return with_offset(self.id, self.offset)


@dataclass
class FetchRequest:
    """The ids of a ``fetch_kb`` call: distinct, in order, at most :data:`MAX_FETCH_IDS`.

    Attributes:
        refs: The references read by this call.
        repeated: How many references repeated an earlier one (read once).
        over: The distinct references past the cap, for further calls.
    """

    refs: list[Ref] = field(default_factory=list)
    repeated: int = 0
    over: list[Ref] = field(default_factory=list)


def fetch_request(ids: str, resolve: Callable[[str], str]) -> FetchRequest:
    """Parse a ``fetch_kb`` ids argument.

    Args:
        ids: Comma-separated ids, each optionally ``id#offset=N``.
        resolve: The builder's placeholder resolution.

    Returns:
        The request; empty ``refs`` when no id was given.
    """
    request = FetchRequest()
    seen: set[tuple[str, int]] = set()
    for part in ids.split(","):
        part = part.strip()
        if not part:
            continue
        record_id, offset = split_offset(part)
        key = (resolve(record_id), offset)
        if key in seen:
            request.repeated += 1
            continue
        seen.add(key)
        ref = Ref(*key)
        (request.refs if len(request.refs) < MAX_FETCH_IDS else request.over).append(ref)
    return request


def record_id(row: Any) -> str | None:
    """The ``metadata["id"]`` of a record, as text; ``None`` when it has none."""
    if not isinstance(row, Mapping):
        return None
    metadata = row.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("id") is None:
        return None
    return str(metadata["id"])


def match_rows(wanted: Sequence[str], rows: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Pair the records a backend returned with the ids asked.

    By id first; records under another id (a backend that normalises ids) are paired with
    the ids left over when their counts agree, in order.

    Args:
        wanted: The distinct ids asked.
        rows: The records returned.

    Returns:
        The record of each id found, and the records paired with no id.
    """
    asked = set(wanted)
    by_id: dict[str, Any] = {}
    strays: list[Any] = []
    for row in rows:
        ident = record_id(row)
        if ident in asked and ident not in by_id:
            by_id[ident] = row
        else:
            strays.append(row)
    unmatched = [i for i in wanted if i not in by_id]
    if strays and len(strays) == len(unmatched):
        by_id.update(zip(unmatched, strays, strict=True))
        strays = []
    return by_id, strays


def call(tool: str, **arguments: Any) -> str:
    """A tool call as the agent writes it: ``fetch_kb(backend="kb", ids="a#offset=9")``."""
    shown = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
    )
    return f"{tool}({shown})"


def _fetching(backend: str, ids: str) -> ReadOn:
    """The ``fetch_kb`` call that reads on, as a note names it (the note is added after)."""
    return ReadOn(
        "", call("fetch_kb", backend=backend, ids=ids), "fetch_kb", {"backend": backend, "ids": ids}
    )


def _noted(note: str, reading: ReadOn | None = None) -> ReadOn:
    """The note, with the call it names (when it names one)."""
    return ReadOn(note) if reading is None else replace(reading, note=note)


def fit_fetched(
    backend: str,
    fetched: Sequence[tuple[Ref, str]],
    pending: Sequence[Ref],
    budget: int | None,
    stated: int | None = None,
) -> tuple[str, ReadOn | None, int]:
    """Lay out fetched records within the budget.

    Args:
        backend: The backend name, for the calls the note names.
        fetched: Each reference read, with the record's whole rendering.
        pending: References not read (past the cap, the budget or the time allowed).
        budget: Characters for the records and the note; ``None`` for no budget.
        stated: The answer budget the note names (``budget`` when ``None``).

    Returns:
        The body, the ``[cut]`` note (``None`` when nothing was left out), and how many of
        the leading ``fetched`` the body shows (whole or in part).
    """
    room = None if budget is None else max(budget - NOTE_ROOM, _MIN_PIECE)
    parts: list[str] = []
    used = 0
    rest: list[Ref] = []
    for ref, text in fetched:
        piece = _piece(ref, text)
        separator = 1 if parts else 0
        if room is None or (not rest and used + separator + len(piece) <= room):
            parts.append(piece)
            used += separator + len(piece)
            continue
        left = room - used - separator
        if rest or (parts and left < _MIN_PIECE):
            rest.append(ref)
            continue
        frame = _frame(ref, text, len(text))  # as long as the frame with the real end, or longer
        shown = cut_text(text[ref.offset :], max(left - len(frame), _MIN_PIECE // 2))
        if not shown:  # nothing of it fits: read it in a call of its own
            rest.append(ref)
            continue
        parts.append(_frame(ref, text, ref.offset + len(shown)) + shown)
        used += separator + len(parts[-1])
        rest.append(Ref(ref.id, ref.offset + len(shown)))
    rest += pending
    if not rest:
        return "\n".join(parts), None, len(parts)
    ids, unlisted = listed(ref.text for ref in rest)
    more = f" (then the {unlisted} id(s) after those in your list)" if unlisted else ""
    named = stated if stated is not None else budget
    reason = f"the {named:,}-character answer budget" if named is not None else "the call's limits"
    reading = _fetching(backend, ids)
    note = (
        f"{CUT}This answer stops at {reason}. Read on with {reading.call}{more}; each call "
        "returns the next part and says where to go on."
    )
    return "\n".join(parts), _noted(note, reading), len(parts)


def _frame(ref: Ref, text: str, end: int) -> str:
    """The first line of a part read from an offset (empty for a record read from its start)."""
    if not ref.offset:
        return ""
    return f"[{ref.text}] characters {ref.offset} to {end} of {len(text)} of {ref.id}:\n"


def _piece(ref: Ref, text: str) -> str:
    if not ref.offset:
        return text
    rest = text[ref.offset :]
    if not rest:
        return (
            f"[{ref.text}] nothing from character {ref.offset}: {echo(ref.id)} has "
            f"{len(text)} characters."
        )
    return _frame(ref, text, len(text)) + rest


def cut_rows(
    render: Callable[[Sequence[Any]], str],
    rows: Sequence[Any],
    budget: int,
    *,
    backend: str,
    fetchable: bool,
    narrower: str,
) -> tuple[str, ReadOn | None, int]:
    """Keep the leading rows whose rendering fits the budget, and say what to do for the rest.

    Args:
        render: The backend's ``format_results``.
        rows: The records, best first.
        budget: Characters for the answer.
        backend: The backend name, for the calls the note names.
        fetchable: Whether the backend serves ``fetch_kb`` (rows left out are named by id).
        narrower: How to narrow this call, worded for the tool (``"a lower limit"``).

    Returns:
        The body, the ``[cut]`` note (``None`` when everything fits), and how many of the
        leading rows the body shows (the first one perhaps in part).
    """
    whole = render(rows)
    if len(whole) <= budget:
        return whole, None, len(rows)
    room = max(budget - NOTE_ROOM, _MIN_PIECE)
    low, high = 0, len(rows)  # the most leading rows that fit: low fits, high + 1 does not
    while low < high:
        middle = (low + high + 1) // 2
        if len(render(rows[:middle])) <= room:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        first = render(rows[:1])
        shown = cut_text(first, room)
        ident = record_id(rows[0])
        reading = _fetching(backend, ident) if fetchable and ident is not None else None
        if reading is not None:
            how = f"read it whole, in parts, with {reading.call}"
        else:
            how = f"ask for less of it with {narrower}"
        note = (
            f"{CUT}The first record is cut at {len(shown):,} of {len(first):,} characters: {how}."
        )
        if len(rows) > 1:
            note += f" {len(rows) - 1} more record(s) are not shown."
        return shown, _noted(note, reading), 1
    left = rows[low:]
    ids = [i for i in (record_id(row) for row in left) if i is not None]
    reading = None
    if fetchable and len(ids) == len(left):
        shown_ids, unlisted = listed(ids)
        then = f" (then the {unlisted} after those)" if unlisted else ""
        reading = _fetching(backend, shown_ids)
        how = f"read them with {reading.call}{then}, or narrow the call ({narrower})"
    else:
        how = f"narrow the call ({narrower})"
    note = (
        f"{CUT}{len(left)} more record(s) did not fit the {budget:,}-character answer "
        f"budget: {how}."
    )
    return render(rows[:low]), _noted(note, reading), low


def fetch_answer(
    kb: KnowledgeBase,
    ids: str,
    *,
    resolve: Callable[[str], str],
    run: Callable[[KnowledgeBase, str, Callable[[], Any]], Any],
    budget: int | None,
    renderings: Renderings,
) -> ToolResult:
    """``fetch_kb``'s answer once the backend is known.

    Each id is read once, within the cap, the budget and the time allowed.

    Args:
        kb: The backend.
        ids: The ``ids`` argument as the agent gave it.
        resolve: The builder's placeholder resolution.
        run: Runs a backend call, raising :class:`~agentkernel._tooling.errors.ToolRefusal`
            worded for the agent when the backend fails.
        budget: Characters for the answer; ``None`` for no budget.
        renderings: The builder's recent long renderings.

    Returns:
        The answer, carrying the records it shows and the ids not found; an error result
        when nothing asked for was found.

    Raises:
        ToolRefusal: No id was given, the first read failed, or a record could not be
            rendered.
    """
    request = fetch_request(ids, resolve)
    if not request.refs:
        raise ToolRefusal("Give at least one id to fetch (several may be separated by commas).")
    fetched: list[tuple[Ref, Rendered]] = []
    missing: list[str] = []
    pending: list[Ref] = []
    notices: list[str] = []
    used = 0
    deadline = time.monotonic() + FETCH_SECONDS
    refs = request.refs
    for start in range(0, len(refs), FETCH_BATCH):
        spent = budget is not None and used >= budget
        if start and (spent or time.monotonic() > deadline):
            pending = refs[start:]
            break
        batch = refs[start : start + FETCH_BATCH]
        held = {r.id: renderings.get(kb.backend_name, r.id) for r in batch if r.offset}
        wanted = list(dict.fromkeys(r.id for r in batch if held.get(r.id) is None))
        try:
            result = run(kb, "fetch", functools.partial(_fetch_some, kb, wanted))
        except ToolRefusal as refusal:
            if not fetched:
                raise
            pending = refs[start:]
            notices.append(refusal.answer)
            break
        notice = getattr(result, "notice", "")
        if notice:
            notices.append(notice)
        by_id, strays = match_rows(wanted, list(result or []))
        for ref in batch:
            rendered = held.get(ref.id)
            row = by_id.get(ref.id)
            if rendered is None and row is None:
                missing.append(ref.id)
                continue
            if rendered is None:
                rendered = Rendered(row, _rendering(kb, row))
                if budget is not None and len(rendered.text) > budget:
                    renderings.put(kb.backend_name, ref.id, rendered)
            fetched.append((ref, rendered))
            used += len(rendered.text) - ref.offset
        for row in strays:  # a record under another id than asked: shown all the same
            try:
                fetched.append(
                    (Ref(record_id(row) or "?", 0), Rendered(row, kb.format_results([row])))
                )
            except Exception:
                continue
    absent = list(dict.fromkeys(missing))
    unread = []
    if absent:
        unread.append(f"Not found: {echo(absent)}")
        unread += skipped_lines(kb, absent)
    if request.repeated:
        unread.append(f"({request.repeated} repeated id(s) were read once.)")
    if request.over:
        unread.append(
            f"(One call reads at most {MAX_FETCH_IDS} ids; {len(request.over)} more were not read.)"
        )
    tail = notices + unread
    told = sum(len(line) + 1 for line in tail)
    room = None if budget is None else max(budget - told, NOTE_ROOM + _MIN_PIECE)
    texts = [(ref, rendered.text) for ref, rendered in fetched]
    body, cut, shown = fit_fetched(kb.backend_name, texts, pending + request.over, room, budget)
    lines = [body if fetched else "No results.", *tail]
    if cut is not None:
        lines.append(cut.note)
    text = "\n".join(lines)
    if not fetched and not pending and not request.over:  # an answer, flagged: nothing found
        return ToolResult.error(text, missing=absent, missing_note="\n".join(unread))
    return ToolResult(
        text,
        records=[rendered.row for _, rendered in fetched[:shown]],
        missing=absent,
        missing_note="\n".join(unread),
        read_on=cut,
    )


def _rendering(kb: KnowledgeBase, row: Any) -> str:
    """The backend's rendering of one record; a failure is the call's answer."""
    try:
        return kb.format_results([row])
    except Exception as exc:
        raise ToolRefusal(
            f"Error formatting results from '{kb.backend_name}': {printable(str(exc))}"
        ) from exc


def _fetch_some(kb: KnowledgeBase, ids: list[str]) -> Any:
    """``kb.fetch(ids)``, asking nothing when every id was already at hand."""
    return kb.fetch(ids) if ids else []


def skipped_lines(kb: KnowledgeBase, missing: Sequence[str]) -> list[str]:
    """For ids not found that name a document the backend skipped: that it exists, and why.

    Reads the backend's ``diagnostics`` (``"path: reason"`` lines), when it has them.
    """
    try:
        diagnostics = list(getattr(kb, "diagnostics", None) or [])
    except Exception:
        return []
    if not diagnostics:
        return []
    reasons: dict[str, str] = {}
    for line in diagnostics:
        path, sep, reason = str(line).partition(": ")
        if sep:
            reasons.setdefault(path, reason)
    lines = []
    for record_id in dict.fromkeys(missing):
        for path in (f"{record_id}.md", record_id):
            if path in reasons:
                lines.append(
                    f"{echo(path)} exists but is not served: {reasons[path]}. The bundle's "
                    "curator can fix the file (agentkernel-kb check shows the rule it breaks); "
                    "it is served from the next refresh."
                )
                break
    if len(lines) > _SKIPS_SHOWN:
        more = len(lines) - _SKIPS_SHOWN
        lines = [*lines[:_SKIPS_SHOWN], f"({more} more of the ids name files not served.)"]
    return lines


_SKIPS_SHOWN = 5


def printable(text: str) -> str:
    """An exception's text as tool output can carry it: lone surrogates escaped.

    Such an exception (a ``UnicodeEncodeError`` quoting the character it choked on) would
    otherwise make the whole answer unencodable, and an MCP client would get no answer.

    Args:
        text: The text.

    Returns:
        The text, encodable as UTF-8.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
