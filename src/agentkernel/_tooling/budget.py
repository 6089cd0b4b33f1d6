r"""The answer budget: how much text one tool result may carry, and how to read the rest.

One oversized page must not fill an agent's context window, so every knowledge tool cuts its
answer at a budget (:data:`DEFAULT_ANSWER_CHARS` characters unless configured) and ends a cut
answer with a note saying what was left out and exactly which call reads it. The calls are
the tools the agent already has, with the signatures the manual documents:

- a long record is read on by its id with an offset suffix, ``fetch_kb(backend, "id#offset=N")``
  (and ``knowledge_read(page="concept/x#offset=N")`` for a curated store's page): the text of
  that one record, as ``fetch_kb`` of the id alone renders it, from character ``N``;
- records of a list that did not fit are named (by id where the backend has ids), so the
  agent fetches them, or narrows the call (a lower ``limit``, a subdirectory, a narrower query).

Example:
    >>> split_offset("guides/big#offset=20000")
    ('guides/big', 20000)
    >>> split_offset("guides/big")
    ('guides/big', 0)
    >>> cut_lines("a\nbb\nccc", 6)
    ('a\nbb', 1)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agentkernel._tooling.result import ReadOn, ToolResult

__all__ = [
    "DEFAULT_ANSWER_CHARS",
    "MIN_ANSWER_CHARS",
    "OFFSET_MARK",
    "checked_answer_chars",
    "cut_lines",
    "cut_text",
    "listed",
    "split_offset",
    "text_part",
    "with_offset",
]

DEFAULT_ANSWER_CHARS = 20_000
"""The default budget of one tool answer, in characters (about 5,000 tokens)."""

MIN_ANSWER_CHARS = 2_000
"""The smallest budget accepted: room for a note and a useful part of a record."""

OFFSET_MARK = "#offset="
"""The id suffix that reads a record from a character offset: ``id#offset=20000``."""

_OFFSET = re.compile(r"#offset=(\d{1,12})\Z")


def checked_answer_chars(value: Any) -> int | None:
    """Check a configured budget.

    Args:
        value: Characters per answer, or ``None`` for no budget (the whole text: the command
            line's ``--full``).

    Returns:
        The budget, or ``None``.

    Raises:
        ValueError: Not a whole number of at least :data:`MIN_ANSWER_CHARS`.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_ANSWER_CHARS:
        raise ValueError(
            f"answer_chars must be a whole number of at least {MIN_ANSWER_CHARS} "
            f"(or None for no budget), got {value!r}"
        )
    return value


def split_offset(ref: str) -> tuple[str, int]:
    """Split an ``id#offset=N`` reference into the id and the offset.

    Args:
        ref: An id, with or without the suffix.

    Returns:
        The id and the offset (0 without a suffix).
    """
    match = _OFFSET.search(ref)
    if match is None:
        return ref, 0
    return ref[: match.start()], int(match.group(1))


def with_offset(record_id: str, offset: int) -> str:
    """The reference that reads ``record_id`` from ``offset``; the bare id at 0.

    Args:
        record_id: The id.
        offset: A character offset into the record's rendered text.

    Returns:
        ``id#offset=N``, or ``id`` when ``offset`` is 0.
    """
    return f"{record_id}{OFFSET_MARK}{offset}" if offset else record_id


def cut_text(text: str, room: int) -> str:
    """The longest head of ``text`` of at most ``room`` characters.

    It ends at a line break when one falls in its last fifth, so a cut rarely splits a line.

    Args:
        text: The text.
        room: The most characters.

    Returns:
        ``text`` itself when it fits, else its head.
    """
    if len(text) <= room:
        return text
    head = text[: max(room, 0)]
    newline = head.rfind("\n")
    if newline >= room * 4 // 5:
        return head[: newline + 1]
    return head


def cut_lines(text: str, room: int) -> tuple[str, int]:
    """Keep whole lines of ``text`` within ``room`` characters.

    Args:
        text: Lines joined by line breaks.
        room: The most characters kept.

    Returns:
        The lines kept (joined) and how many were left out. A first line longer than
        ``room`` is cut inside (it counts as kept).
    """
    if len(text) <= room:
        return text, 0
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(line) + (1 if kept else 0)
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    if not kept:
        return text[:room], len(lines) - 1
    return "\n".join(kept), len(lines) - len(kept)


def listed(items: Iterable[str], room: int = 1_500) -> tuple[str, int]:
    """Join items with commas within ``room`` characters.

    Args:
        items: The items (ids).
        room: The most characters.

    Returns:
        The leading items joined by commas (at least one), and how many did not fit.
    """
    chosen: list[str] = []
    every = list(items)
    used = 0
    for item in every:
        if chosen and used + len(item) + 1 > room:
            break
        chosen.append(item)
        used += len(item) + 1
    return ",".join(chosen), len(every) - len(chosen)


NOTE_ROOM = 600
"""Characters a single-text answer keeps free for its ``[cut]`` note."""


def text_part(name: str, text: str, offset: int, budget: int | None, read_on: str) -> str:
    """The part of one long text an answer can carry, from ``offset``, with its note.

    From offset 0 a text that fits comes back as it is. Otherwise the answer is a head of
    the text from ``offset`` (after one line ``[name#offset=N] characters N to M of T of
    name:`` when ``offset`` is not 0), then a line ``[cut] ...`` naming the call that reads
    on, so the parts read one after another are the text, character for character.

    Args:
        name: What the text is (an id or a page).
        text: The whole text.
        offset: The first character to show.
        budget: The most characters of the answer; ``None`` for no budget.
        read_on: The call that reads on, with ``{ref}`` where the reference goes, e.g.
            ``knowledge_read(page="{ref}")``.

    Returns:
        The answer; a cut one carries its note (:attr:`ToolResult.read_on
        <agentkernel._tooling.result.ToolResult.read_on>`).
    """
    if offset == 0 and (budget is None or len(text) <= budget):
        return text
    total = len(text)
    if offset >= total:
        ref = with_offset(name, offset)
        return f"[{ref}] nothing from character {offset}: {name} has {total} characters."
    frame = f"[{with_offset(name, offset)}] characters {offset} to {{end}} of {total} of {name}:\n"
    room = total if budget is None else max(budget - NOTE_ROOM - len(frame), NOTE_ROOM)
    shown = cut_text(text[offset:], room)
    end = offset + len(shown)
    head = frame.replace("{end}", str(end)) if offset else ""
    if end >= total:
        return head + shown
    call = read_on.replace("{ref}", with_offset(name, end))
    note = (
        f"[cut] This answer stops at the {budget:,}-character answer budget "
        f"(characters {offset} to {end} of {total} are shown). Read on with {call}; each call "
        "returns the next part and says where to go on."
    )
    return ToolResult(f"{head}{shown}\n{note}", read_on=ReadOn(note, call))
