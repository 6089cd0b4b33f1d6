"""A batch whose writer may still be alive (another host) is left alone until it is old.

Real: a child Python process (``tests.faults._kill_child``) writing a ``FileKnowledgeStore``
folder dies with ``os._exit(9)`` inside its batch (the record and one page written). Its record
is then made to say what a writer on another host leaves (another host's tag: its process
can't be asked about), first young, then over a minute old, by rewriting the record file as
that writer would have. Readers and writers in this process use new store objects.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agentkernel.knowledgestore import FileKnowledgeStore
from tests.faults import _kill_child
from tests.faults.test_kill_writes import BATCH_IDS, RECORDS_FOLDER, _child


def _record(folder: Path) -> Path:
    records = list((folder / RECORDS_FOLDER).iterdir())
    assert len(records) == 1, records
    return records[0]


def _as_from_another_host(record: Path, age: float) -> None:
    data = json.loads(record.read_text())
    data.update(host="0badf00d", pid=1, at=time.time() - age)
    record.write_text(json.dumps(data))


def test_a_batch_of_another_host_is_hidden_then_undone_once_old(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    spec = {"kind": "file", "path": str(folder)}
    _kill_child.seed(spec)
    acked, _ = _child(spec, 2)  # dies after the record and the batch's first page
    assert acked == set()
    assert (folder / "concepts" / "moon.md").is_file()  # the half batch is on disk
    record = _record(folder)
    _as_from_another_host(record, age=5)

    store = FileKnowledgeStore(folder)
    assert all(store.read(i) is None for i in BATCH_IDS)  # a reader never sees half a batch
    store.create("concept", "neap-tide", "Neap tide", "Small tides.")  # a writer, meanwhile
    assert record.is_file() and (folder / "concepts" / "moon.md").is_file()  # left alone
    assert "concepts/moon.md" not in (folder / "index.md").read_text()

    _as_from_another_host(record, age=120)  # its writer has had a minute: it is gone
    later = FileKnowledgeStore(folder)
    later.log("update", "a write finishes the batch")
    assert not record.exists() and not (folder / "concepts" / "moon.md").exists()
    assert all(later.read(i) is None for i in BATCH_IDS)
    assert later.create_many(_kill_child.BATCH) == BATCH_IDS  # the caller's retry succeeds
    index = (folder / "index.md").read_text()
    assert all(f"({rel})" in index for rel in ("concepts/moon.md", "concepts/sea.md"))
