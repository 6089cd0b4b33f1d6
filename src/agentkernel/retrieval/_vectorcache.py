"""Vectors cached by content on disk, shared by restarts, processes and pods.

A vector is keyed by ``(model id, SHA-256 of the text embedded)``, so a document is embedded
once per version and model, whatever bundle, store or process asks. Layout::

    <root>/<model slug>/model.json          {"model_id": ..., "dimension": ...}
    <root>/<model slug>/<segment>.vec       keys and float32 vectors, written once

Every write is a new segment file written to a temporary name and renamed into place, so a
reader sees a whole segment or none, and processes never write the same file. Loading reads
every segment; past :data:`COMPACT_AT` segments the loader merges them into one (written the
same way) and removes the merged ones. A cache folder that cannot be written (a prebuilt,
read-only volume) is still read; new vectors then stay in memory, with one WARNING.

A damaged file never stops a search: a truncated or corrupt segment (or one of another
dimension) is skipped with a WARNING and removed when the folder is writable, so its texts
are embedded again into a new segment; an unreadable ``model.json`` is rewritten. Only a
well-formed ``model.json`` naming another model or dimension is refused (vectors of two
models are never mixed).

Private: the folders it creates are ``0700`` and its files ``0600``, whatever the umask
(:mod:`agentkernel.storage.cachedir`).

The default root is ``$AGENTKERNEL_VECTOR_CACHE``, else ``$XDG_CACHE_HOME/agentkernel/vectors``,
else ``~/.cache/agentkernel/vectors``: never inside a bundle, so read-only and S3 bundles work.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import struct
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agentkernel.retrieval._embedding import EmbedderError
from agentkernel.storage.cachedir import PRIVATE_FILE, cache_root, private_folder
from agentkernel.storage.fs import atomic_write

logger = logging.getLogger(__name__)

COMPACT_AT = 32
"""Segments in a model folder above which a load merges them into one."""

_MAGIC = b"AKV1"
_HEADER = struct.Struct("<4sII")  # magic, dimension, count
_KEY = 32


def default_cache_dir() -> Path:
    """The vector cache root when none is given (see the module docstring).

    Returns:
        The folder (not created here).
    """
    return cache_root("AGENTKERNEL_VECTOR_CACHE", "vectors")


def _slug(model_id: str) -> str:
    import hashlib

    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id)[:60].strip("-.") or "model"
    return f"{readable}-{hashlib.sha256(model_id.encode()).hexdigest()[:10]}"


class VectorCache:
    """The cached vectors of one model (see the module docstring).

    Thread-safe.
    """

    def __init__(
        self, root: str | os.PathLike[str], model_id: str, dimension: int, *, preload: bool = True
    ) -> None:
        """Open (creating when possible) the model's folder and load its segments.

        Args:
            root: The cache root.
            model_id: The embedder's model id.
            dimension: The embedder's dimension.
            preload: Load the segments now; ``False`` defers that to the first :meth:`get`
                (a pod serving a bundle index holds its vectors from the index and looks the
                cache up only when it writes).

        Raises:
            EmbedderError: The folder's ``model.json`` records another dimension or another
                model under the same id (never mixed).
        """
        self.folder = Path(root).expanduser() / _slug(model_id)
        self.model_id = model_id
        self.dimension = dimension
        self.writable = True
        self._lock = threading.Lock()
        self._rows: dict[bytes, np.ndarray] = {}
        self._segments: set[str] = set()
        self._loaded = False
        self._check_model()
        if preload:
            self.refresh()

    def __len__(self) -> int:
        return len(self._rows)

    def _check_model(self) -> None:
        meta = self.folder / "model.json"
        try:
            recorded = json.loads(meta.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            recorded = None
        except (OSError, ValueError) as exc:
            logger.warning("vector cache %s is unreadable (%s): rewriting it", meta, exc)
            recorded = None
        if recorded is not None and (
            not isinstance(recorded, dict) or set(recorded) != {"model_id", "dimension"}
        ):
            logger.warning("vector cache %s is not a model record: rewriting it", meta)
            recorded = None
        wanted = {"model_id": self.model_id, "dimension": self.dimension}
        if recorded is not None:
            if recorded != wanted:
                raise EmbedderError(
                    f"vector cache {self.folder} holds vectors of {recorded}, not of "
                    f"{wanted}: the model changed under the same id. Vectors of two models "
                    "are never mixed: remove that folder (it is only a cache) or give the "
                    "embedder another model id."
                )
            return
        try:
            private_folder(self.folder)
            atomic_write(meta, json.dumps(wanted).encode(), mode=PRIVATE_FILE)
        except OSError as exc:
            self._read_only(exc)

    def _read_only(self, exc: OSError) -> None:
        if self.writable:
            logger.warning(
                "vector cache %s cannot be written (%s): new vectors stay in memory only",
                self.folder,
                exc,
            )
        self.writable = False

    def refresh(self) -> int:
        """Load the segments written since the last load (by this or another process).

        Returns:
            How many vectors were added (a damaged segment is skipped; see the module).
        """
        try:
            names = sorted(p.name for p in self.folder.glob("*.vec"))
        except OSError:
            return 0
        added = 0
        with self._lock:
            self._loaded = True
            for name in names:
                if name in self._segments:
                    continue
                try:
                    data = (self.folder / name).read_bytes()
                except FileNotFoundError:
                    continue  # merged away by another process's compaction
                try:
                    keys, vectors = self._decode(name, data)
                except EmbedderError as exc:
                    self._drop(name, exc)
                    continue
                for i, key in enumerate(keys):
                    if key not in self._rows:
                        self._rows[key] = vectors[i]
                        added += 1
                self._segments.add(name)
        if len(self._segments) > COMPACT_AT and self.writable:
            self._compact()
        return added

    def _drop(self, name: str, exc: EmbedderError) -> None:
        """Skip a damaged segment; remove it when writable, so its texts are embedded again."""
        self._segments.add(name)
        if self.writable:
            with contextlib.suppress(OSError):
                (self.folder / name).unlink(missing_ok=True)
        logger.warning("%s: skipped%s", exc, ", removed" if self.writable else "")

    def _decode(self, name: str, data: bytes) -> tuple[list[bytes], np.ndarray]:
        if len(data) < _HEADER.size:
            raise EmbedderError(f"vector cache segment {self.folder / name} is truncated")
        magic, dimension, count = _HEADER.unpack_from(data)
        expected = _HEADER.size + count * (_KEY + 4 * dimension)
        if magic != _MAGIC or len(data) != expected:
            raise EmbedderError(f"vector cache segment {self.folder / name} is corrupt")
        if dimension != self.dimension:
            raise EmbedderError(
                f"vector cache segment {self.folder / name} holds {dimension}-dimensional "
                f"vectors; the model gives {self.dimension}"
            )
        offset = _HEADER.size
        keys = [data[offset + i * _KEY : offset + (i + 1) * _KEY] for i in range(count)]
        offset += count * _KEY
        vectors = np.frombuffer(data, dtype="<f4", count=count * dimension, offset=offset)
        return keys, vectors.reshape(count, dimension)

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Look vectors up.

        Args:
            keys: Text hashes.

        Returns:
            The vectors found, by key.
        """
        if not self._loaded:
            self.refresh()
        with self._lock:
            return {k: self._rows[k] for k in keys if k in self._rows}

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store new vectors: in memory, and as one new segment on disk when writable.

        Args:
            keys: Text hashes.
            vectors: One row per key, ``dimension`` wide.
        """
        if not keys:
            return
        array = np.ascontiguousarray(vectors, dtype="<f4")
        with self._lock:
            for i, key in enumerate(keys):
                self._rows[key] = array[i]
        if not self.writable:
            return
        name = f"{uuid.uuid4().hex}.vec"
        try:
            atomic_write(
                self.folder / name, _encode(list(keys), array, self.dimension), mode=PRIVATE_FILE
            )
        except OSError as exc:
            self._read_only(exc)
            return
        with self._lock:
            self._segments.add(name)

    def _compact(self) -> None:
        with self._lock:
            merged = sorted(self._segments)
            keys = list(self._rows)
            vectors = np.stack([self._rows[k] for k in keys]) if keys else None
        if vectors is None:
            return
        name = f"{uuid.uuid4().hex}.vec"
        try:
            atomic_write(
                self.folder / name, _encode(keys, vectors, self.dimension), mode=PRIVATE_FILE
            )
            for old in merged:
                (self.folder / old).unlink(missing_ok=True)
        except OSError as exc:
            self._read_only(exc)
            return
        with self._lock:
            self._segments.difference_update(merged)
            self._segments.add(name)


def _encode(keys: list[bytes], vectors: np.ndarray, dimension: int) -> bytes:
    array = np.ascontiguousarray(vectors, dtype="<f4")
    return _HEADER.pack(_MAGIC, dimension, len(keys)) + b"".join(keys) + array.tobytes()
