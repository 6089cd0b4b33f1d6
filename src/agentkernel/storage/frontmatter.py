"""Markdown documents with YAML frontmatter, read and written without changing a value.

One reader and writer for every store that keeps pages as markdown files: OKF bundles
(:mod:`agentkernel.knowledgebase.okf`), the curated file store
(:mod:`agentkernel.knowledgestore`) and the bundle viewer. Timestamps stay the strings they
were written as (see :mod:`agentkernel.storage._yaml`); common frontmatter is read without a
YAML parser, with the same result.
"""

from __future__ import annotations

from typing import Any

import yaml

from agentkernel.errors import AKError
from agentkernel.storage._yaml import dump_yaml, load_yaml, simple_mapping

__all__ = ["FrontmatterError", "dump_yaml", "load_yaml", "parse", "read_mapping", "render", "split"]


class FrontmatterError(AKError, ValueError):
    """A document's frontmatter is missing or is not a YAML mapping."""


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
    data = simple_mapping(raw)
    if data is not None:
        return data
    try:
        loaded = load_yaml(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    if not isinstance(loaded, dict):
        raise FrontmatterError(f"frontmatter must be a mapping, got {type(loaded).__name__}")
    return loaded


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
