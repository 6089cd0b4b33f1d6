"""How the curated store lays pages out as an OKF bundle: file paths and links.

On disk, a link to a page is a relative path to its file (``../concepts/bowline.md``), which
OKF readers and people can follow; the tools see ids (``concept/bowline``). ``log.md`` is
:mod:`agentkernel.bundle.logfile`'s.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from urllib.parse import unquote

from agentkernel.bundle import links
from agentkernel.knowledgestore._pages import TypeRegistry
from agentkernel.knowledgestore.model import PageType, id_link, is_slug

LISTING_FILES = frozenset({"index.md", "log.md", "overview.md"})
"""The store's own files at the bundle root (``index.md`` is OKF's listing in any folder too);
a link to an existing one is not a broken link."""


def _resolve(link: str, rel_from: str) -> str:
    """The bundle-relative path a file link in ``rel_from`` leads to (``..`` when outside)."""
    link = unquote(link)
    joined = link[1:] if link.startswith("/") else posixpath.join(posixpath.dirname(rel_from), link)
    return posixpath.normpath(joined)


def rel_of(page_type: PageType, slug: str) -> str:
    """Return the bundle-relative file of a page (``concepts/bowline.md``)."""
    return f"{page_type.dir}/{slug}.md" if page_type.dir else f"{slug}.md"


class LinkMap:
    """Converts links between ids (for the tools) and relative file paths (on disk)."""

    def __init__(self, registry: TypeRegistry) -> None:
        """Map the registry's type folders.

        Args:
            registry: The store's page types.
        """
        self._registry = registry
        self._dir_types = {t.dir: t for t in registry.types if t.dir}
        self.root_ids: dict[str, str] = {}
        """Slug -> id of the pages kept at the root (their type is in their frontmatter)."""

    def to_disk(self, markdown: str, rel_from: str) -> str:
        """Turn id links into relative file paths, as seen from the file ``rel_from``.

        Args:
            markdown: Text with ``[text](type/slug#anchor)`` links.
            rel_from: The bundle-relative file the text is written to.

        Returns:
            The text with ``[text](../dir/slug.md#anchor)`` links.
        """
        start = posixpath.dirname(rel_from) or "."

        def replace(target: str) -> str | None:
            found = id_link(target)
            if found is None:
                return None
            type_name, _, slug = found[0].partition("/")
            page_type = self._registry.get(type_name)
            if page_type is None:
                return None
            return posixpath.relpath(rel_of(page_type, slug), start) + found[1]

        return links.replace_targets(markdown, replace)

    def from_disk(self, markdown: str, rel_from: str) -> str:
        """Turn relative (or bundle-absolute) links to page files back into ids.

        Args:
            markdown: Text as stored in the file ``rel_from``.
            rel_from: Its bundle-relative path.

        Returns:
            The text with links to pages as ids; other links unchanged.
        """

        def replace(written: str) -> str | None:
            found = _file_link(written)
            if found is None:
                return None
            page_id = self.page_id_of(found[0], rel_from)
            return None if page_id is None else page_id + found[1]

        return links.replace_targets(markdown, replace)

    def page_id_of(self, path: str, rel_from: str) -> str | None:
        """The page a relative (or bundle-absolute) ``.md`` link names, by its place.

        Args:
            path: The link's path, without its ``#anchor``.
            rel_from: The bundle-relative file the link is written in.

        Returns:
            ``type/slug`` of the page a file there would be (existing or not), or ``None``
            when no page's file can be there.
        """
        target = _resolve(path, rel_from)
        folder, name = posixpath.split(target)
        slug = name[:-3]
        if target.startswith("..") or not is_slug(slug):
            return None
        page_type = self._dir_types.get(folder)
        if page_type is not None:
            return f"{page_type.name}/{slug}"
        if not folder and slug in self.root_ids:
            return self.root_ids[slug]
        return None


def _file_link(target: str) -> tuple[str, str] | None:
    """Split a link target to a ``.md`` file of the bundle into the path and its anchor."""
    path, hash_sign, anchor = target.partition("#")
    if not path.endswith(".md") or ":" in path:
        return None
    return path, hash_sign + anchor


def file_link_targets(markdown: str, rel_from: str) -> list[tuple[str, str]]:
    """List the ``.md`` file links left in ``markdown``, each with where it leads.

    Args:
        markdown: Text with its links to pages already turned into ids.
        rel_from: The bundle-relative file the text is stored in.

    Returns:
        ``(link as written, bundle-relative target)`` for each link once, in order of first
        appearance; the target starts with ``..`` when it leaves the bundle.
    """
    found: dict[str, str] = {}
    for target in links.link_targets(markdown):
        file_link = _file_link(target)
        if file_link is not None and file_link[0] not in found:
            found[file_link[0]] = _resolve(file_link[0], rel_from)
    return list(found.items())


def file_link_pages(
    markdown: str, rel_from: str, pages: LinkMap | None, is_listing: Callable[[str], bool]
) -> list[tuple[str, str | None]]:
    """Judge the ``.md`` file links of text about to be written, as ``check()`` would.

    Args:
        markdown: Text as a caller gave it (links to pages as ids, maybe file links too).
        rel_from: The bundle-relative file it is written to (``""`` in a database).
        pages: The store's link map (``None``: no file is a page, as in a database).
        is_listing: Whether a bundle-relative path is an existing ``index.md``, ``log.md`` or
            ``overview.md``.

    Returns:
        ``(link as written, id of the page it names)`` for each link to a page's place, and
        ``(link as written, None)`` for each that leads to no page; links to an existing
        listing file are left out.
    """
    found: list[tuple[str, str | None]] = []
    if ".md" not in markdown:  # no file link to judge (most content): not parsed again
        return found
    for written, target in file_link_targets(markdown, rel_from):
        page_id = pages.page_id_of(written, rel_from) if pages is not None else None
        if page_id is not None:
            found.append((written, page_id))
        elif target.startswith("..") or not is_listing(target):
            found.append((written, None))
    return found


def dangling_links(
    targets: Iterable[tuple[str, str]], is_listing: Callable[[str], bool]
) -> list[str]:
    """Keep the file links of :func:`file_link_targets` that lead to no page.

    Such a link leads to no page (a folder the store doesn't keep pages in, a missing file,
    outside the bundle), unless it reaches one of :data:`LISTING_FILES` that exists.

    Args:
        targets: ``(link as written, target)`` pairs.
        is_listing: Whether a bundle-relative path is an existing ``index.md``, ``log.md``
            or ``overview.md``.

    Returns:
        The dangling links, as written, in the order given.
    """
    return [
        written for written, target in targets if target.startswith("..") or not is_listing(target)
    ]


def dangling_file_links(
    markdown: str, rel_from: str, is_listing: Callable[[str], bool]
) -> list[str]:
    """List the ``.md`` file links that are still in ``markdown`` once page links became ids.

    Args:
        markdown: Text with its links to pages already turned into ids.
        rel_from: The bundle-relative file the text is stored in.
        is_listing: Whether a bundle-relative path is an existing ``index.md``, ``log.md``
            or ``overview.md``.

    Returns:
        Each dangling link once (see :func:`dangling_links`), in order of first appearance.
    """
    return dangling_links(file_link_targets(markdown, rel_from), is_listing)
