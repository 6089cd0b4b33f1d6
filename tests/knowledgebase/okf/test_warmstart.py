"""The OKF warm start: a process over an unchanged bundle loads the last walk instead of walking.

Real: bundles written to disk (a generated 120-concept bundle, and the two third-party bundles
read in place), the LocalDocumentStore reading them (with its reads counted), the manager, the
warm-start files in a temporary cache folder, and separate Python processes for the sharing
test. Nothing is replaced.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agentkernel.knowledgebase import OKFManager
from agentkernel.knowledgebase.okf import warmstart
from agentkernel.storage.local import LocalDocumentStore
from tests.knowledgebase.okf.helpers import CountingStore, concept, write_bundle
from tests.support import okf_bundle

_VOCABULARY = """order customer revenue margin ledger invoice payment refund churn cohort funnel
session pageview event campaign channel attribution warehouse pipeline freshness latency schema
partition cluster replica backup restore audit access token secret rotation alert"""
WORDS = _VOCABULARY.split()


def generated(root: Path, count: int = 120, seed: int = 5) -> Path:
    rng = random.Random(seed)
    files: dict[str, str | bytes] = {"index.md": '---\nokf_version: "0.2"\n---\n# Generated\n'}
    for n in range(count):
        title = " ".join(rng.sample(WORDS, 2)).title()
        body = " ".join(rng.choices(WORDS, k=40)) + ".\n"
        extra = {"status": "deprecated"} if n % 17 == 0 else {}
        files[f"area{n % 4}/doc{n:03d}.md"] = concept(
            "Note",
            f"{title} {n}",
            " ".join(rng.sample(WORDS, 5)),
            body=body,
            tags=f"[{rng.choice(WORDS)}]",
            **extra,
        )
    return write_bundle(root, files)


QUERIES = [
    "order revenue",
    "how do I rotate a secret token?",
    "freshness alert on the pipeline",
    "customer churn cohort",
    "Margin Ledger 7",
    "backup restore replica partition",
    "campaign attribution channel funnel",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(warmstart.CACHE_ENV, str(folder))
    return folder


def manager(root: Path) -> tuple[OKFManager, CountingStore]:
    store = CountingStore(root, writable=False)
    return OKFManager(store, refresh_seconds=None), store


def rankings(kb: OKFManager) -> list[list[tuple[str, str]]]:
    return [[(r["metadata"]["id"], r["text"]) for r in kb.search(q, limit=10)] for q in QUERIES]


def ids(rows: list[dict[str, object]]) -> list[object]:
    return [row["metadata"]["id"] for row in rows]  # type: ignore[index]


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def test_unchanged_bundle_loads_and_ranks_exactly_like_a_walk(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = generated(tmp_path / "bundle")
    before = tree(root)
    first, first_store = manager(root)
    assert first_store.reads() == 121  # a cold start reads every document
    assert [p.suffix for p in cache.iterdir()] == [".okfwarm"]
    second, second_store = manager(root)
    assert second_store.reads() == 0 and second.last_refresh is not None
    assert second.last_refresh.reads == 0
    monkeypatch.setenv(warmstart.CACHE_ENV, "off")
    walked, _ = manager(root)
    assert rankings(second) == rankings(walked) == rankings(first)
    assert second.schema()["concepts"] == walked.schema()["concepts"] == 120
    assert second.browse("area1", limit=100) == walked.browse("area1", limit=100)
    assert second.fetch(["area2/doc002"]) == walked.fetch(["area2/doc002"])
    assert tree(root) == before  # the bundle got no byte; the file lives in the cache folder


@pytest.mark.parametrize("name", ["crypto_bitcoin", "ga4"])
def test_real_bundles_rank_alike_loaded(
    name: str, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = okf_bundle(name)
    OKFManager(CountingStore(root, writable=False), refresh_seconds=None)
    store = CountingStore(root, writable=False)  # the same kind of store: the same file
    loaded = OKFManager(store, refresh_seconds=None)
    assert store.reads() == 0
    monkeypatch.setenv(warmstart.CACHE_ENV, "off")
    walked = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    queries = ["bitcoin transactions inputs outputs", "events table", "what is a session?"]
    for query in queries:
        assert loaded.search(query, limit=5) == walked.search(query, limit=5)
    assert loaded.diagnostics == walked.diagnostics


def test_a_changed_document_is_read_again_and_the_rest_loaded(tmp_path: Path, cache: Path) -> None:
    root = generated(tmp_path / "bundle")
    manager(root)
    changed = root / "area1/doc001.md"
    changed.write_text(concept("Note", "Zygomorphic flowers", "Petals.", body="Orchids.\n"))
    (root / "area2/doc002.md").unlink()
    write_bundle(root, {"area9/new.md": concept("Note", "Quokka census", "Counted.")})
    kb, store = manager(root)
    assert store.reads() == 2  # the changed and the new document, nothing else
    assert ids(kb.search("zygomorphic orchids", limit=3))[:1] == ["area1/doc001"]
    assert ids(kb.search("quokka census", limit=3))[:1] == ["area9/new"]
    assert kb.fetch(["area2/doc002"]) == []
    assert kb.schema()["concepts"] == 120
    # the old text of the changed document is gone from the index
    old = ids(kb.search("Zygomorphic", limit=50))
    assert old == ["area1/doc001"]
    again, again_store = manager(root)  # the walk saved what it changed
    assert again_store.reads() == 0
    assert rankings(again) == rankings(kb)


def test_a_corrupt_file_is_ignored_and_replaced(
    tmp_path: Path, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = generated(tmp_path / "bundle")
    manager(root)
    (saved,) = cache.iterdir()
    data = bytearray(saved.read_bytes())
    data[len(data) // 2] ^= 0xFF
    saved.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="agentkernel.knowledgebase.okf.warmstart"):
        kb, store = manager(root)
    assert store.reads() == 121 and "unusable" in caplog.text
    assert ids(kb.search("Margin Ledger 7", limit=1)) != []
    saved.write_bytes(saved.read_bytes()[:1000])  # torn: also a miss, then rewritten
    manager(root)
    _, store = manager(root)
    assert store.reads() == 0


def test_a_file_holding_more_than_plain_data_is_never_executed(
    tmp_path: Path, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = generated(tmp_path / "bundle", count=5)
    manager(root)
    (saved,) = cache.iterdir()
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    import hashlib

    body = pickle.dumps({"concepts": [Evil()]})
    saved.write_bytes(warmstart._MAGIC + hashlib.sha256(body).digest() + body)
    with caplog.at_level(logging.WARNING):
        kb, store = manager(root)
    assert not marker.exists() and "not plain data" in caplog.text
    assert store.reads() == 6 and kb.schema()["concepts"] == 5


def test_off_and_unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = generated(tmp_path / "bundle", count=5)
    monkeypatch.setenv(warmstart.CACHE_ENV, "off")
    manager(root)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(warmstart.CACHE_ENV, str(blocker / "cache"))
    kb, store = manager(root)  # the save fails; the walk does not
    assert store.reads() == 6 and kb.schema()["concepts"] == 5
    assert blocker.read_text() == "not a folder"
    assert not any(p.suffix == ".okfwarm" for p in tmp_path.rglob("*"))


def test_processes_share_one_file(tmp_path: Path, cache: Path) -> None:
    root = generated(tmp_path / "bundle")
    script = (
        "import sys\n"
        "from agentkernel.knowledgebase import OKFManager\n"
        "from agentkernel.storage.local import LocalDocumentStore\n"
        "kb = OKFManager(LocalDocumentStore(sys.argv[1], writable=False), refresh_seconds=None)\n"
        "print(kb.last_refresh.reads, kb.search('order revenue', limit=3)[0]['metadata']['id'])\n"
    )
    env = {**os.environ, warmstart.CACHE_ENV: str(cache)}
    cold = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(root)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=120)[0].split() for process in cold]
    assert all(process.returncode == 0 for process in cold)
    warm = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert warm[0] == "0"  # loaded from whichever process renamed its file last
    assert {tuple(out[1:]) for out in outputs} == {tuple(warm[1:])}
    assert [p.suffix for p in cache.iterdir()] == [".okfwarm"]  # no temporary file left


def test_hybrid_managers_walk_without_the_file(tmp_path: Path, cache: Path) -> None:
    from agentkernel.knowledgebase.okf.manifest import Manifest

    root = generated(tmp_path / "bundle", count=5)
    manager(root)
    hybrid = Manifest(vectors=object())  # type: ignore[arg-type]
    calls = []
    warmstart.walk_warm(hybrid, LocalDocumentStore(root), _limits(), lambda: calls.append(1))
    assert calls == [1] and hybrid.paths() == []


def _limits() -> warmstart.ScanLimits:
    return warmstart.ScanLimits(max_concepts=10_000, head_bytes=16384, max_document_bytes=1 << 22)
