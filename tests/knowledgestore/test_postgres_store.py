"""The PostgreSQL store's own promises: many writers, a retried commit, who wrote, a reader role.

Real: a PostgreSQL 15 server on 127.0.0.1 (``tests/support/fixtures_postgres.py``), each test
in a schema of its own; the writers are real processes (``tests.knowledgestore._pg_writer``),
each with two threads and a connection per thread; the reader is a real login role with only
the privileges the docs grant it; ``agentkernel-kb store serve postgresql://...`` runs as a
subprocess spoken to by the official MCP client over stdio; "without psycopg" is a fresh
interpreter whose import system refuses psycopg.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore import PostgreSQLKnowledgeStore, StoreAccessError
from agentkernel.knowledgestore.locations import open_store
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageRecord, PageWrite
from agentkernel.knowledgestore.postgres_store import WRITE_LOCK_KEY, PostgreSQLPageBackend
from tests.support import REPO, require_extra
from tests.support.fixtures_postgres import PostgresServer

READER = "kb_store_reader"


@pytest.fixture
def schema() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def url(postgres_server: PostgresServer, schema: str) -> str:
    return postgres_server.schema_url(schema)


def _page(slug: str, content: str) -> PageRecord:
    return PageRecord(f"concept/{slug}", "concept", slug, slug.title(), {}, content)


def test_8_writers_in_4_processes_on_20_pages_lose_and_double_nothing(url: str) -> None:
    store = PostgreSQLKnowledgeStore(url)
    for n in range(20):
        store.create("concept", f"page-{n}", f"Page {n}", "Edits:\nEND.")
    rounds = 30
    command = [sys.executable, "-m", "tests.knowledgestore._pg_writer", url]
    writers = [
        subprocess.Popen(
            [*command, f"p{p}", "2", str(rounds), "20"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(4)
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=600)
        assert writer.returncode == 0, errors

    names = [f"p{p}-{t}" for p in range(4) for t in range(2)]
    for n in range(20):
        page = store.read(f"concept/page-{n}")
        assert page is not None
        lines = page.content.splitlines()
        assert lines[0] == "Edits:" and lines[-1] == "END."
        for name in names:  # each writer's edits of this page, once each, in its order
            mine = [line for line in lines if line.startswith(f"{name} ")]
            assert mine == [f"{name} {r}." for r in range(n, rounds, 20)]
        assert len(lines) == 2 + sum(len(range(n, rounds, 20)) for _ in names)
    store.close()


def test_a_commit_sent_again_applies_once(url: str) -> None:
    backend = PostgreSQLPageBackend(url)
    commit = Commit(
        pages=(PageWrite("concept/tides", _page("tides", "Water."), None),),
        log=LogEntry("2026-12-07", "ingest", "Tides", ("concept/tides",)),
    )
    first = backend.commit(commit)
    again = backend.commit(commit)  # its answer was lost: the same commit, sent again

    assert again == first
    assert len(backend.recent_log(10)) == 1
    other = PostgreSQLPageBackend(url)
    assert other.poll() == {"concept/tides": first["concept/tides"]}
    backend.close()
    other.close()


def test_a_stale_write_is_a_conflict_naming_the_page_and_changes_nothing(url: str) -> None:
    mine, theirs = PostgreSQLPageBackend(url), PostgreSQLPageBackend(url)
    tokens = mine.commit(Commit(pages=(PageWrite("concept/tides", _page("tides", "A."), None),)))
    token = tokens["concept/tides"]
    theirs.commit(Commit(pages=(PageWrite("concept/tides", _page("tides", "B."), token),)))

    stale = Commit(pages=(PageWrite("concept/tides", _page("tides", "C."), token),))
    with pytest.raises(WriteConflictError) as conflict:
        mine.commit(stale)
    assert conflict.value.path == "concept/tides"
    [(record, _)] = mine.read(["concept/tides"]).values()
    assert record.content == "B."
    mine.close()
    theirs.close()


def test_the_store_keeps_who_wrote_each_page_and_log_entry(
    url: str, postgres_server: PostgresServer, schema: str
) -> None:
    alice = PostgreSQLKnowledgeStore(url, author="alice")
    bob = PostgreSQLKnowledgeStore(url, author="bob")
    alice.create("concept", "tides", "Tides", "Water moves.")
    alice.log("ingest", "Tides", ["concept/tides"])
    bob.edit("concept/tides", "moves", "rises")
    bob.log("update", "Tides rise", ["concept/tides"])

    backend = bob.backend
    assert isinstance(backend, PostgreSQLPageBackend)
    assert backend.author_of("concept/tides") == "bob"
    with psycopg.connect(postgres_server.conninfo()) as conn:
        rows = conn.execute(f'SELECT author FROM "{schema}".log ORDER BY seq').fetchall()
    assert [author for (author,) in rows] == ["alice", "bob"]
    alice.close()
    bob.close()


def _reader_grants(schema: str) -> list[str]:
    """The grants docs/knowledge-store.md gives the store's read-only role."""
    return [
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER}') "
        f"THEN CREATE ROLE {READER} LOGIN; END IF; END $$",
        f"ALTER ROLE {READER} SET default_transaction_read_only = on",
        f"GRANT CONNECT ON DATABASE postgres TO {READER}",
        f'GRANT USAGE ON SCHEMA "{schema}" TO {READER}',
        f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {READER}',
    ]


def test_a_reader_role_reads_the_store_and_its_writes_are_refused(
    url: str, postgres_server: PostgresServer, schema: str
) -> None:
    writer = PostgreSQLKnowledgeStore(url)
    writer.create("concept", "tides", "Tides", "Water moves.")
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        for statement in _reader_grants(schema):
            conn.execute(statement)
    reader = PostgreSQLKnowledgeStore(postgres_server.schema_url(schema, role=READER))

    assert [hit.id for hit in reader.search("water")] == ["concept/tides"]
    with pytest.raises(StoreAccessError, match="may not write"):
        reader.create("concept", "moon", "Moon", "Rock.")
    with pytest.raises(StoreAccessError, match="may not write"):
        reader.edit("concept/tides", "moves", "rises")
    assert [info.id for info in writer.list()] == ["concept/tides"]
    page = writer.read("concept/tides")
    assert page is not None and page.content == "Water moves."
    assert writer.recent_log(10) == reader.recent_log(10)
    reader.close()
    writer.close()


def test_reading_a_database_without_the_store_creates_nothing(
    url: str, postgres_server: PostgresServer, schema: str
) -> None:
    store = PostgreSQLKnowledgeStore(url)
    assert store.list() == [] and store.search("tides") == [] and store.recent_log() == []
    with psycopg.connect(postgres_server.conninfo()) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchone()
    assert tables == (0,)
    store.close()


def test_a_postgresql_uri_opens_the_store(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, PostgreSQLKnowledgeStore)
    store.create("concept", "tides", "Tides", "Water.")
    assert "user" not in repr(store) and "postgres@" not in repr(store)
    assert [info.id for info in PostgreSQLKnowledgeStore(url).list()] == ["concept/tides"]
    store.close()


def test_store_serve_takes_a_postgresql_uri_and_never_shows_its_password(
    url: str, tmp_path: Path
) -> None:
    require_extra("mcp", "mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with_password = url.replace("postgres@", "postgres:s3cret-pw@", 1)
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "agentkernel-kb"),
        args=["store", "serve", with_password, "--writable"],
        env=dict(os.environ),
    )
    errors = tmp_path / "stderr.txt"

    async def run() -> str:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                made = await session.call_tool(
                    "knowledge_create",
                    {"type": "concept", "slug": "tides", "title": "Tides", "content": "Water."},
                )
                return " ".join(getattr(part, "text", "") for part in made.content)

    answer = anyio.run(run)
    assert "concept/tides" in answer, answer
    assert [info.id for info in PostgreSQLKnowledgeStore(url).list()] == ["concept/tides"]
    said = errors.read_text()
    assert "PostgreSQL database postgresql://127.0.0.1:" in said, said
    assert "s3cret-pw" not in said


def _cut_every_other_connection(server: PostgresServer) -> int:
    """Terminate every client connection but this one, as a server restart or a pooler does."""
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        cut = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()
    return int(cut[0]) if cut else 0


def test_a_connection_cut_between_calls_is_replaced_and_nothing_is_lost(
    url: str, postgres_server: PostgresServer
) -> None:
    store = PostgreSQLKnowledgeStore(url)
    store.create("concept", "tides", "Tides", "Water moves.")
    assert _cut_every_other_connection(postgres_server) >= 1
    assert [hit.id for hit in store.search("water")] == ["concept/tides"]
    _cut_every_other_connection(postgres_server)
    store.edit("concept/tides", "moves", "rises")
    _cut_every_other_connection(postgres_server)
    store.create("concept", "moon", "Moon", "It pulls the [tides](concept/tides).")

    again = PostgreSQLKnowledgeStore(url)
    page = again.read("concept/tides")
    assert page is not None and page.content == "Water rises."
    assert [info.id for info in again.list()] == ["concept/moon", "concept/tides"]
    store.close()
    again.close()


def test_a_configured_store_with_a_postgresql_uri_serves_the_roles(url: str) -> None:
    from agentkernel.roles import OKFCapability

    stores = {"team": {"uri": url, "consumer": ["reader"], "producer": ["writer"]}}
    okf = OKFCapability.from_config({"okf": {"stores": stores}})
    assert okf is not None
    writer = {t.__name__: t for t in okf.tools_for("writer")}
    reader = {t.__name__: t for t in okf.tools_for("reader")}

    assert writer["knowledge_create"]("concept", "tides", "Tides", "Twice a day.") == (
        "Created concept/tides."
    )
    assert "concept/tides" in reader["knowledge_search"]("twice")
    assert isinstance(okf.stores.store("team"), PostgreSQLKnowledgeStore)
    assert [info.id for info in PostgreSQLKnowledgeStore(url).list()] == ["concept/tides"]


def test_without_psycopg_opening_the_store_names_the_extra() -> None:
    blocked = """
import sys

class _NoPsycopg:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "psycopg":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoPsycopg())
from agentkernel.knowledgestore import PostgreSQLKnowledgeStore
try:
    PostgreSQLKnowledgeStore("postgresql://kb@db.internal/knowledge")
except ImportError as exc:
    print(type(exc).__name__)
    print(exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, check=True
    )
    kind, message = done.stdout.splitlines()[:2]
    assert kind == "MissingExtraError"
    assert "pip install 'agentkernel[postgres]'" in message


def test_a_writer_that_waits_past_the_statement_timeout_gives_up_and_changes_nothing(
    url: str, postgres_server: PostgresServer
) -> None:
    store = PostgreSQLKnowledgeStore(url, statement_timeout=0.5)
    store.create("concept", "tides", "Tides", "Water moves.")
    with psycopg.connect(postgres_server.conninfo()) as holder:  # a writer that never ends
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        with pytest.raises(StoreAccessError, match="took too long"):
            store.edit("concept/tides", "moves", "rises")
        holder.rollback()
    page = store.read("concept/tides")
    assert page is not None and page.content == "Water moves."
    store.edit("concept/tides", "moves", "rises")  # the lock is free again
    page = PostgreSQLKnowledgeStore(url).read("concept/tides")
    assert page is not None and page.content == "Water rises."
    store.close()


def test_rows_changed_by_another_tool_on_another_search_path_show_up(
    url: str, postgres_server: PostgresServer, schema: str
) -> None:
    store = PostgreSQLKnowledgeStore(url)
    store.create("concept", "tides", "Tides", "Water moves.")
    store.create("concept", "waves", "Waves", "Wind on water.")
    assert len(store.search("water")) == 2
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as other:  # public path
        other.execute(f'DELETE FROM "{schema}".pages WHERE id = %s', ("concept/waves",))
        other.execute(
            f"UPDATE \"{schema}\".pages SET content = 'Water rises.' WHERE id = 'concept/tides'"
        )
    assert [info.id for info in store.list()] == ["concept/tides"]
    page = store.read("concept/tides")
    assert page is not None and page.content == "Water rises."
    store.close()
