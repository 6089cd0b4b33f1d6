"""A hostile bucket against a pod's node cache: nothing is written outside the cache.

Real: the S3 HTTP API (moto's server, its own process), Lance writing the index and, for the
hostile versions, committing a manifest built by hand with Lance's own API (a data file named
``../../…`` or by an absolute path) while the bucket owner plants the object Lance's client
then asks for; index folders listed with a key that climbs out; a symlink planted in the
shared cache folder. Pods are real ``OKFManager`` instances on the test's disk. Nothing is
patched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")
require_extra("boto3", "aws")

from agentkernel.knowledgebase import LocalDocumentStore  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgeError  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle  # noqa: E402
from agentkernel.storage.nodecache import CachePathError, NodeCache  # noqa: E402
from tests.knowledgebase.okf.helpers import Clock, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex_processes import note  # noqa: E402
from tests.knowledgebase.okf.test_index_nodecache import open_pod  # noqa: E402

S3_KEYS = {
    "allow_http": "true",
    "aws_region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}
PAYLOAD = b"#!/bin/sh\necho owned\n"


@pytest.fixture
def hostile(tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_client: Any) -> dict[str, Any]:
    """A small bundle indexed into S3, and a pod's options with its node cache two levels deep."""
    root = write_bundle(tmp_path / "bundle", {"a.md": note(1), "b/c.md": note(2)})
    uri = f"s3://{s3_bucket}/kb.lance"
    direct = {**S3_KEYS, "aws_endpoint": s3_endpoint}
    index_bundle(LocalDocumentStore(root, writable=False), uri, storage_options=direct)
    node = tmp_path / "pods" / "node"
    return {
        "tmp": tmp_path,
        "root": root,
        "uri": uri,
        "direct": direct,
        "node": node,
        "pod": {**direct, "node_cache": str(node)},
        "bucket": s3_bucket,
        "client": s3_client,
    }


def files_outside_the_cache(setup: dict[str, Any]) -> set[str]:
    node = setup["node"].as_posix() + "/"
    return {
        p.as_posix()
        for p in setup["tmp"].rglob("*")
        if not p.as_posix().startswith(node) and not p.is_dir()
    }


def commit_data_file_named(setup: dict[str, Any], name: str) -> None:
    """Commit a version whose first data file is called ``name`` (a manifest built by hand),
    and plant the bytes at every key a reader of that manifest may ask for."""
    import lance
    from lance.fragment import FragmentMetadata

    dataset = lance.dataset(setup["uri"], storage_options=setup["direct"])
    fragments = [fragment.metadata for fragment in dataset.get_fragments()]
    described = fragments[0].to_json()
    described["files"][0]["path"] = name
    described["files"][0]["file_size_bytes"] = len(PAYLOAD)
    fragments[0] = FragmentMetadata.from_json(json.dumps(described))
    lance.LanceDataset.commit(
        setup["uri"],
        lance.LanceOperation.Overwrite(dataset.schema, fragments),
        read_version=dataset.version,
        storage_options=setup["direct"],
    )
    # Lance's client escapes '..' as %2E%2E, and asks for an absolute name below the dataset
    for key in {f"kb.lance/data/{name}".replace("..", "%2E%2E"), f"kb.lance{name}"}:
        setup["client"].put_object(Bucket=setup["bucket"], Key=key, Body=PAYLOAD)


@pytest.mark.parametrize("depth", [4, 5])
def test_a_manifest_naming_a_file_above_the_cache_writes_nothing_outside_it(
    hostile: dict[str, Any], depth: int
) -> None:
    before = files_outside_the_cache(hostile)
    commit_data_file_named(hostile, "../" * depth + "owned.sh")
    with pytest.raises(KnowledgeError) as refused:
        open_pod(hostile)
    assert files_outside_the_cache(hostile) == before
    assert "outside the index" in str(refused.value)
    assert "Traceback" not in str(refused.value)


def test_a_manifest_naming_an_absolute_path_writes_nothing_there(
    hostile: dict[str, Any],
) -> None:
    target = hostile["tmp"] / "elsewhere" / "owned.sh"
    before = files_outside_the_cache(hostile)
    commit_data_file_named(hostile, str(target))
    with pytest.raises(KnowledgeError) as refused:
        open_pod(hostile)
    assert not target.exists()
    assert files_outside_the_cache(hostile) == before
    assert "outside the index" in str(refused.value)


def test_an_index_listing_with_a_key_that_climbs_out_writes_nothing_outside(
    hostile: dict[str, Any],
) -> None:
    client, bucket = hostile["client"], hostile["bucket"]
    listed = client.list_objects_v2(Bucket=bucket, Prefix="kb.lance/_indices/")["Contents"]
    folder = listed[0]["Key"].rsplit("/", 1)[0]  # kb.lance/_indices/<uuid>
    climb = "../" * 5 + "owned.sh"
    for key in (f"{folder}/{climb}", f"{folder}/{climb}".replace("..", "%2E%2E")):
        client.put_object(Bucket=bucket, Key=key, Body=PAYLOAD)
    before = files_outside_the_cache(hostile)
    with pytest.raises(KnowledgeError) as refused:
        open_pod(hostile)
    assert files_outside_the_cache(hostile) == before
    assert "outside the index" in str(refused.value)


def test_a_symlink_planted_in_the_cache_folder_is_not_followed_out_of_it(
    hostile: dict[str, Any],
) -> None:
    first = open_pod(hostile)  # makes the cache; then someone swaps a folder for a link
    expected = [r["metadata"]["id"] for r in first.search("topic", 5)]
    dataset = next(hostile["node"].glob("*/dataset"))
    elsewhere = hostile["tmp"] / "elsewhere"
    elsewhere.mkdir()
    for child in (dataset / "data").iterdir():
        child.unlink()
    (dataset / "data").rmdir()
    (dataset / "data").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(KnowledgeError) as refused:
        open_pod(hostile)
    assert list(elsewhere.iterdir()) == []
    assert "outside the index" in str(refused.value)
    (dataset / "data").unlink()  # the link removed, the cache heals by fetching
    assert [r["metadata"]["id"] for r in open_pod(hostile).search("topic", 5)] == expected


def test_a_pod_serving_an_index_keeps_serving_when_a_hostile_version_appears(
    hostile: dict[str, Any],
) -> None:
    clock = Clock()
    pod = open_pod(hostile, clock)
    expected = [r["metadata"]["id"] for r in pod.search("topic", 5)]
    served = pod.schema()["index"]["version"]
    before = files_outside_the_cache(hostile)
    commit_data_file_named(hostile, "../" * 4 + "owned.sh")
    clock.advance(61)
    assert [r["metadata"]["id"] for r in pod.search("topic", 5)] == expected
    assert pod.schema()["index"]["version"] == served
    assert files_outside_the_cache(hostile) == before
    assert any("outside the index" in line for line in pod.diagnostics)


@pytest.mark.parametrize(
    "name",
    [
        "../escape",
        "data/../../escape",
        "/etc/passwd",
        "data/x.lance.akdigest",
        "data/x.lance.aktmp-1234",
        ".lock",
        "data/\x00x",
        "C:/x",
    ],
)
def test_the_node_cache_refuses_names_that_leave_it_or_touch_its_bookkeeping(
    tmp_path: Path, name: str
) -> None:
    cache = NodeCache(tmp_path / "cache")
    cache.folder("ns")
    with pytest.raises(CachePathError):
        cache.path("ns", name)
    assert cache.path("ns", "dataset/data/x.lance").is_relative_to(tmp_path / "cache" / "ns")


def test_a_namespace_folder_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    (tmp_path / "victim").mkdir()
    os.symlink(tmp_path / "victim", tmp_path / "cache" / "ns")
    with pytest.raises(CachePathError):
        cache.folder("ns")
    with pytest.raises(CachePathError):
        cache.path("ns", "dataset/data/x.lance")
