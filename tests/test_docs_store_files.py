"""docs/knowledge-store.md's "files on disk" table is what a FileKnowledgeStore really writes.

Real: a :class:`FileKnowledgeStore` in a temporary folder, driven through its public methods;
the folder is listed after each step and compared with the table's rows and their words
("created with the first write", "written only by log()").
"""

from __future__ import annotations

import re
from pathlib import Path

from agentkernel.knowledgestore import FileKnowledgeStore

PAGE = Path(__file__).resolve().parent.parent / "docs" / "knowledge-store.md"


def _table() -> dict[str, str]:
    section = PAGE.read_text(encoding="utf-8").split("## The files on disk", 1)[1]
    rows = re.findall(r"^\| `([^`]+)`[^|]*\| (.*) \|$", section.split("\n## ", 1)[0], re.M)
    return dict(rows)


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_the_table_names_every_file_the_store_writes(tmp_path: Path) -> None:
    table = _table()
    assert {"index.md", "log.md", "overview.md", ".knowledge.lock", ".knowledgestore"} <= set(table)
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.list()
    assert not folder.exists()  # reading creates nothing
    store.create("concept", "bowline", "Bowline", "A loop knot.")
    assert "created with the first write" in table[".knowledge.lock"]
    assert "written with the first write" in table[".knowledgestore"]
    first = _files(folder)
    assert {".knowledge.lock", ".knowledgestore", "index.md", "concepts/bowline.md"} <= first
    assert first - {"concepts/bowline.md"} <= set(table), first  # each root file is a row
    store.create("entity", "moon", "Moon", "Pulls the tides. See [[concept/bowline]].")
    store.supersede("concept/bowline", "entity/moon", "merged")
    assert "log.md" not in _files(folder)  # the store's own changes are not logged
    assert "written only by `log()`" in table["log.md"]
    store.log("ingest", "Read the knot book", ["concept/bowline"])
    store.write_overview("Knots and tides.")
    store.close()
    log = (folder / "log.md").read_text(encoding="utf-8")
    assert log.startswith("# Knowledge Base Log\n\n## ")
    assert "* **ingest**: Read the knot book — pages: [concept/bowline](concepts/bowline.md)" in log
    written = _files(folder)
    pages = {f for f in written if "/" in f}
    assert {".knowledge.lock", ".knowledgestore", "index.md", "log.md", "overview.md"} <= written
    assert written - pages <= set(table), written - pages - set(table)
    folders = {f.split("/")[0] for f in pages}
    row = next(
        r for r in PAGE.read_text(encoding="utf-8").splitlines() if r.startswith("| `concepts/")
    )
    assert folders <= set(re.findall(r"`(\w+)/", row.split("|")[1])), folders
