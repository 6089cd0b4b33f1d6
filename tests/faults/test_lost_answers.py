"""On S3, a write whose answer is lost is done once: boto3 retries it and the store knows its own.

Real: the moto S3 API server on 127.0.0.1, boto3 with its own retries (``standard`` mode, the
store's default client), and a real HTTP proxy in between (``tests/support/latency_proxy.py``)
that forwards every request to the server and, for the requests a test chooses, drops the
server's answer: the server has stored the object, the client's connection is closed without a
byte. boto3 then sends the same conditional ``PUT`` again, which the server refuses (412: the
object is no longer the version the write was based on, or exists already). Nothing is patched.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from agentkernel.knowledgestore import BundleKnowledgeStore, NewPage
from tests.support import require_extra
from tests.support.latency_proxy import LatencyProxy

EDITS = 12
LOGS = 6


@pytest.fixture
def lossy(s3_endpoint: str) -> Iterator[LatencyProxy]:
    """A proxy to the S3 API server that loses the answer to every other ``PUT``."""
    puts = itertools.count()
    proxy = LatencyProxy(
        s3_endpoint, lose_answer=lambda method, _path: method == "PUT" and next(puts) % 2 == 0
    )
    try:
        yield proxy
    finally:
        proxy.close()


def _store(bucket: str, endpoint: str) -> BundleKnowledgeStore:
    require_extra("boto3", "aws")
    from agentkernel.storage.s3 import S3DocumentStore

    return BundleKnowledgeStore(S3DocumentStore(bucket, "kb", endpoint_url=endpoint))


def test_edits_logs_and_batches_whose_answers_are_lost_apply_once(
    s3_bucket: str, s3_endpoint: str, lossy: LatencyProxy
) -> None:
    _store(s3_bucket, s3_endpoint).create("concept", "tides", "Tides", "Start.")
    store = _store(s3_bucket, lossy.endpoint)
    for n in range(EDITS):
        store.edit("concept/tides", "Start.", f"Start.\n\nedit-{n}.")
    for n in range(LOGS):
        store.log("update", f"entry-{n}", ["concept/tides"])
    ids = store.create_many(
        [NewPage("concept", "moon", "Moon", "Pulls."), NewPage("concept", "sun", "Sun", "Too.")]
    )
    assert ids == ["concept/moon", "concept/sun"]
    assert len([m for m, _ in lossy.lost if m == "PUT"]) >= (EDITS + LOGS) // 2

    fresh = _store(s3_bucket, s3_endpoint)  # straight to the server, a new store object
    page = fresh.read("concept/tides")
    assert page is not None
    for n in range(EDITS):
        assert page.content.count(f"edit-{n}.") == 1, page.content
    log = "\n".join(fresh.recent_log(LOGS * 2))
    for n in range(LOGS):
        assert len(re.findall(rf"\bentry-{n}\b", log)) == 1, log
    assert sorted(p.id for p in fresh.list()) == ["concept/moon", "concept/sun", "concept/tides"]
    index = fresh.documents.read("index.md").decode()
    for rel in ("concepts/tides.md", "concepts/moon.md", "concepts/sun.md"):
        assert index.count(f"({rel})") == 1, index


def test_a_create_whose_answer_is_lost_is_not_a_conflict(s3_bucket: str, s3_endpoint: str) -> None:
    lose_first_page_put = iter([True])
    proxy = LatencyProxy(
        s3_endpoint,
        lose_answer=lambda method, path: (
            (method == "PUT" and path.split("?")[0].endswith("/kb/concepts/tides.md"))
            and next(lose_first_page_put, False)
        ),
    )
    try:
        store = _store(s3_bucket, proxy.endpoint)
        assert store.create("concept", "tides", "Tides", "Start.") == "concept/tides"
        assert proxy.lost, "the proxy lost no answer: the test tested nothing"
    finally:
        proxy.close()
    page = _store(s3_bucket, s3_endpoint).read("concept/tides")
    assert page is not None and page.content == "Start."


def test_a_create_whose_index_write_fails_is_undone_and_can_be_retried(
    s3_bucket: str, s3_endpoint: str
) -> None:
    _store(s3_bucket, s3_endpoint).create("concept", "moon", "Moon", "Pulls.")
    failing = [True]
    proxy = LatencyProxy(
        s3_endpoint,
        lose_request=lambda method, path: (
            failing[0] and method == "PUT" and path.split("?")[0].endswith("/kb/index.md")
        ),
    )
    try:
        store = _store(s3_bucket, proxy.endpoint)
        with pytest.raises(OSError):  # the page is written, index.md can't be
            store.create("concept", "tides", "Tides", "Start.")
        assert store.read("concept/tides") is None  # undone: a failed call changes nothing
        assert proxy.lost
        failing[0] = False
        assert store.create("concept", "tides", "Tides", "Start.") == "concept/tides"
    finally:
        proxy.close()
    fresh = _store(s3_bucket, s3_endpoint)
    assert sorted(p.id for p in fresh.list()) == ["concept/moon", "concept/tides"]
    index = fresh.documents.read("index.md").decode()
    assert "(concepts/tides.md)" in index and "(concepts/moon.md)" in index


def test_a_write_whose_every_answer_is_lost_is_known_by_its_id(
    s3_bucket: str, s3_endpoint: str
) -> None:
    _store(s3_bucket, s3_endpoint).create("concept", "tides", "Tides", "Start.")
    proxy = LatencyProxy(
        s3_endpoint,
        lose_answer=lambda method, path: (
            method == "PUT" and path.split("?")[0].endswith("/kb/concepts/tides.md")
        ),
    )
    try:
        store = _store(s3_bucket, proxy.endpoint)
        store.edit("concept/tides", "Start.", "Start, edited.")  # boto3 gives up: no answer
        assert len(proxy.lost) >= 2  # the write and boto3's retries: every answer lost
    finally:
        proxy.close()
    page = _store(s3_bucket, s3_endpoint).read("concept/tides")
    assert page is not None and page.content == "Start, edited."
