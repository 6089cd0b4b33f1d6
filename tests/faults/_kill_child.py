"""A writer process that kills itself (``os._exit(9)``, as ``kill -9`` leaves it) at step N.

Run as ``python -m tests.faults._kill_child SPEC_JSON``. SPEC names the store (``kind``:
``file``, ``bundle`` on a folder, ``sqlite``, each with its ``path``; ``s3`` with ``bucket``,
``prefix`` and ``endpoint``) and the number of steps to take before dying (``kill_after``;
``-1``: never). It then runs :data:`SCRIPT`,
one operation after the other, printing ``ok <n>`` (flushed) after each one returns: an
operation printed is acknowledged, one not printed is not.

A step is one call of the store's writing primitives: on the file stores, each call of the
document store's ``write_if``, ``delete_if``, ``_write_record`` and ``_delete_record`` (every
byte the store changes goes through one of them); on SQLite, each row written (``_put_row``) and
each commit. The child wraps them on their classes, in this process only: no hook is in the
library. ``kill_after=-1`` runs the script whole and prints how many steps it took.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStore,
    NewPage,
    SQLiteKnowledgeStore,
)
from agentkernel.storage.local import LocalDocumentStore

BATCH = [
    NewPage("concept", "moon", "Moon", "Pulls the [sea](concept/sea) twice a day."),
    NewPage("concept", "sea", "Sea", "Rises under the [moon](concept/moon)."),
    NewPage("entity", "brest", "Brest", "A harbour with large tides."),
]
"""The batch of the script: three pages, two linking to each other."""

SCRIPT: list[tuple[str, tuple[Any, ...]]] = [
    ("create_many", (BATCH,)),
    ("create", ("concept", "spring-tide", "Spring tide", "When [moon](concept/moon) and sun.")),
    ("edit", ("concept/seed", "Seed body.", "Seed body, edited once.")),
    ("log", ("update", "marker-entry", ["concept/seed"])),
    ("supersede", ("concept/old", "concept/seed", "merged")),
]
"""What the child does, in order: every kind of write, each an operation a caller would retry."""


def open_store(spec: dict[str, Any]) -> KnowledgeStore:
    """The store SPEC names, a new object."""
    kind = spec["kind"]
    if kind == "file":
        return FileKnowledgeStore(spec["path"])
    if kind == "bundle":
        return BundleKnowledgeStore(LocalDocumentStore(spec["path"]))
    if kind == "sqlite":
        return SQLiteKnowledgeStore(spec["path"])
    from agentkernel.storage.s3 import S3DocumentStore

    return BundleKnowledgeStore(
        S3DocumentStore(spec["bucket"], spec["prefix"], endpoint_url=spec["endpoint"]),
        refresh_seconds=0,
    )


def seed(spec: dict[str, Any]) -> None:
    """The pages the script changes, written (and acknowledged) before it runs."""
    store = open_store(spec)
    store.create("concept", "seed", "Seed", "Seed body.")
    store.create("concept", "old", "Old", "Said by [seed](concept/seed) first.")
    store.close()


def _primitives(kind: str) -> list[tuple[type, str]]:
    if kind == "sqlite":
        from agentkernel.knowledgestore import sqlite_store

        return [(sqlite_store.SQLitePageBackend, "_put_row"), (_Commits, "commit")]
    if kind == "s3":
        from agentkernel.storage.s3 import S3DocumentStore

        documents: type = S3DocumentStore
    else:
        documents = LocalDocumentStore
    names = ("write_if", "delete_if", "_write_record", "_delete_record")
    return [(documents, name) for name in names if hasattr(documents, name)]


class _Commits:
    """Stands for SQLite's commit, counted through the backend's ``writing`` (see ``_count``)."""

    def commit(self) -> None:
        """Never called: the step is counted when a ``writing`` block ends."""


def _count(kill_after: int) -> Callable[[], None]:
    steps = [0]

    def step() -> None:
        steps[0] += 1
        if steps[0] == kill_after + 1:
            os._exit(9)  # before this step: as kill -9, nothing flushed, nothing cleaned

    step.steps = steps  # type: ignore[attr-defined]
    return step


def _wrap(owner: type, name: str, step: Callable[[], None]) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        step()
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


def _wrap_sqlite_commits(step: Callable[[], None]) -> None:
    """Count each transaction's commit as a step: die just before it (rows written, not kept)."""
    import contextlib

    from agentkernel.knowledgestore import sqlite_store

    original = sqlite_store.SQLitePageBackend.writing

    @contextlib.contextmanager
    def write(self: Any) -> Any:
        with original(self):
            yield
            step()

    sqlite_store.SQLitePageBackend.writing = write  # type: ignore[method-assign]


def main() -> None:
    spec = json.loads(sys.argv[1])
    step = _count(int(spec["kill_after"]))
    for owner, name in _primitives(spec["kind"]):
        if owner is _Commits:
            _wrap_sqlite_commits(step)
        else:
            _wrap(owner, name, step)
    store = open_store(spec)
    for number, (operation, arguments) in enumerate(SCRIPT):
        getattr(store, operation)(*arguments)
        print(f"ok {number}", flush=True)
    print(f"steps {step.steps[0]}", flush=True)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
