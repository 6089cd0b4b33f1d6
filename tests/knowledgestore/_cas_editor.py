"""An editor process for the many-writers test of ``BundleKnowledgeStore``.

Run from the repository as ``python -m tests.knowledgestore._cas_editor WHERE WORKER EDITS
PAGES``: WHERE is a folder (a ``LocalDocumentStore``) or ``s3://bucket/prefix@endpoint``.
The worker makes EDITS edits, the n-th one of page ``concept/p<(n + WORKER) % PAGES>``, each
adding the line ``- w<WORKER>-e<n>`` below ``Start.``. It prints one JSON line per edit:
``{"marker": ..., "page": ..., "outcome": "ok" | "conflict" | "error: ..."}``.
"""

from __future__ import annotations

import json
import sys

from agentkernel.knowledgestore import BundleKnowledgeStore, PageConflictError
from agentkernel.storage.base import DocumentStore


def _documents(where: str) -> DocumentStore:
    if where.startswith("s3://"):
        from agentkernel.storage.s3 import S3DocumentStore

        location, _, endpoint = where.partition("@")
        bucket, _, prefix = location[len("s3://") :].partition("/")
        return S3DocumentStore(bucket, prefix, endpoint_url=endpoint)
    from agentkernel.storage.local import LocalDocumentStore

    return LocalDocumentStore(where)


def main() -> None:
    where, worker, edits, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    store = BundleKnowledgeStore(_documents(where))
    for n in range(edits):
        page = f"concept/p{(n + worker) % pages}"
        marker = f"w{worker}-e{n}"
        try:
            store.edit(page, "Start.", f"Start.\n- {marker}")
            outcome = "ok"
        except PageConflictError:
            outcome = "conflict"
        except Exception as exc:  # reported, and the test fails on it
            outcome = f"error: {type(exc).__name__}: {exc}"
        print(json.dumps({"marker": marker, "page": page, "outcome": outcome}), flush=True)


if __name__ == "__main__":
    main()
