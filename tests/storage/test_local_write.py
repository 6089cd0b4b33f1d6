"""LocalDocumentStore writing: atomicity, exclusivity, read-only stores.

Real: the filesystem (tmp_path), hard links, threads and processes racing on one path, a child
process running as an unprivileged user, a child process whose file-size limit makes a write
fail half way. Nothing is mocked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest
import typing_extensions

from agentkernel.storage.local import LocalDocumentStore
from tests.support import REPO, missing


def test_write_creates_directories_and_matches_the_walk(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    written = store.write("generated/deep/new-concept.md", b"---\ntype: Note\n---\n")
    assert written.path == "generated/deep/new-concept.md"
    listed = {f.path: f for f in store.walk()}
    assert listed[written.path] == written
    assert store.read(written.path) == b"---\ntype: Note\n---\n"
    assert not [p for p in bundle.rglob("*.tmp")]
    assert oct((bundle / written.path).stat().st_mode & 0o777) != oct(0o600)


def test_write_keeps_the_mode_of_the_file_it_replaces(bundle: Path) -> None:
    (bundle / "index.md").chmod(0o640)
    LocalDocumentStore(bundle).write("index.md", b"new")
    assert (bundle / "index.md").stat().st_mode & 0o777 == 0o640


def test_a_long_file_name_is_written(bundle: Path) -> None:
    name = "n" * 250 + ".md"
    LocalDocumentStore(bundle).write(name, b"x")
    assert (bundle / name).read_bytes() == b"x"


def test_overwrite_false_refuses_an_existing_file_and_keeps_it(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    with pytest.raises(FileExistsError, match=r"index\.md"):
        store.write("index.md", b"clobbered", overwrite=False)
    assert store.read("index.md") == b"# Index\n"
    assert store.write("fresh.md", b"one", overwrite=False).size == 3
    assert not [p for p in bundle.rglob("*.tmp")]


def test_a_file_in_the_way_of_a_directory_is_a_clear_error(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    with pytest.raises(NotADirectoryError):
        store.write("index.md/child.md", b"x")
    with pytest.raises(IsADirectoryError):
        store.write("tables", b"x")  # the rename fails; the temp file is removed
    assert store.read("index.md") == b"# Index\n"
    assert not [p for p in bundle.rglob("*.tmp")]


_FILE_SIZE_LIMIT_SCRIPT = """
import resource, signal, sys
from agentkernel.storage.local import LocalDocumentStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    LocalDocumentStore(sys.argv[1]).write("index.md", b"n" * 100_000)
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


def test_a_write_failing_half_way_leaves_the_old_content(bundle: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMIT_SCRIPT, str(bundle)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split()[0] == "OSError"  # EFBIG: the file-size limit was hit
    assert (bundle / "index.md").read_bytes() == b"# Index\n"
    assert not [p for p in bundle.rglob("*") if p.name.endswith(".tmp")]


def test_readers_see_the_old_bytes_or_the_new_never_a_torn_file(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    versions = [b"A" * 300_000, b"B" * 300_000]
    store.write("hot.md", versions[0])
    done = threading.Event()
    seen: set[bytes] = set()

    def reader() -> None:
        while not done.is_set():
            seen.add(store.read("hot.md"))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for round_ in range(60):
            store.write("hot.md", versions[round_ % 2])
    finally:
        done.set()
        thread.join()
    assert seen <= set(versions)


def _claim(root: str, index: int) -> str:
    try:
        LocalDocumentStore(root).write("claimed.md", f"writer {index}".encode(), overwrite=False)
    except FileExistsError:
        return "lost"
    return f"writer {index}"


def test_overwrite_false_has_exactly_one_winner_among_threads(bundle: Path) -> None:
    barrier = threading.Barrier(16)

    def contender(index: int) -> str:
        barrier.wait()
        return _claim(str(bundle), index)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(contender, range(16)))
    winners = [r for r in results if r != "lost"]
    assert len(winners) == 1
    assert (bundle / "claimed.md").read_text() == winners[0]


def _claim_after(barrier: Any, results: Any, root: str, index: int) -> None:
    barrier.wait()
    results.put(_claim(root, index))


def test_overwrite_false_has_exactly_one_winner_among_processes(bundle: Path) -> None:
    context = get_context("fork")
    barrier, results = context.Barrier(8), context.Queue()
    workers = [
        context.Process(target=_claim_after, args=(barrier, results, str(bundle), index))
        for index in range(8)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join()
    winners = [r for r in outcomes if r != "lost"]
    assert len(winners) == 1
    assert (bundle / "claimed.md").read_text() == winners[0]


def test_read_only_store_refuses_writes_and_names_itself(bundle: Path) -> None:
    store = LocalDocumentStore(bundle, writable=False)
    assert store.writable is False
    with pytest.raises(PermissionError, match="'bundle' is read-only") as refused:
        store.write("new.md", b"x")
    assert str(bundle.parent) not in str(refused.value)  # named by its folder, not its path
    assert not (bundle / "new.md").exists()


def test_probe_finds_a_writable_directory_and_leaves_nothing(bundle: Path) -> None:
    before = sorted(os.listdir(bundle))
    assert LocalDocumentStore(bundle).writable is True
    assert sorted(os.listdir(bundle)) == before


_PROBE_SCRIPT = """
import sys
from agentkernel.storage.local import LocalDocumentStore
print(LocalDocumentStore(sys.argv[1]).writable)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to an unprivileged user needs root")
def test_probe_finds_a_directory_an_unprivileged_user_cannot_write() -> None:
    root = Path(tempfile.mkdtemp(prefix="ak-readonly-"))  # in /tmp, reachable by 'nobody'
    # a copy of the package 'nobody' can read, wherever (and however private) the checkout is
    lib = Path(tempfile.mkdtemp(prefix="ak-lib-"))
    try:
        root.chmod(0o755)
        lib.chmod(0o755)
        shutil.copytree(
            REPO / "src" / "agentkernel",
            lib / "agentkernel",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        shutil.copy(typing_extensions.__file__, lib)  # a core dependency the store imports
        (root / "a.md").write_text("x")
        src = str(lib)
        outputs = []
        for python in (sys.executable, "/usr/bin/python3.11", "/usr/bin/python3"):
            try:
                result = subprocess.run(
                    [python, "-c", _PROBE_SCRIPT, str(root)],
                    capture_output=True,
                    text=True,
                    user="nobody",
                    env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
                    cwd="/",
                )
            except OSError as exc:  # this interpreter is not executable by 'nobody'
                outputs.append(str(exc))
                continue
            outputs.append(result.stderr.strip()[-200:])
            if result.returncode == 0:
                break
        else:
            missing("a Python that 'nobody' can run", f"install python3 ({outputs})")
        assert result.stdout.strip() == "False"
        assert sorted(os.listdir(root)) == ["a.md"]
    finally:
        shutil.rmtree(root)
        shutil.rmtree(lib)
