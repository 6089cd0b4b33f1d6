"""Many processes edit the same pages of one BundleKnowledgeStore: no acknowledged edit is lost.

Real: four Python processes (``tests.knowledgestore._cas_editor``), each with its own store
object, make 50 edits each of the same 10 pages, through a real ``LocalDocumentStore`` folder
(compare-and-swap under a lock file) and through a real ``S3DocumentStore`` on the moto S3 API
server on 127.0.0.1 (conditional ``PUT`` with ``If-Match``). The S3 server of this module
answers one request at a time: real S3 decides a conditional write atomically, while moto's
threaded server checks the condition and stores the object in two steps another request can
run between; served one at a time, moto is as atomic as S3 is.

Every edit answered "ok" must be in the final page, exactly once; every edit answered with the
retryable ``PageConflictError`` must not be; and every page must still read as a whole page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkernel.knowledgestore import BundleKnowledgeStore, PageConflictError
from agentkernel.storage.base import DocumentStore
from agentkernel.storage.local import LocalDocumentStore
from tests.support import REPO, require_extra
from tests.support.fixtures_s3 import _free_port, _ready, _stop

WORKERS = 4
EDITS = 50
PAGES = 10

_SERIAL_SERVER = """
import sys
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
run_simple("127.0.0.1", int(sys.argv[1]), DomainDispatcherApplication(create_backend_app),
           threaded=False)
"""


@pytest.fixture
def serial_s3(s3_endpoint: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A moto S3 API server answering one request at a time, with a fresh bucket."""
    boto3 = require_extra("boto3", "aws")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "moto.log").open("ab") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", _SERIAL_SERVER, str(port)], stdout=log, stderr=log
        )
    try:
        deadline = time.monotonic() + 60
        while not _ready(url):
            assert server.poll() is None and time.monotonic() < deadline, "moto did not start"
            time.sleep(0.1)
        bucket = f"ak-cas-{uuid.uuid4().hex[:12]}"
        client = boto3.client("s3", endpoint_url=url)
        client.create_bucket(Bucket=bucket)
        client.close()
        yield bucket, url
    finally:
        _stop(server)


def _seed(documents: DocumentStore) -> None:
    store = BundleKnowledgeStore(documents)
    for n in range(PAGES):
        store.create("concept", f"p{n}", f"Page {n}", "Start.\n\nThe end.")


def _run(where: str) -> list[dict[str, Any]]:
    editor = [sys.executable, "-m", "tests.knowledgestore._cas_editor", where]
    workers = [
        subprocess.Popen(
            [*editor, str(w), str(EDITS), str(PAGES)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for w in range(WORKERS)
    ]
    results: list[dict[str, Any]] = []
    for worker in workers:
        out, errors = worker.communicate(timeout=900)
        assert worker.returncode == 0, errors
        results.extend(json.loads(line) for line in out.splitlines())
    return results


def _verify(documents: DocumentStore, results: list[dict[str, Any]]) -> None:
    assert len(results) == WORKERS * EDITS
    assert [r for r in results if r["outcome"] not in ("ok", "conflict")] == []
    store = BundleKnowledgeStore(documents)
    assert [i.id for i in store.list()] == [f"concept/p{n}" for n in sorted(range(PAGES), key=str)]
    lost, resurrected = [], []
    for n in range(PAGES):
        page = store.read(f"concept/p{n}")
        assert page is not None and page.title == f"Page {n}"  # not torn: it parses whole
        assert page.content.startswith("Start.\n") and page.content.endswith("The end.")
        lines = page.content.splitlines()
        for result in results:
            if result["page"] != f"concept/p{n}":
                continue
            count = lines.count(f"- {result['marker']}")
            if result["outcome"] == "ok" and count != 1:
                lost.append(result["marker"])
            if result["outcome"] == "conflict" and count:
                resurrected.append(result["marker"])
    assert lost == [] and resurrected == []
    acknowledged = sum(r["outcome"] == "ok" for r in results)
    assert acknowledged > 0
    index = documents.read("index.md").decode("utf-8")
    assert all(f"concepts/p{n}.md" in index for n in range(PAGES))


def test_four_processes_editing_ten_pages_of_a_folder_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    _seed(LocalDocumentStore(folder))
    results = _run(str(folder))
    _verify(LocalDocumentStore(folder), results)


def test_four_processes_editing_ten_pages_on_s3_lose_nothing(
    serial_s3: tuple[str, str],
) -> None:
    from agentkernel.storage.s3 import S3DocumentStore

    bucket, url = serial_s3
    _seed(S3DocumentStore(bucket, "shared/knowledge", endpoint_url=url))
    results = _run(f"s3://{bucket}/shared/knowledge@{url}")
    _verify(S3DocumentStore(bucket, "shared/knowledge", endpoint_url=url), results)


def test_a_lost_race_is_a_retryable_error_naming_the_page(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    documents = LocalDocumentStore(folder)
    _seed(documents)
    store = BundleKnowledgeStore(documents, refresh_seconds=0)  # sees every write at once

    class Rival(LocalDocumentStore):
        """A document store on which another writer always wins the race for p0."""

        def write_if(self, path: str, data: bytes, token: str | None) -> Any:
            if path == "concepts/p0.md":
                documents.write(path, documents.read(path) + b"\n")  # the rival's write
            return super().write_if(path, data, token)

    racing = BundleKnowledgeStore(Rival(folder))
    with pytest.raises(PageConflictError, match=r"'concept/p0'.*retry") as refused:
        racing.edit("concept/p0", "Start.", "Start.\n- lost")
    assert refused.value.page == "concept/p0" and refused.value.retryable
    page = store.read("concept/p0")
    assert page is not None and "- lost" not in page.content
    racing.edit("concept/p1", "Start.", "Start.\n- kept")  # another page is not contended
    page = store.read("concept/p1")
    assert page is not None and "- kept" in page.content
