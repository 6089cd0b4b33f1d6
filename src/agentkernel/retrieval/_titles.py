"""The title rule's filing: each title under one of its words, so a query finds its titles.

Each title is filed under its *anchor*, the word held by the fewest titles when it was filed:
a title inside a query is then found from its anchor, once, without scanning every title.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentkernel.retrieval.ranking import TIER_TITLE, title_match

TITLE_FANOUT = 1024
"""An anchor held by more titles than this (only very common words) is not followed."""


class TitleAnchors:
    """Titles (by slot) filed under their anchor words."""

    def __init__(self) -> None:
        """File nothing yet."""
        self.count: dict[str, int] = {}  # title word -> titles holding it
        self.anchored: dict[str, set[int]] = {}  # anchor word -> slots
        self.anchor: dict[int, str] = {}  # slot -> its title's anchor

    def file(self, slot: int, title_key: frozenset[str]) -> None:
        """File a slot's (non-empty) title under the word in fewest titles.

        Args:
            slot: The document's slot.
            title_key: Its title's key.
        """
        count = self.count
        for term in title_key:
            count[term] = count.get(term, 0) + 1
        anchor = min(title_key, key=lambda term: (count[term], term))
        self.anchor[slot] = anchor
        self.anchored.setdefault(anchor, set()).add(slot)

    def unfile(self, slot: int, title_key: frozenset[str]) -> None:
        """Forget a slot's title, if it was filed.

        Args:
            slot: The document's slot.
            title_key: Its title's key, as filed.
        """
        anchor = self.anchor.pop(slot, None)
        if anchor is None:
            return
        holders = self.anchored[anchor]
        holders.discard(slot)
        if not holders:
            del self.anchored[anchor]
        count = self.count
        for term in title_key:
            count[term] -= 1
            if not count[term]:
                del count[term]

    def matches(
        self, query_key: frozenset[str], title_keys: Sequence[frozenset[str]]
    ) -> tuple[set[int], dict[int, float]]:
        """Slots whose title says what the query says, and those whose title it contains.

        A title is found from its anchor word in the query. An anchor shared by more than
        :data:`TITLE_FANOUT` titles (titles made only of very common words) is not followed:
        those titles are then ranked by BM25 alone.

        Args:
            query_key: The query's title key.
            title_keys: Slot to title key.

        Returns:
            The exact matches, and each contained title's share of the query.
        """
        exact: set[int] = set()
        contained: dict[int, float] = {}
        if not query_key or not self.anchored:
            return exact, contained
        for term in query_key:
            holders = self.anchored.get(term)
            if not holders or len(holders) > TITLE_FANOUT:
                continue
            for slot in holders:
                title = title_keys[slot]
                if not title <= query_key:
                    continue  # the common case, decided in C before the rule is asked
                tier, share = title_match(title, query_key)
                if tier == TIER_TITLE:
                    exact.add(slot)
                elif share:
                    contained[slot] = share
        return exact, contained
