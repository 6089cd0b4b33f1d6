"""The shared bundle index under concurrency: many reader processes, racing and killed indexers.

Real: separate Python processes (readers and indexers), the bundle on disk, LanceDB over a
local folder and over the S3 API server on 127.0.0.1 (moto's, a separate process), and
``kill -9`` delivered by the operating system. Nothing is patched.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")

from agentkernel.knowledgebase import OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import concept, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex import assert_same  # noqa: E402

READER = r"""
import json, sys, os, time
from agentkernel.knowledgebase import OKFManager
from agentkernel.storage.local import LocalDocumentStore
root, index, options, stop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
kb = OKFManager(LocalDocumentStore(root, writable=False), index=index, index_options=options,
                refresh_seconds=None)
versions, rounds = set(), 0
while True:
    last = os.path.exists(stop)
    kb.reload()
    version = kb.schema()["index"]["version"]
    versions.add(version)
    for row in kb.search("note about topic", 10):
        # every hit is a concept of the version served: its summary and its document exist
        assert kb.browse(row["metadata"]["id"])[0]["metadata"]["id"] == row["metadata"]["id"]
    assert kb.browse("notes", 1000)
    rounds += 1
    open(f"{stop}.ready.{os.getpid()}", "w").close()
    if last:
        break
    time.sleep(0.2)
print(json.dumps({"versions": sorted(versions), "rounds": rounds,
                  "final": version, "concepts": kb.schema()["concepts"]}))
"""

INDEXER = r"""
import json, sys, os, time
from agentkernel.storage.local import LocalDocumentStore
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle, IndexConflictError
root, index, options, start = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
if start:
    open(f"{start}.ready.{os.getpid()}", "w").close()  # imported: waiting at the barrier
while start and not os.path.exists(start):
    time.sleep(0.01)
try:
    stats = index_bundle(LocalDocumentStore(root, writable=False), index,
                         storage_options=options)
except IndexConflictError as exc:
    print(json.dumps({"conflict": str(exc)}))
else:
    print(json.dumps({"committed": stats.committed, "reads": stats.reads,
                      "attempts": stats.attempts}))
"""


def env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[3] / "src")
    root = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, root])}


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def note(i: int, words: str = "") -> str:
    return concept("Note", f"Note {i}", f"A note about topic {i % 17} {words}", body="Body.\n" * 3)


def make_bundle(root: Path, count: int) -> Path:
    return write_bundle(root, {f"notes/n{i:05d}.md": note(i) for i in range(count)})


@pytest.fixture(params=["local", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    return index_location(request, tmp_path)


def index_location(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """An index URI and its options: a tmp folder, or a bucket on the S3 API server."""
    if request.param == "local":
        return str(tmp_path / "kb.lance"), {}
    require_extra("boto3", "aws")
    endpoint = request.getfixturevalue("s3_latency").endpoint  # 20 ms a request, as a bucket
    bucket = request.getfixturevalue("s3_bucket")
    options = {
        "aws_endpoint": endpoint,
        "allow_http": "true",
        "aws_region": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    return f"s3://{bucket}/kb.lance", options


def finish(process: subprocess.Popen[str], timeout: float = 240) -> dict[str, Any]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def served_alike(root: Path, index: str, options: dict[str, str]) -> None:
    store = LocalDocumentStore(root, writable=False)
    walked = OKFManager(store, name="OKF", refresh_seconds=None)
    indexed = OKFManager(
        store, name="OKF", refresh_seconds=None, index=index, index_options=options
    )
    assert_same(walked, indexed)


def test_eight_readers_while_an_indexer_commits(
    tmp_path: Path, where: tuple[str, dict[str, str]]
) -> None:
    index, options = where
    root = make_bundle(tmp_path / "b", 120)
    store = LocalDocumentStore(root, writable=False)
    index_bundle(store, index, storage_options=options)
    stop = tmp_path / "stop"
    readers = [spawn(READER, str(root), index, json.dumps(options), str(stop)) for _ in range(8)]
    deadline = time.monotonic() + 180
    while len(list(tmp_path.glob("stop.ready.*"))) < 8 and time.monotonic() < deadline:
        time.sleep(0.2)  # every reader has served a first round before the indexer starts
    rng = random.Random(17)
    expected = 120
    for round_ in range(3):
        for i in rng.sample(range(10, expected), 5):
            (root / f"notes/n{i:05d}.md").write_text(note(i, f"changed {round_}"))
        for i in range(1000 + 3 * round_, 1003 + 3 * round_):
            (root / f"notes/n{i:05d}.md").write_text(note(i))
        (root / f"notes/n{round_:05d}.md").unlink()
        expected += 3 - 1
        stats = index_bundle(store, index, storage_options=options)
        assert stats.committed and stats.reads == 8  # 5 changed + 3 new, nothing else
        time.sleep(0.5)
    final = OKFManager(store, index=index, index_options=options, refresh_seconds=None)
    version = final.schema()["index"]["version"]
    stop.touch()
    results = [finish(r) for r in readers]
    for result in results:
        assert result["final"] == version and result["concepts"] == expected
        assert expected == len(list((root / "notes").glob("*.md")))
        assert result["rounds"] >= 2
    assert max(len(r["versions"]) for r in results) >= 2  # readers moved across versions
    served_alike(root, index, options)


def test_concurrent_indexers_never_corrupt_the_index(
    tmp_path: Path, where: tuple[str, dict[str, str]]
) -> None:
    index, options = where
    root = make_bundle(tmp_path / "b", 150)
    for phase in range(2):
        start = tmp_path / f"start{phase}"
        runners = [spawn(INDEXER, str(root), index, json.dumps(options), str(start))]
        runners += [spawn(INDEXER, str(root), index, json.dumps(options), str(start))]
        runners += [spawn(INDEXER, str(root), index, json.dumps(options), str(start))]
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob(f"{start.name}.ready.*"))) < 3:
            assert time.monotonic() < deadline, "the indexers never reached the barrier"
            time.sleep(0.05)  # all three imported and waiting at the barrier
        start.touch()
        outcomes = [finish(r) for r in runners]
        for outcome in outcomes:
            assert "committed" in outcome or "other indexers committed first" in outcome["conflict"]
        assert any(o.get("committed") for o in outcomes)
        served_alike(root, index, options)
        for i in range(0, 150, 10):  # then all three race to apply the same change
            (root / f"notes/n{i:05d}.md").write_text(note(i, f"phase {phase}"))


def kill_when(runner: subprocess.Popen[str], written: Callable[[], set[str]], folder: str) -> bool:
    """SIGKILL ``runner`` the moment a new file appears under ``folder`` of the index.

    Returns:
        Whether it was killed mid-write (``False``: it finished before writing there).
    """
    before = {name for name in written() if name.startswith(folder)}
    deadline = time.monotonic() + 180
    while runner.poll() is None and time.monotonic() < deadline:
        if {name for name in written() if name.startswith(folder)} - before:
            runner.send_signal(signal.SIGKILL)
            runner.communicate(timeout=60)
            return True
        time.sleep(0.01)
    runner.kill()
    runner.communicate(timeout=60)
    return False


# where a commit is killed: while it writes the new rows, while it rebuilds the indexes
KILL_POINTS = ("data/", "_indices/")


def test_an_indexer_killed_mid_commit_leaves_a_readable_index(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "b", 1500)
    index = str(tmp_path / "kb.lance")
    index_bundle(LocalDocumentStore(root, writable=False), index)
    rng = random.Random(9)

    def written() -> set[str]:
        return {p.relative_to(index).as_posix() for p in Path(index).rglob("*") if p.is_file()}

    for round_, folder in enumerate(KILL_POINTS):
        for i in rng.sample(range(1500), 300):
            (root / f"notes/n{i:05d}.md").write_text(note(i, f"kill {round_}"))
        runner = spawn(INDEXER, str(root), index, "{}", "")
        assert kill_when(runner, written, folder), "the indexer finished before the kill"
        # whatever version is current opens and serves a consistent bundle
        reader = OKFManager(LocalDocumentStore(root, writable=False), index=index)
        assert reader.search("note about topic", 5)
    store = LocalDocumentStore(root, writable=False)
    newest = OKFManager(store, index=index)
    newest.reload()  # the newest version, even one whose indexes a killed run left unfolded
    held = newest._served
    behind = sum(1 for f in store.walk("") if held.token_of(f.path) != f.token)
    stats = index_bundle(store, index)
    assert stats.reads == behind  # exactly what the killed runs had not committed is read
    served_alike(root, index, {})
