"""The ``bundle`` fixture shared by the LocalDocumentStore tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    (root / "tables").mkdir(parents=True)
    (root / "index.md").write_text("# Index\n")
    (root / "tables" / "orders.md").write_text("---\ntype: Table\n---\nOrders\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".DS_Store").write_bytes(b"\0\1")
    (tmp_path / "secret.md").write_text("SECRET")
    return root
