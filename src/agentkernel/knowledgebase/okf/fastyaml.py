"""A fast path for the simplest frontmatter: flat ``key: value`` lines that need no YAML parser.

Walking 10,000 concepts spends most of its time constructing YAML objects in Python. Much
frontmatter is a handful of flat lines (``type: Note``, ``title: "Orders"``,
``tags: [a, b]``), and for those this module builds the same mapping directly. It is
deliberately conservative: any line it is not certain about (indentation, comments, numbers,
booleans, escapes, anchors, a ``:`` or ``#`` inside a value, nested blocks) makes it return
``None``, and the caller uses the real YAML loader. Whenever it answers, the answer equals
what :func:`agentkernel.knowledgebase.okf.frontmatter.load_yaml` returns (tested).
"""

from __future__ import annotations

import re
from typing import Any

_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?\Z")
# words YAML 1.1 resolves to booleans or null rather than strings
_SPECIAL = frozenset(["y", "n", "yes", "no", "true", "false", "on", "off", "null"])
_UNSAFE_IN_PLAIN = frozenset(":#\t\\")


def simple_mapping(raw: str) -> dict[str, Any] | None:
    """Read flat frontmatter without a YAML parser, or decline.

    Args:
        raw: The frontmatter text between the ``---`` fences.

    Returns:
        The mapping, or ``None`` when the text is not in the simple subset (then parse it
        with the YAML loader).
    """
    result: dict[str, Any] = {}
    for line in raw.split("\n"):
        if not line or line.isspace():
            continue
        if not line.isprintable():
            return None
        match = _LINE.match(line.rstrip(" "))
        if match is None:
            return None
        key, value = match.group(1), match.group(2)
        if key.lower() in _SPECIAL:
            return None
        if value is None or value == "":
            result[key] = None
            continue
        parsed = _value(value)
        if parsed is None:
            return None
        result[key] = parsed
    return result


def _value(text: str) -> str | list[str] | None:
    if text[0] == "[":
        return _sequence(text)
    return _scalar(text)


def _scalar(text: str) -> str | None:
    first = text[0]
    if first in "\"'":
        if len(text) < 2 or text[-1] != first:
            return None
        inner = text[1:-1]
        if first in inner or "\\" in inner:
            return None
        return inner
    if not first.isalpha() or any(ch in _UNSAFE_IN_PLAIN for ch in text):
        return None
    plain = text.rstrip(" ")
    if plain.lower() in _SPECIAL:
        return None
    return plain


def _sequence(text: str) -> list[str] | None:
    if not text.endswith("]"):
        return None
    inner = text[1:-1].strip(" ")
    if not inner:
        return []
    if any(ch in inner for ch in "[]{}"):
        return None
    items: list[str] = []
    for part in inner.split(","):
        item = part.strip(" ")
        if not item:
            return None
        if item[0] in "\"'":
            value = _scalar(item)
        elif "," in item or " #" in item:
            return None
        else:
            value = _scalar(item)
        if value is None:
            return None
        items.append(value)
    return items
