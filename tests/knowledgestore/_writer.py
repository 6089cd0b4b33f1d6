"""A writer process for the concurrency test: creates and logs N pages in a store.

Run as ``python -m tests.knowledgestore._writer KIND PATH PREFIX COUNT`` from the repository.
"""

from __future__ import annotations

import sys

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStore, SQLiteKnowledgeStore


def main() -> None:
    kind, path, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store: KnowledgeStore = (
        FileKnowledgeStore(path) if kind == "file" else SQLiteKnowledgeStore(path)
    )
    for n in range(count):
        page_id = store.create(
            "concept", f"{prefix}-{n}", f"{prefix} {n}", f"Page {n} of {prefix}."
        )
        store.log("ingest", f"Created {prefix} {n}", [page_id])
    store.close()


if __name__ == "__main__":
    main()
