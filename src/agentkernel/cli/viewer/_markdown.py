"""Markdown for the bundle viewer: CommonMark through markdown-it-py, made safe for the page.

markdown-it-py parses (CommonMark, plus GFM tables and strikethrough, and footnotes through
``mdit-py-plugins``: what OKF bodies use, OKF 0.2 section 4.2) with raw HTML disabled, so
markup in a document is shown as text. What this module adds is where the page's safety and
navigation live: every link's target is decided by a caller-given resolver (a bundle concept,
a bundle directory, an allowed external URL, or plain text), images become links (the page
loads nothing), and no ``id``/``name``/``style`` attribute is emitted (table alignment is a
class, footnotes are keyed by ``data-fn``). Text nested deeper than :data:`_MAX_LEVEL` is kept
as a plain paragraph rather than parsed further.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.footnote import footnote_plugin


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
_MAX_LEVEL = 12  # block nesting (a quote is one level, a list two) parsed as structure
_ALIGN_CLASSES = {
    "text-align:left": "al-l",
    "text-align:right": "al-r",
    "text-align:center": "al-c",
}


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
    return str(_parser().render(text, {"resolve": resolve}))


@functools.cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False})
    parser.options["maxNesting"] = _MAX_LEVEL + 8  # past the level where _too_deep takes over
    parser.enable(["table", "strikethrough"]).use(footnote_plugin)
    # Every target reaches the resolver as written: it, not a scheme list, decides what opens.
    parser.validateLink = lambda url: True  # type: ignore[method-assign]
    parser.normalizeLink = lambda url: url  # type: ignore[method-assign]
    parser.block.ruler.before("table", "too_deep", _too_deep, {"alt": []})
    parser.core.ruler.push("for_the_page", _for_the_page)
    rules: dict[str, Callable[..., str]] = {
        "table_open": lambda *_: '<div class="table-wrap"><table>\n',
        "table_close": lambda *_: "</table></div>\n",
        "footnote_ref": _footnote_ref,
        "footnote_block_open": lambda *_: '<section class="footnotes"><ol>\n',
        "footnote_block_close": lambda *_: "</ol></section>\n",
        "footnote_open": _footnote_open,
        "footnote_anchor": lambda *_: "",
    }
    for name, rule in rules.items():
        parser.add_render_rule(name, rule)
    return parser


def _too_deep(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Past :data:`_MAX_LEVEL`, the rest of the block is one paragraph of text."""
    if state.level < _MAX_LEVEL:
        return False
    if not silent:
        state.push("paragraph_open", "p", 1)
        inline = state.push("inline", "", 0)
        inline.content = state.getLines(start, end, state.blkIndent, False).strip()
        inline.children = []
        state.push("paragraph_close", "p", -1)
    state.line = end
    return True


def _for_the_page(state: StateCore) -> None:
    """Send every link and image target through the resolver; alignment becomes a class."""
    resolve: Resolver = state.env["resolve"]
    for block in state.tokens:
        if block.type in ("th_open", "td_open") and "style" in block.attrs:
            block.attrs = {"class": _ALIGN_CLASSES.get(str(block.attrs["style"]), "")}
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        opened: list[Token] = []
        for token in block.children:
            if token.type == "link_open":
                _link_open(token, resolve, image=False)
                opened.append(token)
            elif token.type == "link_close" and opened:
                token.tag = opened.pop().tag
            elif token.type == "image":
                children.extend(_image(token, resolve, inside_link=bool(opened)))
                continue
            children.append(token)
        block.children = children


def _link_open(token: Token, resolve: Resolver, *, image: bool) -> None:
    """Turn a ``link_open`` into the anchor (or span) the resolver says it is."""
    target = str(token.attrs.get("href", ""))
    title = str(token.attrs.get("title", ""))
    where = resolve(target)
    extra = " img-link" if image else ""
    attrs: dict[str, str | int | float] = {}
    if where.kind in ("concept", "directory"):
        # in-page routes the viewer understands: #c=<concept id>, #d=<directory>
        route = ("#c=" if where.kind == "concept" else "#d=") + quote(where.target, safe="/")
        data = "data-concept" if where.kind == "concept" else "data-dir"
        attrs = {"href": route, "class": f"{where.kind}-link{extra}", data: where.target}
    elif where.kind == "external":
        attrs = {"href": where.target, "class": f"external{extra}", "target": "_blank"}
        attrs["rel"] = "noopener noreferrer nofollow"
    elif where.kind == "broken":
        attrs = {"class": f"broken-link{extra}", "title": f"not in this bundle: {where.target}"}
        title = ""
    else:
        attrs = {"class": f"plain-link{extra}"}
    if title:
        attrs["title"] = title
    token.tag = "a" if "href" in attrs else "span"
    token.attrs = attrs


def _image(token: Token, resolve: Resolver, *, inside_link: bool) -> Sequence[Token]:
    """An image as a link to it, labelled with its description: the page loads nothing."""
    source = str(token.attrs.get("src", ""))
    text = Token("text", "", 0, content=f"\N{FRAME WITH PICTURE} {token.content or source}")
    if inside_link:
        return [text]  # the enclosing link is the one to follow: anchors do not nest
    opening = Token("link_open", "a", 1, attrs={"href": source})
    if token.attrs.get("title"):
        opening.attrs["title"] = token.attrs["title"]
    _link_open(opening, resolve, image=True)
    return [opening, text, Token("link_close", opening.tag, -1)]


def _footnote_ref(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    number = tokens[idx].meta["id"] + 1
    return (
        f'<sup class="fnref"><a href="#" data-fn="{_footnote_key(tokens[idx])}">{number}</a></sup>'
    )


def _footnote_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return f'<li data-fn="{_footnote_key(tokens[idx])}">'


def _footnote_key(token: Token) -> str:
    """What ties a footnote reference to its note in the page: its label (escaped)."""
    meta: dict[str, Any] = token.meta
    label = meta.get("label")
    return escapeHtml(str(meta["id"] if label is None else label))
