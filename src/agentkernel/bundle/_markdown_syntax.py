"""CommonMark's small syntax pieces that block and inline parsing share.

What a link destination and a title are (markdown-it's ``parseLinkDestination`` and
``parseLinkTitle``), how a destination is decoded and a label matched, which URLs markdown-it
refuses to make a link of, and a paragraph's text with the way back to the document's offsets.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass

_UNESCAPE = re.compile(
    r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])|&([a-z#][a-z0-9]{1,31});", re.IGNORECASE
)
_BAD_PROTOCOL = re.compile(r"^(vbscript|javascript|file|data):", re.IGNORECASE)
_GOOD_DATA = re.compile(r"^data:image/(gif|png|jpeg|webp);", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """One link as written: where it is and where it points.

    Attributes:
        target: The destination as CommonMark decodes it (escapes and entities resolved).
        span: The whole link's ``(start, end)`` in the document (``[text](dest)``).
        text: The link text's ``(start, end)``.
        dest: The written destination's ``(start, end)``: inside the parentheses, or in the
            reference definition a reference link uses.
    """

    target: str
    span: tuple[int, int]
    text: tuple[int, int]
    dest: tuple[int, int]


@dataclass
class Chunk:
    """Inline content (a paragraph's or a heading's): text and where each line came from."""

    text: str
    starts: list[int]  # offset in ``text`` of each line
    origins: list[int]  # offset in the document of each line's first character

    def origin(self, at: int) -> int:
        line = bisect.bisect_right(self.starts, at) - 1
        return self.origins[line] + (at - self.starts[line])


@dataclass
class Reference:
    target: str
    dest: tuple[int, int]


def decode(written: str) -> str:
    """A destination as written, with its backslash escapes and entities resolved."""
    if "\\" not in written and "&" not in written:
        return written
    return _UNESCAPE.sub(_unescaped, written)


def _unescaped(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1)
    decoded = html.unescape(match.group(0))
    return match.group(0) if decoded == match.group(0) else decoded


def normalize_label(label: str) -> str:
    """A reference label as CommonMark matches it: trimmed, whitespace collapsed, case-folded."""
    return re.sub(r"\s+", " ", label.strip(" \t\n\r\f\v")).lower().upper()


def skip_space(text: str, pos: int, *, newline: bool) -> int:
    while pos < len(text) and (text[pos] in " \t" or (newline and text[pos] == "\n")):
        pos += 1
    return pos


def parse_destination(text: str, pos: int, length: int) -> tuple[int, int, int] | None:
    """A link destination at ``pos`` (markdown-it's rules): its written span and its end.

    Args:
        text: The paragraph.
        pos: Where the destination starts.
        length: Where the text it may take ends (a definition's ends with its line).
    """
    if pos < length and text[pos] == "<":
        scan_at = pos + 1
        while scan_at < length:
            char = text[scan_at]
            if char in "\n<":
                return None
            if char == ">":
                return pos + 1, scan_at, scan_at + 1
            if char == "\\" and scan_at + 1 < length:
                scan_at += 2
                continue
            scan_at += 1
        return None
    start = pos
    level = 0
    while pos < length:
        char = text[pos]
        if char == " " or char < " " or char == "\x7f":
            break
        if char == "\\" and pos + 1 < length:
            if text[pos + 1] == " ":
                break
            pos += 2
            continue
        if char == "(":
            level += 1
            if level > 32:
                return None
        elif char == ")":
            if level == 0:
                break
            level -= 1
        pos += 1
    if pos == start or level != 0:
        return None
    return start, pos, pos


def parse_title(text: str, pos: int) -> int | None:
    """Where a link title at ``pos`` ends (past its closing mark), or ``None``."""
    if pos >= len(text) or text[pos] not in "\"'(":
        return None
    close = ")" if text[pos] == "(" else text[pos]
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == close:
            return pos + 1
        if char == "(" and close == ")":
            return None
        if char == "\\" and pos + 1 < len(text):
            pos += 1
        pos += 1
    return None


def is_valid_url(target: str) -> bool:
    """markdown-it's validateLink: no script or file URLs (data URLs of images excepted)."""
    if not _BAD_PROTOCOL.match(target):
        return True
    return bool(_GOOD_DATA.match(target))
