"""``kill -9`` at every step of every kind of write: nothing acknowledged lost, nothing doubled.

Real: a child Python process (``tests.faults._kill_child``) runs a script of writes (a batch
of three pages, a create, an edit, a log entry, a supersede) on a real store: a
``FileKnowledgeStore`` folder, a ``BundleKnowledgeStore`` over a ``LocalDocumentStore`` folder,
a ``BundleKnowledgeStore`` on the moto S3 API server on 127.0.0.1, and a SQLite file. It dies
with ``os._exit(9)`` (no ``finally``, no flush: what ``kill -9`` leaves) just before its Nth
write step, for every N the script has (a dry run counts them). Then this process, with new
store objects, checks what a caller relies on:

* every operation the child acknowledged (printed) is there exactly once, and the pages
  written before it (the seed) are intact; an operation it did not acknowledge is there at
  most once, and the batch all or none (to a reader, before any write);
* no torn page (``check()`` reads every file as a page), ``index.md`` names no missing page;
* running every unacknowledged operation again succeeds (a batch or a create whose pages are
  all there counts as done), after which ``index.md`` lists exactly the pages, no batch
  record is left and no link is broken.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentkernel.knowledgestore import KnowledgeStore, KnowledgeStoreError
from tests.faults import _kill_child
from tests.support import REPO

BATCH_IDS = [f"{p.type}/{p.slug}" for p in _kill_child.BATCH]
_DIRS = {"concept": "concepts", "entity": "entities"}
RECORDS_FOLDER = ".agentkernel-batches"  # where the stores keep batch records (hidden)


def _child(spec: dict[str, Any], kill_after: int) -> tuple[set[int], int | None]:
    """Run the script, dying before step ``kill_after + 1``; the acknowledged ops, the steps."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.faults._kill_child",
            json.dumps({**spec, "kill_after": kill_after}),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if kill_after < 0:
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        assert done.returncode == 9, (kill_after, done.returncode, done.stderr[-3000:])
    acked = {int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("ok ")}
    steps = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("steps ")]
    return acked, steps[0] if steps else None


def _index_rels(spec: dict[str, Any], store: KnowledgeStore) -> set[str] | None:
    """The page files ``index.md`` links to (``None`` for SQLite, which keeps no file)."""
    if spec["kind"] == "sqlite":
        return None
    if spec["kind"] == "s3":
        try:
            text = store.documents.read("index.md").decode()  # type: ignore[attr-defined]
        except FileNotFoundError:
            return set()
    else:
        index = Path(spec["path"]) / "index.md"
        text = index.read_text() if index.exists() else ""
    return set(re.findall(r"\]\(([a-z]+/[a-z0-9-]+\.md)\)", text))


def _rel(page_id: str) -> str:
    page_type, slug = page_id.split("/")
    return f"{_DIRS[page_type]}/{slug}.md"


def _records_left(spec: dict[str, Any], s3_client: Any) -> list[str]:
    if spec["kind"] == "sqlite":
        return []
    if spec["kind"] == "s3":
        listed = s3_client.list_objects_v2(
            Bucket=spec["bucket"], Prefix=f"{spec['prefix']}/{RECORDS_FOLDER}/"
        )
        return [item["Key"] for item in listed.get("Contents", [])]
    folder = Path(spec["path"]) / RECORDS_FOLDER
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def _state(store: KnowledgeStore) -> dict[str, Any]:
    seed = store.read("concept/seed")
    old = store.read("concept/old")
    assert seed is not None and old is not None, "a page acknowledged before the script is gone"
    log = store.recent_log(50)
    return {
        "batch": [store.read(i) is not None for i in BATCH_IDS],
        "create": store.read("concept/spring-tide") is not None,
        "edit": seed.content.count("edited once"),
        "log": sum("marker-entry" in entry for entry in log),
        "supersede": old.status == "superseded",
    }


def _verify(spec: dict[str, Any], acked: set[int], s3_client: Any) -> None:
    store = _kill_child.open_store(spec)
    try:
        state = _state(store)
        # all or none, acknowledged kept, nothing twice
        assert state["batch"] in ([True] * 3, [False] * 3), state
        assert state["edit"] in (0, 1) and state["log"] in (0, 1), state
        for number, applied in enumerate(
            [all(state["batch"]), state["create"], state["edit"], state["log"], state["supersede"]]
        ):
            if number in acked:
                assert applied, (number, state)
        listed = {info.id for info in store.list()}
        assert all(store.read(i) is not None for i in listed)
        assert not any(i in listed for i in BATCH_IDS) or all(i in listed for i in BATCH_IDS)
        assert all(("(" + i + ")" in store.index()) == state["batch"][0] for i in BATCH_IDS)
        on_disk = _index_rels(spec, store)
        if on_disk is not None:
            assert on_disk <= {_rel(i) for i in listed}, (on_disk, listed)  # names no missing page
            assert store.check().unreadable_files == []  # no torn page

        # the caller runs again what was not acknowledged: it succeeds
        for number, (operation, arguments) in enumerate(_kill_child.SCRIPT):
            if number in acked:
                continue
            if operation == "edit" and state["edit"]:
                with pytest.raises(KnowledgeStoreError, match=r"text to replace isn.t in"):
                    store.edit(*arguments)  # done already: the caller is told the text is gone
                continue
            if operation == "log" and state["log"]:
                continue  # an entry made but not acknowledged: logging it again adds one
            if operation == "supersede" and state["supersede"]:
                continue
            getattr(store, operation)(*arguments)

        final = _state(store)
        assert final == {
            "batch": [True] * 3,
            "create": True,
            "edit": 1,
            "log": 1,
            "supersede": True,
        }
        listed = {info.id for info in store.list()}
        assert listed == {"concept/seed", "concept/old", "concept/spring-tide", *BATCH_IDS}
        report = store.check()
        assert report.broken_links == [] and getattr(report, "unreadable_files", []) == []
        on_disk = _index_rels(spec, store)
        if on_disk is not None:
            assert on_disk == {_rel(i) for i in listed}
        assert _records_left(spec, s3_client) == []
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["file", "bundle", "sqlite"])
def test_kill_at_every_step_on_a_local_store(kind: str, tmp_path: Path) -> None:
    def spec(name: str) -> dict[str, Any]:
        path = tmp_path / name / ("kb.db" if kind == "sqlite" else "kb")
        # a LocalDocumentStore opens an existing folder; the others create theirs
        (path if kind == "bundle" else path.parent).mkdir(parents=True)
        return {"kind": kind, "path": str(path)}

    _run_every_kill(spec, None)


def test_kill_at_every_step_on_s3(s3_bucket: str, s3_endpoint: str, s3_client: Any) -> None:
    def spec(name: str) -> dict[str, Any]:
        return {"kind": "s3", "bucket": s3_bucket, "prefix": name, "endpoint": s3_endpoint}

    _run_every_kill(spec, s3_client)


def _run_every_kill(make_spec: Any, s3_client: Any) -> None:
    dry = make_spec(f"dry-{uuid.uuid4().hex[:6]}")
    _kill_child.seed(dry)
    acked, steps = _child(dry, -1)
    assert acked == set(range(len(_kill_child.SCRIPT))) and steps
    _verify(dry, acked, s3_client)
    for kill_after in range(steps):
        spec = make_spec(f"k{kill_after}")
        _kill_child.seed(spec)
        acked, _ = _child(spec, kill_after)
        assert acked != set(range(len(_kill_child.SCRIPT))), "the child was not killed"
        _verify(spec, acked, s3_client)
