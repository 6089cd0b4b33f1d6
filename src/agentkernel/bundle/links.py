"""The one markdown link parser of a bundle: OKF's concepts and the curated store's pages.

A link is what CommonMark (and the viewer's markdown-it) renders as one: an inline link
``[text](target "title")`` or a reference link (``[text][label]``, ``[label][]``, ``[label]``)
whose label a ``[label]: target`` definition names. Nothing in code is a link (fenced or
indented code blocks, code spans), an image ``![alt](target)`` is not a link, and an escaped
bracket opens none; :mod:`agentkernel.bundle._markdown` finds them. Resolution to a bundle
path (OKF 0.2, section 6) is :func:`resolve_target`'s: bundle-absolute (``/tables/orders.md``),
relative to the linking document (``../tables/orders.md``, ``orders.md``), and root-relative
written without the leading ``/`` (``tables/orders.md`` from ``playbooks/x.md``) when only that
reading names a document that exists. Links to URLs are not bundle links, and a link that would
climb out of the bundle never resolves (it goes through :func:`clean_path`; nothing is read).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from urllib.parse import unquote

from agentkernel.bundle._markdown import scan
from agentkernel.errors import KnowledgePathError
from agentkernel.storage.base import clean_path

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_NEEDS_ANGLES = re.compile(r"[\s<>]")


def link_targets(markdown: str) -> list[str]:
    """Return the targets of the links in ``markdown`` (code and images left out).

    Args:
        markdown: Markdown text.

    Returns:
        Each link's target (an ``#anchor`` included), in order, as CommonMark reads it: a
        reference link's is its definition's, and backslash escapes are resolved.
    """
    return [found.target for found in scan(markdown).links]


def replace_targets(markdown: str, replace: Callable[[str], str | None]) -> str:
    """Rewrite the targets of the links in ``markdown`` (code and images left out).

    A reference link's target is rewritten in its definition, once.

    Args:
        markdown: Markdown text.
        replace: Given a link's target, its new form, or ``None`` to keep it.

    Returns:
        The text with only those targets changed.
    """
    edits: dict[tuple[int, int], str] = {}
    for found in scan(markdown).links:
        if found.dest in edits:
            continue
        new = replace(found.target)
        if new is None:
            continue
        start, end = found.dest
        angled = start > 0 and markdown[start - 1] == "<" and markdown[end : end + 1] == ">"
        edits[found.dest] = f"<{new}>" if not angled and _NEEDS_ANGLES.search(new) else new
    return _apply(markdown, edits)


def strip_links(markdown: str) -> str:
    """Replace each link (and image) by its text, as a sentence reads it.

    Args:
        markdown: Markdown text.

    Returns:
        The text with ``[text](target)`` turned into ``text``.
    """
    found = scan(markdown)
    edits = {link.span: markdown[link.text[0] : link.text[1]] for link in found.links}
    edits.update({span: markdown[alt[0] : alt[1]] for span, alt in found.images})
    return _apply(markdown, edits)


def _apply(markdown: str, edits: dict[tuple[int, int], str]) -> str:
    if not edits:
        return markdown
    pieces: list[str] = []
    last = 0
    for (start, end), new in sorted(edits.items()):
        pieces += [markdown[last:start], new]
        last = end
    pieces.append(markdown[last:])
    return "".join(pieces)


def resolve_target(source_path: str, target: str, exists: Callable[[str], bool]) -> str | None:
    """Resolve one link target to a bundle path, or ``None`` when it is not a bundle link.

    Args:
        source_path: Bundle path of the linking document.
        target: The link target as written.
        exists: Tells whether a bundle path (a document or a directory) exists.

    Returns:
        A clean bundle-relative path (``""`` for the root, a trailing ``/`` kept for
        directories), or ``None`` for URLs, fragments, and paths that leave the bundle.
    """
    target = target.split("#", 1)[0].split("?", 1)[0].strip()
    if not target or _SCHEME.match(target) or target.startswith("//"):
        return None
    target = unquote(target)
    is_dir = target.endswith("/")
    try:
        if target.startswith("/"):
            resolved = _clean(target.lstrip("/"))
        else:
            base = posixpath.dirname(source_path)
            joined = posixpath.normpath(posixpath.join(base, target))
            relative = _clean(joined) if joined != "." else ""
            resolved = relative
            if relative is None or not exists(relative):
                rooted = _clean(target)
                if rooted is not None and exists(rooted):
                    resolved = rooted
    except KnowledgePathError:
        return None
    if resolved is None:
        return None
    return resolved + "/" if is_dir and resolved else resolved


def escape_link_text(text: str) -> str:
    """Escape brackets so ``text`` can sit inside ``[...]``."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _clean(path: str) -> str | None:
    if path == ".." or path.startswith("../"):
        return None
    return clean_path(path)
