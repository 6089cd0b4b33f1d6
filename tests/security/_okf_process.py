"""Writer and reader processes for the durability tests (run as ``python -m``).

``python -m tests.security._okf_process write LOCATION COUNT TAG`` calls the real ``write_kb``
tool COUNT times on the OKF bundle at LOCATION (a directory or ``s3://bucket/prefix``; the S3
endpoint comes from ``AK_TEST_S3_ENDPOINT``), every note titled ``Shared note <i>`` so that
concurrent writers compete for the same names, and prints one JSON line per answer. With
``AK_TEST_PAUSE_IN_WRITE=1`` it stops inside its first write, after the temporary file is
flushed and before it is renamed into place, prints ``PAUSED`` and waits for a line on stdin:
the point where a ``kill -9`` leaves a temporary file behind.

``python -m tests.security._okf_process read LOCATION`` opens the bundle afresh and prints
one JSON object: every concept id with its whole text, the store's listing, and the
diagnostics.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.storage.base import DocumentStore


def _open(location: str) -> OKFManager:
    endpoint = os.environ.get("AK_TEST_S3_ENDPOINT")
    kwargs: dict[str, Any] = {"endpoint_url": endpoint} if location.startswith("s3://") else {}
    return OKFManager(DocumentStore.from_uri(location, **kwargs), name="KB", refresh_seconds=None)


def _pause_in_first_write() -> None:
    real = os.fsync
    state = {"paused": False}

    def fsync(fd: int) -> None:
        real(fd)
        if not state["paused"]:  # the first fsync is the temporary file's, before the rename
            state["paused"] = True
            print("PAUSED", flush=True)
            sys.stdin.readline()

    os.fsync = fsync


def write(location: str, count: int, tag: str) -> None:
    kb = _open(location)
    tools = {tool.__name__: tool for tool in KnowledgeBuilder([kb]).build()}
    if os.environ.get("AK_TEST_PAUSE_IN_WRITE"):
        _pause_in_first_write()
    for number in range(count):
        text = f"Shared note {number}\nWritten by {tag}, number {number}."
        answer = tools["write_kb"]("KB", text=text)
        print(json.dumps({"tag": tag, "number": number, "answer": answer}), flush=True)


def read(location: str) -> None:
    kb = _open(location)
    listing = sorted(f.path for f in kb.store.walk())
    ids = [path[:-3] for path in listing if path.endswith(".md")]
    texts = {str(r["metadata"]["id"]): str(r["text"]) for r in kb.fetch(ids)}
    print(json.dumps({"texts": texts, "listing": listing, "diagnostics": kb.diagnostics}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        read(sys.argv[2])
