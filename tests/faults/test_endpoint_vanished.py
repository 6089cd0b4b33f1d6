"""An S3 endpoint that goes away, and comes back without the bucket: errors, never an empty store.

Real: a moto S3 API server process of the test's own on 127.0.0.1
(:class:`tests.support.moto_process.MotoServer`), killed with ``SIGKILL`` and started again
empty on the same port; the store is ``BundleKnowledgeStore`` over ``S3DocumentStore``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from agentkernel.knowledgestore import BundleKnowledgeStore, KnowledgeStoreError
from agentkernel.storage import DocumentStore
from tests.support.moto_process import MotoServer

BUCKET = "kb-vanishing"
_ABSOLUTE_PATH = re.compile(r"(^|[\s'\"(])/[\w.-]")


@pytest.fixture
def moto(s3_endpoint: str, tmp_path: Path) -> Iterator[MotoServer]:
    # s3_endpoint: the session's dummy AWS credentials and isolation, which this server shares
    server = MotoServer(tmp_path / "moto.log")
    server.start()
    yield server
    server.stop()


def _client(server: MotoServer) -> Any:
    return boto3.client("s3", endpoint_url=server.url)


def _saved(client: Any) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {
        item["Key"]: client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        for item in listed
    }


def _says_what_and_where(error: KnowledgeStoreError, page: str | None) -> str:
    message = str(error)
    assert f"s3://{BUCKET}/team" in message, message
    assert page is None or page in message, message
    assert not _ABSOLUTE_PATH.search(message), message
    return message


def _two_pages(moto: MotoServer) -> tuple[BundleKnowledgeStore, dict[str, bytes]]:
    """A store holding two acknowledged pages, and the objects they are."""
    client = _client(moto)
    client.create_bucket(Bucket=BUCKET)
    documents = DocumentStore.from_uri(f"s3://{BUCKET}/team", endpoint_url=moto.url)
    store = BundleKnowledgeStore(documents, refresh_seconds=0)
    store.create("concept", "tides", "Tides", "The sea rises and falls.")
    store.create("concept", "moon", "Moon", "Pulls the [tides](concept/tides).")
    return store, _saved(client)


def _restore_and_retry(
    moto: MotoServer, store: BundleKnowledgeStore, saved: dict[str, bytes]
) -> None:
    """Bring the bucket back as acknowledged: nothing of it is lost, and the failed call works."""
    client = _client(moto)
    client.create_bucket(Bucket=BUCKET)
    for key, data in saved.items():
        client.put_object(Bucket=BUCKET, Key=key, Body=data)
    assert store.create("concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tides).")
    assert {page.id for page in store.list()} == {
        "concept/moon",
        "concept/neap-tide",
        "concept/tides",
    }
    assert store.read("concept/tides").linked_from == ["concept/moon", "concept/neap-tide"]
    assert store.check().unreadable_files == []


def _list_and_create_fail(store: BundleKnowledgeStore, cause: str) -> None:
    """A read and a write both fail, saying ``cause``, the store and (the write) the page."""
    with pytest.raises(KnowledgeStoreError) as unreadable:
        store.list()
    assert cause in _says_what_and_where(unreadable.value, None)
    with pytest.raises(KnowledgeStoreError) as refused:
        store.create("concept", "neap-tide", "Neap tide", "The smallest tides.")
    assert cause in _says_what_and_where(refused.value, "concept/neap-tide")


def test_an_endpoint_that_is_gone_is_an_error_naming_the_store_and_the_page(
    moto: MotoServer,
) -> None:
    store, saved = _two_pages(moto)
    moto.kill()
    _list_and_create_fail(store, "can't be reached")
    with pytest.raises(KnowledgeStoreError) as refused:
        store.edit("concept/tides", "rises", "rises slowly")
    _says_what_and_where(refused.value, "concept/tides")

    moto.start()
    _restore_and_retry(moto, store, saved)


def test_a_bucket_that_vanished_is_an_error_never_an_empty_store(moto: MotoServer) -> None:
    store, saved = _two_pages(moto)
    moto.kill()
    moto.start()  # back, empty: the bucket is gone
    _list_and_create_fail(store, "does not exist")
    for call in (
        lambda: store.log("ingest", "Read the almanac"),
        lambda: store.read("concept/tides"),
        lambda: store.search("tides"),
        store.check,
    ):
        with pytest.raises(KnowledgeStoreError, match="does not exist"):
            call()

    _restore_and_retry(moto, store, saved)
