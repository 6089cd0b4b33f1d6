"""The catalog, the check and the log entries, as every store renders them.

The index is rendered by the bundle core's one renderer,
:func:`agentkernel.bundle.catalog.render_index`, in OKF's index format (``# Section`` then
``* [Title](link) - what``), whether its links are ids (for the tools) or file paths
(``index.md`` on disk); :class:`IndexLines` keeps what it is given up to date page by page.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from agentkernel.bundle import catalog
from agentkernel.knowledgestore._pages import TypeRegistry
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    STATUS_SUPERSEDED,
    UNLINKED_TYPES,
    CheckReport,
    PageInfo,
    PageLink,
    PageType,
    parse_id,
)


def render_catalog(
    registry: TypeRegistry,
    pages: Iterable[PageInfo],
    link: Callable[[PageInfo], str],
    *,
    empty: str = "",
) -> str:
    """Render the catalog: one section per type, one line per page, retired pages left out.

    Every page is sorted and formatted anew: the oracle :class:`IndexLines` (which keeps the
    same text up to date page by page) is checked against, in the tests.

    Args:
        registry: The store's types, in section order.
        pages: Every page.
        link: The link target of a page (its id for the tools, a file path on disk).
        empty: The text when there is no page.

    Returns:
        Markdown ending in a newline, or ``empty``.
    """
    by_type: dict[str, list[PageInfo]] = {}
    for info in pages:
        if info.status != STATUS_RETIRED:
            by_type.setdefault(info.type, []).append(info)
    sections: list[tuple[str, list[str]]] = []
    for page_type in registry.types:
        own = sorted(by_type.get(page_type.name, []), key=page_order)
        if own:
            lines = [page_line(page_type, info, link(info)) for info in own]
            sections.append((page_type.index_section, lines))
    return catalog.render_index(sections, empty=empty)


def page_order(info: PageInfo) -> tuple[str, str]:
    """Return where a page sits in its index section: by title (case ignored), then id."""
    return catalog.index_order(info.title, info.id)


def page_line(page_type: PageType, info: PageInfo, target: str) -> str:
    """Render one page's index line, its type's ``index_fields`` and superseding as notes.

    Args:
        page_type: The page's type (its ``index_fields`` are shown).
        info: The page.
        target: The link target: its id for the tools, a file path on disk.

    Returns:
        The line, without a newline; a superseded page says by what.
    """
    shown = [f"{key}: {info.fields[key]}" for key in page_type.index_fields if info.fields.get(key)]
    notes = [", ".join(shown)] if shown else []
    if info.status == STATUS_SUPERSEDED:
        notes.append(f"superseded by {info.fields.get('superseded_by', '?')}")
    return catalog.index_line(info.title, target, info.description, notes)


@dataclass(frozen=True)
class LinkSource:
    """What ``check()`` needs of a page: who it is, its status, and where it links."""

    id: str
    type: str
    status: str
    links: Sequence[str]
    file_links: Sequence[str] = ()
    """Relative ``.md`` links that lead to no page (reported as broken as they are written)."""


def compute_check(
    pages: Iterable[LinkSource],
    overview_links: Sequence[str] = (),
    overview_file_links: Sequence[str] = (),
) -> CheckReport:
    """Find broken links, orphans and links to retired pages.

    Retired pages are not checked and do not count as linking to anything. The overview's
    links are checked and count as links (under the name ``overview``). A ``.md`` file link
    that leads to no page is a broken link too.

    Args:
        pages: Every page.
        overview_links: The ids the overview links to.
        overview_file_links: The overview's ``.md`` links that lead to no page.

    Returns:
        The report, each list in a stable order.
    """
    all_pages = sorted(pages, key=lambda p: p.id)
    status = {p.id: p.status for p in all_pages}
    report = CheckReport()
    inbound: set[str] = set()
    sources = [(p.id, p.links, p.file_links) for p in all_pages if p.status != STATUS_RETIRED]
    sources.append(("overview", overview_links, overview_file_links))
    for source, links, file_links in sources:
        for target in dict.fromkeys(links):
            if target not in status:
                report.broken_links.append(PageLink(source, target))
            elif status[target] == STATUS_RETIRED:
                report.links_to_retired.append(PageLink(source, target))
            if target != source:
                inbound.add(target)
        report.broken_links.extend(PageLink(source, link) for link in dict.fromkeys(file_links))
    report.orphans.extend(
        p.id
        for p in all_pages
        if p.status != STATUS_RETIRED and p.type not in UNLINKED_TYPES and p.id not in inbound
    )
    return report


def clean_log_entry(
    operation: object, what: object, pages: Sequence[str] | None
) -> tuple[str, str, list[str]]:
    """Check and tidy a log entry: one line each, pages as ids.

    Args:
        operation: ``ingest``, ``query``, ``lint``, ``update``...
        what: What was done, in one line.
        pages: The ids of the pages it touched.

    Returns:
        ``(operation, what, pages)``.

    Raises:
        KnowledgeStoreError: An empty operation or description, or a page that is not an id.
    """
    if not isinstance(operation, str) or not operation.strip():
        raise KnowledgeStoreError("A log entry needs an operation, e.g. 'ingest' or 'update'.")
    if not isinstance(what, str) or not what.strip():
        raise KnowledgeStoreError("A log entry needs a one-line description of what was done.")
    op = " ".join(operation.replace("*", "").replace("|", "/").split())
    if not op:
        raise KnowledgeStoreError("A log entry needs an operation, e.g. 'ingest' or 'update'.")
    ids: list[str] = []
    for page in pages or ():
        if not isinstance(page, str) or parse_id(page) is None:
            raise KnowledgeStoreError(
                f"{page!r} isn't a page id: log pages as ids such as 'concept/spring-tides'."
            )
        ids.append(page.strip())
    return op, " ".join(what.split()), ids


def format_log_entry(date: str, operation: str, what: str, pages: Sequence[str]) -> str:
    """Render one log entry as ``recent_log`` returns it.

    Args:
        date: ``YYYY-MM-DD``.
        operation: The operation.
        what: What was done.
        pages: The ids it touched.

    Returns:
        ``## [date] operation | what``, then ``- pages: a, b`` when there are pages.
    """
    entry = f"## [{date}] {operation} | {what}"
    return f"{entry}\n- pages: {', '.join(pages)}" if pages else entry


class _Block:
    """A run of consecutive index lines of one section, with their joined text cached.

    A store of tens of thousands of pages rewrites ``index.md`` after every change: joining
    only the block that changed keeps that from costing a join of every line.
    """

    __slots__ = ("joined", "keys", "lines")

    def __init__(self, keys: list[tuple[str, str]], lines: list[str]) -> None:
        self.keys = keys
        self.lines = lines
        self.joined: str | None = None

    def changed(self) -> None:
        self.joined = None

    def text(self) -> str:
        if self.joined is None:
            self.joined = "\n".join(self.lines)
        return self.joined


_BLOCK_LINES = 256  # a block splits in two past twice this


class IndexLines:
    """The index kept up to date page by page, for one kind of link target.

    Each page's line is rendered once, when it changes, and kept in its section's order in
    blocks of a few hundred lines that cache their joined text, so rendering the whole index
    after a change re-joins one block and concatenates the others, instead of sorting and
    formatting every page again. Until the index is first rendered, pages are only collected
    (a store loading thousands of pages sorts them once, when the index is asked for).

    :attr:`version` moves only when the rendered index changes: a page put again with the
    same line in the same place (an edit of its body) leaves it, so a writer can tell that
    the file it last wrote still says everything.
    """

    def __init__(self, registry: TypeRegistry, target: Callable[[PageInfo], str]) -> None:
        """Start empty.

        Args:
            registry: The store's types, in section order.
            target: The link target of a page (its id for the tools, a file path on disk).
        """
        self._registry = registry
        self._target = target
        self._blocks: dict[str, list[_Block]] = {t.name: [] for t in registry.types}
        self._placed: dict[str, tuple[str, tuple[str, str]]] = {}  # id -> (type, key)
        self._waiting: dict[str, PageInfo] | None = {}  # pages put before the first render
        self.version = 0
        """Moves whenever the rendered index changes."""

    def _build(self, infos: Iterable[PageInfo]) -> None:
        """Lay out the pages put so far: each section sorted once, cut into blocks."""
        by_type: dict[str, list[tuple[tuple[str, str], PageInfo]]] = {}
        for info in infos:
            by_type.setdefault(info.type, []).append((page_order(info), info))
        for type_name, rows in by_type.items():
            page_type = self._registry.get(type_name)
            assert page_type is not None  # put() keeps only pages of the registry's types
            rows.sort(key=lambda row: row[0])
            for start in range(0, len(rows), _BLOCK_LINES):
                part = rows[start : start + _BLOCK_LINES]
                lines = [page_line(page_type, info, self._target(info)) for _, info in part]
                self._blocks[type_name].append(_Block([key for key, _ in part], lines))
                for key, info in part:
                    self._placed[info.id] = (type_name, key)

    def _block_of(self, blocks: list[_Block], key: tuple[str, str]) -> int:
        return max(0, bisect.bisect_right([b.keys[0] for b in blocks], key) - 1)

    def put(self, info: PageInfo) -> None:
        """Add or replace a page's line (a retired page has none).

        Args:
            info: The page.
        """
        page_type = self._registry.get(info.type)
        if page_type is None or info.status == STATUS_RETIRED:
            self.drop(info.id)
            return
        if self._waiting is not None:
            self._waiting[info.id] = info
            self.version += 1
            return
        key = page_order(info)
        line = page_line(page_type, info, self._target(info))
        if self._placed.get(info.id) == (info.type, key):
            blocks = self._blocks[info.type]
            block = blocks[self._block_of(blocks, key)]
            position = bisect.bisect_left(block.keys, key)
            if block.lines[position] == line:
                return  # the same line in the same place: the index is unchanged
        self.drop(info.id)
        self.version += 1
        blocks = self._blocks[info.type]
        self._placed[info.id] = (info.type, key)
        if not blocks:
            blocks.append(_Block([key], [line]))
            return
        at = self._block_of(blocks, key)
        block = blocks[at]
        position = bisect.bisect_left(block.keys, key)
        block.keys.insert(position, key)
        block.lines.insert(position, line)
        block.changed()
        if len(block.keys) > 2 * _BLOCK_LINES:
            blocks[at : at + 1] = [
                _Block(block.keys[:_BLOCK_LINES], block.lines[:_BLOCK_LINES]),
                _Block(block.keys[_BLOCK_LINES:], block.lines[_BLOCK_LINES:]),
            ]

    def drop(self, page_id: str) -> None:
        """Remove a page's line, if it has one.

        Args:
            page_id: ``type/slug``.
        """
        if self._waiting is not None:
            if self._waiting.pop(page_id, None) is not None:
                self.version += 1
            return
        placed = self._placed.pop(page_id, None)
        if placed is None:
            return
        self.version += 1
        type_name, key = placed
        blocks = self._blocks[type_name]
        at = self._block_of(blocks, key)
        block = blocks[at]
        position = bisect.bisect_left(block.keys, key)
        del block.keys[position]
        del block.lines[position]
        block.changed()
        if not block.keys:
            del blocks[at]

    def _laid_out(self) -> list[tuple[PageType, list[_Block]]]:
        """Every section that has a page, in order, with its blocks."""
        if self._waiting is not None:
            self._build(self._waiting.values())
            self._waiting = None
        return [(t, self._blocks[t.name]) for t in self._registry.types if self._blocks[t.name]]

    def render(self, empty: str = "") -> str:
        """Return the index, rendered by :func:`agentkernel.bundle.catalog.render_index`.

        Each section's lines are handed over block by block (a block's lines joined once,
        when it changed): the text is the same as line by line.

        Args:
            empty: The text when there is no page.

        Returns:
            Markdown ending in a newline, or ``empty``.
        """
        sections = [
            (page_type.index_section, [block.text() for block in blocks])
            for page_type, blocks in self._laid_out()
        ]
        return catalog.render_index(sections, empty=empty)
