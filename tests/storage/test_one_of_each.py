"""One of each, in fact: one atomic writer, one lock helper, one bounded YAML reader.

Every temp-file-and-rename write of the package goes through ``storage.fs.atomic_write``,
every lock between processes is taken by ``storage.fs.locked``, and config and frontmatter
read YAML through the one bounded reader, ``storage.yamltext.load_bounded``. Checked by
behaviour, not source text: each writer runs for real (a local store, a curated folder
store, the OKF warm start, the node cache, the vector cache) while the operating system's
``rename``/``link``, ``fsync`` and ``flock`` are observed (wrapped, still doing their work),
and PyYAML's loader is wrapped to see who calls it.

Real: the stores, caches and commands on a temporary folder, a real bundle of
``../shared/data/okf-bundles``, the real YAML parser.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from agentkernel import config as ak_config
from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.okf import warmstart
from agentkernel.knowledgestore import FileKnowledgeStore
from agentkernel.retrieval._vectorcache import VectorCache
from agentkernel.storage import frontmatter, fs, yamltext
from agentkernel.storage.nodecache import FetchedObject, NodeCache
from tests.support import okf_bundle


@dataclass
class Disk:
    """What the package asked of the disk while a block ran."""

    renames: list[tuple[str, str, bool]] = field(default_factory=list)  # (temp, target, synced)
    locks: list[tuple[str, bool]] = field(default_factory=list)  # (file, by the one helper)

    def written(self) -> set[str]:
        return {target for _, target, _ in self.renames}

    def synced(self) -> set[str]:
        return {target for _, target, synced in self.renames if synced}


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    """Observe renames, links, fsyncs and flocks (each still done)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name a file descriptor's file")
    seen = Disk()
    synced: set[str] = set()
    real_fsync, real_replace, real_link = os.fsync, os.replace, os.link
    real_flock = fcntl.flock
    helper = fs.locked.__wrapped__.__code__  # type: ignore[attr-defined]

    def fsync(fd: int) -> None:
        synced.add(_fd_path(fd))
        real_fsync(fd)

    def moved(real: Callable[..., None]) -> Callable[..., None]:
        def move(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            source = os.path.realpath(os.fspath(src))
            real(src, dst, *args, **kwargs)
            target = os.path.realpath(os.fspath(dst))
            seen.renames.append((source, target, source in synced))

        return move

    def flock(fd: Any, operation: int) -> None:
        if operation & fcntl.LOCK_EX:
            caller = sys._getframe(1).f_code
            number = fd if isinstance(fd, int) else fd.fileno()
            seen.locks.append((_fd_path(number), caller is helper))
        real_flock(fd, operation)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", moved(real_replace))
    monkeypatch.setattr(os, "link", moved(real_link))
    monkeypatch.setattr(fcntl, "flock", flock)
    yield seen


def _by_the_one_writer(disk: Disk) -> None:
    """Every rename or link moved a temporary file ``atomic_write`` named, beside its target."""
    assert disk.renames
    for temp, target, _ in disk.renames:
        prefix = fs.temp_name(os.path.basename(target)).rsplit("-", 1)[0] + "-"
        assert os.path.dirname(temp) == os.path.dirname(target), (temp, target)
        assert os.path.basename(temp).startswith(prefix), (temp, target)
        assert temp.endswith(".tmp"), temp


def _run_every_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Run each writer of the package once; return the file each one wrote."""
    monkeypatch.setenv(warmstart.CACHE_ENV, str(tmp_path / "lexical"))
    wrote: dict[str, Path] = {}

    (tmp_path / "bundle").mkdir()
    bundle = LocalDocumentStore(tmp_path / "bundle", writable=True)
    bundle.write("notes/a.md", b"---\ntype: Note\n---\nA.\n")
    wrote["a document store's file"] = tmp_path / "bundle" / "notes" / "a.md"

    pages = FileKnowledgeStore(tmp_path / "knowledge")
    pages.create("concept", "bowline", "Bowline", "A fixed loop at the end of a line.")
    pages.log("ingest", "Bowline")
    wrote["a curated page"] = tmp_path / "knowledge" / "concepts" / "bowline.md"
    wrote["the curated store's index.md"] = tmp_path / "knowledge" / "index.md"
    wrote["the curated store's log.md"] = tmp_path / "knowledge" / "log.md"

    OKFManager(LocalDocumentStore(okf_bundle("ga4"), writable=False), refresh_seconds=None)
    (warm,) = (tmp_path / "lexical").rglob("*.*")
    wrote["the OKF warm-start file"] = warm

    cache = NodeCache(tmp_path / "nodes")
    folder = cache.folder("ns")
    held = b"immutable bytes"

    def stream(handle: Any) -> FetchedObject:
        handle.write(held)
        return FetchedObject(len(held), "")

    def download(path: Path) -> FetchedObject:
        path.write_bytes(held)
        return FetchedObject(len(held), "")

    cache.install(folder / "streamed.bin", stream)
    cache.install_file(folder / "downloaded.bin", download)
    wrote["a node cache file (streamed)"] = folder / "streamed.bin"
    wrote["a node cache file (a download to a path)"] = folder / "downloaded.bin"
    wrote["a node cache ledger"] = folder / "downloaded.bin.akdigest"

    vectors = VectorCache(tmp_path / "vectors", "test-model", 4)
    vectors.put([b"k" * 16], np.ones((1, 4), dtype="float32"))
    (segment,) = (tmp_path / "vectors").rglob("*.vec")
    wrote["a vector cache segment"] = segment
    return wrote


def test_every_local_write_goes_through_the_one_atomic_writer(
    disk: Disk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrote = _run_every_writer(tmp_path, monkeypatch)
    _by_the_one_writer(disk)
    written = disk.written()
    missing = {what for what, path in wrote.items() if str(path.resolve()) not in written}
    assert missing == set()


def test_only_files_rebuilt_from_others_skip_the_disk_wait(
    disk: Disk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The derived files architecture.md names are written without fsync; all others with."""
    wrote = _run_every_writer(tmp_path, monkeypatch)
    unsynced = {what for what, path in wrote.items() if str(path.resolve()) not in disk.synced()}
    assert unsynced == {
        "the curated store's index.md",
        "the OKF warm-start file",
        "a node cache ledger",
    }


def test_every_lock_between_processes_is_the_one_helper(disk: Disk, tmp_path: Path) -> None:
    (tmp_path / "bundle").mkdir()
    store = LocalDocumentStore(tmp_path / "bundle", writable=True)
    store.write_if("a.md", b"one\n", None)
    pages = FileKnowledgeStore(tmp_path / "knowledge")
    pages.create("concept", "bowline", "Bowline", "A fixed loop at the end of a line.")
    cache = NodeCache(tmp_path / "nodes")
    with cache.lock("ns"):
        pass
    locked = {Path(path).parent.name for path, _ in disk.locks}
    assert {"bundle", "knowledge", "ns"} <= locked, disk.locks
    assert all(by_helper for _, by_helper in disk.locks), disk.locks


def test_the_one_lock_helper_refuses_a_planted_link_where_asked(tmp_path: Path) -> None:
    """The node cache's lock file is never a link: a planted one is refused, not followed."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"")
    cache = NodeCache(tmp_path / "nodes")
    (cache.folder("ns") / ".lock").symlink_to(outside)
    with pytest.raises(OSError), cache.lock("ns"):
        pass
    assert outside.read_bytes() == b""


@pytest.fixture
def yaml_loads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per YAML load of the package: whether the one bounded reader made it (it still loads)."""
    calls: list[bool] = []
    real = yaml.load
    reader = yamltext.load_bounded.__code__

    def load(stream: Any, Loader: Any) -> Any:
        calls.append(sys._getframe(1).f_code is reader)
        return real(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", load)
    return calls


def test_config_and_frontmatter_read_yaml_through_the_one_bounded_reader(
    yaml_loads: list[bool], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("okf:\n  databases: {}\n", encoding="utf-8")
    ak_config.load_config(config)
    # a comment keeps it off the fast path for plain frontmatter: the YAML parser reads it
    frontmatter.parse("---\ntype: Note  # a comment\ntitle: T\n---\nbody\n")
    frontmatter.read_yaml("okf_version: '0.2'  # an index.md's frontmatter\n")
    assert yaml_loads == [True, True, True]


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{level}: &{level} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, level in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ALIAS_BOMB, "aliases are expanded"),
        ("a: " + "[" * 300 + "]" * 300 + "\n", "nests deeper than 64 levels"),
    ],
)
def test_both_readers_refuse_an_alias_bomb_and_deep_nesting_alike(
    text: str, message: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(AKConfigError, match=message) as refused:
        ak_config.load_config(config)
    assert refused.value.__cause__ is None  # no RecursionError or half-built value behind it
    with pytest.raises(frontmatter.FrontmatterError, match=message):
        frontmatter.parse(f"---\n{text}---\nbody\n")


def test_the_observer_sees_a_rename_made_without_the_one_writer(disk: Disk, tmp_path: Path) -> None:
    """A temp file renamed by hand is caught: the check can fail."""
    temp, target = tmp_path / "x.tmp", tmp_path / "x"
    temp.write_bytes(b"x")
    os.replace(temp, target)
    with pytest.raises(AssertionError):
        _by_the_one_writer(disk)


def test_a_download_that_fails_its_check_leaves_the_old_file_and_no_temporary(
    tmp_path: Path,
) -> None:
    """A filler that raises (the node cache's size check) abandons the write: nothing changes."""
    cache = NodeCache(tmp_path / "nodes")
    target = cache.folder("ns") / "file.bin"
    target.write_bytes(b"old")

    def short(path: Path) -> FetchedObject:
        path.write_bytes(b"torn")
        return FetchedObject(100, "")  # the store announced more than arrived

    with pytest.raises(OSError, match="announced 100"):
        cache.install_file(target, short)
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["file.bin"]


def test_the_node_cache_sweeps_a_killed_downloaders_temporary_file(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "nodes")
    folder = cache.folder("ns")
    ended = subprocess.Popen(["true"])  # a process id that no longer runs
    ended.wait()
    live = folder / fs.temp_name("a.bin")  # this process's: it may still be filling it
    dead = folder / f".b.bin~{fs.host_tag()}-{ended.pid}-x1.tmp"
    for path in (live, dead):
        path.write_bytes(b"partial")
    cache.evict()
    assert live.exists()
    assert not dead.exists()
