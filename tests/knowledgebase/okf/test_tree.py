"""DocumentTree: the paths, change tokens, directories and concept counts both modes serve from.

Real: the DocumentTree class itself (pure Python, no I/O); no part of it is replaced.
"""

from __future__ import annotations

from agentkernel.knowledgebase.okf._tree import DocumentTree


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


def test_concepts_added_in_bulk_make_the_same_tree_as_one_by_one() -> None:
    paths = ["top.md", "a/one.md", "a/b/two.md", "a/b/three.md", "c/d/e/four.md"]
    single, bulk = DocumentTree(), DocumentTree()
    for tree in (single, bulk):
        tree._add_document("a/index.md", "r", concept=False)
    for path in paths:
        single._add_document(path, "t", concept=True)
    ids = [path[:-3] for path in paths]
    bulk._add_concepts(ids, ["", "a", "a/b", "a/b", "c/d/e"], "t")
    for tree in (single, bulk):
        assert tree._remove_document("a/b/two.md")
    assert bulk.tokens() == single.tokens()
    for directory in ["", "a", "a/b", "c", "c/d", "c/d/e", "x"]:
        assert bulk.children(directory) == single.children(directory)
        assert bulk.concepts_under(directory) == single.concepts_under(directory)
        assert bulk.has_directory(directory) == single.has_directory(directory)
