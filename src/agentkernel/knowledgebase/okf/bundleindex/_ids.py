"""The concept ids a served index version holds, with their types, in a few bytes each.

A 100,000-concept view held its ids as Python strings in dicts: 13.5 MB, built again on
every version switch while the previous version's were still alive. :class:`ConceptIds`
keeps the ids loaded from the dataset as one UTF-8 buffer with their offsets, sorted by
directory and then id (a directory's concepts are one run, in the order a listing shows
them), a sorted array of their hashes for lookups, and their types as small integers: about
4.5 MB at 100,000 (``bench/RESULTS.md``, issue 24). Ids added afterwards (a concept this
process wrote, a document path the loader could not take in bulk) and loaded ids removed
since are held beside them, so the set answers like the dict it replaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

_HASH_BATCH = 8192


class ConceptIds:
    """Concept ids with their types: those loaded from a version, and the changes since."""

    def __init__(self) -> None:
        """Start empty."""
        import numpy as np

        self._blob = b""  # the loaded ids, UTF-8, back to back
        self._offsets: Any = np.zeros(1, dtype=np.int64)  # id k is blob[offsets[k]:offsets[k+1]]
        self._hashes: Any = np.zeros(0, dtype=np.int64)  # hash(id), sorted
        self._order: Any = np.zeros(0, dtype=np.int32)  # the id at each sorted hash
        self._codes: Any = np.zeros(0, dtype=np.int32)  # each id's type, an index in _names
        self._names: list[str] = []
        self._runs: dict[str, tuple[int, int]] = {}  # directory -> its ids' [start, end)
        self._removed: set[str] = set()  # loaded ids no longer held
        self._added: dict[str, str] = {}  # ids held beside the loaded ones -> type

    def load(self, ids: Any, directories: Any, types: Any, pool: Any = None) -> dict[str, int]:
        """Take the loaded concepts (once, before any change).

        Args:
            ids: The concept ids, a ``pyarrow`` string array or chunked array.
            directories: Each id's directory (``""`` at the root), alike.
            types: Each id's type (``""`` for none), alike.
            pool: The ``pyarrow`` memory pool to sort and pack them with (default: Arrow's).

        Returns:
            Concepts per directory.
        """
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        table = pa.table({"directory": directories, "id": ids, "type": types})
        order = pc.sort_indices(
            table, [("directory", "ascending"), ("id", "ascending")], memory_pool=pool
        )
        table = pc.take(table, order, memory_pool=pool)
        column = _one_array(table.column("id"), pool)
        count = len(column)
        if count:
            offsets = np.frombuffer(
                column.buffers()[1],
                dtype=np.int64 if pa.types.is_large_string(column.type) else np.int32,
            )[column.offset : column.offset + count + 1].astype(np.int64)
            self._blob = bytes(memoryview(column.buffers()[2])[offsets[0] : offsets[-1]])
            self._offsets = offsets - offsets[0]
        hashes = np.empty(count, dtype=np.int64)
        for start in range(0, count, _HASH_BATCH):
            some = column.slice(start, _HASH_BATCH).to_pylist()  # a batch of strings at a time
            hashes[start : start + len(some)] = np.fromiter(map(hash, some), np.int64, len(some))
        self._order = np.argsort(hashes, kind="stable").astype(np.int32)
        self._hashes = hashes[self._order]
        coded = pc.dictionary_encode(_one_array(table.column("type"), pool), memory_pool=pool)
        self._names = [str(name) for name in coded.dictionary.to_pylist()]
        self._codes = coded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        counts: dict[str, int] = {}
        if count:
            runs = pc.run_end_encode(_one_array(table.column("directory"), pool), memory_pool=pool)
            start = 0
            for directory, end in zip(
                runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True
            ):
                self._runs[directory] = (start, end)
                counts[directory] = end - start
                start = end
        for cid in self._added:  # an id added while loading is the one held
            if self._find(cid) >= 0:
                self._removed.add(cid)
        return counts

    def type_counts(self) -> dict[str, int]:
        """The loaded ids per type (those removed since included).

        Returns:
            ``{type: count}``.
        """
        import numpy as np

        counts = np.bincount(self._codes, minlength=len(self._names))
        return {name: int(n) for name, n in zip(self._names, counts, strict=True) if n}

    # -- the mapping ----------------------------------------------------------------------

    def __contains__(self, cid: object) -> bool:
        if cid in self._added:
            return True
        return isinstance(cid, str) and self.is_loaded(cid)

    def __len__(self) -> int:
        return len(self._offsets) - 1 - len(self._removed) + len(self._added)

    def __iter__(self) -> Iterator[str]:
        yield from self.loaded()
        yield from list(self._added)

    def type_of(self, cid: str) -> str | None:
        """Return a held id's type.

        Args:
            cid: The concept id.

        Returns:
            Its type (``""`` for none), or ``None`` when the id is not held.
        """
        if cid in self._added:
            return self._added[cid]
        if cid in self._removed:
            return None
        at = self._find(cid)
        return None if at < 0 else self._names[int(self._codes[at])]

    def add(self, cid: str, kind_type: str) -> None:
        """Hold an id beside the loaded ones (replacing a loaded one of that id).

        Args:
            cid: The concept id.
            kind_type: Its type (``""`` for none).
        """
        if self.is_loaded(cid):
            self._removed.add(cid)
        self._added[cid] = kind_type

    def remove(self, cid: str) -> str | None:
        """Stop holding an id.

        Args:
            cid: The concept id.

        Returns:
            Its type, or ``None`` when it was not held.
        """
        if cid in self._added:
            return self._added.pop(cid)
        kind_type = self.type_of(cid)
        if kind_type is not None:
            self._removed.add(cid)
        return kind_type

    # -- the loaded ids, for the tree -----------------------------------------------------

    def is_loaded(self, cid: str) -> bool:
        """Whether an id is one of the loaded ids, still held.

        Args:
            cid: The concept id.

        Returns:
            ``True`` when it is.
        """
        return cid not in self._removed and self._find(cid) >= 0

    def loaded_in(self, directory: str) -> list[str]:
        """The loaded ids directly in a directory, still held, sorted.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            The ids.
        """
        run = self._runs.get(directory)
        if run is None:
            return []
        found = self._decode(self._offsets[run[0] : run[1] + 1].tolist())
        if self._removed:
            found = [cid for cid in found if cid not in self._removed]
        return found

    def loaded(self) -> Iterator[str]:
        """Every loaded id still held.

        Yields:
            The ids, by directory.
        """
        bounds = self._offsets.tolist()
        for start in range(0, len(bounds) - 1, _HASH_BATCH):
            for cid in self._decode(bounds[start : start + _HASH_BATCH + 1]):
                if cid not in self._removed:
                    yield cid

    def _decode(self, bounds: list[int]) -> list[str]:
        blob = self._blob
        return [blob[a:b].decode() for a, b in pairwise(bounds)]

    def _find(self, cid: str) -> int:
        """The position of a loaded id (removed or not), or -1."""
        hashes = self._hashes
        wanted = hash(cid)
        at = int(hashes.searchsorted(wanted))
        key = cid.encode()
        while at < len(hashes) and hashes[at] == wanted:
            index = int(self._order[at])
            if self._blob[self._offsets[index] : self._offsets[index + 1]] == key:
                return index
            at += 1
        return -1


def _one_array(column: Any, pool: Any) -> Any:
    """A chunked array as one array, allocated from ``pool`` (``combine_chunks`` ignores it)."""
    import pyarrow as pa

    if column.num_chunks == 1:
        return column.chunk(0)
    if column.num_chunks == 0:
        return pa.array([], type=column.type)
    return pa.concat_arrays(column.chunks, memory_pool=pool)
