"""Pods over a bundle index in S3, served from the node cache, seen through a 20 ms latency proxy.

Real: the S3 HTTP API (moto's server, its own process), the latency proxy on 127.0.0.1 in
front of it (``s3_latency``: every request delayed 20 ms and counted, as a pod's requests to a
bucket are), Lance reading and writing the index, the node cache on the test's disk, boto3,
and, for the shared-folder test, separate pod processes. Nothing is patched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")
require_extra("boto3", "aws")

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.storage.nodecache import LEDGER_SUFFIX  # noqa: E402
from tests.knowledgebase.okf.helpers import Clock, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex_processes import make_bundle, note  # noqa: E402
from tests.support.latency_proxy import LatencyProxy  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
S3_KEYS = {
    "allow_http": "true",
    "aws_region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}


@pytest.fixture
def indexed(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> dict[str, Any]:
    """A 300-note bundle indexed into S3 (written directly), pods' options through the proxy."""
    root = make_bundle(tmp_path / "bundle", 300)
    uri = f"s3://{s3_bucket}/kb.lance"
    index_bundle(
        LocalDocumentStore(root, writable=False),
        uri,
        storage_options={**S3_KEYS, "aws_endpoint": s3_endpoint},
    )
    pod = {**S3_KEYS, "aws_endpoint": s3_latency.endpoint, "node_cache": str(tmp_path / "node")}
    return {
        "root": root,
        "uri": uri,
        "direct": {**S3_KEYS, "aws_endpoint": s3_endpoint},
        "pod": pod,
    }


def open_pod(setup: dict[str, Any], clock: Clock | None = None, **options: str) -> OKFManager:
    return OKFManager(
        LocalDocumentStore(setup["root"], writable=False),
        name="OKF",
        refresh_seconds=60,
        clock=clock or Clock(),
        index=setup["uri"],
        index_options={**setup["pod"], **options},
    )


def cached_files(setup: dict[str, Any]) -> dict[str, int]:
    found = {}
    for path in Path(setup["pod"]["node_cache"]).rglob("*"):
        bookkeeping = path.name.endswith(LEDGER_SUFFIX) or path.name == ".lock"
        if path.is_file() and "/dataset/" in path.as_posix() and not bookkeeping:
            found[path.as_posix().split("/dataset/", 1)[1]] = path.stat().st_size
    return found


def test_a_warm_pod_searches_without_a_request_and_refreshes_with_one(
    indexed: dict[str, Any], s3_latency: LatencyProxy
) -> None:
    clock = Clock()
    s3_latency.take()
    kb = open_pod(indexed, clock)
    cold = s3_latency.take()
    assert cold["GET"] >= 3  # the version listing, the manifest, the files
    walked = OKFManager(LocalDocumentStore(indexed["root"], writable=False), refresh_seconds=None)
    for query in ("note about topic 7", "topic 12", "n00042"):
        ids = [r["metadata"]["id"] for r in kb.search(query, 5)]
        assert ids and ids[0] == walked.search(query, 5)[0]["metadata"]["id"]
    kb.browse("notes", limit=20)
    kb.schema()
    assert s3_latency.take() == {}  # searches, browse and the schema read the node's disk
    clock.advance(61)
    kb.search("topic 3", 3)  # the due refresh: one listing of the index's versions
    assert s3_latency.take() == {"GET": 1}
    assert kb.schema()["search"].startswith("lexical (Lance's BM25")


def test_a_new_version_fetches_only_the_files_it_added(
    indexed: dict[str, Any], s3_latency: LatencyProxy, s3_client: Any, s3_bucket: str
) -> None:
    clock = Clock()
    kb = open_pod(indexed, clock)
    before = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    root = indexed["root"]
    for i in range(0, 300, 100):  # 1%: three notes change
        (root / f"notes/n{i:05d}.md").write_text(note(i, "changed"))
    index_bundle(
        LocalDocumentStore(root, writable=False), indexed["uri"], storage_options=indexed["direct"]
    )
    added = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]} - before
    s3_latency.take()
    clock.advance(61)
    assert kb.search("changed", 3)[0]["metadata"]["id"] == "notes/n00000"
    fetched = [p for method, p in s3_latency.paths if method == "GET" and "list-type" not in p]
    keys = [path.split("?")[0].split(f"/{s3_bucket}/", 1)[1] for path in fetched]
    assert keys and set(keys) <= added  # nothing the node already held
    assert len(keys) == len(set(keys))  # nothing twice
    assert not any(k.startswith("kb.lance/_transactions/") for k in keys)


def s3_bundle_pod(
    tmp_path: Path, s3_client: Any, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> tuple[OKFManager, dict[str, Any], Any]:
    """A 300-note bundle in the bucket, indexed there; a pod reaching both through the proxy."""
    from agentkernel.storage.s3 import S3DocumentStore

    for i in range(300):
        s3_client.put_object(Bucket=s3_bucket, Key=f"bundle/notes/n{i:05d}.md", Body=note(i))
    uri = f"s3://{s3_bucket}/kb.lance"
    direct = {**S3_KEYS, "aws_endpoint": s3_endpoint}
    source = S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_endpoint)
    index_bundle(source, uri, storage_options=direct)
    kb = OKFManager(
        S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_latency.endpoint),
        index=uri,
        index_options={**S3_KEYS, "aws_endpoint": s3_latency.endpoint, "node_cache": str(tmp_path)},
        refresh_seconds=None,
    )
    return kb, {"uri": uri, "direct": direct}, source


def test_reload_of_an_unchanged_index_sends_one_request(
    tmp_path: Path, s3_client: Any, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> None:
    kb, _, _ = s3_bundle_pod(tmp_path, s3_client, s3_bucket, s3_endpoint, s3_latency)
    version = kb.schema()["index"]["version"]
    s3_latency.take()
    for _ in range(3):
        stats = kb.reload()
        # one listing of the index's versions; the bundle is not listed
        assert s3_latency.take() == {"GET": 1}
        assert kb.last_refresh == stats
    assert kb.schema()["index"]["version"] == version


def test_reload_of_a_changed_index_fetches_only_the_files_it_added(
    tmp_path: Path, s3_client: Any, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> None:
    kb, index, source = s3_bundle_pod(tmp_path, s3_client, s3_bucket, s3_endpoint, s3_latency)
    before = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    for i in range(0, 300, 100):  # 1%: three notes change
        key = f"bundle/notes/n{i:05d}.md"
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=note(i, "changed"))
    index_bundle(source, index["uri"], storage_options=index["direct"])
    added = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]} - before
    s3_latency.take()
    kb.reload()
    listings = [p for method, p in s3_latency.paths if method == "GET" and "list-type" in p]
    fetched = [p for method, p in s3_latency.paths if method == "GET" and "list-type" not in p]
    keys = [path.split("?")[0].split(f"/{s3_bucket}/", 1)[1] for path in fetched]
    assert keys and set(keys) <= added  # nothing the node already held
    assert len(keys) == len(set(keys))  # nothing twice
    assert not any("prefix=bundle" in p for p in listings)  # the bundle is never listed
    assert kb.search("changed", 3)[0]["metadata"]["id"] == "notes/n00000"


def test_a_pod_restarting_on_a_warm_node_cache_sends_one_request(
    indexed: dict[str, Any], s3_latency: LatencyProxy
) -> None:
    first = open_pod(indexed)
    expected = [r["metadata"]["id"] for r in first.search("topic 5", 5)]
    s3_latency.take()
    second = open_pod(indexed)
    assert s3_latency.take() == {"GET": 1}
    assert [r["metadata"]["id"] for r in second.search("topic 5", 5)] == expected


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_corrupt_cached_file_is_fetched_again_never_served(
    indexed: dict[str, Any], s3_latency: LatencyProxy, damage: str
) -> None:
    expected = [r["metadata"]["id"] for r in open_pod(indexed).search("topic 9", 5)]
    files = cached_files(indexed)
    data = max((rel for rel in files if rel.startswith("data/")), key=files.get)
    victim = Path(indexed["pod"]["node_cache"]).rglob(Path(data).name).__next__()
    raw = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(raw[: len(raw) // 2])
    else:
        victim.write_bytes(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:])
    s3_latency.take()
    pod = open_pod(indexed)
    # the version listing, and the damaged file again (one GET: its size is recorded)
    assert s3_latency.take() == {"GET": 2}
    assert victim.read_bytes() == raw
    assert [r["metadata"]["id"] for r in pod.search("topic 9", 5)] == expected


def test_the_cache_keeps_to_its_size_bound(
    tmp_path: Path, indexed: dict[str, Any], s3_bucket: str, s3_endpoint: str
) -> None:
    one = open_pod(indexed)
    size = sum(cached_files(indexed).values())
    other = make_bundle(tmp_path / "other", 200)
    second = {**indexed, "root": other, "uri": f"s3://{s3_bucket}/other.lance"}
    index_bundle(
        LocalDocumentStore(other, writable=False), second["uri"], storage_options=indexed["direct"]
    )
    bound = str(int(size * 1.2))  # room for one index, not two
    pod = open_pod(second, node_cache_bytes=bound)
    total = sum(
        p.stat().st_size
        for p in Path(indexed["pod"]["node_cache"]).rglob("*")
        if p.is_file() and p.name != ".lock"
    )
    assert total <= int(bound)
    assert pod.search("topic 4", 3)  # what it serves was kept
    assert one.schema()["concepts"] == 300


def test_pods_of_one_node_share_the_cache_folder(
    indexed: dict[str, Any], s3_latency: LatencyProxy
) -> None:
    script = (
        "import json, sys\n"
        "from agentkernel.knowledgebase import LocalDocumentStore, OKFManager\n"
        "root, uri, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])\n"
        "kb = OKFManager(LocalDocumentStore(root, writable=False), index=uri,\n"
        "                index_options=options, refresh_seconds=None)\n"
        "print(json.dumps([r['metadata']['id'] for r in kb.search('topic 11', 5)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    s3_latency.take()
    pods = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                script,
                str(indexed["root"]),
                indexed["uri"],
                json.dumps(indexed["pod"]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    answers = []
    for pod in pods:
        out, err = pod.communicate(timeout=240)
        assert pod.returncode == 0, err[-2000:]
        answers.append(json.loads(out.strip().splitlines()[-1]))
    assert answers[0] and all(a == answers[0] for a in answers)
    files = cached_files(indexed)
    reads = [path for method, path in s3_latency.paths if method == "GET"]
    listings = [path for path in reads if "list-type=2" in path]
    assert len(reads) - len(listings) == len(files)  # each file fetched once, by one pod
    index_folders = {rel.split("/")[1] for rel in files if rel.startswith("_indices/")}
    assert len(listings) == 4 + len(index_folders)  # a version listing per pod, a folder once
    cache = Path(indexed["pod"]["node_cache"])
    leftovers = [p for p in cache.rglob("*") if p.name.endswith(".tmp") or ".aktmp-" in p.name]
    assert leftovers == []


def test_node_cache_off_reads_the_object_store(
    indexed: dict[str, Any], s3_latency: LatencyProxy
) -> None:
    s3_latency.take()
    kb = open_pod(indexed, node_cache="off")
    s3_latency.take()
    assert kb.search("topic 2", 3)
    assert s3_latency.take().get("GET", 0) > 0  # Lance over S3: ranged reads per search
    assert not Path(indexed["pod"]["node_cache"]).exists()


def test_a_small_bundle_round_trips_through_the_cache(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> None:
    root = write_bundle(tmp_path / "tiny", {"a.md": note(1), "b/c.md": note(2)})
    uri = f"s3://{s3_bucket}/tiny.lance"
    index_bundle(
        LocalDocumentStore(root, writable=False),
        uri,
        storage_options={**S3_KEYS, "aws_endpoint": s3_endpoint},
    )
    setup = {
        "root": root,
        "uri": uri,
        "pod": {**S3_KEYS, "aws_endpoint": s3_latency.endpoint, "node_cache": str(tmp_path / "n")},
    }
    kb = open_pod(setup)
    assert kb.schema()["concepts"] == 2
    assert kb.fetch(["b/c"])[0]["metadata"]["id"] == "b/c"


def test_fetch_reads_a_document_once_per_node_at_its_indexed_version(
    tmp_path: Path, s3_client: Any, s3_bucket: str, s3_endpoint: str, s3_latency: LatencyProxy
) -> None:
    from agentkernel.storage.s3 import S3DocumentStore

    for i in range(20):
        s3_client.put_object(Bucket=s3_bucket, Key=f"bundle/notes/n{i}.md", Body=note(i).encode())
    uri = f"s3://{s3_bucket}/kb.lance"
    direct = {**S3_KEYS, "aws_endpoint": s3_endpoint}
    index_bundle(
        S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_endpoint), uri, storage_options=direct
    )
    options = {**S3_KEYS, "aws_endpoint": s3_latency.endpoint, "node_cache": str(tmp_path / "n")}

    def pod() -> OKFManager:
        store = S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_latency.endpoint)
        return OKFManager(store, index=uri, index_options=options, refresh_seconds=None)

    first = pod()
    s3_latency.take()
    record = first.fetch(["notes/n3"])[0]
    assert "topic 3" in record["text"]
    assert s3_latency.take() == {"GET": 1}
    assert first.fetch(["notes/n3"])[0]["text"] == record["text"]
    second = pod()  # another pod of the node
    s3_latency.take()
    assert second.fetch(["notes/n3"])[0]["text"] == record["text"]
    assert s3_latency.take() == {}  # served from the node cache
    # the document changes in the bucket; until the index has it, pods serve the indexed one
    s3_client.put_object(Bucket=s3_bucket, Key="bundle/notes/n3.md", Body=note(3, "new").encode())
    assert second.fetch(["notes/n3"])[0]["text"] == record["text"]
    index_bundle(
        S3DocumentStore(s3_bucket, "bundle", endpoint_url=s3_endpoint), uri, storage_options=direct
    )
    second.reload()
    assert "new" in second.fetch(["notes/n3"])[0]["text"]
    # a corrupt cached document is read again, never served
    for path in (tmp_path / "n").rglob("*"):
        if (
            path.is_file()
            and "/documents/" in path.as_posix()
            and not path.name.endswith(LEDGER_SUFFIX)
        ):
            path.write_bytes(b"garbage")
    third = pod()
    assert "new" in third.fetch(["notes/n3"])[0]["text"]


def test_a_download_that_does_not_match_what_the_store_announced_is_never_installed(
    tmp_path: Path,
) -> None:
    import hashlib

    from agentkernel.storage.nodecache import CacheIntegrityError, FetchedObject, NodeCache

    cache = NodeCache(tmp_path / "cache")
    target = cache.folder("ns") / "data" / "f.lance"
    body = b"x" * 1000
    good = hashlib.md5(body).hexdigest()

    def short(handle: Any) -> FetchedObject:
        handle.write(body[:500])  # the connection dropped half-way
        return FetchedObject(1000, good)

    def altered(handle: Any) -> FetchedObject:
        handle.write(b"y" * 1000)
        return FetchedObject(1000, good)

    for fetch in (short, altered):
        with pytest.raises(CacheIntegrityError):
            cache.install(target, fetch)
        assert not target.exists()
        assert list(target.parent.iterdir()) == []  # no temporary file left behind
    cache.install(target, lambda handle: (handle.write(body), FetchedObject(1000, good))[1])
    assert target.read_bytes() == body and cache.check(target)
    fresh = NodeCache(tmp_path / "cache")  # another process: trusts an untouched file
    assert fresh.check(target)
    time.sleep(0.05)  # past the file system's timestamp granularity
    target.write_bytes(b"x" * 999 + b"z")  # written to since: hashed, found corrupt
    fresh = NodeCache(tmp_path / "cache")
    assert not fresh.check(target) and not target.exists()
