"""``index.md`` of a bundle, rendered: the one writer of the index format.

OKF's index format: one section per kind of document, a ``# Heading``, a blank line, then one
``* [Title](target) - description (note)`` line per document; sections are separated by a
blank line and the file ends in a newline. Which documents go in which section, in what order
and with which notes is the caller's to decide (the curated store's page types,
:mod:`agentkernel.knowledgestore._catalog`); this module writes the lines and the sections.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentkernel.bundle.links import escape_link_text

SECTION_BREAK = "\n\n"
"""Between two sections of the index (and between a section's heading and its lines)."""


def index_order(title: str, key: str) -> tuple[str, str]:
    """Return where a line sits in its section: by title (case ignored), then by ``key``.

    Args:
        title: The document's title.
        key: What breaks a tie between equal titles (the page id).
    """
    return title.casefold(), key


def index_line(title: str, target: str, description: str = "", notes: Sequence[str] = ()) -> str:
    """Render one document's index line: ``* [Title](target) - description (note) (note)``.

    Args:
        title: The link text (brackets are escaped).
        target: The link target: an id for the tools, a file path on disk.
        description: What the document is; left out when empty.
        notes: Parenthesised remarks after the description, in order.

    Returns:
        The line, without a newline.
    """
    line = f"* [{escape_link_text(title)}]({target})"
    if description:
        line += f" - {description}"
    return line + "".join(f" ({note})" for note in notes)


def section_heading(heading: str) -> str:
    """Render a section's heading line: ``# Heading``."""
    return f"# {heading}"


def index_section(heading: str, lines: Iterable[str]) -> str:
    """Render one section of the index: its heading, a blank line, then its lines."""
    return "\n".join([section_heading(heading), "", *lines])


def render_index(sections: Iterable[tuple[str, Iterable[str]]], *, empty: str = "") -> str:
    """Render the index from its sections, in order.

    Args:
        sections: ``(heading, lines)`` of each section that has a line.
        empty: The text when there is no section.

    Returns:
        Markdown ending in a newline, or ``empty``.
    """
    parts = [index_section(heading, lines) for heading, lines in sections]
    return SECTION_BREAK.join(parts) + "\n" if parts else empty
