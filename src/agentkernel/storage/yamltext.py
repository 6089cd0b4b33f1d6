"""YAML text: the one bounded reader, values as written, a fast path for the common subset.

:func:`load_bounded` is how the package reads YAML that came from outside (``config.yaml``,
a document's frontmatter, an ``index.md``'s): within a bound on the values it stands for once
its aliases are expanded (an alias bomb stands for billions, shared by reference) and on its
nesting, refused with :class:`YAMLLimitError` before anything is built.

OKF timestamps must survive a round trip exactly as written, so the loader here does not
resolve YAML timestamps: ``2026-05-22T10:00:00Z`` stays that string, whether it was written
plain or quoted. The dumper quotes every string a YAML 1.1 loader (PyYAML's ``safe_load``,
most tools) would turn into a date (``at: '2026-05-22T10:00:00Z'``, as OKF's reference
producer writes them): a bundle this package rewrites reads back as the same strings in any
other tool, which would otherwise write them back as ``2026-05-22 10:00:00+00:00``. Loading
uses libyaml's C implementation where it is available, with ``safe_load`` semantics.

Walking 10,000 concepts would spend most of its time constructing YAML objects in Python.
Most frontmatter is a small block mapping: ``key: value`` lines, lists written as ``key:``
followed by ``- item`` lines (what :func:`dump_yaml` and so every write produces), nested
mappings such as ``generated:`` with indented ``by:``/``at:`` lines, lists of such mappings
(``verified:``, ``sources:``), and plain values folded over indented continuation lines. For
those :func:`simple_mapping` builds the same mapping directly.

It is deliberately conservative: anything it is not certain about (comments, tabs, anchors,
tags, block scalars, flow mappings, escapes, blank lines inside a value, a scalar YAML would
resolve to a number, boolean or null, odd indentation, nesting deeper than
:data:`MAX_FAST_DEPTH`) makes it return ``None``, and the caller uses :func:`load_yaml` (and
bounds what it returns: a deeply nested frontmatter never recurses here). Whenever it answers,
the answer equals what :func:`load_yaml` returns (tested with hypothesis).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from agentkernel.errors import AKError

MAX_FAST_DEPTH = 16
"""The deepest nesting :func:`simple_mapping` reads; deeper text goes to the YAML loader."""

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
    """Safe dumper; its timestamp resolver makes it quote timestamp-looking strings."""


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


class YAMLLimitError(AKError, ValueError):
    """YAML refused by a bound: too many values once its aliases are expanded, or too deep.

    Attributes:
        kind: ``"values"`` or ``"depth"``.
        limit: The bound it is over.
    """

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        super().__init__(self.says("YAML"))

    def says(self, subject: str) -> str:
        """The refusal, naming what was refused (``frontmatter``, a configuration file).

        Args:
            subject: What held the YAML.

        Returns:
            ``<subject> nests deeper than 64 levels`` or ``<subject> stands for more than N
            values once its aliases are expanded (an alias bomb?)``.
        """
        if self.kind == "depth":
            return f"{subject} nests deeper than {self.limit} levels"
        return (
            f"{subject} stands for more than {self.limit} values once its aliases are "
            "expanded (an alias bomb?)"
        )


def load_bounded(source: str, *, max_values: int, max_depth: int, timestamps: bool = False) -> Any:
    """Parse YAML with safe semantics, refusing before building one too large or too deep.

    The parser's events are read first (libyaml's parser keeps its own stack, so no depth
    can exhaust Python's): a collection opened deeper than ``max_depth``, or more than
    ``max_values`` values once each alias counts as every value its anchor stands for, is
    refused there, and nothing is built.

    Args:
        source: YAML text.
        max_values: The most values (mappings, lists and scalars) it may stand for, aliases
            expanded.
        max_depth: The deepest nesting of mappings and lists.
        timestamps: Resolve timestamps to ``datetime`` as YAML 1.1 does (``config.yaml``);
            by default they stay the strings they were written as (OKF frontmatter).

    Returns:
        The parsed value.

    Raises:
        YAMLLimitError: Over a bound.
        yaml.YAMLError: The text is not valid YAML.
    """
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, values so far) per collection
    total = 0
    for event in yaml.parse(source, Loader=_CLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= max_depth:
                raise YAMLLimitError("depth", max_depth)
            open_nodes.append((event.anchor, 1))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, count = open_nodes.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, count = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, count = None, sizes.get(str(event.anchor), 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = count
        if open_nodes:
            parent_anchor, parent_count = open_nodes[-1]
            open_nodes[-1] = (parent_anchor, parent_count + count)
        total += count if isinstance(event, yaml.AliasEvent) else 1
        if total > max_values:
            raise YAMLLimitError("values", max_values)
    try:
        return yaml.load(source, Loader=_CLoader if timestamps else _Loader)  # safe loaders
    except RecursionError:  # pragma: no cover - the depth bound comes first
        raise YAMLLimitError("depth", max_depth) from None


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


_KEY_LINE = re.compile(r"( *)([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?\Z")
_ITEM = re.compile(r"( *)-(?: +(.*))?\Z")
# a plain scalar may not start with an indicator character
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# the implicit resolvers of the loader the fast path must agree with (timestamps removed)
_RESOLVERS: dict[Any, list[tuple[str, Any]]] = _Loader.yaml_implicit_resolvers


class _Decline(AKError):
    """The text is outside the subset; the caller must use the YAML loader."""


def simple_mapping(raw: str) -> dict[str, Any] | None:
    """Read common block frontmatter without a YAML parser, or decline.

    Args:
        raw: The frontmatter text between the ``---`` fences.

    Returns:
        The mapping, or ``None`` when the text is not in the supported subset (then parse it
        with the YAML loader).
    """
    if "\t" in raw or ("#" in raw and _has_comment(raw)):
        return None
    if not raw.replace("\n", "").isprintable():
        return None
    lines = [line.rstrip(" ") for line in raw.split("\n")]
    reader = _Reader(lines)
    try:
        result = reader.mapping(0, 0)
        if reader.position < len(lines):
            return None  # something at a deeper or odd indentation remained
    except _Decline:
        return None
    return result


def _has_comment(raw: str) -> bool:
    # a '#' opens a comment at the start of a line or after a space; elsewhere it is text
    return raw.startswith("#") or "\n#" in raw or " #" in raw


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _Reader:
    """Recursive descent over indented lines (blank lines already reduced to ``""``)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.position = 0
        self.depth = 0

    def _deeper(self) -> None:
        """Enter a nested collection; decline past :data:`MAX_FAST_DEPTH` (no deep recursion)."""
        self.depth += 1
        if self.depth > MAX_FAST_DEPTH:
            raise _Decline

    def _next_line(self) -> str | None:
        """Skip blank lines; return the line reached, or ``None`` at the end."""
        lines = self.lines
        while self.position < len(lines) and not lines[self.position]:
            self.position += 1
        return lines[self.position] if self.position < len(lines) else None

    def mapping(self, column: int, parent: int) -> dict[str, Any]:
        """Read a block mapping whose keys start at ``column``.

        Args:
            column: The keys' column.
            parent: The column of the enclosing collection (scalars continue past it).

        Returns:
            The mapping.
        """
        self._deeper()
        result: dict[str, Any] = {}
        while (line := self._next_line()) is not None:
            indent = _indent(line)
            if indent < column:
                break
            if indent > column:
                raise _Decline
            match = _KEY_LINE.match(line)
            if match is None:
                if column == 0 and not result:
                    raise _Decline  # not a mapping at all
                break  # e.g. the next item of an indentless sequence
            key = match.group(2)
            if _resolves(key):
                raise _Decline
            text = match.group(3)
            self.position += 1
            if text:
                result[key] = self.inline(text, column + 1)
            else:
                result[key] = self.block(column)
        if not result:
            raise _Decline
        self.depth -= 1
        return result

    def block(self, parent: int) -> Any:
        """Read the value of a ``key:`` line with nothing after the colon.

        Args:
            parent: The column of the mapping holding the key.

        Returns:
            A list, a mapping, or ``None`` (an empty value).
        """
        lines = self.lines
        if self.position >= len(lines) or not lines[self.position]:
            return None  # an indented line after a blank one is refused by the caller
        line = lines[self.position]
        indent = _indent(line)
        item = _ITEM.match(line)
        if item is not None and indent >= parent:
            return self.sequence(indent)
        if indent > parent:
            if _KEY_LINE.match(line) is None:
                raise _Decline  # a scalar on its own line, or something else
            return self.mapping(indent, parent)
        return None

    def sequence(self, column: int) -> list[Any]:
        """Read a block sequence whose ``-`` indicators are at ``column``.

        Args:
            column: The indicators' column.

        Returns:
            The items.
        """
        self._deeper()
        items: list[Any] = []
        lines = self.lines
        while (line := self._next_line()) is not None:
            indent = _indent(line)
            if indent != column:
                break
            match = _ITEM.match(line)
            if match is None:
                break
            text = match.group(2)
            if not text or text[0] == "-":
                raise _Decline  # an empty item or a nested sequence
            if _KEY_LINE.match(text) is not None:
                # a compact mapping: its keys line up with the first one
                inner = len(line) - len(text)
                lines[self.position] = " " * inner + text
                items.append(self.mapping(inner, column))
            else:
                self.position += 1
                items.append(self.inline(text, column + 1))
        self.depth -= 1
        return items

    def inline(self, text: str, continuation: int) -> Any:
        """Read a value written after ``key: `` or ``- `` (and any continuation lines).

        Args:
            text: The value's text on its first line.
            continuation: The least column a continuation line of a plain scalar may have.

        Returns:
            A string or a list of strings.
        """
        first = text[0]
        if first == "[":
            return _flow_sequence(text)
        if first in "\"'":
            return _quoted(text)
        if first in _INDICATORS or not _plain_ok(text):
            raise _Decline
        parts = [text]
        lines = self.lines
        while self.position < len(lines):
            line = lines[self.position]
            if not line:
                ahead = self.position
                while ahead < len(lines) and not lines[ahead]:
                    ahead += 1
                if ahead < len(lines) and _indent(lines[ahead]) >= continuation:
                    raise _Decline  # a folded blank line: not handled here
                break
            if _indent(line) < continuation:
                break
            more = line.lstrip(" ")
            if more[0] in _INDICATORS or not _plain_ok(more):
                raise _Decline
            parts.append(more)
            self.position += 1
        value = " ".join(parts)
        if _resolves(value):
            raise _Decline
        return value


def _plain_ok(text: str) -> bool:
    return ": " not in text and not text.endswith(":") and " #" not in text


_WILDCARD = tuple(regexp for _, regexp in _RESOLVERS.get(None, []))
# per first character, every resolver that may claim a scalar starting with it
_BY_FIRST = {
    first: tuple(regexp for _, regexp in resolvers) + _WILDCARD
    for first, resolvers in _RESOLVERS.items()
    if first is not None
}
# verdicts on short scalars; keys, types and tags repeat from document to document
_SEEN: dict[str, bool] = {}


def _resolves(plain: str) -> bool:
    """Tell whether the loader would read this plain scalar as something other than a string."""
    found = _SEEN.get(plain)
    if found is None:
        found = any(r.match(plain) for r in _BY_FIRST.get(plain[:1], _WILDCARD))
        if len(plain) <= 64 and len(_SEEN) < 4096:
            _SEEN[plain] = found
    return found


def _quoted(text: str) -> str:
    quote = text[0]
    if len(text) < 2 or text[-1] != quote:
        raise _Decline  # unterminated on this line, or something after the closing quote
    inner = text[1:-1]
    if quote == "'":
        if "'" in inner.replace("''", ""):
            raise _Decline
        return inner.replace("''", "'")
    if '"' in inner or "\\" in inner:
        raise _Decline
    return inner


def _flow_sequence(text: str) -> list[str]:
    if not text.endswith("]"):
        raise _Decline
    inner = text[1:-1].strip(" ")
    if not inner:
        return []
    if any(ch in inner for ch in "[]{}"):
        raise _Decline
    items: list[str] = []
    for part in inner.split(","):
        item = part.strip(" ")
        if not item:
            raise _Decline
        if item[0] in "\"'":
            items.append(_quoted(item))
            continue
        if item[0] in _INDICATORS or ":" in item or "#" in item or "\\" in item:
            raise _Decline
        if _resolves(item):
            raise _Decline
        items.append(item)
    return items
