"""Hypothesis: no path, however it is spelled, makes LocalDocumentStore touch anything outside
its root.

Real: the filesystem, with symlinks inside the root pointing out of it (to a parent, to ``/``,
to a file beside the root). A ``sys.addaudithook`` hook records every path the process opens,
renames, links, creates, removes or lists while a store call runs; each one must resolve
inside the root. The files beside the root are compared byte for byte at the end.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.storage.base import clean_path
from agentkernel.storage.local import LocalDocumentStore
from tests.support import examples

_WATCHED = {"open", "os.rename", "os.link", "os.mkdir", "os.remove", "os.rmdir", "os.scandir"}
_touched: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _touched is not None and event in _WATCHED:
        for arg in args[:2] if event in ("os.rename", "os.link") else args[:1]:
            if isinstance(arg, str | bytes | os.PathLike):
                _touched.append((event, os.fsdecode(arg)))


sys.addaudithook(_audit)  # audit hooks cannot be removed; this one is idle unless watching

SEGMENTS = [
    "..",
    ".",
    "",
    "a",
    "b.md",
    "new.md",
    "escape",
    "escape.md",
    "root-link",
    "inside",
    "secret.md",
    "outer",
    ".git",
    "..\\..",
    "\\",
    "C:",
    "\x00",
    "%2e%2e",
    "~",
    "\ud800",
]
KNOWN = [
    "a/b.md",
    "inside/b.md",
    "escape/root/a/b.md",
    "escape/secret.md",
    "escape.md",
    "root-link/etc/passwd",
    "a/../../secret.md",
    "new.md",
]
PATHS = st.one_of(
    st.sampled_from(KNOWN),
    st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=4), max_size=6).map("/".join),
    st.lists(st.sampled_from(SEGMENTS), max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=12),
)


@pytest.fixture(scope="module")
def layout() -> Iterator[tuple[Path, LocalDocumentStore, dict[str, bytes]]]:
    with tempfile.TemporaryDirectory() as tmp:
        outer = Path(tmp) / "outer"
        root = outer / "root"
        (root / "a").mkdir(parents=True)
        (root / "a" / "b.md").write_text("INSIDE")
        (root / "inside").symlink_to(root / "a")
        (root / "escape").symlink_to(outer)
        (root / "escape.md").symlink_to(outer / "secret.md")
        (root / "root-link").symlink_to("/")
        (root / ".git").mkdir()
        (outer / "secret.md").write_text("SECRET")
        (outer / "b.md").write_text("OUTSIDE")
        store = LocalDocumentStore(root, writable=True)
        yield root, store, _outside_snapshot(outer, root)


def _outside_snapshot(outer: Path, root: Path) -> dict[str, bytes]:
    found = {}
    for path in outer.rglob("*"):
        if root in path.parents or path == root or path.is_dir():
            continue
        found[str(path)] = path.read_bytes()
    return found


def _inside(root: Path, path: str) -> bool:
    real = os.path.realpath(path)
    return real == str(root) or real.startswith(str(root) + os.sep)


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(path=PATHS, operation=st.sampled_from(["read", "head", "write", "create", "walk"]))
def test_no_path_reaches_outside_the_root(
    layout: tuple[Path, LocalDocumentStore, dict[str, bytes]], path: str, operation: str
) -> None:
    global _touched
    root, store, outside = layout
    _touched = []
    result: Any = None
    try:
        if operation == "read":
            result = store.read(path)
        elif operation == "head":
            result = store.read_head(path, 64)
        elif operation == "write":
            result = store.write(path, b"WRITTEN")
        elif operation == "create":
            result = store.write(path, b"CREATED", overwrite=False)
        else:
            result = [found.path for found in store.walk(path)]
        event(f"{operation}: done")
    except (KnowledgePathError, OSError) as exc:  # a clear error, never another exception type
        event(f"{operation}: {type(exc).__name__}")
    finally:
        touched, _touched = _touched, None
    escaped = [(event, p) for event, p in touched if not _inside(root, p)]
    assert escaped == []
    if isinstance(result, bytes):
        assert result in (b"INSIDE", b"WRITTEN", b"CREATED")
    if isinstance(result, list):
        assert all(clean_path(p) == p for p in result)
    assert _outside_snapshot(root.parent, root) == outside


def test_the_audit_hook_sees_an_escape_when_there_is_one(
    layout: tuple[Path, LocalDocumentStore, dict[str, bytes]],
) -> None:
    """The harness itself can fail: reading through the escaping symlink directly is seen."""
    global _touched
    root, _, _ = layout
    _touched = []
    try:
        (root / "escape.md").read_bytes()
    finally:
        touched, _touched = _touched, None
    assert [p for _, p in touched if not _inside(root, p)]
