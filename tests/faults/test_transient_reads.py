"""A read the network cuts short is retried, never taken for a page the store can't read.

Real: the S3 API server (moto) on 127.0.0.1, reached through a real HTTP proxy
(:class:`tests.support.reset_proxy.ResetProxy`) that sends half of a chosen page's answer
and then resets the TCP connection, as a failing network does; the stores are
``BundleKnowledgeStore`` over ``S3DocumentStore``, one writing straight to the server, one
reading through the proxy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentkernel.knowledgestore import BundleKnowledgeStore, KnowledgeStoreError
from agentkernel.storage import DocumentStore
from tests.support.reset_proxy import ResetProxy


@pytest.fixture
def reset_proxy(s3_endpoint: str) -> Iterator[ResetProxy]:
    proxy = ResetProxy(s3_endpoint)
    yield proxy
    proxy.close()


def _store(bucket: str, endpoint: str) -> BundleKnowledgeStore:
    documents = DocumentStore.from_uri(f"s3://{bucket}/kb", endpoint_url=endpoint)
    return BundleKnowledgeStore(documents, refresh_seconds=0)


def _objects(client: Any, bucket: str) -> dict[str, str]:
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {item["Key"]: item["ETag"] for item in listed}


@pytest.fixture
def two_pages(s3_bucket: str, s3_endpoint: str) -> None:
    writer = _store(s3_bucket, s3_endpoint)
    writer.create("concept", "tides", "Tides", "The sea rises and falls twice a day.")
    writer.create("concept", "moon", "Moon", "Its pull makes the [tides](concept/tides).")


@pytest.mark.usefixtures("two_pages")
def test_a_read_cut_short_once_is_made_again_and_writes_go_on(
    s3_bucket: str, reset_proxy: ResetProxy
) -> None:
    store = _store(s3_bucket, reset_proxy.endpoint)
    reset_proxy.cut("kb/concepts/tides.md", times=1)

    assert {page.id for page in store.list()} == {"concept/moon", "concept/tides"}
    assert reset_proxy.resets == 1  # the answer was cut, and the read made again
    assert store.check().unreadable_files == []
    assert store.create("concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tides).")
    assert store.read("concept/tides").linked_from == ["concept/moon", "concept/neap-tide"]


@pytest.mark.usefixtures("two_pages")
def test_a_page_unreachable_for_a_while_stops_writes_with_a_clear_error_then_they_go_on(
    s3_bucket: str, s3_client: Any, reset_proxy: ResetProxy
) -> None:
    store = _store(s3_bucket, reset_proxy.endpoint)
    reset_proxy.cut("kb/concepts/tides.md", times=1_000)

    # reads serve what could be read; the page that could not is no "missing" page
    assert {page.id for page in store.list()} == {"concept/moon"}
    with pytest.raises(KnowledgeStoreError) as unread:
        store.read("concept/tides")
    assert f"s3://{s3_bucket}/kb" in str(unread.value)
    assert "concept/tides" in str(unread.value)

    # a write, which rewrites index.md from every page, says why it can't go on now
    before = _objects(s3_client, s3_bucket)
    with pytest.raises(KnowledgeStoreError) as refused:
        store.create("concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tides).")
    message = str(refused.value)
    assert f"s3://{s3_bucket}/kb" in message and "concepts/tides.md" in message
    assert "can't be reached" in message and "won't write" not in message
    assert _objects(s3_client, s3_bucket) == before  # nothing was written

    reset_proxy.clear()  # the network is back: the same call goes through
    assert store.create("concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tides).")
    assert {page.id for page in store.list()} == {
        "concept/moon",
        "concept/neap-tide",
        "concept/tides",
    }
    assert store.check().unreadable_files == []
