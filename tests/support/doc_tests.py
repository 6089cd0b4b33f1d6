"""What a page of docs/ names as its check: test references, read with ``ast``.

docs/security.md names a test for each promise and docs/architecture.md a test (or a command)
for each claim. A reference is ```tests/path.py::test_name``` (or a method of a kit the suite
runs, ```src/.../testing.py::Class::test_name```); nothing is imported or run here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_REF = re.compile(r"`((?:tests|src)/[\w/]+\.py)::(?:\w+::)?(test_\w+)`")


def test_names(module: Path) -> set[str]:
    """The test functions and methods a module defines."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def absent_tests(text: str) -> list[str]:
    """The test references in ``text`` that name no existing test."""
    return [
        f"{path}::{name}"
        for path, name in TEST_REF.findall(text)
        if not (ROOT / path).is_file() or name not in test_names(ROOT / path)
    ]
