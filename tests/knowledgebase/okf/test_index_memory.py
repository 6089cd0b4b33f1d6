"""A pod's memory across version switches (issue 24): the old version goes when it is replaced.

Real: a bundle on disk, the indexer writing a Lance dataset in a tmp folder, the manager
serving it and refreshing to the next version; the allocator settings checked in a fresh
interpreter (they apply only before pyarrow is imported).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

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


def _settings(env: dict[str, str]) -> dict[str, str | None]:
    script = (
        "import json, os\n"
        "from agentkernel.knowledgebase.okf.bundleindex import _lance\n"
        "_lance.tune_process()\n"
        "import pyarrow\n"
        "print(json.dumps([os.environ.get('ARROW_DEFAULT_MEMORY_POOL'),"
        " pyarrow.default_memory_pool().backend_name]))\n"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**clean, **env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    variable, backend = json.loads(done.stdout.strip().splitlines()[-1])
    return {"variable": variable, "backend": backend}


def test_pod_allocator_settings_apply_only_where_the_environment_is_silent() -> None:
    assert _settings({}) == {"variable": "system", "backend": "system"}
    chosen = _settings({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"})
    assert chosen["variable"] == "mimalloc"  # the user's choice stands
    assert chosen["backend"] in ("mimalloc", "system", "jemalloc")  # as pyarrow was built
