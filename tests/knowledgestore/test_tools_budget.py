"""The curated store's tools within the answer budget, on the shipped stores.

What is real: a ``FileKnowledgeStore`` folder and a ``SQLiteKnowledgeStore`` database in a
temporary directory, a ``PostgreSQLKnowledgeStore`` on a PostgreSQL 15 server on 127.0.0.1, and the
``knowledge_*`` tools called as a framework calls them; the
agent's reading is done by following the ``[cut]`` notes' words.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS
from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStore,
    SQLiteKnowledgeStore,
    create_knowledge_tools,
)

Tools = dict[str, Callable[..., str]]
_READ_ON = re.compile(r'knowledge_read\(page="([^"]+)"\)')
_FRAME = re.compile(r"\A\[[^\]\n]+#offset=(\d+)\] characters \d+ to \d+ of \d+ of [^\n]*:\n")


@pytest.fixture(params=["file", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> KnowledgeStore:
    if request.param == "file":
        return FileKnowledgeStore(tmp_path / "knowledge")
    if request.param == "postgresql":
        from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore

        server = request.getfixturevalue("postgres_server")
        return PostgreSQLKnowledgeStore(server.schema_url(f"t{uuid.uuid4().hex[:12]}"))
    return SQLiteKnowledgeStore(tmp_path / "knowledge.db")


def _tools(store: KnowledgeStore, **options: object) -> Tools:
    return {t.__name__: t for t in create_knowledge_tools(store, **options)}  # type: ignore[arg-type]


def _read_whole(read: Callable[..., str], page: str) -> str:
    parts: list[str] = []
    answer = read(page)
    while True:
        assert len(answer) <= DEFAULT_ANSWER_CHARS
        body, cut, note = answer.rpartition("\n[cut] ")
        if not cut:
            body, note = answer, ""
        if parts:
            frame = _FRAME.match(body)
            assert frame is not None and int(frame.group(1)) == sum(map(len, parts))
            body = body[frame.end() :]
        parts.append(body)
        if not note:
            return "".join(parts)
        match = _READ_ON.search(note)
        assert match is not None, note
        answer = read(match.group(1))


def test_a_long_page_is_read_whole_by_following_the_notes(store: KnowledgeStore) -> None:
    tools = _tools(store)
    content = "".join(f"Paragraph {n}: the tide turns twice a day.\n\n" for n in range(3_000))
    created = tools["knowledge_create"]("concept", "tides", "Tides", content)
    assert created.startswith("Created"), created
    first = tools["knowledge_read"]("concept/tides")
    assert len(first) <= DEFAULT_ANSWER_CHARS and "[cut] " in first
    whole = _read_whole(tools["knowledge_read"], "concept/tides")
    unbudgeted = _tools(store, answer_chars=None)["knowledge_read"]("concept/tides")
    assert whole == unbudgeted and content.strip() in whole


def test_a_long_catalog_reads_on_as_the_index_page(store: KnowledgeStore) -> None:
    tools = _tools(store)
    for n in range(400):
        title = f"Harbour note number {n} " + "with a long descriptive title " * 3
        done = tools["knowledge_create"]("concept", f"note-{n}", title, "A note.")
        assert done.startswith("Created"), done
    catalog = tools["knowledge_index"]()
    assert len(catalog) <= DEFAULT_ANSWER_CHARS and 'knowledge_read(page="index#offset=' in catalog
    whole = _read_whole(tools["knowledge_read"], "index")
    assert whole == _tools(store, answer_chars=None)["knowledge_index"]()
    assert all(f"concept/note-{n}" in whole for n in range(400))
