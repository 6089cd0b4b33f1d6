"""Read paths never write: every read of the knowledge tools leaves every byte and path as it was.

Real: the OKF bundles of ``../shared/data/okf-bundles`` (beside the repository clone), read
IN PLACE by the curated knowledge store (its Python API, its tool callables, and its MCP server
``python -m agentkernel.knowledgestore`` driven over stdio by the official ``mcp`` client), by
the ``agentkernel-kb`` commands run as subprocesses (``ask`` retrieval-only: no model), by the
``KnowledgeBuilder`` tools over ``OKFManager`` (opened writable and read-only), and by the OKF
MCP server ``python -m agentkernel.mcp --bundle``. Before and after, every path under the
bundles folder (hidden ones included) is listed with its modification time and every file is
hashed: nothing may differ. Folders written by the curated stores themselves (files and SQLite)
are held to the same rule, and a copy of a bundle served by ``agentkernel-kb store serve`` is
checked to survive every write tool unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStore,
    NewPage,
    SQLiteKnowledgeStore,
    create_knowledge_tools,
)
from tests.support import OKF_BUNDLES, missing, require_extra

REPO = Path(__file__).resolve().parents[2]
BUNDLES = OKF_BUNDLES
READERS = {"knowledge_index", "knowledge_search", "knowledge_read", "knowledge_check"}
DESTRUCTIVE = {"knowledge_edit", "knowledge_rewrite", "knowledge_supersede", "knowledge_retire"}
Snapshot = dict[str, tuple[str, int, str]]


def snapshot(root: Path) -> Snapshot:
    """Every path under ``root``, hidden ones included: kind, mtime and content hash."""
    found: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            kind = "dir" if path.is_dir() else "file"
            found[str(path.relative_to(root))] = (kind, info.st_mtime_ns, digest)
    found["."] = ("dir", root.lstat().st_mtime_ns, "")
    return found


def _bundles() -> list[Path]:
    found = sorted(p for p in BUNDLES.glob("*") if (p / "index.md").is_file())
    if not found:
        missing(f"the real OKF bundles at {BUNDLES}", "link ../shared/data beside the clone")
    return found


@contextlib.contextmanager
def unchanged(root: Path) -> Iterator[None]:
    """Fail unless every path under ``root`` is as it was, bytes and modification times."""
    before = snapshot(root)
    yield
    assert snapshot(root) == before


@pytest.fixture
def bundles() -> list[Path]:
    """The real bundles, in place."""
    return _bundles()


def _env() -> dict[str, str]:
    """The environment for child processes: this checkout's sources first, no model key."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env


# -- the curated store, in process ---------------------------------------------------------


def _read_everything(store: KnowledgeStore) -> None:
    store.types()
    pages = store.list()
    for info in pages[:5]:
        store.read(info.id)
    store.read("concept/nothing-here")
    store.read("tables/events_")
    store.search("users active", 5)
    store.index()
    store.recent_log(5)
    store.check()
    store.overview()
    store.ignored_files()
    tools = {tool.__name__: tool for tool in create_knowledge_tools(store)}
    tools["knowledge_index"]()
    tools["knowledge_search"](query="bitcoin transactions")
    for page in ("overview", "log", "concept/nothing-here", *(i.id for i in pages[:3])):
        tools["knowledge_read"](page=page)
    tools["knowledge_check"]()
    tools["knowledge_create"](type="concept", slug="x", title="X")  # the template only


def test_curated_store_reads_change_no_bundle(bundles: list[Path]) -> None:
    with unchanged(BUNDLES):
        for bundle in bundles:
            store = FileKnowledgeStore(bundle)
            _read_everything(store)
            ignored = store.ignored_files()
            assert ignored and all(name.endswith(".md") for name in ignored)
            index = create_knowledge_tools(store)[0]()
            assert f"{len(ignored)} markdown file(s)" in index  # says what it leaves alone
            sqlite = SQLiteKnowledgeStore(bundle / "knowledge.db")  # no such file: none is made
            _read_everything(sqlite)
            sqlite.close()


def _fill(store: KnowledgeStore) -> None:
    store.create_many(
        [
            NewPage("entity", "moon", "Moon", "Earth's satellite."),
            NewPage("concept", "tides", "Tides", "Pulled by the [Moon](entity/moon)."),
            NewPage("concept", "neap", "Neap", "Weak tides; see [notes](https://x.org/neap.md)."),
        ]
    )
    store.supersede("concept/neap", "concept/tides", "merged")
    store.log("ingest", "Read the tables", ["concept/tides"])
    store.write_overview("Start at [Tides](concept/tides).")


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_curated_store_reads_change_nothing_in_its_own_folder(kind: str, tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    path = folder if kind == "file" else folder / "knowledge.db"
    folder.mkdir()
    store: KnowledgeStore = (
        FileKnowledgeStore(path) if kind == "file" else SQLiteKnowledgeStore(path)
    )
    _fill(store)
    store.close()
    if kind == "file":  # the moon removed behind the store's back: tides' link is broken
        (folder / "entities" / "moon.md").unlink()
    else:
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("DELETE FROM pages WHERE id = 'entity/moon'")
    before = snapshot(folder)
    reader = FileKnowledgeStore(path) if kind == "file" else SQLiteKnowledgeStore(path)
    _read_everything(reader)
    assert reader.check().broken_links  # the moon link, found by a check that wrote nothing
    reader.close()
    after = snapshot(folder)
    if kind == "sqlite":
        # SQLite's own -wal/-shm files exist while a connection is open and are gone on close,
        # which moves the folder's mtime; the database file and every path are unchanged.
        del before["."], after["."]
    assert after == before


# -- the curated store over MCP ------------------------------------------------------------


@contextlib.asynccontextmanager
async def _knowledge_client(*args: str) -> AsyncIterator[Any]:
    mcp = require_extra("mcp", "mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=list(args), env=_env(), cwd=str(REPO)
    )
    if hasattr(mcp, "Client"):
        async with mcp.Client(params) as client:
            yield client
        return
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _over_mcp(args: list[str], steps: Callable[[Any], Awaitable[None]]) -> None:
    async def run() -> None:
        async with _knowledge_client(*args) as client:
            await steps(client)

    anyio.run(run)


def _text(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


def _failed(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _hints(tool: Any) -> dict[str, Any]:
    hints: dict[str, Any] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return hints


async def _read_tools(client: Any) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, tool in tools.items():
        hints = _hints(tool)
        assert hints["readOnlyHint"] is (name in READERS), name
        assert hints["destructiveHint"] is (name in DESTRUCTIVE), name
    index = _text(await client.call_tool("knowledge_index", {}))
    assert index.startswith(("The knowledge base has no pages.", "The knowledge base is empty."))
    await client.call_tool("knowledge_search", {"query": "users", "limit": 5})
    for page in ("overview", "log", "concept/nothing-here"):
        await client.call_tool("knowledge_read", {"page": page})
    check = await client.call_tool("knowledge_check", {})
    assert not _failed(check) and "broken_links" in _text(check)


def test_curated_store_mcp_reads_change_no_bundle(bundles: list[Path]) -> None:
    with unchanged(BUNDLES):
        for bundle in bundles:
            _over_mcp(
                ["-m", "agentkernel.knowledgestore", str(bundle), "--writable", "--interactive"],
                _read_tools,
            )
            sqlite = ["-m", "agentkernel.knowledgestore", str(bundle / "knowledge.db"), "--sqlite"]
            _over_mcp(sqlite, _read_tools)


def test_store_serve_on_a_foreign_bundle_never_overwrites_it(
    bundles: list[Path], tmp_path: Path
) -> None:
    for bundle in bundles:
        copy = tmp_path / bundle.name
        shutil.copytree(bundle, copy)
        before = snapshot(copy)

        async def steps(client: Any) -> None:
            index = _text(await client.call_tool("knowledge_index", {}))
            assert "markdown file(s)" in index and "is empty" not in index
            await client.call_tool("knowledge_check", {})
            page = {"type": "concept", "slug": "x", "title": "X", "content": "A page."}
            writes = [
                ("knowledge_create", page),
                ("knowledge_log", {"operation": "ingest", "what": "Read the bundle"}),
                ("knowledge_rewrite", {"page": "overview", "content": "The bundle."}),
                ("knowledge_edit", {"page": "concept/x", "old_text": "A", "new_text": "B"}),
            ]
            for name, arguments in writes:
                result = await client.call_tool(name, arguments)
                assert _failed(result), (name, _text(result))
            refusal = _text(await client.call_tool("knowledge_create", page))
            assert "won't write" in refusal and ".knowledgestore" in refusal

        _over_mcp(["-m", "agentkernel.cli", "store", "serve", str(copy), "--writable"], steps)
        assert snapshot(copy) == before


# -- the OKF tools and commands ----------------------------------------------------------


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentkernel.cli", *args],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def test_okf_commands_change_no_bundle(bundles: list[Path]) -> None:
    with unchanged(BUNDLES):
        for bundle in bundles:
            where = str(bundle)
            _cli("check", where)
            _cli("check", "--json", where)
            _cli("schema", where)
            found = _cli("search", where, "table of users and transactions")
            first = found.split("[", 1)[1].split("]", 1)[0] if "[" in found else "index"
            _cli("fetch", where, first)
            _cli("browse", where)
            _cli("browse", where, "tables")
            _cli("ask", "Which tables are there?", where)


def test_knowledge_builder_tools_change_no_bundle(bundles: list[Path]) -> None:
    with unchanged(BUNDLES):
        for bundle in bundles:
            for writable in (True, False):
                kb = OKFManager(LocalDocumentStore(bundle, writable=writable), name=bundle.name)
                tools = {tool.__name__: tool for tool in KnowledgeBuilder([kb]).build()}
                assert "tables" in tools["browse_kb"](bundle.name)
                tools["get_schemas"]()
                tools["get_all_kb_descriptions"]()
                found = tools["search_kb"](bundle.name, "users transactions blocks", 5)
                ids = [
                    line.split("]", 1)[0][3:]
                    for line in found.splitlines()
                    if line.startswith("- [")
                ]
                assert ids, found
                tools["fetch_kb"](bundle.name, ",".join(ids))
                tools["browse_kb"](bundle.name, "tables")
                tools["browse_kb"](bundle.name, "no/such/dir")
                tools["read_kb"](bundle.name, "active users", 3)


def _okf_mcp_reads(root: Path, bundles: list[Path], *options: str) -> None:
    with unchanged(root):
        for bundle in bundles:

            async def steps(client: Any, name: str = bundle.name) -> None:
                tools = [tool.name for tool in (await client.list_tools()).tools]
                assert ("write_kb" in tools) is ("--writable" in options)
                await client.call_tool("get_schemas", {})
                await client.call_tool("get_all_kb_descriptions", {})
                await client.call_tool("search_kb", {"backend": name, "query": "users"})
                await client.call_tool("browse_kb", {"backend": name, "path": ""})
                await client.call_tool("read_kb", {"backend": name, "query": "tables"})

            args = ["-m", "agentkernel.mcp", "--bundle", str(bundle), "--kb-name", bundle.name]
            _over_mcp([*args, *options, "--log-level", "WARNING"], steps)


def test_okf_mcp_server_read_only_reads_change_no_bundle(bundles: list[Path]) -> None:
    _okf_mcp_reads(BUNDLES, bundles)  # read-only is the default


def test_okf_mcp_server_writable_reads_change_no_bundle(bundles: list[Path]) -> None:
    # in place: a writable server asks the filesystem whether it may write, writing nothing
    _okf_mcp_reads(BUNDLES, bundles, "--writable")
