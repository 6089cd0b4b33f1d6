"""Derive a test's server markers from what its code reaches, not from a hand-kept list.

A test is marked when its function, a fixture it uses, or a helper either of them calls (a
function or class of its own module, or one imported from another ``tests`` module, by name or
as ``alias.helper`` of an imported module, followed to any depth) reaches one of
:data:`STARTERS`: ``subprocess.run``/``Popen``/``check_output``, ``multiprocessing``, the MCP
SDK's stdio client (an MCP server in a child process), the Trino test server, or an embedding
model. Reading is static (the modules' syntax trees, parsed once each): nothing is imported or
run to decide. The fixtures of ``tests/support/fixtures_*.py`` are marked by name in
``tests/conftest.py`` (``SERVER_FIXTURES``).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

STARTERS: dict[str, str] = {
    "subprocess.run": "subprocess",
    "subprocess.Popen": "subprocess",
    "subprocess.call": "subprocess",
    "subprocess.check_call": "subprocess",
    "subprocess.check_output": "subprocess",
    "multiprocessing.get_context": "subprocess",
    "multiprocessing.Process": "subprocess",
    "ProcessPoolExecutor": "subprocess",
    "stdio_client": "mcp_process",
    "StdioServerParameters": "mcp_process",
    "TrinoTestServer": "trino",
    "load_embedder": "model",
    "SentenceTransformer": "model",
}
"""What starts a process, a server or a model: a dotted name as written, to its marker."""


class _Module:
    """One test module's functions and classes, what each reaches directly, what it calls."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (tests module, name)
        self.bodies: dict[str, list[ast.AST]] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests"):
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module or "", alias.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bodies[node.name] = [node]
                if isinstance(node, ast.ClassDef):  # a test class: its methods by name too
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            self.bodies.setdefault(item.name, []).append(item)

    def direct(self, name: str) -> tuple[set[str], set[str]]:
        """The markers ``name`` reaches itself, and the names it refers to."""
        markers: set[str] = set()
        names: set[str] = set()
        for root in self.bodies.get(name, []):
            for node in ast.walk(root):
                dotted = _dotted(node)
                if dotted is None:
                    continue
                for starter, marker in STARTERS.items():
                    if dotted == starter or dotted.endswith("." + starter):
                        markers.add(marker)
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.imported
                ):
                    names.add(dotted)  # ``alias.helper`` of an imported module
        names.discard(name)
        return markers, names


@functools.cache
def _module(path: Path) -> _Module | None:
    try:
        return _Module(path)
    except (OSError, SyntaxError):
        return None


def _source(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, AttributeError, ValueError):  # not a module: an imported name
        return None
    return Path(spec.origin) if spec and spec.origin else None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def reached(path: Path, names: list[str]) -> set[str]:
    """The markers the named functions or fixtures of a test module reach, to any depth.

    Args:
        path: The test module's file.
        names: Its test function's name and the fixtures the test uses.

    Returns:
        Marker names (empty: the code starts nothing).
    """
    found: set[str] = set()
    seen: set[tuple[Path, str]] = set()
    todo = [(path, name) for name in names]
    while todo:
        where, name = todo.pop()
        if (where, name) in seen:
            continue
        seen.add((where, name))
        module = _module(where)
        if module is None:
            continue
        alias, _, attribute = name.partition(".")
        if alias in module.imported:
            source, original = module.imported[alias]
            if attribute:  # a helper of an imported module: ``from tests.x import mod as m``
                located = _source(f"{source}.{original}")
                if located is not None:
                    todo.append((located, attribute))
                continue
            located = _source(source)
            if located is not None:
                todo.append((located, original))
            continue
        markers, refers = module.direct(name)
        found |= markers
        todo += [
            (where, ref)
            for ref in refers
            if ref in module.bodies or ref.partition(".")[0] in module.imported
        ]
    return found
