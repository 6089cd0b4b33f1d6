"""DocumentTree: the paths, change tokens, directories and concept counts both modes serve from.

Real: the DocumentTree class itself (pure Python, no I/O); no part of it is replaced.
"""

from __future__ import annotations

from agentkernel.knowledgebase.okf.tree import DocumentTree


def test_concepts_and_other_documents_keep_their_tokens_through_add_and_remove() -> None:
    tree = DocumentTree()
    assert tree._add_document("a/b/one.md", "t1", concept=True) == "a/b/one"
    assert tree._add_document("a/two.MD", "t2", concept=True) == "a/two"
    assert tree._add_document("a/index.md", "t3", concept=False) is None
    assert tree._add_document("a/b/bad.md", "t4", concept=False) is None
    expected = {"a/b/one.md": "t1", "a/two.MD": "t2", "a/index.md": "t3", "a/b/bad.md": "t4"}
    assert tree.tokens() == expected
    assert sorted(tree.paths()) == sorted(expected)
    assert {p: tree.token_of(p) for p in expected} == expected
    assert tree.token_of("a/two.md") is None  # another spelling is another path
    assert tree.token_of("a/b/one.MD") is None
    assert tree.children("a") == (["a/b"], ["a/two"])
    assert tree.concepts_under("") == 2
    assert tree.concepts_under("a/b") == 1

    assert tree._remove_document("a/b/one.md")
    assert not tree._remove_document("a/b/one.md")
    assert tree.token_of("a/b/one.md") is None
    assert tree.has_directory("a/b")  # bad.md is still in it
    assert tree.concepts_under("a/b") == 0
    assert tree._remove_document("a/two.MD")
    assert tree._remove_document("a/b/bad.md")
    assert not tree.has_directory("a/b")
    assert tree.children("a") == ([], [])
    assert tree.tokens() == {"a/index.md": "t3"}
    assert tree.concepts_under("") == 0


def test_an_empty_token_is_still_a_held_document() -> None:
    tree = DocumentTree()
    tree._add_document("x.md", "", concept=True)
    assert tree.token_of("x.md") == ""
    assert tree.paths() == ["x.md"]
    assert tree._remove_document("x.md")
    assert tree.paths() == []
