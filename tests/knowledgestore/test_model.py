"""Ids, links, built-in types and the package's import cost (pure functions, no I/O)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentkernel.knowledgestore import BUILT_IN_PAGE_TYPES, is_slug, linked_ids, parse_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("concept/bowline", ("concept", "bowline")),
        (" how-to/tie-a-knot-2 ", ("how-to", "tie-a-knot-2")),
        ("Concept/bowline", None),
        ("concept/Bowline", None),
        ("concept/bow--line", None),
        ("concept", None),
        ("concept/bowline/extra", None),
        ("1concept/bowline", None),
    ],
)
def test_parse_id(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_id(text) == expected


def test_linked_ids_finds_id_links_once_in_order() -> None:
    markdown = (
        "See [a](concept/a), [b](entity/b#facts), [a again](concept/a), "
        "[a file](concepts/a.md), [web](https://x.org/a/b) and ![img](pic/x.png)."
    )
    assert linked_ids(markdown) == ["concept/a", "entity/b"]


def test_is_slug() -> None:
    assert is_slug("spring-tides-2")
    assert not is_slug("spring_tides") and not is_slug("-a") and not is_slug("a-")


def test_built_in_types() -> None:
    assert [t.name for t in BUILT_IN_PAGE_TYPES] == [
        "summary",
        "concept",
        "entity",
        "synthesis",
        "preference",
    ]
    assert [t.dir for t in BUILT_IN_PAGE_TYPES] == [
        "summaries",
        "concepts",
        "entities",
        "syntheses",
        "preferences",
    ]
    assert all(t.template and t.description and t.index_section for t in BUILT_IN_PAGE_TYPES)


def test_importing_the_package_pulls_in_no_sdk_and_no_store() -> None:
    code = (
        "import sys, agentkernel.knowledgestore as k; "
        "assert 'mcp' not in sys.modules, 'mcp'; "
        "assert 'agentkernel.knowledgestore.file_store' not in sys.modules; "
        "assert 'sqlite3' not in sys.modules; "
        "k.FileKnowledgeStore; assert 'mcp' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
