"""Markdown documents with YAML frontmatter, read and written without changing a value.

One reader and writer for every store that keeps pages as markdown files: OKF bundles
(:mod:`agentkernel.knowledgebase.okf`: the walk and the bundle indexer), the curated stores
(:mod:`agentkernel.knowledgestore`) and the bundle viewer. The reader has limits, so hostile
YAML costs little wherever it is met: at most :data:`MAX_FRONTMATTER_CHARS` characters, at most
:data:`MAX_FRONTMATTER_NODES` values with its aliases expanded, nesting at most
:data:`MAX_FRONTMATTER_DEPTH` deep; beyond them the document is refused with
:class:`FrontmatterError` (which every reader turns into "skipped, with why"). Timestamps stay
the strings they were written as (see :mod:`agentkernel.storage.yamltext`); common frontmatter is
read without a YAML parser, with the same result.
"""

from __future__ import annotations

from typing import Any

import yaml

from agentkernel.errors import AKError
from agentkernel.storage.yamltext import (
    YAMLLimitError,
    dump_yaml,
    load_bounded,
    load_yaml,
    simple_mapping,
)

__all__ = [
    "MAX_FRONTMATTER_CHARS",
    "MAX_FRONTMATTER_DEPTH",
    "MAX_FRONTMATTER_NODES",
    "FrontmatterError",
    "dump_yaml",
    "load_yaml",
    "parse",
    "read_mapping",
    "read_yaml",
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
    loaded = read_yaml(raw) if raw.strip() else {}
    if not isinstance(loaded, dict):
        raise FrontmatterError(f"frontmatter must be a mapping, got {type(loaded).__name__}")
    return loaded


def read_yaml(raw: str) -> Any:
    """Parse frontmatter YAML, whatever it holds, within the frontmatter limits.

    Args:
        raw: YAML text from a document.

    Returns:
        The parsed value (timestamps as the strings they were written as).

    Raises:
        FrontmatterError: Invalid YAML, or over a limit (values with aliases expanded, depth).
    """
    try:
        return load_bounded(raw, max_values=MAX_FRONTMATTER_NODES, max_depth=MAX_FRONTMATTER_DEPTH)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    except YAMLLimitError as exc:
        raise FrontmatterError(exc.says("frontmatter")) from None


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
