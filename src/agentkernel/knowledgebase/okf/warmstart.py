"""A warm start for the OKF walk: the last walk's manifest and analysed index, kept on disk.

A process serving a bundle (``agentkernel-kb search``, a server starting) walks it: it lists
the store, reads and parses every document and analyses every concept for the lexical index.
Most of that is the same as last time. After a walk, :func:`walk_warm` saves what it built,
the concepts as parsed and the index as analysed (:mod:`agentkernel.retrieval.indexfile`),
into one file; the next process over the same bundle loads that file into its empty manifest
and then walks as a refresh does: the listing's change tokens are compared with the saved
ones, and only new and changed documents are read and analysed (a document whose token moved
is never taken from the file), documents gone are dropped. An unchanged bundle costs a
listing and a load.

Where it lives: ``$AGENTKERNEL_LEXICAL_CACHE``, else ``$XDG_CACHE_HOME/agentkernel/lexical``,
else ``~/.cache/agentkernel/lexical``; never inside the bundle (a read path writes no byte
there). ``AGENTKERNEL_LEXICAL_CACHE=off`` turns the warm start off. One file per bundle and
setting, named by a hash of the store's location, the walk's limits, the index settings and
the code that parses and analyses (its source and the stemmer's and YAML parser's versions):
a new version of any of them starts from a new file, never from one analysed differently.

Safe to share: a file is written to a temporary name and renamed into place, so a reader
sees a whole file or none; it opens with a SHA-256 of its contents, and a file that does not
match, does not decode, or holds anything but plain data (the decoder accepts no class but
``datetime``'s) is ignored with a WARNING and replaced after the walk. A cache folder that
cannot be written costs the saving only. The folder is created ``0700`` and the file ``0600``,
whatever the umask: it holds what the bundle holds. A truncated bundle (more than
``max_concepts``) walks as before, without this file. Hybrid search keeps a file of its own (its
index adds the phrase rule): the file holds no vector, the vector cache does.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib.util
import io
import json
import logging
import os
import pickle
import re
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.manifest import Manifest, ReservedFile, Skipped
from agentkernel.knowledgebase.okf.scan import ScanLimits
from agentkernel.retrieval.index import SearchIndex
from agentkernel.retrieval.indexfile import export_state, import_state, settings_of
from agentkernel.storage.base import DocumentStore
from agentkernel.storage.cachedir import PRIVATE_FILE, private_folder
from agentkernel.storage.fs import atomic_write

logger = logging.getLogger(__name__)

CACHE_ENV = "AGENTKERNEL_LEXICAL_CACHE"
FORMAT = 1
_MAGIC = b"AKOKFWARM1\n"
_DIGEST = 32
_SOURCES = (
    "agentkernel.retrieval.analysis",
    "agentkernel.retrieval._bulk",
    "agentkernel.retrieval._pairs",
    "agentkernel.retrieval.index",
    "agentkernel.retrieval.indexfile",
    "agentkernel.bundle.timestamps",
    "agentkernel.knowledgebase.okf.concept",
    "agentkernel.knowledgebase.okf.manifest",
    "agentkernel.knowledgebase.okf.scan",
    "agentkernel.knowledgebase.okf.warmstart",
    "agentkernel.storage.frontmatter",
    "agentkernel.storage.yamltext",
)
_DATETIME = frozenset({"datetime", "date", "time", "timedelta", "timezone"})

S = TypeVar("S", bound="_Stats | None")


class _Stats(Protocol):
    @property
    def reads(self) -> int: ...

    @property
    def changed(self) -> int: ...

    @property
    def dropped(self) -> int: ...


def cache_dir() -> Path | None:
    """The warm-start folder (see the module docstring), or ``None`` when turned off.

    Returns:
        The folder (not created here).
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        explicit = explicit.strip()
        if explicit.lower() in {"off", "0", "no", "false", ""}:
            return None
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "agentkernel" / "lexical"


def snapshot_path(root: Path, store: DocumentStore, limits: ScanLimits, index: SearchIndex) -> Path:
    """The file that holds the warm start of one bundle under one set of settings.

    Args:
        root: The warm-start folder.
        store: The bundle's store (its location names the bundle).
        limits: The walk's limits (they decide what is read and served).
        index: The manifest's index (its settings decide what is analysed).

    Returns:
        The path.
    """
    location = str(store.location)
    wanted = [
        FORMAT,
        _code_fingerprint(),
        type(store).__name__,
        location,
        [limits.max_concepts, limits.head_bytes, limits.max_document_bytes],
        settings_of(index),
    ]
    digest = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:24]
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", location.rstrip("/").rsplit("/", 1)[-1])[:40]
    return root / f"{label.strip('-.') or 'bundle'}-{digest}.okfwarm"


def walk_warm(
    manifest: Manifest,
    store: DocumentStore,
    limits: ScanLimits,
    walk: Callable[[], S],
) -> S:
    """Load the bundle's warm start into an empty manifest, walk, and save what changed.

    Args:
        manifest: The manager's manifest, empty.
        store: The bundle's store.
        limits: The walk's limits.
        walk: The manager's walk (a refresh: reads only what the manifest does not hold at
            the listed change token).

    Returns:
        What ``walk`` returned.
    """
    root = cache_dir()
    if root is None or manifest.paths():
        stats = walk()
        manifest.index.flush()  # the connect pays the analysis, not the first search
        return stats
    path = snapshot_path(root, store, limits, manifest.index)
    loaded = load(path, manifest)
    stats = walk()
    manifest.index.flush()
    if stats is None or manifest.truncated:
        return stats
    if not loaded or stats.reads or stats.changed or stats.dropped:
        # the walk's freed pages go back first: the save then refills them instead of
        # raising the process' peak above the walk's own
        from agentkernel._libc import release_memory

        release_memory()
        save(path, manifest)
    return stats


def load(path: Path, manifest: Manifest) -> bool:
    """Fill an empty manifest from a warm-start file.

    Args:
        path: The file.
        manifest: The manifest, empty; left empty when the file cannot be used.

    Returns:
        Whether the file was loaded.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        logger.warning("warm start %s cannot be read (%s): walking the whole bundle", path, exc)
        return False
    try:
        payload = _decode(data)
        concepts = [Concept(*row) for row in payload["concepts"]]
        reserved = [ReservedFile(*row) for row in payload["reserved"]]
        skipped = [Skipped(*row) for row in payload["skipped"]]
        index = manifest.blank_index()
        import_state(index, payload["index"])
        if sorted(str(key) for key in payload["index"]["keys"]) != sorted(c.id for c in concepts):
            raise ValueError("its index and its concepts disagree")
        manifest.adopt(concepts, reserved, skipped, index)
    except Exception as exc:  # a corrupt or foreign file is a cache miss, never an error
        logger.warning("warm start %s is unusable (%s): walking the whole bundle", path, exc)
        return False
    logger.debug("warm start: %d concepts loaded from %s", len(concepts), path)
    return True


def save(path: Path, manifest: Manifest) -> None:
    """Write the manifest and its index to a warm-start file (atomically).

    The payload is pickled straight into the temporary file, its digest worked out on the
    way and written in front of it last: no copy of the whole file is held in memory, which
    would add its size (60 MB at 40,000 concepts) to the walk's peak.

    Args:
        path: The file.
        manifest: The manifest after a walk.
    """
    payload = {
        "concepts": [tuple(vars(concept).values()) for concept in manifest.concepts.values()],
        "reserved": [tuple(vars(entry).values()) for entry in manifest.reserved.values()],
        "skipped": [tuple(vars(entry).values()) for entry in manifest.skipped.values()],
        "index": export_state(manifest.index),
    }

    def fill(temp: str) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        with os.fdopen(os.open(temp, flags, PRIVATE_FILE), "wb") as handle:
            handle.write(_MAGIC + bytes(_DIGEST))
            body = _Hashed(handle)
            pickle.Pickler(body, protocol=5).dump(payload)
            handle.seek(len(_MAGIC))
            handle.write(body.digest.digest())

    try:
        private_folder(path.parent)
        atomic_write(path, fill, mode=PRIVATE_FILE, durable=False)
    except OSError as exc:
        logger.info("warm start %s not saved (%s): the next process walks the bundle", path, exc)


class _Hashed:
    """A file's ``write``, hashing what passes through (SHA-256)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self._handle.write(data)


def _decode(data: bytes) -> dict[str, Any]:
    head = len(_MAGIC) + _DIGEST
    if not data.startswith(_MAGIC) or len(data) < head:
        raise ValueError("not a warm-start file")
    body = memoryview(data)[head:]
    if hashlib.sha256(body).digest() != data[len(_MAGIC) : head]:
        raise ValueError("its checksum does not match (a torn or altered file)")
    payload = _PlainUnpickler(io.BytesIO(body)).load()
    if not isinstance(payload, dict):
        raise ValueError("not a warm-start payload")
    return payload


class _PlainUnpickler(pickle.Unpickler):
    """Plain data only: builtins, and ``datetime``'s types for frontmatter dates."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "datetime" and name in _DATETIME:
            return getattr(datetime, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


@functools.cache
def _code_fingerprint() -> str:
    """A hash of the code that parses and analyses, and of the libraries it calls."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        try:
            digest.update(Path(origin).read_bytes() if origin else name.encode())
        except OSError:
            digest.update(name.encode())
    for distribution in ("PyStemmer", "PyYAML"):
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{distribution}={version}".encode())
    return digest.hexdigest()
