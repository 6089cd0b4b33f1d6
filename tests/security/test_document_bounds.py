"""One size bound for every document read whole from a bundle, and for every page written.

Real: the curated store on the moto S3 API server on 127.0.0.1 (``tests/support/fixtures_s3.py``)
and on local folders; objects and files are planted behind the store's back the way a hostile
bucket owner or a person would. Memory is measured in a child process (``tracemalloc``'s peak
over the calls, which counts every Python buffer a read makes). A hostile S3 endpoint on
127.0.0.1 speaks the real S3 wire protocol (HTTP/1.1, chunked body, no ``Content-Length``) to
show that a stream delivering more than the bound is cut, not buffered. OKF bundles are real
folders read by ``OKFManager``.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkernel.errors import DocumentTooLargeError
from agentkernel.knowledgebase import OKFManager
from agentkernel.knowledgestore import BundleKnowledgeStore, FileKnowledgeStore
from agentkernel.knowledgestore.tools import create_knowledge_tools
from agentkernel.storage.base import MAX_DOCUMENT_BYTES
from agentkernel.storage.local import LocalDocumentStore

MIB = 1024 * 1024
PLANTED = 60 * MIB  # far over the bound: a read of it whole would show in any measurement
BOUND = f"max_document_bytes={MAX_DOCUMENT_BYTES}"
_PREFIX = "team/knowledge"

_CHILD = r"""
import json, sys, tracemalloc
from collections import Counter
kind, where, endpoint, bucket = sys.argv[1:5]
from agentkernel.knowledgestore import BundleKnowledgeStore, FileKnowledgeStore
gets = Counter()
if kind == "s3":
    from agentkernel.storage.s3 import S3DocumentStore
    documents = S3DocumentStore(bucket, where, endpoint_url=endpoint)
    documents.client.meta.events.register(
        "before-send.s3.GetObject",
        lambda request, **_: gets.update([request.url.rsplit("/", 1)[-1].split("?")[0]]),
    )
    store = BundleKnowledgeStore(documents)
else:
    store = FileKnowledgeStore(where)
tracemalloc.start()
ids = [p.id for p in store.list()]
page = store.read("concept/tides")
hits = [h.id for h in store.search("water")]
report = store.check()
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({
    "ids": ids,
    "read": page is not None and page.content == "Water rises.",
    "hits": hits,
    "unreadable": [[u.path, u.reason] for u in report.unreadable_files],
    "peak": peak,
    "gets": dict(gets),
}))
"""


def _huge_page(size: int) -> bytes:
    """A well-formed page file of ``size`` bytes: it would parse, were it read."""
    head = b"---\ntype: concept\ntitle: Huge\n---\n\n"
    return head + b"word " * ((size - len(head)) // 5)


def _fresh_process(kind: str, where: str, endpoint: str = "", bucket: str = "") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, where, endpoint, bucket],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
        timeout=300,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _assert_refused_unread(seen: dict[str, Any], clean: dict[str, Any], rel: str) -> None:
    assert seen["ids"] == clean["ids"] == ["concept/tides", "entity/moon"]  # others served
    assert seen["read"] and seen["hits"] == ["concept/tides"]
    assert seen["unreadable"] == [[rel, f"oversized: {PLANTED} bytes (the limit is {BOUND})"]]
    # the same calls without the planted page peak within a few hundred kB of this
    assert seen["peak"] - clean["peak"] < MIB


def test_a_planted_oversized_page_on_s3_is_unreadable_and_never_fetched(
    s3_endpoint: str, s3_bucket: str, s3_client: Any
) -> None:
    from agentkernel.storage.s3 import S3DocumentStore

    store = BundleKnowledgeStore(S3DocumentStore(s3_bucket, _PREFIX, endpoint_url=s3_endpoint))
    store.create("entity", "moon", "Moon", "Satellite.")
    store.create("concept", "tides", "Tides", "Water rises.")
    clean = _fresh_process("s3", _PREFIX, s3_endpoint, s3_bucket)
    s3_client.put_object(
        Bucket=s3_bucket, Key=f"{_PREFIX}/concepts/huge.md", Body=_huge_page(PLANTED)
    )
    seen = _fresh_process("s3", _PREFIX, s3_endpoint, s3_bucket)
    _assert_refused_unread(seen, clean, "concepts/huge.md")
    assert "huge.md" not in seen["gets"]  # refused on its listed size: no GET at all


def test_a_planted_oversized_page_in_a_folder_is_unreadable_and_never_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("entity", "moon", "Moon", "Satellite.")
    store.create("concept", "tides", "Tides", "Water rises.")
    clean = _fresh_process("file", str(folder))
    (folder / "concepts" / "huge.md").write_bytes(_huge_page(PLANTED))
    seen = _fresh_process("file", str(folder))
    _assert_refused_unread(seen, clean, "concepts/huge.md")


def test_a_page_swapped_for_a_huge_one_after_listing_is_refused_while_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bundle"
    folder.mkdir()
    documents = LocalDocumentStore(folder)
    store = BundleKnowledgeStore(documents)
    store.create("concept", "tides", "Tides", "Water rises.")
    listed = next(f for f in documents.walk("") if f.path == "concepts/tides.md")
    (folder / "concepts" / "tides.md").write_bytes(_huge_page(PLANTED))
    assert listed.size < MAX_DOCUMENT_BYTES  # the listing said small; the file is not
    tracemalloc.start()
    try:
        with pytest.raises(DocumentTooLargeError) as refused:
            documents.read_versioned_bounded(listed.path, MAX_DOCUMENT_BYTES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.reason == f"oversized: {PLANTED} bytes (the limit is {BOUND})"
    assert refused.value.token  # a compare-and-swap can still replace what was refused
    assert peak < MAX_DOCUMENT_BYTES


class _DrippingS3(http.server.BaseHTTPRequestHandler):
    """Answers every GetObject with a chunked body of ``PLANTED`` bytes and no length."""

    protocol_version = "HTTP/1.1"
    sent = 0

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("ETag", '"planted"')
        self.send_header("Content-Type", "text/markdown")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"x" * (256 * 1024)
        try:
            for _ in range(PLANTED // len(chunk)):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                type(self).sent += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the reader hung up: what it wanted was read

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def dripping_endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DrippingS3)
    _DrippingS3.sent = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_s3_stream_longer_than_the_bound_is_cut_not_buffered(
    dripping_endpoint: str, s3_endpoint: str
) -> None:
    from agentkernel.storage.s3 import S3DocumentStore

    documents = S3DocumentStore("bucket", "kb", endpoint_url=dripping_endpoint)
    tracemalloc.start()
    try:
        with pytest.raises(DocumentTooLargeError) as refused:
            documents.read_versioned_bounded("concepts/tides.md", MAX_DOCUMENT_BYTES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    documents.close()
    assert (
        refused.value.reason
        == f"oversized: more than {MAX_DOCUMENT_BYTES} bytes (the limit is {BOUND})"
    )
    assert refused.value.token == '"planted"'
    assert peak < 3 * MAX_DOCUMENT_BYTES  # the bound and one read's buffers, not 60 MB
    assert _DrippingS3.sent < PLANTED // 2  # the reader hung up early


def test_a_10_mb_page_is_refused_by_the_tool_with_the_bound_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water rises.")
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    tools = {tool.__name__: tool for tool in create_knowledge_tools(store)}
    answer = tools["knowledge_create"]("concept", "big", "Big", "word " * (2 * MIB))
    assert BOUND in answer and "Nothing was written" in answer and "Split it" in answer
    assert len(answer) < 500
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == before
    assert [h.id for h in store.search("word")] == []


def test_an_okf_concept_grown_past_the_bound_after_listing_is_refused_on_fetch(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    note = bundle / "note.md"
    note.write_text("---\ntype: Note\ntitle: Note\n---\nSmall.\n", "utf-8")
    kb = OKFManager(LocalDocumentStore(bundle), name="KB", refresh_seconds=None)
    assert [r["metadata"]["id"] for r in kb.fetch(["note"])] == ["note"]
    note.write_bytes(b"---\ntype: Note\ntitle: Note\n---\n" + b"x" * PLANTED)
    tracemalloc.start()
    try:
        with pytest.raises(DocumentTooLargeError, match=BOUND):
            kb.fetch(["note"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_DOCUMENT_BYTES


def test_a_planted_oversized_okf_index_is_not_read_and_the_listing_is_served(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "note.md").write_text("---\ntype: Note\ntitle: Note\n---\nSmall.\n", "utf-8")
    (bundle / "index.md").write_bytes(b"# Index\n" + b"x" * PLANTED)
    kb = OKFManager(LocalDocumentStore(bundle), name="KB", refresh_seconds=None)
    tracemalloc.start()
    try:
        rows = kb.browse("")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "note" in json.dumps(rows, default=str)
    assert peak < 2 * MAX_DOCUMENT_BYTES
