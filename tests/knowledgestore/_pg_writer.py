"""A writer process for the PostgreSQL store's many-writers test.

Run from the repository as ``python -m tests.knowledgestore._pg_writer URL NAME THREADS ROUNDS
PAGES``: THREADS writers (threads, each with its own store, its own connection), each ROUNDS
times adding the line ``NAME-T N.`` before ``END.`` in page ``concept/page-(N mod PAGES)``.
"""

from __future__ import annotations

import sys
import threading

from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore


def _write(url: str, writer: str, rounds: int, pages: int) -> None:
    store = PostgreSQLKnowledgeStore(url, author=writer)
    try:
        for n in range(rounds):
            store.edit(f"concept/page-{n % pages}", "END.", f"{writer} {n}.\nEND.")
    finally:
        store.close()


def main() -> None:
    url, name = sys.argv[1], sys.argv[2]
    threads, rounds, pages = (int(a) for a in sys.argv[3:6])
    failures: list[BaseException] = []

    def run(t: int) -> None:
        try:
            _write(url, f"{name}-{t}", rounds, pages)
        except BaseException as exc:  # reported by the exit status
            failures.append(exc)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]


if __name__ == "__main__":
    main()
