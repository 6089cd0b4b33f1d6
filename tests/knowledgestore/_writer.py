"""A writer process for the concurrency tests.

Run from the repository as ``python -m tests.knowledgestore._writer KIND PATH PREFIX COUNT
[MODE]``, KIND being ``file``, ``sqlite`` or ``postgresql`` (PATH: the database's URL):

- ``create`` (the default): create and log COUNT pages ``concept/PREFIX-N``;
- ``edit``: COUNT times, add the line ``PREFIX N.`` before ``END.`` in ``concept/shared``;
- ``stream``: create pages ``concept/PREFIX-N`` with a 200 KB body until killed, printing each
  id once the store has acknowledged it;
- ``hang``: create ``concept/PREFIX-0``, but stop inside the atomic write, after the temporary
  file is written and before the rename: print ``temp <path>`` and wait for a line on stdin
  (the test kills the process there, or lets it finish);
- ``hang-raw``: the same stop in a bare atomic write of PATH (no store, no lock).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStore, SQLiteKnowledgeStore
from agentkernel.storage import fs as _fs


def _stop_before_rename() -> None:
    rename = os.replace

    def paused(source: Any, target: Any) -> None:
        print(f"temp {source}", flush=True)
        sys.stdin.readline()
        rename(source, target)

    _fs.os.replace = paused  # type: ignore[attr-defined]


def open_kind(kind: str, path: str | Path) -> KnowledgeStore:
    """The store of ``kind`` at ``path`` (a folder, a SQLite file or a PostgreSQL URL)."""
    if kind == "file":
        return FileKnowledgeStore(path)
    if kind == "postgresql":
        from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore

        return PostgreSQLKnowledgeStore(str(path))
    return SQLiteKnowledgeStore(path)


def main() -> None:
    kind, path, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "create"
    if mode == "hang-raw":
        _stop_before_rename()
        _fs.atomic_write(Path(path), f"Written by {prefix}.\n")
        return
    store = open_kind(kind, path)
    if mode == "hang":
        _stop_before_rename()
        store.create("concept", f"{prefix}-0", f"{prefix} 0", "A page.")
    elif mode == "edit":
        for n in range(count):
            store.edit("concept/shared", "END.", f"{prefix} {n}.\nEND.")
    elif mode == "stream":
        body = "Filler text for a long page. " * 7000
        for n in range(count):
            page_id = store.create("concept", f"{prefix}-{n}", f"{prefix} {n}", body)
            print(page_id, flush=True)
    else:
        for n in range(count):
            page_id = store.create(
                "concept", f"{prefix}-{n}", f"{prefix} {n}", f"Page {n} of {prefix}."
            )
            store.log("ingest", f"Created {prefix} {n}", [page_id])
    store.close()


if __name__ == "__main__":
    main()
