"""A pod's memory across version switches (issue 24): the old version goes when it is replaced.

Real: a bundle on disk, the indexer writing a Lance dataset in a tmp folder, the manager
serving it and refreshing to the next version; the allocator settings checked in a fresh
interpreter: the command applies them, a program importing the library keeps its own.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")

from agentkernel.knowledgebase import OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, Clock, concept, write_bundle  # noqa: E402

SRC = Path(__file__).resolve().parents[3] / "src"


def test_a_replaced_version_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    clock, index = Clock(), str(tmp_path / "kb.lance")
    store = LocalDocumentStore(root := write_bundle(tmp_path / "b", SMALL_BUNDLE), writable=False)
    index_bundle(store, index)
    kb = OKFManager(store, index=index, refresh_seconds=60, clock=clock)
    old = weakref.ref(kb._served)  # the version served first
    (root / "notes").mkdir()
    (root / "notes/fresh.md").write_text(concept("Note", "Fresh orders note"))
    index_bundle(store, index)
    gc.disable()  # a view kept alive by a reference cycle would survive until a collection
    try:
        clock.advance(61)
        found = kb.search("fresh orders note", 3)
        assert found[0]["metadata"]["id"] == "notes/fresh"
        assert old() is None  # the previous version's view went with its last reference
    finally:
        gc.enable()


ARENAS = """
import ctypes, threading
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
barrier = threading.Barrier(8)
def work():
    barrier.wait()  # eight threads allocating at once: an arena each, up to the bound
    for _ in range(100):
        libc.malloc(4096)
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc.malloc_stats()  # one "Arena N:" line per arena, on stderr
"""

MAPPED = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in "arena ordblks smblks hblks hblkhd "
                "usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
libc.free(libc.malloc(8 << 20))  # a large block freed: a dynamic threshold rises past it
before = libc.mallinfo2().hblks
block = libc.malloc(512 << 10)
print("Mapped:", libc.mallinfo2().hblks - before, file=sys.stderr)  # 1: a mapping of its own
"""

CLI = """
from agentkernel.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
"""

LIBRARY = """
import sys
from agentkernel.knowledgebase import OKFManager
from agentkernel.storage.local import LocalDocumentStore
kb = OKFManager(LocalDocumentStore(sys.argv[1], writable=False), index=sys.argv[2])
assert kb.search("orders", 3)
"""

REPORT = """
import json, os
import pyarrow
print(json.dumps([os.environ.get("ARROW_DEFAULT_MEMORY_POOL"),
                  pyarrow.default_memory_pool().backend_name]))
"""


def _settings(entry: str, env: dict[str, str], *args: str) -> dict[str, str | int | None]:
    """What a fresh interpreter ends with after ``entry``: the pool, and glibc's arenas."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_")
    }
    done = subprocess.run(
        [sys.executable, "-c", entry + REPORT + ARENAS + MAPPED, *args],
        env={**clean, **env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    variable, backend = json.loads(done.stdout.strip().splitlines()[-1])
    arenas = sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))
    mapped = [int(ln.split()[1]) for ln in done.stderr.splitlines() if ln.startswith("Mapped:")]
    return {"variable": variable, "backend": backend, "arenas": arenas, "mapped": mapped == [1]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_the_command_applies_the_pod_allocator_settings_where_the_environment_is_silent() -> None:
    # a large block freed later is given back: the mmap threshold stays at 128 KiB
    assert _settings(CLI, {}) == {
        "variable": "system",
        "backend": "system",
        "arenas": 2,
        "mapped": True,
    }
    chosen = _settings(
        CLI,
        {
            "ARROW_DEFAULT_MEMORY_POOL": "mimalloc",
            "MALLOC_ARENA_MAX": "3",
            "MALLOC_MMAP_THRESHOLD_": str(1 << 20),
        },
    )
    assert chosen["variable"] == "mimalloc"  # the user's choice stands
    assert chosen["backend"] in ("mimalloc", "system", "jemalloc")  # as pyarrow was built
    assert chosen["arenas"] == 3
    assert not chosen["mapped"]  # 512 KiB is below the user's 1 MiB threshold


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_the_library_leaves_the_process_allocator_settings_alone(tmp_path: Path) -> None:
    index = str(tmp_path / "kb.lance")
    store = LocalDocumentStore(root := write_bundle(tmp_path / "b", SMALL_BUNDLE), writable=False)
    index_bundle(store, index)
    served = _settings(LIBRARY, {}, str(root), index)  # a program opening a bundle index
    assert served["variable"] is None
    assert served["arenas"] > 2  # glibc's default bound: eight threads, their own arenas
    assert not served["mapped"]  # glibc's dynamic threshold: the heap keeps the block
