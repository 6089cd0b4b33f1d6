"""Keys at small reusable integers, so per-document data can live in lists and arrays.

Both indexes of this package (:class:`~agentkernel.retrieval.index.SearchIndex`, lexical, and
:class:`~agentkernel.retrieval.semantic.SemanticIndex`, dense) keep a document's data at a
slot: a position in their lists, posting maps and vector matrix. A removed document frees
its slot and the next new document takes it, so the lists grow only to the most documents
ever live at once.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Slots(Generic[K]):
    """Which key holds which slot.

    Attributes:
        slot_of: Key -> slot, for every live key.
        key_of: Slot -> key, ``None`` at a free slot; its length is the number of slots used.
        free: The free slots; the last one freed is the next one taken.
    """

    def __init__(self) -> None:
        """Start with no slot."""
        self.slot_of: dict[K, int] = {}
        self.key_of: list[K | None] = []
        self.free: list[int] = []

    def __len__(self) -> int:
        return len(self.slot_of)

    def __contains__(self, key: object) -> bool:
        return key in self.slot_of

    def take(self, key: K) -> int:
        """Give a key that holds none a slot: a free one, else the next unused number.

        Args:
            key: A key not in this map.

        Returns:
            Its slot; equal to the old ``len(key_of)`` when no slot was free.
        """
        if self.free:
            slot = self.free.pop()
            self.key_of[slot] = key
        else:
            slot = len(self.key_of)
            self.key_of.append(key)
        self.slot_of[key] = slot
        return slot

    def extend(self, keys: list[K]) -> range | None:
        """Give many new keys the next unused slots, in order, when no slot is free.

        Args:
            keys: Keys not in this map, distinct.

        Returns:
            Their slots (what :meth:`take` one by one would give), or ``None`` when a slot is
            free (nothing is taken then: the caller takes them one by one).
        """
        if self.free:
            return None
        first = len(self.key_of)
        self.key_of.extend(keys)
        slots = range(first, first + len(keys))
        self.slot_of.update(zip(keys, slots, strict=True))
        return slots

    def release(self, key: K) -> int | None:
        """Free a key's slot.

        Args:
            key: The key.

        Returns:
            The slot it held, or ``None`` when it held none.
        """
        slot = self.slot_of.pop(key, None)
        if slot is not None:
            self.key_of[slot] = None
            self.free.append(slot)
        return slot


class SlotKeyed:
    """``len(index)`` and ``key in index`` for an index whose documents hold ``_slots``."""

    _slots: Slots[Any]

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots
