"""The workloads of the backends bench: per backend, the raw SDK call beside the tool call.

Each ``*_cases`` function is a context manager: it starts what the backend needs (through
``_backends_servers``), loads a small data set, builds the manager and its tools, and yields
:class:`Workload` objects whose arms do the same logical call. ``raw`` is the SDK call a user
would write without agentkernel, returning the SDK's rows; ``manager`` is the backend method;
``tool`` is the ``KnowledgeBuilder`` tool (returning the string the agent reads). Reads use
the tools' default ``limit=3`` and raw asks for the same three rows.

"distinct" workloads give every call a statement never seen before (a literal that changes
nothing in the result), as an agent's statements mostly are; "repeated" ones send one
statement over and over, which the SQL guard's verdict cache serves after the first call.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _backends_servers import bolt, minilm, postgres, trino_server
from _backends_timing import Workload

ROWS = 2000
LIMIT = 3
SQL_BASE = "SELECT client_name, status, region, revenue FROM clients WHERE status = 'active'"
OKF_QUERIES = [
    "event parameters unnest",
    "purchase revenue items",
    "session start page view",
    "traffic source acquisition",
    "daily sharded export tables",
    "device platform geography",
    "e-commerce funnel conversion",
    "user engagement metrics",
    "bitcoin transaction inputs outputs",
    "block height timestamp",
    "wallet address balance",
    "merchandise store obfuscated sample",
]
STATUSES = ("active", "churned", "prospect")
REGIONS = ("EU", "US", "APAC")


def _tool(tools: list[Callable[..., str]], name: str) -> Callable[..., str]:
    return next(t for t in tools if t.__name__ == name)


def _expect_ok(result: Any) -> None:
    text = str(result)
    bad = ("Error", "Unknown backend", "Refused", "Nothing to write", "No results")
    if text.startswith(bad) or "is read-only" in text:
        raise RuntimeError(f"the tool did not succeed: {text[:300]}")


def distinct_sql(call: int) -> str:
    """A statement with the same rows as ``SQL_BASE`` but a text never used before."""
    return f"{SQL_BASE} AND client_name <> 'nobody-{call}'"


def _client_rows() -> list[tuple[str, str, str, float]]:
    return [
        (f"client-{i:05d}", STATUSES[i % 3], REGIONS[(i // 3) % 3], round(i * 1.37, 2))
        for i in range(ROWS)
    ]


def _sql_workloads(kb: Any, label: str, raw_engine: Any, note: str) -> list[Workload]:
    import sqlalchemy as sa

    from agentkernel.knowledgebase import KnowledgeBuilder

    read_kb = _tool(KnowledgeBuilder([kb]).build(writable=False), "read_kb")
    name = kb.backend_name

    def raw_for(statement: Callable[[int], str]) -> Callable[[int], Any]:
        def raw(call: int) -> Any:
            with raw_engine.connect() as conn:
                return conn.execute(sa.text(f"{statement(call)} LIMIT {LIMIT}")).fetchall()

        return raw

    def repeated(_: int) -> str:
        return SQL_BASE

    out = []
    for mode, statement in (("repeated", repeated), ("distinct", distinct_sql)):
        out.append(
            Workload(
                label,
                f"read_kb, {mode} SELECT",
                {
                    "raw": raw_for(statement),
                    "manager": lambda c, s=statement: kb.query(s(c), limit=LIMIT),  # type: ignore[misc]
                    "tool": lambda c, s=statement: read_kb(name, s(c)),  # type: ignore[misc]
                },
                note,
                _expect_ok,
            )
        )
    return out


@contextlib.contextmanager
def postgres_cases() -> Iterator[list[Workload]]:
    """SQLManager on a real PostgreSQL 15 (psycopg 3) vs SQLAlchemy ``conn.execute``."""
    import psycopg

    from agentkernel.knowledgebase.sql import SQLManager

    with postgres() as server:
        with psycopg.connect(server.conninfo(), autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE clients (client_name text, status text, region text, "
                "revenue numeric(10,2))"
            )
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO clients VALUES (%s, %s, %s, %s)", _client_rows())
            conn.execute("ANALYZE clients")
        kb = SQLManager(server.reader_url(), name="pg")  # the least-privilege role
        try:
            note = (
                "raw: `with engine.connect() as c: c.execute(text(sql)).fetchall()` "
                "on the manager's engine"
            )
            yield _sql_workloads(kb, "SQL: PostgreSQL 15", kb.engine, note)
        finally:
            kb.close()


@contextlib.contextmanager
def sqlite_cases() -> Iterator[list[Workload]]:
    """SQLManager on a SQLite file vs SQLAlchemy ``conn.execute`` on the manager's engine."""
    from agentkernel.knowledgebase.sql import SQLManager

    folder = Path(tempfile.mkdtemp(prefix="ak-bbench-sqlite-"))
    try:
        path = folder / "bench.sqlite"
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute(
                "CREATE TABLE clients (client_name TEXT, status TEXT, region TEXT, revenue REAL)"
            )
            conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?)", _client_rows())
            conn.commit()
        kb = SQLManager(f"sqlite:///{path}", name="sqlite")
        try:
            note = "raw: SQLAlchemy `conn.execute(text(sql)).fetchall()` on the manager's engine"
            yield _sql_workloads(kb, "SQL: SQLite", kb.engine, note)
        finally:
            kb.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def duckdb_cases() -> Iterator[list[Workload]]:
    """SQLManager on a DuckDB file vs SQLAlchemy ``conn.execute`` on the manager's engine."""
    import duckdb

    from agentkernel.knowledgebase.sql import SQLManager

    folder = Path(tempfile.mkdtemp(prefix="ak-bbench-duckdb-"))
    try:
        path = folder / "bench.duckdb"
        with contextlib.closing(duckdb.connect(str(path))) as conn:
            conn.execute(
                "CREATE TABLE clients (client_name VARCHAR, status VARCHAR, region VARCHAR, "
                "revenue DECIMAL(10,2))"
            )
            conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?)", _client_rows())
        kb = SQLManager(f"duckdb:///{path}", name="duckdb")
        try:
            note = "raw: SQLAlchemy `conn.execute(text(sql)).fetchall()` on the manager's engine"
            yield _sql_workloads(kb, "SQL: DuckDB", kb.engine, note)
        finally:
            kb.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def trino_cases(page_size: int) -> Iterator[list[Workload]]:
    """StarburstManager vs a trino DBAPI cursor, both on the Trino-protocol test server."""
    import trino.dbapi

    from agentkernel.knowledgebase import KnowledgeBuilder
    from agentkernel.knowledgebase.starburst import StarburstManager

    with trino_server(page_size) as port:
        common = {"host": "127.0.0.1", "port": port, "catalog": "kb", "schema": "crm"}
        kb = StarburstManager(user="bench", http_scheme="http", name="trino", **common)
        raw_conn = trino.dbapi.connect(user="bench-raw", http_scheme="http", **common)  # type: ignore[no-untyped-call]
        read_kb = _tool(KnowledgeBuilder([kb]).build(writable=False), "read_kb")
        base = "SELECT client_name, status, region, revenue FROM clients WHERE status = 'active'"

        def raw(statement: str) -> Any:
            cursor = raw_conn.cursor()
            cursor.execute(f"{statement} LIMIT {LIMIT}")
            return cursor.fetchall()

        note = (
            "raw: `cursor = conn.cursor(); cursor.execute(sql); cursor.fetchall()` "
            f"(trino DBAPI, one connection); test server in a child process, {page_size} rows/page"
        )
        try:
            out = []
            for mode, statement in (
                ("repeated", lambda _c: base),
                ("distinct", lambda c: f"{base} AND client_name <> 'nobody-{c}'"),
            ):
                out.append(
                    Workload(
                        "Starburst (Trino protocol)",
                        f"read_kb, {mode} SELECT",
                        {
                            "raw": lambda c, s=statement: raw(s(c)),  # type: ignore[misc]
                            "manager": lambda c, s=statement: kb.query(s(c), limit=LIMIT),  # type: ignore[misc]
                            "tool": lambda c, s=statement: read_kb("trino", s(c)),  # type: ignore[misc]
                        },
                        note,
                        _expect_ok,
                    )
                )
            yield out
        finally:
            kb.close()
            raw_conn.close()


@contextlib.contextmanager
def okf_cases(bundle: Path) -> Iterator[list[Workload]]:
    """OKFManager's own search/write vs search_kb, read_kb and write_kb.

    Reads serve ``bundle`` read-only in place; writes go to a scratch copy in a temporary
    folder (the shared bundle is never written).
    """
    from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager

    scratch = Path(tempfile.mkdtemp(prefix="ak-bbench-okf-"))
    try:
        reader = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="okf")
        shutil.copytree(bundle, scratch / "bundle")
        writer = OKFManager(LocalDocumentStore(str(scratch / "bundle")), name="okfw")
        tools = KnowledgeBuilder([reader, writer]).build()
        search_kb, read_kb = _tool(tools, "search_kb"), _tool(tools, "read_kb")
        write_kb = _tool(tools, "write_kb")

        def query(call: int) -> str:
            return OKF_QUERIES[call % len(OKF_QUERIES)]

        def note_text(call: int, who: str) -> str:
            return f"Bench note {who} {call}\nSessions, events and revenue seen in call {call}."

        note = (
            "raw: the manager's own methods (OKF has no SDK underneath); for reads, "
            "`kb.format_results(kb.search(q, limit=3))`, the same text the tool returns, so the "
            "row measures what KnowledgeBuilder adds (argument checks, routing, error capture)"
        )
        yield [
            Workload(
                f"OKF ({bundle.name}, local)",
                "search_kb",
                {
                    "raw": lambda c: reader.format_results(reader.search(query(c), limit=LIMIT)),
                    "tool": lambda c: search_kb("okf", query(c)),
                },
                note,
                _expect_ok,
            ),
            Workload(
                f"OKF ({bundle.name}, local)",
                "read_kb (search)",
                {
                    "raw": lambda c: reader.format_results(reader.search(query(c), limit=LIMIT)),
                    "tool": lambda c: read_kb("okf", query(c)),
                },
                note,
                _expect_ok,
            ),
            Workload(
                f"OKF ({bundle.name}, local)",
                "write_kb (new note)",
                {
                    "raw": lambda c: writer.write(
                        [{"text": note_text(c, "raw"), "metadata": {"source": "agent"}}]
                    ),
                    "tool": lambda c: write_kb("okfw", text=note_text(c, "tool")),
                },
                note,
                _expect_ok,
            ),
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _corpus(bundle_root: Path) -> list[str]:
    """Paragraphs of the shared OKF bundles' bodies, as documents to embed."""
    texts: list[str] = []
    for path in sorted(bundle_root.rglob("*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[-1]
        texts += [p.strip() for p in body.split("\n\n") if len(p.strip()) > 80]
    return list(dict.fromkeys(texts))


@contextlib.contextmanager
def chroma_cases(bundle_root: Path) -> Iterator[list[Workload]]:
    """ChromaManager (embedded) vs ``collection.query``/``upsert``, same embedding function."""
    import chromadb
    import torch
    from chromadb.config import Settings

    from agentkernel.knowledgebase import KnowledgeBuilder
    from agentkernel.knowledgebase.chroma import ChromaManager

    # torch's default intra-op threads (one per core) oversubscribe a busy 2-core machine:
    # one short sentence then takes ~1.4 s instead of ~0.1 s. Both arms embed alike.
    torch.set_num_threads(1)
    embed = minilm()
    folder = Path(tempfile.mkdtemp(prefix="ak-bbench-chroma-"))
    try:
        client = chromadb.PersistentClient(
            path=str(folder), settings=Settings(anonymized_telemetry=False)
        )
        collection = client.get_or_create_collection("bench", embedding_function=embed)
        corpus = _corpus(bundle_root)
        collection.upsert(
            ids=[hashlib.sha256(t.encode()).hexdigest()[:32] for t in corpus],
            documents=corpus,
            metadatas=[{"source": "okf-bundles"} for _ in corpus],
        )
        kb = ChromaManager("chroma", collection="bench", client=client, embedding_function=embed)
        tools = KnowledgeBuilder([kb]).build()
        read_kb, write_kb = _tool(tools, "read_kb"), _tool(tools, "write_kb")

        def query(call: int) -> str:
            return OKF_QUERIES[call % len(OKF_QUERIES)]

        def text(call: int, who: str) -> str:
            return f"Bench note {who} {call}: sessions, events and revenue seen in call {call}."

        def raw_write(call: int) -> None:
            doc = text(call, "raw")
            collection.upsert(
                ids=[hashlib.sha256(doc.encode()).hexdigest()[:32]],
                documents=[doc],
                metadatas=[{"source": "agent"}],
            )

        note = (
            f"raw: `collection.query(query_texts=[q], n_results=3)` / `collection.upsert(...)` "
            f"on the manager's collection; {len(corpus)} paragraphs, all-MiniLM-L6-v2 on CPU"
        )
        yield [
            Workload(
                "Chroma (embedded)",
                "read_kb (semantic search)",
                {
                    "raw": lambda c: collection.query(
                        query_texts=[query(c)],
                        n_results=LIMIT,
                        include=["documents", "metadatas", "distances"],
                    ),
                    "manager": lambda c: kb.search(query(c), limit=LIMIT),
                    "tool": lambda c: read_kb("chroma", query(c)),
                },
                note,
                _expect_ok,
            ),
            Workload(
                "Chroma (embedded)",
                "write_kb (new note)",
                {
                    "raw": raw_write,
                    "manager": lambda c: kb.write(
                        [{"text": text(c, "mgr"), "metadata": {"source": "agent"}}]
                    ),
                    "tool": lambda c: write_kb("chroma", text=text(c, "tool")),
                },
                note,
                _expect_ok,
            ),
        ]
        kb.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def neo4j_cases() -> Iterator[list[Workload]]:
    """Neo4jManager vs ``driver.session().run`` on FalkorDB's Bolt server."""
    import neo4j

    from agentkernel.knowledgebase import KnowledgeBuilder
    from agentkernel.knowledgebase.neo4j import Neo4jManager

    with bolt() as server:
        driver = neo4j.GraphDatabase.driver(server.uri)
        with driver.session() as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
            session.run(
                "UNWIND range(0, $n - 1) AS i "
                "CREATE (:Doc {k: i, text: 'document ' + toString(i), status: "
                "CASE i % 3 WHEN 0 THEN 'active' ELSE 'other' END})",
                n=ROWS,
            ).consume()
        kb = Neo4jManager(uri=server.uri, name="graph")
        tools = KnowledgeBuilder([kb]).build()
        read_kb, write_kb = _tool(tools, "read_kb"), _tool(tools, "write_kb")
        # The manager reads with one read-mode auto-commit query on Neo4j and with a read
        # transaction on other Bolt servers (FalkorDB reads another graph in read-mode
        # auto-commit queries). To time the Neo4j path here, a second manager is forced onto
        # it, with a statement that reads no graph, so FalkorDB answers it correctly.
        fast = Neo4jManager(uri=server.uri, name="graph_autocommit")
        fast._autocommit_read = True
        read_fast = _tool(KnowledgeBuilder([fast]).build(), "read_kb")
        no_graph = (
            "UNWIND range(1, 10) AS k WITH k WHERE k % 3 = 1 "
            "RETURN 'document ' + toString(k) AS text, k LIMIT $limit"
        )

        def raw_read_mode(_call: int) -> Any:
            with driver.session(default_access_mode=neo4j.READ_ACCESS) as s:
                return s.run(no_graph, limit=LIMIT).data()

        base = "MATCH (d:Doc) WHERE d.status = 'active'"

        def statement(call: int | None) -> str:
            extra = "" if call is None else f" AND d.text <> 'nobody-{call}'"
            return f"{base}{extra} RETURN d.text AS text, d.k AS k LIMIT $limit"

        def raw_read(call: int | None) -> Any:
            # the cheapest raw call that reads read-only on this server: a managed read
            # transaction (a read-mode auto-commit query reads another graph on FalkorDB)
            def work(tx: Any) -> Any:
                return tx.run(statement(call), limit=LIMIT).data()

            with driver.session(default_access_mode=neo4j.READ_ACCESS) as s:
                return s.execute_read(work)

        def raw_read_unguarded(call: int | None) -> Any:
            with driver.session() as s:  # write mode: nothing stops a write here
                return s.run(statement(call), limit=LIMIT).data()

        create = "CREATE (:Note {text: $text, source: $source})"

        def raw_write(call: int) -> Any:
            with driver.session() as s:
                return s.run(create, text=f"raw note {call}", source="agent").consume()

        note = (
            f"FalkorDB 4.18 over Bolt, {ROWS} nodes. Reads: raw is the cheapest read-only raw "
            "call on this server, `session(default_access_mode=READ_ACCESS).execute_read(...)` "
            "(FalkorDB's read-mode auto-commit queries read another graph, so the manager uses "
            "read transactions there); 'vs write-mode auto-commit' compares the same read with "
            "`driver.session().run(...)`, which would also run a write. 'Neo4j's auto-commit "
            "path' forces the read path real Neo4j gets (one read-mode auto-commit query) on a "
            "statement that reads no graph, against a read-mode `session.run`. Writes: raw is "
            "`driver.session().run(create, ...).consume()` (auto-commit)"
        )
        try:
            yield [
                Workload(
                    "Neo4j (FalkorDB Bolt)",
                    "read_kb, repeated MATCH",
                    {
                        "raw": lambda _c: raw_read(None),
                        "manager": lambda _c: kb.query(statement(None), limit=LIMIT),
                        "tool": lambda _c: read_kb("graph", statement(None)),
                    },
                    note,
                    _expect_ok,
                ),
                Workload(
                    "Neo4j (FalkorDB Bolt)",
                    "read_kb, distinct MATCH",
                    {
                        "raw": raw_read,
                        "manager": lambda c: kb.query(statement(c), limit=LIMIT),
                        "tool": lambda c: read_kb("graph", statement(c)),
                    },
                    note,
                    _expect_ok,
                ),
                Workload(
                    "Neo4j (FalkorDB Bolt)",
                    "read_kb, distinct, vs write-mode auto-commit",
                    {
                        "raw": raw_read_unguarded,
                        "manager": lambda c: kb.query(statement(c), limit=LIMIT),
                        "tool": lambda c: read_kb("graph", statement(c)),
                    },
                    note,
                    _expect_ok,
                    informative=True,
                ),
                Workload(
                    "Neo4j (FalkorDB Bolt)",
                    "read_kb, Neo4j's auto-commit path",
                    {
                        "raw": raw_read_mode,
                        "manager": lambda _c: fast.query(no_graph, limit=LIMIT),
                        "tool": lambda _c: read_fast("graph_autocommit", no_graph),
                    },
                    note,
                    _expect_ok,
                ),
                Workload(
                    "Neo4j (FalkorDB Bolt)",
                    "write_kb (CREATE statement)",
                    {
                        "raw": raw_write,
                        "manager": lambda c: kb.write(
                            [
                                {
                                    "text": f"mgr note {c}",
                                    "metadata": {"source": "agent", "query": create},
                                }
                            ]
                        ),
                        "tool": lambda c: write_kb("graph", text=f"tool note {c}", query=create),
                    },
                    note,
                    _expect_ok,
                ),
            ]
        finally:
            kb.close()
            fast.close()
            driver.close()
