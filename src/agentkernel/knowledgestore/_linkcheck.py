"""``check()``'s findings, kept up to date page by page instead of recomputed over every page.

A :class:`LinkState` learns of each page the catalog puts or drops, and keeps who links to
whom (from pages that are not retired), which linked ids have no page, which pages are
retired and which pages nothing links to. A report then costs what it finds, not what the
store holds: only pages with a finding are visited, and the sorted orphan list is reused
until a page joins or leaves it. A page's ``.md`` file links are worked out once per version
of the page; whether such a link reaches an existing listing file is asked again at every
report, since that file can change without the page changing.

The result equals :func:`agentkernel.knowledgestore._catalog.compute_check` over every page
(the tests compare them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentkernel.knowledgestore import _bundle
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    UNLINKED_TYPES,
    CheckReport,
    PageInfo,
    PageLink,
)

FileTargets = Callable[[str], Sequence[tuple[str, str]]]
"""A page's ``.md`` file links with their targets (see ``_bundle.file_link_targets``)."""


def _compact(items: set[str]) -> set[str]:
    """The same set, in a table sized for what it holds now.

    A set keeps the table of its largest size: one that held thousands of ids while a store
    was loading (pages linked before their page was read) and holds a few now still costs
    thousands of steps to walk. Its allocated size tells, at no cost.
    """
    if sys.getsizeof(items) > 64 * (len(items) + 8) + 1024:
        return set(items)
    return items


@dataclass
class _Findings:
    """The link findings of a report while it is put together."""

    broken_links: list[PageLink] = field(default_factory=list)
    links_to_retired: list[PageLink] = field(default_factory=list)


class LinkState:
    """What ``check()`` reports, maintained as pages are put and dropped."""

    def __init__(self) -> None:
        """Start with no page."""
        self._retired_flag: dict[str, bool] = {}  # every page: whether it is retired
        self._links: dict[str, tuple[str, ...]] = {}  # pages not retired: their links
        self._sources: dict[str, set[str]] = {}  # target -> pages not retired linking to it
        self._missing: set[str] = set()  # linked ids with no page
        self._retired: set[str] = set()
        self._lonely: set[str] = set()  # pages that should be linked to and are not
        self._lonely_sorted: list[str] | None = None
        self._file_pages: dict[str, tuple[tuple[str, str], ...] | None] = {}

    def put(self, info: PageInfo, links: Sequence[str], md_links: bool) -> None:
        """Add a page, or replace it with its new values.

        Args:
            info: The page's listing line (id, type, status).
            links: The ids it links to, each once, in order.
            md_links: Whether its content may hold ``.md`` file links.
        """
        page_id = info.id
        self.drop(page_id)
        retired = info.status == STATUS_RETIRED
        self._retired_flag[page_id] = retired
        self._missing.discard(page_id)
        if retired:
            self._retired.add(page_id)
            return
        if info.type not in UNLINKED_TYPES and page_id not in self._sources:
            self._set_lonely(page_id, True)
        self._links[page_id] = tuple(links)
        for target in links:
            if target == page_id:
                continue
            sources = self._sources.get(target)
            if sources is None:
                sources = self._sources[target] = set()
                if target not in self._retired_flag:
                    self._missing.add(target)
                self._set_lonely(target, False)
            sources.add(page_id)
        if md_links:
            self._file_pages[page_id] = None

    def drop(self, page_id: str) -> None:
        """Forget a page (nothing happens if it is unknown).

        Args:
            page_id: ``type/slug``.
        """
        if self._retired_flag.pop(page_id, None) is None:
            return
        self._retired.discard(page_id)
        self._set_lonely(page_id, False)
        self._file_pages.pop(page_id, None)
        for target in self._links.pop(page_id, ()):
            sources = self._sources.get(target)
            if sources is None or target == page_id:
                continue
            sources.discard(page_id)
            if not sources:
                del self._sources[target]
                self._missing.discard(target)
                self._relonely(target)
        if page_id in self._sources:
            self._missing.add(page_id)

    def _relonely(self, page_id: str) -> None:
        """Mark a page nothing links to any more as lonely, if it should be linked to."""
        if page_id in self._links and page_id.partition("/")[0] not in UNLINKED_TYPES:
            self._set_lonely(page_id, True)

    def _set_lonely(self, page_id: str, lonely: bool) -> None:
        if lonely and page_id not in self._lonely:
            self._lonely.add(page_id)
            self._lonely_sorted = None
        elif not lonely and page_id in self._lonely:
            self._lonely.discard(page_id)
            self._lonely_sorted = None

    def report(
        self,
        overview_links: Sequence[str],
        overview_file_links: Sequence[str],
        file_targets: FileTargets,
        is_listing: Callable[[str], bool],
    ) -> CheckReport:
        """Return the findings, each list in the order a full check gives.

        Args:
            overview_links: The ids the overview links to.
            overview_file_links: The overview's ``.md`` links that lead to no page.
            file_targets: A page's ``.md`` file links, asked once per version of a page
                whose content holds ``.md``.
            is_listing: Whether a bundle-relative path is an existing listing file.
        """
        self._missing = _compact(self._missing)
        self._retired = _compact(self._retired)
        self._lonely = _compact(self._lonely)
        dangling: dict[str, list[str]] = {}
        for page_id, targets in self._file_pages.items():
            if targets is None:
                targets = self._file_pages[page_id] = tuple(file_targets(page_id))
            if targets:
                found = _bundle.dangling_links(targets, is_listing)
                if found:
                    dangling[page_id] = found
        flagged = set(dangling)
        sources = self._sources
        # retired pages are few: each is looked up in the sources (a set's intersection with
        # a dict would walk the dict, every linked page)
        linked_retired = [target for target in self._retired if target in sources]
        for target in [*self._missing, *linked_retired]:
            flagged.update(sources[target])
        report = _Findings()
        for source in sorted(flagged):
            self._judge(source, self._links[source], report)
            report.broken_links.extend(PageLink(source, link) for link in dangling.get(source, ()))
        overview = dict.fromkeys(overview_links)
        self._judge("overview", overview, report)
        report.broken_links.extend(
            PageLink("overview", link) for link in dict.fromkeys(overview_file_links)
        )
        if self._lonely_sorted is None:
            self._lonely_sorted = sorted(self._lonely)
        lonely = self._lonely_sorted
        orphans = [p for p in lonely if p not in overview] if overview else list(lonely)
        return CheckReport(report.broken_links, orphans, report.links_to_retired)

    def _judge(
        self, source: str, links: Sequence[str] | dict[str, None], report: _Findings
    ) -> None:
        for target in links:
            retired = self._retired_flag.get(target)
            if retired is None:
                report.broken_links.append(PageLink(source, target))
            elif retired:
                report.links_to_retired.append(PageLink(source, target))
