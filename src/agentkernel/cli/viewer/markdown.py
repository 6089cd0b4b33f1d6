"""A small, safe markdown renderer for the bundle viewer.

It covers what OKF bodies use (OKF 0.2, section 4.2): ATX and setext headings, paragraphs,
emphasis, inline code, fenced and indented code, block quotes, nested lists, GFM tables,
rules, links, footnotes and bare URLs. Safety comes first: every piece of document text is
HTML-escaped, raw HTML is shown as text, no ``id``/``name``/``style``/event attribute is ever
emitted, images become links (the page loads nothing), and a link's target is decided by a
caller-given resolver (bundle concept, bundle directory, allowed external URL, or plain text).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

_MAX_DEPTH = 12  # nesting of quotes and lists rendered as structure; deeper is text


@dataclass(frozen=True)
class Link:
    """Where a link goes, as decided by a resolver.

    Attributes:
        kind: ``"concept"`` (a concept id), ``"directory"`` (a bundle directory),
            ``"broken"`` (a bundle document that does not exist), ``"external"`` (a URL
            safe to open) or ``"text"`` (not a link: shown as text).
        target: The concept id, directory, missing id or URL.
    """

    kind: str
    target: str = ""


Resolver = Callable[[str], Link]
"""Maps a link target as written to where it goes."""

_SAFE_SCHEMES = ("http://", "https://", "mailto:")


def external_only(target: str) -> Link:
    """Resolve links without a bundle: allowed URLs open, anything else is text.

    Args:
        target: The link target as written.

    Returns:
        The link.
    """
    cleaned = target.strip()
    if cleaned.lower().startswith(_SAFE_SCHEMES):
        return Link("external", cleaned)
    return Link("text")


def render(text: str, resolve: Resolver = external_only) -> str:
    """Render markdown to HTML that is safe to insert into the viewer page.

    Args:
        text: The markdown (a concept body, without frontmatter).
        resolve: Decides where each link goes.

    Returns:
        The HTML fragment.
    """
    renderer = _Renderer(resolve)
    lines = text.replace("\x00", "\ufffd").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = renderer.blocks([line.expandtabs(4) for line in lines], 0)
    return body + renderer.footnote_section()


# -- block level ------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_BULLET = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$")
_FOOTDEF = re.compile(r"^ {0,3}\[\^([^\]\s]+)\]:[ \t]*(.*)$")
_TABLE_DELIM = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_LANGUAGE = re.compile(r"[^A-Za-z0-9_+-]")


@dataclass
class _Renderer:
    resolve: Resolver
    footnotes: dict[str, str] = field(default_factory=dict)
    footnote_order: list[str] = field(default_factory=list)

    def blocks(self, lines: list[str], depth: int) -> str:
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            fence = _FENCE.match(line)
            if fence:
                i = self._fenced(lines, i, fence, out)
                continue
            heading = _ATX.match(line)
            if heading:
                level = len(heading.group(1))
                out.append(f"<h{level}>{self.inline(heading.group(2) or '')}</h{level}>")
                i += 1
                continue
            if _RULE.match(line):
                out.append("<hr>")
                i += 1
                continue
            if line.startswith("    "):
                i = self._indented_code(lines, i, out)
                continue
            if _QUOTE.match(line):
                i = self._quote(lines, i, depth, out)
                continue
            footdef = _FOOTDEF.match(line)
            if footdef:
                i = self._footnote_definition(lines, i, footdef, depth)
                continue
            if _BULLET.match(line) and depth < _MAX_DEPTH:
                i = self._list(lines, i, depth, out)
                continue
            if i + 1 < len(lines) and "|" in line and _TABLE_DELIM.match(lines[i + 1]):
                i = self._table(lines, i, out)
                continue
            i = self._paragraph(lines, i, out)
        return "\n".join(out)

    def _fenced(self, lines: list[str], i: int, fence: re.Match[str], out: list[str]) -> int:
        marker = fence.group(1)
        language = _LANGUAGE.sub("", fence.group(2))[:40]
        indent = len(lines[i]) - len(lines[i].lstrip(" "))
        closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
        code: list[str] = []
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            line = lines[i]
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            code.append(line[strip:])
            i += 1
        attribute = f' class="language-{language}"' if language else ""
        escaped = html.escape("\n".join(code))
        out.append(f"<pre><code{attribute}>{escaped}</code></pre>")
        return i + 1

    def _indented_code(self, lines: list[str], i: int, out: list[str]) -> int:
        code: list[str] = []
        while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
            code.append(lines[i][4:])
            i += 1
        while code and not code[-1].strip():
            code.pop()
        out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
        return i

    def _quote(self, lines: list[str], i: int, depth: int, out: list[str]) -> int:
        inner: list[str] = []
        while i < len(lines) and lines[i].strip():
            quoted = _QUOTE.match(lines[i])
            inner.append(quoted.group(1) if quoted else lines[i])
            i += 1
        if depth >= _MAX_DEPTH:
            out.append(f"<p>{self.inline(' '.join(inner))}</p>")
        else:
            out.append(f"<blockquote>{self.blocks(inner, depth + 1)}</blockquote>")
        return i

    def _footnote_definition(
        self, lines: list[str], i: int, footdef: re.Match[str], depth: int
    ) -> int:
        label = footdef.group(1)
        content = [footdef.group(2)]
        i += 1
        while i < len(lines) and (lines[i].startswith("    ") or lines[i].startswith("\t")):
            content.append(lines[i].strip())
            i += 1
        if label not in self.footnotes:
            self.footnotes[label] = self.inline(" ".join(content))
        return i

    def _list(self, lines: list[str], i: int, depth: int, out: list[str]) -> int:
        first = _BULLET.match(lines[i])
        assert first is not None
        ordered = first.group(2)[-1] in ".)"
        items: list[list[str]] = []
        loose = False
        start = int(first.group(2)[:-1]) if ordered else 1
        while i < len(lines):
            match = _BULLET.match(lines[i])
            if not match or (match.group(2)[-1] in ".)") != ordered:
                break
            content_indent = len(match.group(1)) + len(match.group(2)) + len(match.group(3))
            if not match.group(3) or len(match.group(3)) > 4:
                content_indent = len(match.group(1)) + len(match.group(2)) + 1
            item = [match.group(4)]
            i += 1
            blank = False
            while i < len(lines):
                line = lines[i]
                if not line.strip():
                    blank = True
                    item.append("")
                    i += 1
                    continue
                indent = len(line) - len(line.lstrip(" "))
                if indent >= content_indent:
                    if blank:
                        loose = True
                    item.append(line[content_indent:])
                    blank = False
                    i += 1
                    continue
                if blank or _BULLET.match(line) or self._starts_block(line):
                    break
                item.append(line.strip())  # a lazy continuation of the item's paragraph
                i += 1
            while item and not item[-1].strip():
                item.pop()
            items.append(item)
            if blank and i < len(lines) and _BULLET.match(lines[i]):
                loose = True
        tag = "ol" if ordered else "ul"
        attribute = f' start="{start}"' if ordered and start != 1 else ""
        rendered: list[str] = []
        for item in items:
            inner = self.blocks(item, depth + 1)
            if not loose:
                inner = re.sub(r"^<p>(.*?)</p>", r"\1", inner, count=1, flags=re.DOTALL)
            rendered.append(f"<li>{inner}</li>")
        out.append(f"<{tag}{attribute}>{''.join(rendered)}</{tag}>")
        return i

    def _table(self, lines: list[str], i: int, out: list[str]) -> int:
        header = _cells(lines[i])
        aligns = [_alignment(cell) for cell in _cells(lines[i + 1])]
        rows: list[list[str]] = []
        i += 2
        while i < len(lines) and lines[i].strip() and "|" in lines[i]:
            rows.append(_cells(lines[i]))
            i += 1
        width = len(header)

        def row_html(cells: list[str], tag: str) -> str:
            padded = (cells + [""] * width)[:width]
            parts = []
            for index, cell in enumerate(padded):
                align = aligns[index] if index < len(aligns) else ""
                attribute = f' class="al-{align}"' if align else ""
                parts.append(f"<{tag}{attribute}>{self.inline(cell)}</{tag}>")
            return "<tr>" + "".join(parts) + "</tr>"

        body = "".join(row_html(row, "td") for row in rows)
        out.append(
            f'<div class="table-wrap"><table><thead>{row_html(header, "th")}</thead>'
            f"<tbody>{body}</tbody></table></div>"
        )
        return i

    def _paragraph(self, lines: list[str], i: int, out: list[str]) -> int:
        para = [_trim(lines[i])]
        i += 1
        while i < len(lines) and lines[i].strip():
            line = lines[i]
            setext = _SETEXT.match(line)
            if setext:
                level = 1 if setext.group(1)[0] == "=" else 2
                out.append(f"<h{level}>{self.inline(chr(10).join(para))}</h{level}>")
                return i + 1
            if self._starts_block(line) or _interrupts_paragraph(line):
                break
            para.append(_trim(line))
            i += 1
        out.append(f"<p>{self.inline(chr(10).join(para))}</p>")
        return i

    @staticmethod
    def _starts_block(line: str) -> bool:
        return bool(
            _FENCE.match(line)
            or _ATX.match(line)
            or _RULE.match(line)
            or _QUOTE.match(line)
            or _FOOTDEF.match(line)
        )

    # -- inline level -------------------------------------------------------------------

    def inline(self, text: str) -> str:
        return _Inline(self).render(text)

    def footnote_ref(self, label: str) -> str:
        if label not in self.footnote_order:
            self.footnote_order.append(label)
        number = self.footnote_order.index(label) + 1
        return (
            f'<sup class="fnref"><a href="#" data-fn="{html.escape(label, quote=True)}">'
            f"{number}</a></sup>"
        )

    def footnote_section(self) -> str:
        labels = list(self.footnote_order)
        labels += [label for label in self.footnotes if label not in labels]
        if not labels:
            return ""
        items = []
        for label in labels:
            text = self.footnotes.get(label, "<em>missing footnote</em>")
            items.append(f'<li data-fn="{html.escape(label, quote=True)}">{text}</li>')
        return f'\n<section class="footnotes"><ol>{"".join(items)}</ol></section>'


def _trim(line: str) -> str:
    # keep two trailing spaces: they mark a hard line break
    stripped = line.strip()
    return stripped + "  " if line.endswith("  ") and stripped else stripped


def _interrupts_paragraph(line: str) -> bool:
    # a bullet, or an ordered list starting at 1, may interrupt a paragraph (CommonMark)
    match = _BULLET.match(line)
    if match is None or not match.group(4).strip():
        return False
    marker = match.group(2)
    return marker in "-*+" or marker[:-1] == "1"


def _cells(line: str) -> list[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    cells = re.split(r"(?<!\\)\|", text)
    return [cell.strip().replace("\\|", "|") for cell in cells]


def _alignment(cell: str) -> str:
    left, right = cell.startswith(":"), cell.endswith(":")
    if left and right:
        return "c"
    if right:
        return "r"
    if left:
        return "l"
    return ""


_PUNCTUATION = r"""!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~"""
# pieces of a link: [label](target "title"); a label may hold one level of brackets, a
# target one level of parentheses (wiki-style URLs)
_LABEL = r"(?:[^\[\]]|\[[^\[\]]*\])*"
_TARGET = r"(?:[^()\s>]|\([^()\s>]*\))*"
_TITLE = r"(?:\s+(?:\"([^\"]*)\"|'([^']*)'|\(([^)]*)\)))?"  # three capturing forms
_ANY_TITLE = r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?"
_INLINE_TOKEN = re.compile(
    r"(?P<escape>\\[" + _PUNCTUATION + r"])"
    r"|(?P<code>`+)"
    r"|(?P<autolink><(?:https?://|mailto:)[^\s<>]+>)"
    r"|(?P<footref>\[\^[^\[\]\s]{1,200}\])"
    r"|(?P<link>!?\[" + _LABEL + r"\]\(\s*<?" + _TARGET + r">?" + _ANY_TITLE + r"\s*\))"
    r"|(?P<url>\bhttps?://[^\s<>\"'`]+)"
    r"|(?P<br>(?: {2,}|\\)\n)"
)
_LINK_PARTS = re.compile(
    r"^(!?)\[(" + _LABEL + r")\]\(\s*<?(" + _TARGET + r")>?" + _TITLE + r"\s*\)$"
)
# a span stops at the next delimiter of its kind, so unbalanced markers cost linear time
_STRONG = re.compile(
    r"\*\*(?=\S)((?:[^*]|\*(?!\*)){1,2000}?)(?<=\S)\*\*"
    r"|(?<![\w])__(?=\S)((?:[^_]|_(?!_)){1,2000}?)(?<=\S)__(?![\w])"
)
_EM = re.compile(
    r"\*(?=[^\s*])([^*]{1,2000}?)(?<=[^\s*])\*|(?<![\w])_(?=[^\s_])([^_]{1,2000}?)(?<=\S)_(?![\w])"
)
_DEL = re.compile(r"~~(?=\S)((?:[^~]|~(?!~)){1,2000}?)(?<=\S)~~")
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")


class _Inline:
    """Inline markdown: protected spans become placeholders, the rest is escaped text."""

    def __init__(self, owner: _Renderer, *, in_link: bool = False) -> None:
        self.owner = owner
        self.in_link = in_link  # a link's label: bare URLs stay text (no nested anchors)
        self.saved: list[str] = []
        self.unclosed: dict[int, int] = {}  # backtick run length -> a start that found no closer

    def keep(self, fragment: str) -> str:
        self.saved.append(fragment)
        return f"\x00{len(self.saved) - 1}\x00"

    def render(self, text: str) -> str:
        protected = self.protect(text)
        escaped = html.escape(protected, quote=False)
        escaped = _STRONG.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", escaped)
        escaped = _EM.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", escaped)
        escaped = _DEL.sub(lambda m: f"<del>{m.group(1)}</del>", escaped)
        while _PLACEHOLDER.search(escaped):
            escaped = _PLACEHOLDER.sub(lambda m: self.saved[int(m.group(1))], escaped)
        return escaped

    def protect(self, text: str) -> str:
        out: list[str] = []
        position = 0
        while True:
            match = _INLINE_TOKEN.search(text, position)
            if match is None:
                out.append(text[position:])
                return "".join(out)
            out.append(text[position : match.start()])
            kind = match.lastgroup
            token = match.group(0)
            position = match.end()
            if kind == "escape":
                out.append(self.keep(html.escape(token[1])))
            elif kind == "code":
                closing = self.closing_backticks(text, token, position)
                if closing == -1:
                    out.append(self.keep(html.escape(token)))
                    continue
                code = text[position:closing].replace("\n", " ")
                if code.startswith(" ") and code.endswith(" ") and code.strip():
                    code = code[1:-1]
                out.append(self.keep(f"<code>{html.escape(code)}</code>"))
                position = closing + len(token)
            elif kind in ("autolink", "url") and self.in_link:
                out.append(self.keep(html.escape(token)))
            elif kind == "autolink":
                out.append(self.keep(self.anchor(token[1:-1], html.escape(token[1:-1]), "")))
            elif kind == "footref":
                out.append(self.keep(self.owner.footnote_ref(token[2:-1])))
            elif kind == "link":
                out.append(self.keep(self.link(token)))
            elif kind == "url":
                url = token.rstrip(".,:;!?)")
                position = match.start() + len(url)
                out.append(self.keep(self.anchor(url, html.escape(url), "")))
            else:  # a hard line break
                out.append(self.keep("<br>\n"))

    def closing_backticks(self, text: str, run: str, position: int) -> int:
        size = len(run)
        if self.unclosed.get(size, len(text) + 1) <= position:
            return -1  # an earlier search for this run length already reached the end
        closing = text.find(run, position)
        while closing != -1 and (
            text[closing + size : closing + size + 1] == "`"
            or (closing > 0 and text[closing - 1] == "`")
        ):
            end = closing
            while end < len(text) and text[end] == "`":
                end += 1
            closing = text.find(run, end)
        if closing == -1:
            self.unclosed[size] = position
        return closing

    def link(self, token: str) -> str:
        parts = _LINK_PARTS.match(token)
        if parts is None:
            return html.escape(token)
        image, label, target = parts.group(1), parts.group(2), parts.group(3)
        title = parts.group(4) or parts.group(5) or parts.group(6) or ""
        if image:
            text = f"\N{FRAME WITH PICTURE} {html.escape(label or target)}"
            return self.anchor(target, text, title, image=True)
        inner = _Inline(self.owner, in_link=True).render(label)
        return self.anchor(target, inner, title)

    def anchor(self, target: str, inner_html: str, title: str, *, image: bool = False) -> str:
        where = self.owner.resolve(target)
        title_attribute = f' title="{html.escape(title, quote=True)}"' if title else ""
        value = html.escape(where.target, quote=True)
        extra = " img-link" if image else ""
        if where.kind in ("concept", "directory"):
            # in-page routes the viewer understands: #c=<concept id>, #d=<directory>
            route = ("#c=" if where.kind == "concept" else "#d=") + quote(where.target, safe="/")
            data = "data-concept" if where.kind == "concept" else "data-dir"
            return (
                f'<a href="{html.escape(route, quote=True)}" class="{where.kind}-link{extra}" '
                f'{data}="{value}"{title_attribute}>{inner_html}</a>'
            )
        if where.kind == "broken":
            return (
                f'<span class="broken-link{extra}" title="not in this bundle: {value}">'
                f"{inner_html}</span>"
            )
        if where.kind == "external":
            return (
                f'<a href="{value}" class="external{extra}" target="_blank" '
                f'rel="noopener noreferrer nofollow"{title_attribute}>{inner_html}</a>'
            )
        return f'<span class="plain-link{extra}"{title_attribute}>{inner_html}</span>'
