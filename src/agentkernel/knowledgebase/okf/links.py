"""Markdown links of an OKF concept, resolved to concept ids (OKF 0.2, section 6).

Three forms resolve: bundle-absolute (``/tables/orders.md``), relative to the linking document
(``../tables/orders.md``, ``orders.md``), and root-relative written without the leading ``/``
(``tables/orders.md`` from ``playbooks/x.md``) when only that reading names a document that
exists. Links to URLs are not bundle links. A link that would climb out of the bundle never
resolves: resolution goes through :func:`clean_path`, and nothing is read to resolve a link.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.knowledgebase.okf.concept import concept_id, is_document, is_reserved
from agentkernel.storage.base import clean_path

_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class Links:
    """The bundle links of one document.

    Attributes:
        concepts: Ids of linked concepts that exist, in order of first appearance.
        directories: Linked directories (``tables/``, or a link to ``tables/index.md``), as
            browse paths.
        reserved: Ids of linked ``log.md`` files (``runbooks/log``), which ``fetch`` serves.
        broken: Ids of linked documents that do not exist (tolerated per spec).
    """

    concepts: list[str] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    reserved: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def link_targets(body: str) -> list[str]:
    """Return the raw targets of the markdown links in ``body``, outside code fences.

    Args:
        body: Markdown text.

    Returns:
        Each link target as written, in order.
    """
    prose = _FENCE.sub("", body)
    return [m.group(1) for m in _LINK.finditer(prose) if not m.group(0).startswith("!")]


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


def resolve_links(
    source_path: str,
    body: str,
    has_concept: Callable[[str], bool],
    has_directory: Callable[[str], bool],
) -> Links:
    """Resolve every bundle link in a document body.

    Args:
        source_path: Bundle path of the document.
        body: Its markdown body.
        has_concept: Tells whether a concept id exists.
        has_directory: Tells whether a directory (``""`` is the root) exists.

    Returns:
        The links, deduplicated, self-links left out.
    """

    def exists(path: str) -> bool:
        stripped = path.rstrip("/")
        if is_document(stripped):
            return is_reserved(stripped) or has_concept(concept_id(stripped))
        return has_directory(stripped)

    found = Links()
    seen: set[str] = set()
    own_id = concept_id(source_path)
    for raw in link_targets(body):
        path = resolve_target(source_path, raw, exists)
        if path is None or path in seen:
            continue
        seen.add(path)
        bare = path.rstrip("/")
        if is_document(bare) and is_reserved(bare):
            if bare.lower().endswith("index.md"):
                directory = posixpath.dirname(bare)
                if directory not in found.directories:
                    found.directories.append(directory)
            else:
                found.reserved.append(concept_id(bare))
        elif is_document(bare):
            target_id = concept_id(bare)
            if target_id == own_id:
                continue
            (found.concepts if has_concept(target_id) else found.broken).append(target_id)
        elif path.endswith("/") or has_directory(bare):
            found.directories.append(bare)
    return found


def _clean(path: str) -> str | None:
    if path == ".." or path.startswith("../"):
        return None
    return clean_path(path)
