"""Markdown documents with YAML frontmatter, read and written without changing a value.

One reader and writer for every store that keeps pages as markdown files: OKF bundles
(:mod:`agentkernel.knowledgebase.okf`: the walk and the bundle indexer), the curated stores
(:mod:`agentkernel.knowledgestore`) and the bundle viewer. The reader has limits, so hostile
YAML costs little wherever it is met: at most :data:`MAX_FRONTMATTER_CHARS` characters, at most
:data:`MAX_FRONTMATTER_NODES` values with its aliases expanded, nesting at most
:data:`MAX_FRONTMATTER_DEPTH` deep; beyond them the document is refused with
:class:`FrontmatterError` (which every reader turns into "skipped, with why"). Timestamps stay
the strings they were written as (see :mod:`agentkernel.storage._yaml`); common frontmatter is
read without a YAML parser, with the same result.
"""

from __future__ import annotations

from typing import Any

import yaml

from agentkernel.errors import AKError
from agentkernel.storage._yaml import dump_yaml, load_yaml, simple_mapping

__all__ = [
    "MAX_FRONTMATTER_CHARS",
    "MAX_FRONTMATTER_DEPTH",
    "MAX_FRONTMATTER_NODES",
    "FrontmatterError",
    "dump_yaml",
    "load_yaml",
    "parse",
    "read_mapping",
    "render",
    "split",
]


class FrontmatterError(AKError, ValueError):
    """A document's frontmatter is missing, is not a YAML mapping, or exceeds the limits."""


MAX_FRONTMATTER_CHARS = 1024 * 1024
"""The most characters of frontmatter read; more is refused before any parsing."""

MAX_FRONTMATTER_NODES = 100_000
"""The most values a frontmatter may hold once its aliases are expanded (an alias bomb has
billions); counted without expanding anything."""

MAX_FRONTMATTER_DEPTH = 64
"""The deepest nesting of mappings and lists allowed."""


_FENCE = "---"


def split(text: str) -> tuple[str, str] | None:
    """Split a document into its raw frontmatter and body.

    Args:
        text: The whole document.

    Returns:
        ``(frontmatter_yaml, body)``, or ``None`` when the document does not open with a
        ``---`` fence closed by another ``---`` line.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    first, newline, rest = text.partition("\n")
    if first.rstrip() != _FENCE or not newline:
        return None
    position = 0
    while True:
        end = rest.find("\n", position)
        line = rest[position:] if end == -1 else rest[position:end]
        if line.rstrip() == _FENCE:
            body = "" if end == -1 else rest[end + 1 :]
            return rest[:position], body
        if end == -1:
            return None
        position = end + 1


def read_mapping(raw: str) -> dict[str, Any]:
    """Parse the frontmatter text between the fences into its mapping.

    Args:
        raw: The text between the ``---`` fences (as :func:`split` returns it).

    Returns:
        The mapping (empty for empty frontmatter).

    Raises:
        FrontmatterError: Invalid YAML, or YAML that is not a mapping.
    """
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterError(
            f"frontmatter of {len(raw)} characters refused (at most {MAX_FRONTMATTER_CHARS})"
        )
    data = simple_mapping(raw)
    if data is not None:
        return data
    try:
        loaded = load_yaml(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    except RecursionError:
        raise FrontmatterError("frontmatter nested too deeply to read") from None
    if not isinstance(loaded, dict):
        raise FrontmatterError(f"frontmatter must be a mapping, got {type(loaded).__name__}")
    _require_bounded(loaded)
    return loaded


def _require_bounded(value: Any) -> None:
    """Refuse a value whose expansion (aliases followed) is too large or too deep.

    Counted on the object graph as loaded: an alias is a shared reference, so each visit
    counts, and the count stops at :data:`MAX_FRONTMATTER_NODES`, long before an alias bomb
    would be expanded by anything that renders or serialises it.

    Raises:
        FrontmatterError: Too many values, or too deep.
    """
    budget = MAX_FRONTMATTER_NODES
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise FrontmatterError(
                f"frontmatter holds more than {MAX_FRONTMATTER_NODES} values once its YAML "
                "aliases are expanded (an alias bomb?)"
            )
        if depth > MAX_FRONTMATTER_DEPTH:
            raise FrontmatterError(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def parse(text: str) -> tuple[dict[str, Any], str]:
    """Parse a markdown document with YAML frontmatter.

    Args:
        text: The whole document.

    Returns:
        ``(frontmatter, body)``.

    Raises:
        FrontmatterError: No frontmatter fence, invalid YAML, or YAML that is not a mapping.
    """
    parts = split(text)
    if parts is None:
        raise FrontmatterError("no YAML frontmatter (the document must open with a '---' line)")
    raw, body = parts
    return read_mapping(raw), body


def render(frontmatter: dict[str, Any], body: str) -> str:
    """Compose a markdown document from frontmatter and body.

    Args:
        frontmatter: The YAML mapping.
        body: The markdown body.

    Returns:
        ``---`` fenced frontmatter followed by the body.
    """
    return f"{_FENCE}\n{dump_yaml(frontmatter)}{_FENCE}\n{body}"
