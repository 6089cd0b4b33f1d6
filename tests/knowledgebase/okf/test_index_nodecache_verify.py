"""The node cache verifies content: damaged files are fetched again; a damaged cache stops no pod.

Real: the S3 HTTP API (moto's server, its own process) behind the latency proxy on 127.0.0.1
(requests counted), Lance writing the index and reading it from the node cache on the test's
disk, and pods as real ``OKFManager`` instances. Damage is done to the real cached files, with
their modification times put back as they were (as a bit flip on disk or a careless copy
leaves them). Nothing is patched.
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

from tests.knowledgebase.okf.test_index_nodecache import (  # noqa: E402
    cached_files,
    indexed,  # noqa: F401  (the fixture)
    open_pod,
)
from tests.support.latency_proxy import LatencyProxy  # noqa: E402


def flip_keeping_mtime(path: Path, at: int = 100) -> None:
    """Flip one byte in place (same inode, same size), then put the times back."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(min(at, before.st_size - 1))
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def largest_data_file(setup: dict[str, Any]) -> Path:
    files = cached_files(setup)
    data = max((rel for rel in files if rel.startswith("data/")), key=files.__getitem__)
    return next(
        p for p in Path(setup["pod"]["node_cache"]).rglob("*") if p.as_posix().endswith(data)
    )


def test_a_flipped_byte_with_its_mtime_kept_is_fetched_again(
    indexed: dict[str, Any],  # noqa: F811
    s3_latency: LatencyProxy,
) -> None:
    expected = [r["metadata"]["id"] for r in open_pod(indexed).search("topic 9", 5)]
    victim = largest_data_file(indexed)
    whole = victim.read_bytes()
    flip_keeping_mtime(victim)
    s3_latency.take()
    pod = open_pod(indexed)  # a restart on the node: every file is hashed once
    assert victim.read_bytes() == whole
    assert s3_latency.take() == {"GET": 2}  # the version listing, the damaged file
    assert [r["metadata"]["id"] for r in pod.search("topic 9", 5)] == expected


def change_a_number_keeping_mtime(path: Path) -> bool:
    """In a JSON file (a ledger, a record), change the last digit: still valid, now wrong."""
    before = path.stat()
    text = path.read_bytes()
    try:
        json.loads(text)
    except ValueError:
        return False
    at = max(i for i, c in enumerate(text) if chr(c).isdigit())
    path.write_bytes(text[:at] + str((int(chr(text[at])) + 1) % 10).encode() + text[at + 1 :])
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return True


@pytest.mark.parametrize("damage", ["flipped", "plausible"])
def test_a_cache_whose_every_file_is_damaged_still_opens_and_answers(
    indexed: dict[str, Any],  # noqa: F811
    s3_latency: LatencyProxy,
    damage: str,
) -> None:
    expected = [r["metadata"]["id"] for r in open_pod(indexed).search("topic 12", 5)]
    node = Path(indexed["pod"]["node_cache"])
    damaged = [p for p in node.rglob("*") if p.is_file() and p.stat().st_size > 0]
    assert len(damaged) > 10  # data, index files, manifests, ledgers, version records
    for path in damaged:
        # "plausible": ledgers and records stay valid JSON with a wrong number in them
        if damage == "flipped" or not change_a_number_keeping_mtime(path):
            flip_keeping_mtime(path, at=path.stat().st_size // 2)
    pod = open_pod(indexed)
    assert [r["metadata"]["id"] for r in pod.search("topic 12", 5)] == expected
    again = open_pod(indexed)  # and the cache is whole again: a restart needs one request
    s3_latency.take()
    open_pod(indexed)
    assert s3_latency.take() == {"GET": 1}
    assert [r["metadata"]["id"] for r in again.search("topic 12", 5)] == expected


def test_a_read_error_while_serving_fetches_the_damaged_file_and_answers(
    indexed: dict[str, Any],  # noqa: F811
) -> None:
    pod = open_pod(indexed)  # its files hashed once, at open; then damaged under it
    expected = [r["metadata"]["id"] for r in pod.search("topic 7", 5)]
    node = Path(indexed["pod"]["node_cache"])
    index_files = [p for p in node.rglob("*") if "/_indices/" in p.as_posix()]
    for path in index_files:
        if path.suffix == ".lance":
            before = path.stat()
            path.write_bytes(path.read_bytes()[: before.st_size // 3])
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [r["metadata"]["id"] for r in pod.search("topic 7", 5)] == expected
    assert [r["metadata"]["id"] for r in pod.search("note about topic 3", 5)]
