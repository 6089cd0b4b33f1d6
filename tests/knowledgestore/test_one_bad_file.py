"""One page file that doesn't parse never blocks writes to the others, on a folder and on S3.

Real: a ``FileKnowledgeStore`` on files in a temporary folder, and a ``BundleKnowledgeStore``
over ``S3DocumentStore`` on the S3 API server (moto) on 127.0.0.1; the broken file is put
there behind the store's back (a person editing a page by hand), as a file or an object.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStoreError,
)
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.storage import DocumentStore

BROKEN = b"---\ntitle: [unclosed\n---\nBody.\n"

# a store, how to put a file behind its back, how to read a file back
Setup = tuple[PagesStore, Callable[[str, bytes], None], Callable[[str], bytes]]


@pytest.fixture(params=["folder", "s3"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Setup:
    if request.param == "folder":
        folder = tmp_path / "knowledge"

        def put_file(rel: str, data: bytes) -> None:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)

        return FileKnowledgeStore(folder), put_file, lambda rel: (folder / rel).read_bytes()
    bucket: str = request.getfixturevalue("s3_bucket")
    endpoint: str = request.getfixturevalue("s3_endpoint")
    client: Any = request.getfixturevalue("s3_client")
    documents = DocumentStore.from_uri(f"s3://{bucket}/kb", endpoint_url=endpoint)

    def put_object(rel: str, data: bytes) -> None:
        client.put_object(Bucket=bucket, Key=f"kb/{rel}", Body=data)

    def get_object(rel: str) -> bytes:
        body: bytes = client.get_object(Bucket=bucket, Key=f"kb/{rel}")["Body"].read()
        return body

    return BundleKnowledgeStore(documents, refresh_seconds=0), put_object, get_object


def test_a_page_with_broken_frontmatter_never_blocks_writes_to_the_others(setup: Setup) -> None:
    store, put, get = setup
    store.create("concept", "tides", "Tides", "The sea rises and falls.")
    put("concepts/broken.md", BROKEN)

    assert store.create("concept", "moon", "Moon", "Pulls the [tides](concept/tides).")
    store.edit("concept/tides", "rises", "rises slowly")
    store.log("ingest", "Read the almanac", ["concept/moon"])
    store.write_overview("The [tides](concept/tides) and the [moon](concept/moon).")

    assert {page.id for page in store.list()} == {"concept/moon", "concept/tides"}
    unreadable = store.check().unreadable_files
    assert [u.path for u in unreadable] == ["concepts/broken.md"]
    assert "frontmatter" in unreadable[0].reason
    # never written over: its page can't be created, and its bytes are as they were put
    with pytest.raises(KnowledgeStoreError, match="already"):
        store.create("concept", "broken", "Broken", "A new page where the broken file is.")
    assert get("concepts/broken.md") == BROKEN


def test_on_s3_a_file_outside_the_stores_layout_still_keeps_it_from_writing(
    s3_bucket: str, s3_endpoint: str, s3_client: Any
) -> None:
    documents = DocumentStore.from_uri(f"s3://{s3_bucket}/kb", endpoint_url=s3_endpoint)
    store = BundleKnowledgeStore(documents, refresh_seconds=0)
    store.create("concept", "tides", "Tides", "The sea rises and falls.")
    s3_client.put_object(Bucket=s3_bucket, Key="kb/notes/todo.md", Body=b"# To do\n")
    s3_client.put_object(Bucket=s3_bucket, Key="kb/concepts/index.md", Body=b"# Concepts\n")
    index_before = s3_client.get_object(Bucket=s3_bucket, Key="kb/index.md")["Body"].read()

    with pytest.raises(KnowledgeStoreError, match=r"won't write in .*concepts/index\.md, notes"):
        store.create("concept", "moon", "Moon", "Pulls the tides.")
    assert s3_client.get_object(Bucket=s3_bucket, Key="kb/index.md")["Body"].read() == index_before
