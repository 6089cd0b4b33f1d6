"""One paragraph's links, found by markdown-it's inline rules for brackets.

Backslash escapes, code spans, autolinks and entities bind tighter than link brackets; a link
is an inline link ``[text](dest "title")`` or a full, collapsed or shortcut reference link; no
link holds another, and an image's description holds none (markdown-it's ``parseLinkLabel``
and its link rule's fallback from an inline link to a reference, followed step by step).
"""

from __future__ import annotations

import re

from agentkernel.bundle._markdown_syntax import (
    Chunk,
    Found,
    Reference,
    decode,
    is_valid_url,
    normalize_label,
    parse_destination,
    parse_title,
    skip_space,
)

_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_AUTOLINK = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{1,31}:[^<>\x00-\x20]*")
_EMAIL = re.compile(
    r"[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*"
)
_ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
_SPECIAL = re.compile(r"[\[\]\\`<&!]")
_IN_LABEL = re.compile(r"[\[\]\\`!<&]")
_MAX_NESTING = (
    20  # brackets inside brackets: markdown-it's own bound (maxNesting, CommonMark preset)
)


class Inline:
    """One paragraph's links, found by markdown-it's inline rules for brackets."""

    def __init__(
        self,
        chunk: Chunk,
        references: dict[str, Reference],
        links: list[Found],
        images: list[tuple[tuple[int, int], tuple[int, int]]],
    ) -> None:
        self.chunk = chunk
        self.text = chunk.text
        self.references = references
        self.links = links
        self.images = images
        self.backtick_runs: dict[int, int] | None = None
        self.tried: dict[tuple[int, bool], tuple[int, Found | None] | None] = {}

    def run(self) -> None:
        text = self.text
        pos = 0
        length = len(text)
        while pos < length:
            special = _SPECIAL.search(text, pos)
            if special is None:
                return
            pos = special.start()
            char = text[pos]
            if char == "[":
                found = self._bracketed(pos, image=False, depth=0)
                if found is not None:
                    end, link = found
                    if link is not None:
                        self.links.append(link)
                    pos = end
                    continue
                pos += 1
            elif char == "!" and text.startswith("[", pos + 1):
                found = self._bracketed(pos + 1, image=True, depth=0)
                if found is not None:
                    end, link = found
                    if link is not None:
                        self.images.append((link.span, link.text))
                    pos = end
                    continue
                pos += 1
            else:
                pos = self._skip(pos, 0)

    def _skip(self, pos: int, depth: int) -> int:
        """Past one inline token at ``pos`` (markdown-it's skipToken, for what brackets see)."""
        text = self.text
        char = text[pos]
        if char == "\\":
            if pos + 1 < len(text) and (text[pos + 1] in _ESCAPABLE or text[pos + 1] == "\n"):
                return pos + 2
            return pos + 1
        if char == "`":
            return self._code_span(pos)
        if char == "[":
            found = self._bracketed(pos, image=False, depth=depth + 1)
            return found[0] if found is not None else pos + 1
        if char == "!" and text.startswith("[", pos + 1):
            found = self._bracketed(pos + 1, image=True, depth=depth + 1)
            return found[0] if found is not None else pos + 1
        if char == "<":
            close = text.find(">", pos + 1)
            if close > 0:
                inner = text[pos + 1 : close]
                if "<" not in inner and (
                    (_AUTOLINK.fullmatch(inner) and is_valid_url(inner)) or _EMAIL.fullmatch(inner)
                ):
                    return close + 1
            return pos + 1
        if char == "&":
            entity = _ENTITY.match(text, pos)
            return entity.end() if entity else pos + 1
        return pos + 1

    def _code_span(self, pos: int) -> int:
        text = self.text
        end = pos + 1
        while end < len(text) and text[end] == "`":
            end += 1
        run = end - pos
        if self.backtick_runs is None:
            self.backtick_runs = _last_runs(text)
        if self.backtick_runs.get(run, -1) >= end:
            search = end
            while True:
                start = text.find("`", search)
                if start < 0:
                    break
                close = start + 1
                while close < len(text) and text[close] == "`":
                    close += 1
                if close - start == run:
                    return close
                search = close
        return end

    def _label_end(self, pos: int, *, nested_links: bool, depth: int) -> int:
        """markdown-it's parseLinkLabel: the ``]`` closing the ``[`` at ``pos``, or -1."""
        text = self.text
        level = 1
        at = pos + 1
        while True:
            special = _IN_LABEL.search(text, at)
            if special is None:
                return -1
            at = special.start()
            char = text[at]
            if char == "]":
                level -= 1
                if level == 0:
                    return at
            before = at
            at = self._skip(at, depth)
            if char == "[":
                if before == at - 1:
                    level += 1
                elif not nested_links:
                    return -1
        return -1

    def _bracketed(self, pos: int, *, image: bool, depth: int) -> tuple[int, Found | None] | None:
        """A link (or image) whose text opens at ``pos``: its end and what it is, or ``None``."""
        key = (pos, image)
        if key in self.tried:
            return self.tried[key]
        result: tuple[int, Found | None] | None = None
        if depth <= _MAX_NESTING:
            result = self._parse_bracketed(pos, image=image, depth=depth)
        self.tried[key] = result
        return result

    def _parse_bracketed(
        self, pos: int, *, image: bool, depth: int
    ) -> tuple[int, Found | None] | None:
        text = self.text
        label_end = self._label_end(pos, nested_links=image, depth=depth)
        if label_end < 0:
            return None
        start = pos - 1 if image else pos
        after = label_end + 1
        if after < len(text) and text[after] == "(":
            inline = self._inline_destination(after + 1, image=image)
            if inline is None:
                return None
            ok, dest_start, dest_end, end = inline
            if ok:
                written = text[dest_start:dest_end]
                found = Found(
                    decode(written),
                    (self.chunk.origin(start), self.chunk.origin(end)),
                    (self.chunk.origin(pos + 1), self.chunk.origin(label_end)),
                    (self.chunk.origin(dest_start), self.chunk.origin(dest_start) + len(written)),
                )
                return end, found
            if image:
                return None
            after = end  # markdown-it looks for a reference label just past where this failed
        # a reference: full ([text][label]), collapsed ([label][]) or shortcut ([label])
        label = ""
        end = label_end + 1
        if after < len(text) and text[after] == "[":
            close = self._label_end(after, nested_links=True, depth=depth)
            if close >= 0:
                label = text[after + 1 : close]
                end = close + 1
        if not label:
            label = text[pos + 1 : label_end]
        reference = self.references.get(normalize_label(label))
        if reference is None:
            return None
        found = Found(
            reference.target,
            (self.chunk.origin(start), self.chunk.origin(end)),
            (self.chunk.origin(pos + 1), self.chunk.origin(label_end)),
            reference.dest,
        )
        return end, found

    def _inline_destination(self, pos: int, *, image: bool) -> tuple[bool, int, int, int] | None:
        """``(dest "title")`` from just after the ``(``, as markdown-it's link and image rules.

        Returns:
            ``None`` when nothing follows the ``(``; else whether it closed, the destination's
            written span, and the end past the ``)`` (or the position after where it failed).
        """
        text = self.text
        pos = skip_space(text, pos, newline=True)
        if pos >= len(text):
            return None
        dest_start = dest_end = pos
        destination = parse_destination(text, pos, len(text))
        if destination is not None:
            written_start, written_end, after = destination
            if is_valid_url(decode(text[written_start:written_end])):
                dest_start, dest_end, pos = written_start, written_end, after
        if destination is not None or image:
            before_title = pos
            pos = skip_space(text, pos, newline=True)
            if pos > before_title and pos < len(text):
                title_end = parse_title(text, pos)
                if title_end is not None:
                    pos = skip_space(text, title_end, newline=True)
        if pos >= len(text) or text[pos] != ")":
            return False, dest_start, dest_end, pos + 1
        return True, dest_start, dest_end, pos + 1


def _last_runs(text: str) -> dict[int, int]:
    runs: dict[int, int] = {}
    pos = 0
    while (start := text.find("`", pos)) != -1:
        pos = start + 1
        while pos < len(text) and text[pos] == "`":
            pos += 1
        runs[pos - start] = start
    return runs
