"""The one markdown link parser of a bundle: OKF's concepts and the curated store's pages.

A link is ``[text](target)`` (a title after the target and ``<target>`` are allowed); an image
``![alt](target)`` is not a link. Nothing inside a fenced code block (```` ``` ```` or ``~~~``)
is a link: a page that shows link syntax as code links to nothing. Resolution to a bundle path
(OKF 0.2, section 6) is :func:`resolve_target`'s: bundle-absolute (``/tables/orders.md``),
relative to the linking document (``../tables/orders.md``, ``orders.md``), and root-relative
written without the leading ``/`` (``tables/orders.md`` from ``playbooks/x.md``) when only that
reading names a document that exists. Links to URLs are not bundle links, and a link that would
climb out of the bundle never resolves (it goes through :func:`clean_path`; nothing is read).
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable, Iterator
from urllib.parse import unquote

from agentkernel.errors import KnowledgePathError
from agentkernel.storage.base import clean_path

_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _links(markdown: str) -> Iterator[re.Match[str]]:
    """The link matches of ``markdown`` outside code fences, images left out."""
    if "](" not in markdown:
        return
    fences = (
        [m.span() for m in _FENCE.finditer(markdown)]
        if "```" in markdown or ("~~~" in markdown)
        else []
    )
    starts = [start for start, _ in fences]
    for match in _LINK.finditer(markdown):
        if match.group(1):
            continue  # an image
        at = bisect.bisect_right(starts, match.start()) - 1
        if at >= 0 and match.start() < fences[at][1]:
            continue  # inside a code fence
        yield match


def link_targets(markdown: str) -> list[str]:
    """Return the targets of the links in ``markdown`` (code fences and images left out).

    Args:
        markdown: Markdown text.

    Returns:
        Each link target as written (an ``#anchor`` included), in order.
    """
    return [match.group(3) for match in _links(markdown)]


def replace_targets(markdown: str, replace: Callable[[str], str | None]) -> str:
    """Rewrite the targets of the links in ``markdown`` (code fences and images left out).

    Args:
        markdown: Markdown text.
        replace: Given a target as written, its new form, or ``None`` to keep it.

    Returns:
        The text with only those targets changed.
    """
    pieces: list[str] = []
    last = 0
    for match in _links(markdown):
        new = replace(match.group(3))
        if new is None:
            continue
        start, end = match.span(3)
        pieces += [markdown[last:start], new]
        last = end
    if not pieces:
        return markdown
    pieces.append(markdown[last:])
    return "".join(pieces)


def strip_links(markdown: str) -> str:
    """Replace each link (and image) by its text, as a sentence reads it.

    Args:
        markdown: Markdown text.

    Returns:
        The text with ``[text](target)`` turned into ``text``.
    """
    return _LINK.sub(r"\2", markdown)


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
