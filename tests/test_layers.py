"""The layers of ``docs/architecture.md`` hold: imports point downwards, and nothing cycles.

Reads every module of ``src/agentkernel`` as a syntax tree (nothing is imported) and collects
its imports of other agentkernel modules, those run on first use inside a function included:
a cycle closed by a deferred import is still two modules that cannot be understood apart.
Imports under ``if TYPE_CHECKING:`` are left out (they never run). A class named by its dotted
path in a registry (``DocumentStore.from_uri``'s scheme table, like ``python:`` values) is a
lookup by name, not an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Module prefix -> layer rank, higher is upper (the longest matching prefix wins). The same
# order as the diagram in docs/architecture.md (a new package joins it here and there).
LAYERS: dict[str, int] = {
    "agentkernel": 0,  # the root package, its lazy-export helper
    "agentkernel.errors": 0,
    "agentkernel.storage": 10,
    "agentkernel.bundle": 15,  # the on-disk format under OKF and the curated store
    "agentkernel.retrieval": 20,
    "agentkernel.knowledgebase.model": 25,
    "agentkernel.knowledgebase.errors": 25,
    "agentkernel.knowledgebase.base": 25,
    "agentkernel.knowledgebase.document": 25,
    "agentkernel.knowledgebase.testing": 25,
    "agentkernel.knowledgebase._limits": 25,
    "agentkernel.knowledgestore": 35,
    "agentkernel.knowledgebase": 40,  # the backends: okf, chroma, neo4j, sql, starburst
    "agentkernel._tooling": 22,  # binding: imports only errors (attach aside)
    "agentkernel.knowledgestore.tools": 60,
    "agentkernel.knowledgebase.knowledgebuilder": 60,
    "agentkernel.knowledgebase.router": 60,
    "agentkernel.knowledgebase._answers": 60,  # the builder's answer budget
    "agentkernel.config": 70,
    "agentkernel.roles": 70,
    "agentkernel.mcp": 80,
    "agentkernel.cli": 80,
    "agentkernel.knowledgestore.__main__": 80,
    "agentkernel._tooling.attach": 90,
    "agentkernel.openai": 90,
    "agentkernel.langgraph": 90,
    "agentkernel.crewai": 90,
    "agentkernel.adk": 90,
}
# A package's __init__ that only holds a lazy (PEP 562) export table ranks with the highest
# module it exports: importing the package costs one module, its names resolve on first touch.
EXPORT_TABLES = {
    "agentkernel.knowledgebase": 60,
    "agentkernel.knowledgestore": 80,  # create_knowledge_server, as the manual imports it
}
# Upward imports the architecture names, each with its reason.
UPWARD: dict[tuple[str, str], str] = {
    ("agentkernel.cli.ask", "agentkernel.openai"): "`agentkernel-kb ask` runs an OpenAI agent",
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "agentkernel").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The agentkernel modules ``name`` imports (at import time or in a function)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif base in known:
                    found.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def rank(name: str) -> int:
    if name in EXPORT_TABLES:
        return EXPORT_TABLES[name]
    best = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return LAYERS[best]


def upward() -> set[tuple[str, str]]:
    return {
        (name, target)
        for name, targets in graph().items()
        for target in targets
        if rank(target) > rank(name)
    }


def cycles(edges: dict[str, set[str]] | None = None) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    edges = graph() if edges is None else edges
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_every_module_has_a_layer() -> None:
    assert all(rank(name) >= 0 for name in modules())
    assert "agentkernel.knowledgebase.okf.manager" in graph()


def test_imports_point_downwards() -> None:
    found = upward()
    assert found == set(UPWARD), sorted(found - set(UPWARD))


def test_storage_imports_nothing_above_it() -> None:
    assert not {(a, b) for a, b in upward() if a.startswith("agentkernel.storage")}


def test_okf_and_the_curated_store_share_the_bundle_core() -> None:
    """Both read links and the log through ``agentkernel.bundle``; it imports neither."""
    edges = graph()
    users = {
        name
        for name, targets in edges.items()
        if any(t.startswith("agentkernel.bundle") for t in targets)
    }
    assert any(u.startswith("agentkernel.knowledgebase.okf") for u in users)
    assert any(u.startswith("agentkernel.knowledgestore") for u in users)
    below = {t for n, ts in edges.items() if n.startswith("agentkernel.bundle") for t in ts}
    inside = ("agentkernel.bundle", "agentkernel.storage", "agentkernel.errors")
    assert all(t.startswith(inside) for t in below), below


def test_the_bundle_core_is_the_one_writer_of_index_md_and_log_md() -> None:
    """``index.md`` and ``log.md`` are written by ``bundle.catalog`` and ``bundle.logfile`` only."""
    edges = graph()
    assert "agentkernel.bundle.catalog" in edges["agentkernel.knowledgestore._catalog"]
    src = Path(__file__).resolve().parents[1] / "src"
    defined = [
        path.relative_to(src).as_posix()
        for path in src.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith(("def render_index(", "def prepend("))
    ]
    assert sorted(defined) == ["agentkernel/bundle/catalog.py", "agentkernel/bundle/logfile.py"]
    entry_format = [  # a log entry's line, ``* **op**: what``, is spelled in one place
        path.relative_to(src).as_posix()
        for path in src.rglob("*.py")
        if '"* **{' in path.read_text(encoding="utf-8")
    ]
    assert entry_format == ["agentkernel/bundle/logfile.py"]


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or round a loop, counting imports in functions."""
    assert cycles() == []


def test_the_cycle_finder_sees_imports_inside_functions(tmp_path: Path) -> None:
    """A cycle closed only by an import inside a function is still a cycle."""
    (tmp_path / "a.py").write_text("from agentkernel.b import B\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from agentkernel.a import A\n", encoding="utf-8")
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentkernel.a import A\n",
        encoding="utf-8",
    )
    known = {f"agentkernel.{p.stem}": p for p in tmp_path.glob("*.py")}
    edges = {name: imports(name, path, known) for name, path in known.items()}
    assert edges == {
        "agentkernel.a": {"agentkernel.b"},
        "agentkernel.b": {"agentkernel.a"},
        "agentkernel.c": set(),
    }
    assert cycles(edges) == [["agentkernel.a", "agentkernel.b"]]


# The root's __init__ holds the one lazy-export helper: the root is imported anyway, and the
# manual promises that importing agentkernel.knowledgebase costs one module import.
ROOT_INIT = SRC / "agentkernel" / "__init__.py"


def test_no_package_init_holds_logic() -> None:
    """An ``__init__.py`` holds a docstring, imports, ``__all__`` and export tables only."""
    allowed = (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.If)
    for path in sorted((SRC / "agentkernel").rglob("__init__.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if path == ROOT_INIT and isinstance(node, ast.FunctionDef):
                continue  # the lazy-export helper: see ROOT_INIT
            assert isinstance(node, allowed), f"{path}: {type(node).__name__} at {node.lineno}"
            if isinstance(node, ast.If):
                assert _type_checking(node), f"{path}: logic at line {node.lineno}"


def test_only_files_rebuilt_from_others_skip_the_disk_wait() -> None:
    """``durable=False`` (no fsync) is asked for the derived files architecture.md names only."""
    asking = sorted(
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if "durable=False)" in path.read_text(encoding="utf-8")
    )
    assert asking == [
        "agentkernel/knowledgebase/okf/bundleindex/mirror.py",  # the node cache's records
        "agentkernel/knowledgebase/okf/warmstart.py",  # the warm-start file
        "agentkernel/knowledgestore/bundle_store.py",  # index.md
        "agentkernel/storage/nodecache.py",  # the node cache's ledgers
    ]
