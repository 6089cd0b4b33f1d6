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
    "agentkernel._tooling": 22,  # binding: imports only errors
    "agentkernel.knowledgestore.tools": 60,
    "agentkernel.knowledgebase.knowledgebuilder": 60,
    "agentkernel.knowledgebase.router": 60,
    "agentkernel.knowledgebase._answers": 60,  # the builder's answer budget
    "agentkernel.config": 70,
    "agentkernel.roles": 70,
    "agentkernel.mcp": 80,
    "agentkernel.cli": 80,
    "agentkernel.knowledgestore.__main__": 80,
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


# -- the package graph ------------------------------------------------------------------------
# A package here is a top-level one (``agentkernel.cli``, ``agentkernel.storage``; a module of
# the root, such as ``agentkernel.errors``, is one of its own). Two packages whose modules import
# each other cannot be understood apart even when no two modules do, so the graph of packages
# must be acyclic too. Two kinds of node stand apart from their package:
# - an entry point (``X.__main__``, run by ``python -m X``) is imported by nothing (a test
#   checks): it may call the command line above its package, as ``python -m
#   agentkernel.knowledgestore`` runs ``agentkernel-kb store serve``;
# - a package's face, the lazy (PEP 562) export table of its ``__init__``, imports the module
#   defining a name only when the name is touched: it is counted, as ``"P (exports)"``, and
#   every import of the package itself goes through it.
# Upward names a face may export, each with its reason (the face is then ranked with them).
UPWARD_EXPORTS: dict[tuple[str, str], str] = {
    ("agentkernel.knowledgestore", "agentkernel.mcp.store"): (
        "the manual imports create_knowledge_server from agentkernel.knowledgestore; no module "
        "of the store imports agentkernel.mcp"
    ),
    ("agentkernel", "agentkernel.knowledgebase"): "the root exports the documented entry points",
    ("agentkernel", "agentkernel.knowledgestore"): "the root exports the documented entry points",
}
# The root is two nodes as well: the helper every package imports (``_lazy_exports``, the
# version), ranked lowest, and its face, the entry points a user imports from ``agentkernel``,
# which nothing in the library imports (a test checks), so no import of the root goes through it.
ROOT = "agentkernel"


def export_tables() -> dict[str, set[str]]:
    """Each package whose ``__init__`` holds a lazy export table -> the modules it names."""
    found: dict[str, set[str]] = {}
    for name, path in modules().items():
        if path.name != "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and target.id == "_HOMES":
                assert isinstance(value, ast.Dict), f"{path}: _HOMES is not a literal table"
                keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
                found[name] = {str(k) for k in keys}
    return found


def face(package: str) -> str:
    return f"{package} (exports)"


def package_of(module: str, faces: frozenset[str] | set[str] = frozenset()) -> str:
    """The node of ``module`` in the package graph (see the comment above)."""
    if module.endswith(".__main__"):
        return module
    if module in faces:
        return face(module)
    return ".".join(module.split(".")[:2])


def package_graph(
    edges: dict[str, set[str]] | None = None, tables: dict[str, set[str]] | None = None
) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """Package -> package it imports -> the module imports that make the edge."""
    edges = graph() if edges is None else edges
    tables = export_tables() if tables is None else tables
    faces = set(tables) - {ROOT}
    found: dict[str, dict[str, set[tuple[str, str]]]] = {}

    def add(source: str, target: str) -> None:
        a, b = package_of(source, faces), package_of(target, faces)
        if a != b:
            found.setdefault(a, {}).setdefault(b, set()).add((source, target))

    for name, targets in edges.items():
        for target in targets:
            add(name, target)
    for package, exported in tables.items():
        for module in exported:  # the face imports the module on first touch of a name
            b = package_of(module, faces)
            found.setdefault(face(package), {}).setdefault(b, set()).add((package, module))
    return found


def package_cycles(edges: dict[str, set[str]] | None = None) -> list[list[str]]:
    packages = package_graph(edges)
    return cycles({a: set(targets) for a, targets in packages.items()})


def test_no_package_cycles() -> None:
    """No two packages import each other, directly or round a loop (a face and __main__ apart)."""
    found = package_cycles()
    packages = package_graph()
    detail = {
        (a, b): sorted(packages[a][b])[:3]
        for component in found
        for a in component
        for b in packages.get(a, {})
        if b in component
    }
    assert found == [], detail


def test_the_packages_the_issue_named_point_downwards() -> None:
    """cli -> mcp, not back; the store imports neither; the binding layer imports no roles."""
    packages = package_graph()
    assert "agentkernel.cli" not in packages["agentkernel.mcp"]
    assert not {"agentkernel.cli", "agentkernel.mcp"} & set(packages["agentkernel.knowledgestore"])
    assert "agentkernel.roles" not in packages["agentkernel._tooling"]
    assert "agentkernel.mcp" in packages["agentkernel.cli"]  # the command runs the server


def test_a_face_exports_upwards_only_what_the_manual_places_there() -> None:
    packages = package_graph()
    upward = {
        (package, module)
        for package, modules in export_tables().items()
        for module in modules  # a name of another package, above this package's modules
        if package_of(module) != package and rank(module) > LAYERS[package]
    }
    assert upward == set(UPWARD_EXPORTS), sorted(upward - set(UPWARD_EXPORTS))
    for package, module in UPWARD_EXPORTS:
        body = package_of(module)
        assert {body, face(body)} & set(packages[face(package)])
        assert body not in packages.get(package, {}), f"a module of {package} imports {body}"


def test_nothing_in_the_library_imports_through_the_roots_face() -> None:
    """The library imports only the root's helper and version, never the names it exports."""
    assert export_tables()[ROOT]  # the root exports the documented entry points
    public = set(__import__("agentkernel").__all__)
    through_face = set()
    for name, path in modules().items():
        if name == ROOT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == ROOT and not node.level:
                through_face |= {(name, alias.name) for alias in node.names} & {
                    (name, public_name) for public_name in public
                }
    assert through_face == set()


def test_nothing_imports_an_entry_point() -> None:
    """A ``__main__`` is run by ``python -m``, never imported, so it stands outside its package."""
    entry_points = {name for name in modules() if name.endswith(".__main__")}
    assert "agentkernel.mcp.__main__" in entry_points
    importers = {(a, t) for a, targets in graph().items() for t in targets if t in entry_points}
    assert importers == set()


def test_the_package_graph_sees_cycles_no_module_graph_shows(tmp_path: Path) -> None:
    """Two packages reaching into each other through different modules are a package cycle."""
    files = {
        "agentkernel.up.a": "from agentkernel.down.b import B\n",
        "agentkernel.down.b": "B = 1\n",
        "agentkernel.down.c": "def f():\n    from agentkernel.up.d import D\n",
        "agentkernel.up.d": "D = 1\n",
        "agentkernel.down.__main__": "from agentkernel.up.a import A\n",
    }
    known = {}
    for name, source in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        known[name] = path
    edges = {name: imports(name, path, known) for name, path in known.items()}
    assert cycles(edges) == []
    packages = package_graph(edges, tables={})
    assert cycles({a: set(t) for a, t in packages.items()}) == [
        ["agentkernel.down", "agentkernel.up"]
    ]
    # the entry point alone would close no loop: it is a node of its own
    del edges["agentkernel.down.c"]
    packages = package_graph(edges, tables={})
    assert cycles({a: set(t) for a, t in packages.items()}) == []
    # a face exporting a name from a package that imports the package closes one
    edges["agentkernel.up.a"] = {"agentkernel.down"}
    packages = package_graph(edges, tables={"agentkernel.down": {"agentkernel.up.d"}})
    assert cycles({a: set(t) for a, t in packages.items()}) == [
        ["agentkernel.down (exports)", "agentkernel.up"]
    ]


# -- private modules ----------------------------------------------------------------------------
# A module whose name (or a package on its path) starts with an underscore is private to the
# package holding it: ``agentkernel.storage._confine`` to ``agentkernel.storage``,
# ``agentkernel._tooling.factory`` to the whole library (the root holds it). A module of another
# package reaching into it would make the two packages one. Exceptions, each with its reason:
PRIVATE_REACHES: dict[tuple[str, str], str] = {}


def private_owner(module: str) -> str | None:
    """The package a private module belongs to; ``None`` for a public module."""
    parts = module.split(".")
    for depth, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:depth])
    return None


def private_reaches(edges: dict[str, set[str]] | None = None) -> set[tuple[str, str]]:
    tables = export_tables() if edges is None else {}
    edges = graph() if edges is None else edges
    pairs = {(a, t) for a, targets in edges.items() for t in targets}
    pairs |= {(package, module) for package, modules in tables.items() for module in modules}
    return {
        (a, t)
        for a, t in pairs
        if (owner := private_owner(t)) is not None and not (a == owner or a.startswith(owner + "."))
    }


def test_no_module_imports_another_packages_private_module() -> None:
    found = private_reaches()
    assert found == set(PRIVATE_REACHES), sorted(found - set(PRIVATE_REACHES))


def test_a_private_module_belongs_to_the_package_holding_it() -> None:
    assert private_owner("agentkernel.storage._confine") == "agentkernel.storage"
    assert private_owner("agentkernel._tooling.factory") == "agentkernel"
    assert private_owner("agentkernel.knowledgebase.okf.bundleindex.view") is None
    edges = {
        "agentkernel.cli.view": {"agentkernel.storage._confine"},
        "agentkernel.storage.local": {"agentkernel.storage._confine"},
        "agentkernel.knowledgebase.okf.lanceview": {"agentkernel.knowledgebase.okf.bundleindex._x"},
        "agentkernel.mcp.server": {"agentkernel._tooling.factory"},
    }
    assert private_reaches(edges) == {
        ("agentkernel.cli.view", "agentkernel.storage._confine"),
        (
            "agentkernel.knowledgebase.okf.lanceview",
            "agentkernel.knowledgebase.okf.bundleindex._x",
        ),
    }
