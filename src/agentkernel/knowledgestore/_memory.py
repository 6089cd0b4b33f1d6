"""The in-memory catalog both stores answer reads from, updated page by page.

A store loads its pages into a :class:`PageCatalog` once and then tells it about every page
that changes (its own writes, and what its change token says other processes wrote), so
``list``, ``read``'s ``linked_from``, ``index``, ``check`` and ``search`` never rescan the
whole store. The catalog does no I/O and takes no lock: its store does both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentkernel.knowledgestore import _bundle, _catalog, _linkcheck, _pages
from agentkernel.knowledgestore._search import PageSearch, require_query
from agentkernel.knowledgestore.model import CheckReport, PageInfo, SearchHit, linked_ids

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.retrieval.semantic import SemanticIndex


def semantic_index(
    embedder: Embedder | str | None, cache_dir: str | os.PathLike[str] | None
) -> SemanticIndex | None:
    """The dense index of a store built with ``embedder=`` (``None`` without one).

    Args:
        embedder: An embedder, a name, a model folder or an endpoint URL, or ``None``.
        cache_dir: The vector cache root; ``None`` for the default.

    Returns:
        The index, or ``None``; nothing is imported without an embedder.

    Raises:
        EmbedderError: The embedder cannot be built or its cache holds another model's
            vectors.
    """
    if embedder is None:
        return None
    from agentkernel.retrieval.semantic import SemanticIndex

    return SemanticIndex(embedder, cache_dir)


@dataclass(frozen=True)
class Entry:
    """A page as the catalog keeps it.

    Attributes:
        info: Its listing line (status and description included).
        content: Its body, links as ids.
        links: The ids it links to, each once.
        md_links: Whether its content may hold ``.md`` file links (``check`` reads those).
    """

    info: PageInfo
    content: str
    links: tuple[str, ...]
    md_links: bool


def make_entry(
    page_id: str, type_name: str, slug: str, title: str, fields: Mapping[str, str], content: str
) -> Entry:
    """Describe a page for the catalog.

    Args:
        page_id: ``type/slug``.
        type_name: Its type's name.
        slug: Its slug.
        title: Its title.
        fields: Its fields, besides type and title.
        content: Its body, links as ids.

    Returns:
        The entry, with its description, status and links worked out once.
    """
    info = PageInfo(
        id=page_id,
        type=type_name,
        slug=slug,
        title=title,
        description=_pages.description_of(fields, content),
        status=_pages.status_of(fields),
        fields=dict(fields),
    )
    return Entry(info, content, tuple(linked_ids(content)), ".md" in content)


class PageCatalog:
    """Every page of a store, with its backlinks, its index lines and its search index."""

    def __init__(
        self, registry: _pages.TypeRegistry, semantic: SemanticIndex | None = None
    ) -> None:
        """Start empty.

        Args:
            registry: The store's types (their order orders listings).
            semantic: The dense index, when search is hybrid.
        """
        self._rank = {name: i for i, name in enumerate(registry.names())}
        self._entries: dict[str, Entry] = {}
        self._backlinks: dict[str, set[str]] = {}
        self._ordered: list[str] | None = None
        self._index = _catalog.IndexLines(registry, lambda info: info.id)
        self._search = PageSearch(semantic)
        self._links = _linkcheck.LinkState()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, page_id: object) -> bool:
        return page_id in self._entries

    def ids(self) -> list[str]:
        """Return every page's id, in no particular order."""
        return list(self._entries)

    def get(self, page_id: str) -> Entry | None:
        """Return a page's entry, or ``None``."""
        return self._entries.get(page_id)

    def order(self, page_id: str) -> tuple[int, str]:
        """Return a page's place in listings: by type (declaration order), then slug."""
        type_name, _, slug = page_id.partition("/")
        return self._rank.get(type_name, len(self._rank)), slug

    def put(self, entry: Entry) -> None:
        """Add a page, or replace it with its new values.

        Args:
            entry: The page.
        """
        page_id = entry.info.id
        old = self._entries.get(page_id)
        if old is None:
            self._ordered = None
        else:
            self._unlink(page_id, old.links)
        self._entries[page_id] = entry
        for target in entry.links:
            if target != page_id:
                self._backlinks.setdefault(target, set()).add(page_id)
        self._index.put(entry.info)
        self._search.put(entry.info, entry.content)
        self._links.put(entry.info, entry.links, entry.md_links)

    def drop(self, page_id: str) -> None:
        """Forget a page (its file was deleted behind the store).

        Args:
            page_id: ``type/slug``.
        """
        old = self._entries.pop(page_id, None)
        if old is None:
            return
        self._ordered = None
        self._unlink(page_id, old.links)
        self._index.drop(page_id)
        self._search.drop(page_id)
        self._links.drop(page_id)

    def _unlink(self, page_id: str, links: Iterable[str]) -> None:
        for target in links:
            sources = self._backlinks.get(target)
            if sources is not None:
                sources.discard(page_id)
                if not sources:
                    del self._backlinks[target]

    def entries(self) -> list[Entry]:
        """Return every page, retired ones included, by type, then slug."""
        if self._ordered is None:
            self._ordered = sorted(self._entries, key=self.order)
        return [self._entries[page_id] for page_id in self._ordered]

    def linked_from(self, page_id: str) -> list[str]:
        """Return the other pages that link to a page, by type, then slug."""
        return sorted(self._backlinks.get(page_id, ()), key=self.order)

    def index(self, empty: str = "") -> str:
        """Return the catalog, linked by id (retired pages left out).

        Args:
            empty: The text when there is no page.
        """
        return self._index.render(empty)

    def check(
        self,
        overview_links: Sequence[str],
        file_targets: Callable[[Entry], Sequence[tuple[str, str]]],
        is_listing: Callable[[str], bool],
        overview_file_links: Sequence[str] = (),
        *,
        afresh: bool = False,
    ) -> CheckReport:
        """Find broken links, orphans and links to retired pages.

        The findings are kept up to date as pages are put and dropped (see
        :mod:`agentkernel.knowledgestore._linkcheck`): this costs what it finds.

        Args:
            overview_links: The ids the overview links to.
            file_targets: A page's ``.md`` file links with their bundle-relative targets,
                asked once per version of a page whose content holds ``.md``.
            is_listing: Whether such a target is an existing ``index.md``, ``log.md`` or
                ``overview.md`` (asked at every check: those files change on their own).
            overview_file_links: The overview's ``.md`` links that lead to no page.
            afresh: Work the report out from every page instead, keeping nothing (the
                oracle the kept findings are compared with).
        """
        if afresh:
            sources = (
                _catalog.LinkSource(
                    e.info.id,
                    e.info.type,
                    e.info.status,
                    e.links,
                    _bundle.dangling_links(file_targets(e), is_listing) if e.md_links else (),
                )
                for e in self._entries.values()
            )
            return _catalog.compute_check(sources, overview_links, overview_file_links)
        return self._links.report(
            overview_links,
            overview_file_links,
            lambda page_id: file_targets(self._entries[page_id]),
            is_listing,
        )

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Rank the pages for a query, best first (retired pages left out).

        Args:
            query: Words to look for.
            limit: How many hits at most.

        Raises:
            KnowledgeStoreError: A query that is not text, or far too long.
        """
        return self._search.search(require_query(query), limit, self._content)

    def _content(self, page_id: str) -> str:
        return self._entries[page_id].content
