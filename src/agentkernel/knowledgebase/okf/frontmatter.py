"""YAML frontmatter of markdown documents, read and written without changing values.

OKF timestamps must survive a round trip exactly as written, so the loader and dumper here
do not resolve YAML timestamps: ``2026-05-22T10:00:00Z`` stays that string. Loading uses
libyaml's C implementation where it is available, with ``safe_load`` semantics.
"""

from __future__ import annotations

from typing import Any

import yaml

from agentkernel.errors import AKError

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _without_timestamps(resolvers: dict[Any, Any]) -> dict[Any, Any]:
    return {
        first: [(tag, regexp) for tag, regexp in entries if tag != _TIMESTAMP_TAG]
        for first, entries in resolvers.items()
    }


class _Loader(_CLoader):  # type: ignore[misc, valid-type]
    """Safe loader that keeps timestamps as the strings they were written as."""

    yaml_implicit_resolvers = _without_timestamps(_CLoader.yaml_implicit_resolvers)


class _Dumper(_CDumper):  # type: ignore[misc, valid-type]
    """Safe dumper that writes timestamp-looking strings unquoted, as they were read."""

    yaml_implicit_resolvers = _without_timestamps(_CDumper.yaml_implicit_resolvers)


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


def load_yaml(source: str) -> Any:
    """Parse YAML with safe semantics, keeping timestamps as strings.

    Args:
        source: YAML text.

    Returns:
        The parsed value.

    Raises:
        yaml.YAMLError: The text is not valid YAML.
    """
    return yaml.load(source, Loader=_Loader)  # a safe loader subclass


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
    try:
        data = load_yaml(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    if not isinstance(data, dict):
        raise FrontmatterError(f"frontmatter must be a mapping, got {type(data).__name__}")
    return data, body


def dump_yaml(data: Any) -> str:
    """Serialise to block-style YAML, keeping key order and unicode as given.

    Args:
        data: A value made of mappings, lists, strings, numbers, booleans and None.

    Returns:
        YAML text ending in a newline.
    """
    dumped: str = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    return dumped


def render(frontmatter: dict[str, Any], body: str) -> str:
    """Compose a markdown document from frontmatter and body.

    Args:
        frontmatter: The YAML mapping.
        body: The markdown body.

    Returns:
        ``---`` fenced frontmatter followed by the body.
    """
    return f"{_FENCE}\n{dump_yaml(frontmatter)}{_FENCE}\n{body}"
