"""``log.md`` of a bundle, parsed and written: the one reader and writer of the log format.

OKF's log format: date groups (``## YYYY-MM-DD``), newest first, one ``* **op**: what`` line
per entry, the newest on top; an entry the curated store writes may end with
``— pages: [id](file), ...``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_HEADING = re.compile(r"^## (\d{4}-\d{2}-\d{2})\s*$")
_ENTRY = re.compile(r"^\* \*\*(?P<op>[^*]+)\*\*: (?P<rest>.*)$")
PAGES = " — pages: "
"""Separates an entry's description from the pages it names."""
TITLE = "# Knowledge Base Log"
"""The first line of a new ``log.md``."""


def lines(text: str) -> Iterator[tuple[str, str]]:
    """Yield ``(date, line)`` for every entry of a ``log.md``, in file order (newest first).

    Args:
        text: The log file.

    Yields:
        The date heading an entry sits under, and the entry's line.
    """
    date = ""
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            date = heading.group(1)
        elif date and line.startswith("* "):
            yield date, line


def split_line(line: str) -> tuple[str, str, list[str]] | None:
    """Split an entry written by the store into operation, description and listed pages.

    Args:
        line: ``* **op**: what — pages: [a](..), b``.

    Returns:
        ``(op, what, items)``, or ``None`` for a line the store did not write.
    """
    match = _ENTRY.match(line)
    if match is None:
        return None
    what, _, listed = match.group("rest").partition(PAGES)
    items = [part.strip() for part in listed.split(",") if part.strip()]
    return match.group("op").strip(), what, items


def entry(op: str, what: str, pages: list[str]) -> str:
    """Render one entry line: ``* **op**: what``, then ``— pages: a, b`` when it names pages.

    Args:
        op: The operation.
        what: What was done, as it goes on disk.
        pages: The pages it touched, each as it goes on disk (a link or a bare id).

    Returns:
        The line, without a newline; :func:`split_line` reads it back.
    """
    line = f"* **{op}**: {what}"
    return line + PAGES + ", ".join(pages) if pages else line


def prepend(text: str, entry: str, today: str) -> str:
    """Insert ``entry`` as the newest line of today's group, creating the group when needed.

    Args:
        text: The current ``log.md`` (``""`` when there is none).
        entry: One ``* **op**: what`` line.
        today: ``YYYY-MM-DD``.

    Returns:
        The new ``log.md``.
    """
    found = text.splitlines()
    if not any(line.strip() for line in found):
        found = [TITLE, ""]
    first = next((i for i, line in enumerate(found) if _HEADING.match(line)), None)
    if first is not None and found[first].strip() == f"## {today}":
        found.insert(first + 1, entry)
    elif first is not None:
        found[first:first] = [f"## {today}", entry, ""]
    else:
        while found and not found[-1].strip():
            found.pop()
        found += ["", f"## {today}", entry]
    return "\n".join(found).rstrip() + "\n"
