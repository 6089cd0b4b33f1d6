"""Hostile YAML in one page's frontmatter: every reader skips that page, says why, and goes on.

Real: the one frontmatter reader (``agentkernel.storage.frontmatter``) on an alias bomb (nine
levels of ten aliases: 10^9 values once expanded) and on 5,000-deep nesting; the curated
stores (``FileKnowledgeStore`` on a real folder, ``BundleKnowledgeStore`` on a real
``LocalDocumentStore``) and their ``knowledge_index`` tool; ``agentkernel-kb index`` (the CLI's
``main``) building a real LanceDB bundle index in a temporary folder.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStore,
    create_knowledge_tools,
)
from agentkernel.storage import frontmatter
from agentkernel.storage.local import LocalDocumentStore
from tests.support import require_extra

_LEVELS = "abcdefghi"
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{level}: &{level} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, level in itertools.pairwise(_LEVELS)
)
DEEP = "a: " + "[" * 5000 + "]" * 5000 + "\n"


def test_the_reader_refuses_an_alias_bomb_and_deep_nesting() -> None:
    with pytest.raises(frontmatter.FrontmatterError, match="alias"):
        frontmatter.read_mapping("type: concept\n" + ALIAS_BOMB)
    with pytest.raises(frontmatter.FrontmatterError, match="nest"):
        frontmatter.read_mapping("type: concept\n" + DEEP)
    with pytest.raises(frontmatter.FrontmatterError, match="refused"):
        frontmatter.read_mapping("type: concept\nx: '" + "y" * 1_100_000 + "'\n")
    # shared values within the limits are read as before
    assert frontmatter.read_mapping("a: &a [1, 2]\nb: *a\n") == {"a": [1, 2], "b": [1, 2]}


def _bomb_page(folder: Path) -> None:
    (folder / "concepts").mkdir(parents=True, exist_ok=True)
    (folder / "concepts" / "bomb.md").write_text(
        f"---\ntype: concept\ntitle: Bomb\n{ALIAS_BOMB}---\nBoom.\n", encoding="utf-8"
    )


@pytest.mark.parametrize("kind", ["file", "bundle"])
def test_a_curated_store_skips_the_page_and_names_it(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "knowledge"
    folder.mkdir()
    store: KnowledgeStore = (
        FileKnowledgeStore(folder)
        if kind == "file"
        else BundleKnowledgeStore(LocalDocumentStore(folder), refresh_seconds=0)
    )
    store.create("concept", "tides", "Tides", "Water.")
    _bomb_page(folder)
    tools = {tool.__name__: tool for tool in create_knowledge_tools(store)}
    index = tools["knowledge_index"]()
    assert "concept/tides" in index and "concept/bomb" not in index
    assert "concepts/bomb.md" in index  # named as a file it does not serve
    assert [i.id for i in store.list()] == ["concept/tides"]
    report = store.check()
    assert [u.path for u in report.unreadable_files] == ["concepts/bomb.md"]
    assert "alias" in report.unreadable_files[0].reason


def test_agentkernel_kb_index_skips_the_concept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_extra("lancedb", "lancedb")
    from agentkernel.cli import main
    from agentkernel.knowledgebase import OKFManager

    root = tmp_path / "bundle"
    (root / "tables").mkdir(parents=True)
    (root / "tables" / "orders.md").write_text(
        "---\ntype: table\ntitle: Orders\n---\nOne row per order.\n", encoding="utf-8"
    )
    (root / "tables" / "bomb.md").write_text(
        f"---\ntype: table\ntitle: Bomb\n{ALIAS_BOMB}---\nBoom.\n", encoding="utf-8"
    )
    index = str(tmp_path / "kb.lance")
    assert main(["index", str(root), "--to", index, "--quiet"]) == 0
    capsys.readouterr()
    kb = OKFManager(LocalDocumentStore(root, writable=False), index=index)
    assert kb.search("orders", 1)[0]["metadata"]["id"] == "tables/orders"
    assert kb.fetch(["tables/bomb"]) == []
