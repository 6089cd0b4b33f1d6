"""Compare-and-swap in the document stores: a write based on a stale read is refused.

Real: a ``LocalDocumentStore`` on a temporary folder and an ``S3DocumentStore`` on the moto S3
API server on 127.0.0.1 (``tests/support/fixtures_s3.py``); no call is stubbed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.errors import WriteConflictError
from agentkernel.storage.base import DocumentStore
from agentkernel.storage.local import CAS_LOCK_FILE, LocalDocumentStore


@pytest.fixture(params=["local", "s3"])
def documents(request: pytest.FixtureRequest, tmp_path: Path) -> DocumentStore:
    if request.param == "local":
        return LocalDocumentStore(tmp_path)
    from agentkernel.storage.s3 import S3DocumentStore

    bucket = request.getfixturevalue("s3_bucket")
    return S3DocumentStore(bucket, "kb", endpoint_url=request.getfixturevalue("s3_endpoint"))


def test_a_write_based_on_what_was_read_wins_once(documents: DocumentStore) -> None:
    assert documents.compare_and_swap
    created = documents.write_if("concepts/a.md", b"one", None)
    data, token = documents.read_versioned("concepts/a.md")
    assert data == b"one" and token == created.token
    second = documents.write_if("concepts/a.md", b"two", token)
    assert second.token != token
    with pytest.raises(WriteConflictError) as lost:  # the same stale token again
        documents.write_if("concepts/a.md", b"three", token)
    assert lost.value.path == "concepts/a.md"
    assert documents.read("concepts/a.md") == b"two"


def test_create_only_if_absent_and_delete_only_if_unchanged(documents: DocumentStore) -> None:
    first = documents.write_if("log.md", b"first", None)
    with pytest.raises(WriteConflictError):
        documents.write_if("log.md", b"second", None)
    with pytest.raises(WriteConflictError):
        documents.write_if("missing.md", b"x", first.token)  # nothing there to match
    documents.write("log.md", b"changed")
    with pytest.raises(WriteConflictError):
        documents.delete_if("log.md", first.token)
    _, token = documents.read_versioned("log.md")
    documents.delete_if("log.md", token)
    with pytest.raises(FileNotFoundError):
        documents.read("log.md")


def test_the_local_lock_file_is_hidden_and_created_by_writes_only(tmp_path: Path) -> None:
    documents = LocalDocumentStore(tmp_path)
    documents.write("a.md", b"a")
    documents.read_versioned("a.md")
    assert not (tmp_path / CAS_LOCK_FILE).exists()  # reading takes no lock
    _, token = documents.read_versioned("a.md")
    documents.write_if("a.md", b"b", token)
    assert (tmp_path / CAS_LOCK_FILE).is_file()
    assert [f.path for f in documents.walk()] == ["a.md"]


def test_a_read_only_store_refuses_conditional_writes(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"a")
    documents = LocalDocumentStore(tmp_path, writable=False)
    _, token = documents.read_versioned("a.md")
    refusals: list[Callable[[], object]] = [
        lambda: documents.write_if("a.md", b"b", token),
        lambda: documents.delete_if("a.md", token),
    ]
    for refused in refusals:
        with pytest.raises(PermissionError):
            refused()
    assert (tmp_path / "a.md").read_bytes() == b"a"
