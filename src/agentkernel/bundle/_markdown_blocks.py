"""CommonMark's block structure, line by line: where a document's inline text is.

Block quotes and list items (their content columns), fenced and indented code (no links
inside), ATX and setext headings, thematic breaks, paragraphs with lazy continuation lines, and
the link reference definitions a paragraph starts with, read as markdown-it reads them (each
definition a block of its own). What it hands on: each paragraph's and heading's text as a
:class:`Chunk`, and the document's reference definitions.
"""

from __future__ import annotations

import bisect
import re

from agentkernel.bundle import _markdown_syntax as syntax
from agentkernel.bundle._markdown_syntax import Chunk, Reference

_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"(#{1,6})(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_THEMATIC = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_BULLET = re.compile(r"([-+*])(?=[ \t]|$)")
_ORDERED = re.compile(r"([0-9]{1,9})([.)])(?=[ \t]|$)")
# how many lines of a paragraph are re-read for reference definitions (a title may span
# lines; unbounded, a hostile paragraph opening with "[" costs the square of its lines)
_DEFINITION_LINES = 64
_MAY_START_BLOCK = frozenset(" \t>#-*+_=`~0123456789")


def _whitespace(line: str, at: int, most: int = 1 << 30) -> tuple[int, int]:
    """Columns of leading whitespace from ``at`` (up to ``most``), and where they end.

    A tab reaches the line's next stop of 4 and is taken whole.
    """
    start = column = _column_of(line, at) if "\t" in line else at
    end = at
    length = len(line)
    while end < length and column - start < most:
        char = line[end]
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - (column % 4)
        else:
            break
        end += 1
    return column - start, end


def _indent(line: str, at: int) -> tuple[int, int]:
    """Columns of whitespace from ``at``, and where it ends."""
    return _whitespace(line, at)


def _skip_columns(line: str, at: int, columns: int) -> int:
    """Where ``columns`` columns of leading whitespace from ``at`` end."""
    return _whitespace(line, at, columns)[1]


class Blocks:
    """CommonMark's block structure, line by line: containers, leaves, definitions."""

    def __init__(self, markdown: str) -> None:
        self.source = markdown
        self.chunks: list[Chunk] = []
        self.references: dict[str, Reference] = {}
        # open containers: ("quote", 0) or ("item", content column within the parent's content)
        self.containers: list[tuple[str, int]] = []
        self.leaf = ""  # "", "para", "fence", "code"
        self.fence: tuple[str, int, int] = ("", 0, 0)  # char, length, container depth
        self.para: list[tuple[str, int]] = []  # (line text, document offset of its first char)
        self.blank_item = 0  # depth of a list item opened on a blank line, for one line

    def run(self) -> None:
        source = self.source
        offset = 0
        for raw in source.split("\n"):
            line = raw[:-1] if raw.endswith("\r") else raw
            self._line(line, offset)
            offset += len(raw) + 1
        self._close_leaf()

    # containers ---------------------------------------------------------------------------

    def _match_containers(self, line: str) -> tuple[int, int]:
        """How many open containers ``line`` continues, and where its rest starts."""
        at = 0
        matched = 0
        for kind, column in self.containers:
            columns, end = _indent(line, at)
            if kind == "quote":
                if columns < 4 and end < len(line) and line[end] == ">":
                    at = end + 1
                    if at < len(line) and line[at] in " \t":
                        at += 1
                    matched += 1
                    continue
                break
            if end >= len(line):  # a blank line continues a list item
                matched += 1
                at = end
                continue
            if columns >= column:
                at = _skip_columns(line, at, column)
                matched += 1
                continue
            break
        return matched, at

    def _line(self, line: str, offset: int) -> None:
        if (
            not self.containers
            and line
            and line[0] not in _MAY_START_BLOCK
            and (self.leaf == "" or (self.leaf == "para" and self.para[0][0][:1] != "["))
        ):
            self.leaf = "para"  # the common line: text that starts or goes on with a paragraph
            self.para.append((line, offset))
            return
        if self.blank_item:
            if self.blank_item == len(self.containers) and not line.strip(" \t"):
                self.containers.pop()  # an item may start with one blank line, not two
            self.blank_item = 0
        matched, at = self._match_containers(line)
        depth = len(self.containers)
        if self.leaf == "fence" and matched == depth:
            char, length, _ = self.fence
            columns, end = _indent(line, at)
            if columns < 4 and line.startswith(char * length, end):
                run = end
                while run < len(line) and line[run] == char:
                    run += 1
                if not line[run:].strip(" \t"):
                    self.leaf = ""
            return
        if matched < depth:
            if (
                self.leaf == "para"
                and line[at:].strip(" \t")
                and not self._starts_block(line, at, interrupting=False)
                and self._continues_para(line, at)
            ):
                self._para_line(line, at, offset)  # a lazy continuation line
                return
            self._close_leaf()
            del self.containers[matched:]
        self._open(line, at, offset)

    # leaves -------------------------------------------------------------------------------

    def _starts_block(self, line: str, at: int, *, interrupting: bool) -> bool:
        columns, end = _indent(line, at)
        if columns >= 4:
            return False
        rest = line[end:]
        if not rest:
            return False
        if rest[0] == ">" or (_FENCE_OPEN.match(rest) and _fence_info_ok(rest)):
            return True
        if _ATX.match(rest) or _THEMATIC.match(rest):
            return True
        return self._list_marker(rest, interrupting=interrupting) is not None

    @staticmethod
    def _list_marker(rest: str, *, interrupting: bool) -> int | None:
        """The marker's width if ``rest`` starts a list item (that may interrupt a paragraph)."""
        bullet = _BULLET.match(rest)
        if bullet:
            width = 1
        else:
            ordered = _ORDERED.match(rest)
            if not ordered:
                return None
            if interrupting and int(ordered.group(1)) != 1:
                return None
            width = ordered.end()
        if interrupting and not rest[width:].strip(" \t"):
            return None
        return width

    def _open(self, line: str, at: int, offset: int) -> None:
        if self.leaf == "para" and not self._continues_para(line, at):
            self._close_leaf()
        while True:
            columns, end = _indent(line, at)
            rest = line[end:]
            if not rest:
                if self.leaf == "para":
                    self._close_leaf()
                return
            if columns >= 4:
                if self.leaf == "para":
                    self._para_line(line, end, offset)
                elif self.leaf != "code":
                    self._close_leaf()
                    self.leaf = "code"
                return
            if self.leaf == "code":
                self._close_leaf()
            if rest[0] == ">":
                self._close_leaf()
                self.containers.append(("quote", 0))
                at = end + 1
                if at < len(line) and line[at] in " \t":
                    at += 1
                continue
            fence = _FENCE_OPEN.match(rest)
            if fence and _fence_info_ok(rest):
                self._close_leaf()
                self.leaf = "fence"
                self.fence = (rest[0], len(fence.group(1)), len(self.containers))
                return
            if _ATX.match(rest):
                self._close_leaf()
                self._heading(line, end, offset)
                return
            if self.leaf == "para" and _SETEXT.match(rest):
                self._close_leaf()
                return
            if _THEMATIC.match(rest):
                self._close_leaf()
                return
            width = self._list_marker(rest, interrupting=self.leaf == "para")
            if width is not None:
                self._close_leaf()
                marker_end = end + width
                after, content = _indent(line, marker_end)
                # the content column, counted from where this item's container's content starts
                base = _column_of(line, marker_end) - _column_of(line, at)
                if content >= len(line):  # an item that starts blank
                    self.containers.append(("item", base + 1))
                    self.blank_item = len(self.containers)
                    return
                if after >= 5:  # the content is indented code: one space belongs to the marker
                    self.containers.append(("item", base + 1))
                    self.leaf = "code"
                    return
                self.containers.append(("item", base + after))
                at = content
                continue
            if self.leaf != "para":
                self._close_leaf()
                self.leaf = "para"
            self._para_line(line, end, offset)
            return

    def _continues_para(self, line: str, at: int) -> bool:
        """Whether ``line`` continues the open paragraph.

        A paragraph that so far holds only reference definitions ends where they do, unless
        the line carries on one of them (a title, a destination on its own line): markdown-it
        reads each definition as a block of its own, so what follows starts a new block.
        """
        if not self.para[0][0].startswith("[") or len(self.para) > _DEFINITION_LINES:
            return True  # past that many lines a paragraph is no run of definitions: no re-read
        text = "\n".join(text for text, _ in self.para)
        if _definitions_end(text) < len(text):
            return True
        _, start = _indent(line, at)
        return _definitions_end(text + "\n" + line[start:]) > len(text) + 1

    def _para_line(self, line: str, at: int, offset: int) -> None:
        _, start = _indent(line, at)
        self.para.append((line[start:], offset + start))

    def _heading(self, line: str, at: int, offset: int) -> None:
        opening = _ATX.match(line, at)
        assert opening is not None
        start = opening.end()
        text = line[start:]
        closing = _ATX_CLOSE.search(text)
        if closing:
            text = text[: closing.start()]
        text = text.rstrip(" \t")
        if text:
            self.chunks.append(Chunk(text, [0], [offset + start]))

    def _close_leaf(self) -> None:
        if self.leaf == "para" and self.para:
            self._paragraph(self.para)
        self.para = []
        self.leaf = ""

    def _paragraph(self, lines: list[tuple[str, int]]) -> None:
        text_lines = [text for text, _ in lines]
        text_lines[-1] = text_lines[-1].rstrip(" \t")
        starts: list[int] = []
        at = 0
        for text in text_lines:
            starts.append(at)
            at += len(text) + 1
        chunk = Chunk("\n".join(text_lines), starts, [origin for _, origin in lines])
        consumed = self._definitions(chunk)
        if consumed:
            if consumed >= len(chunk.text):
                return
            line = bisect.bisect_left(chunk.starts, consumed)
            chunk = Chunk(
                "\n".join(text_lines[line:]),
                [start - chunk.starts[line] for start in chunk.starts[line:]],
                chunk.origins[line:],
            )
        if chunk.text.strip():
            self.chunks.append(chunk)

    def _definitions(self, chunk: Chunk) -> int:
        """Read the reference definitions a paragraph starts with; where the rest begins."""
        text = chunk.text
        at = 0
        while at < len(text) and text[at] == "[":
            found = _definition(text, at)
            if found is None:
                break
            label, dest, end = found
            key = syntax.normalize_label(label)
            if key and key not in self.references:
                written = text[dest[0] : dest[1]]
                self.references[key] = Reference(
                    syntax.decode(written),
                    (chunk.origin(dest[0]), chunk.origin(dest[0]) + len(written)),
                )
            at = end
        return at


def _column_of(line: str, at: int) -> int:
    columns = 0
    for char in line[:at]:
        columns += 4 - (columns % 4) if char == "\t" else 1
    return columns


def _fence_info_ok(rest: str) -> bool:
    return not (rest[0] == "`" and "`" in rest.lstrip("`"))


def _definition(text: str, at: int) -> tuple[str, tuple[int, int], int] | None:
    """A reference definition at ``at``: its label, destination span, and where it ends."""
    end = _label_end(text, at)
    if end < 0 or end + 1 >= len(text) or text[end + 1] != ":":
        return None
    label = text[at + 1 : end]
    if not label.strip() or len(label) > 999:
        return None
    pos = syntax.skip_space(text, end + 2, newline=True)
    line_end = text.find("\n", pos)
    dest = syntax.parse_destination(text, pos, len(text) if line_end < 0 else line_end)
    if dest is None:
        return None
    dest_start, dest_end, after = dest
    if dest_start == dest_end and text[pos] != "<":
        return None
    if not syntax.is_valid_url(syntax.decode(text[dest_start:dest_end])):
        return None
    line_end = text.find("\n", after)
    line_end = len(text) if line_end < 0 else line_end
    title_at = syntax.skip_space(text, after, newline=True)
    if title_at > after:
        title_end = syntax.parse_title(text, title_at)
        if title_end is not None:
            tail = text.find("\n", title_end)
            tail = len(text) if tail < 0 else tail
            if not text[title_end:tail].strip(" \t"):
                return label, (dest_start, dest_end), min(tail + 1, len(text))
    if text[after:line_end].strip(" \t"):
        return None
    return label, (dest_start, dest_end), min(line_end + 1, len(text))


def _definitions_end(text: str) -> int:
    """Where the reference definitions ``text`` starts with end (0 if it starts with none)."""
    at = 0
    while at < len(text) and text[at] == "[":
        found = _definition(text, at)
        if found is None:
            break
        at = found[2]
    return min(at, len(text))


def _label_end(text: str, at: int) -> int:
    """The ``]`` closing a reference definition's label at ``at`` (no unescaped brackets)."""
    pos = at + 1
    while pos < len(text):
        char = text[pos]
        if char == "\\" and pos + 1 < len(text):
            pos += 2
            continue
        if char == "[":
            return -1
        if char == "]":
            return pos
        pos += 1
    return -1
