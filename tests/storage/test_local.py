"""LocalDocumentStore reading and walking real temporary directories.

Real: the filesystem (tmp_path), symlinks (out of the root, inside it, cycles, dangling),
FIFOs and odd file names. Nothing is mocked. Writing is tested in ``test_local_write.py``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.storage.local import LocalDocumentStore

BAD_PATHS = [
    "../outside.md",
    "a/../../outside.md",
    "..",
    "/etc/passwd",
    "//etc/passwd",
    "a\x00b.md",
    "a\\..\\..\\outside.md",
    "C:/outside.md",
    "c:outside.md",
    ".git/config",
    "a/.hidden.md",
    "",
    ".",
    "./",
]


def paths(store: LocalDocumentStore, prefix: str = "") -> list[str]:
    return [found.path for found in store.walk(prefix)]


def test_walk_lists_visible_files_with_sizes_in_order(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    files = list(store.walk())
    assert [f.path for f in files] == ["index.md", "tables/orders.md"]
    assert files[1].size == len("---\ntype: Table\n---\nOrders\n")
    assert store.diagnostics == []
    assert paths(store, "tables") == ["tables/orders.md"]
    assert paths(store, "tables/") == ["tables/orders.md"]
    assert paths(store, "no/such/dir") == []


def test_token_changes_when_content_changes_even_at_the_same_size(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    before = {f.path: f.token for f in store.walk()}
    written = store.write("index.md", b"# Other\n")  # same size as "# Index\n"
    after = {f.path: f.token for f in store.walk()}
    assert after["index.md"] != before["index.md"]
    assert after["index.md"] == written.token
    assert after["tables/orders.md"] == before["tables/orders.md"]


def test_missing_root_fails_at_construction_and_hints_at_python_scheme(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        LocalDocumentStore(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=r"python:mypkg\.stores\.GitStore"):
        LocalDocumentStore("mypkg.stores.GitStore")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        LocalDocumentStore(tmp_path / "file")


def test_root_vanishing_after_construction_fails_the_walk(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    root.mkdir()
    store = LocalDocumentStore(root)
    root.rmdir()
    with pytest.raises(FileNotFoundError):
        list(store.walk())


def test_read_and_bounded_read_head(bundle: Path) -> None:
    store = LocalDocumentStore(bundle)
    (bundle / "big.md").write_bytes(b"x" * 1_000_000)
    assert store.read("tables/orders.md").endswith(b"Orders\n")
    assert store.read_head("big.md", 10) == b"x" * 10
    assert store.read_head("index.md", 1000) == b"# Index\n"
    assert store.read_head("index.md", 0) == b""
    with pytest.raises(ValueError):
        store.read_head("index.md", -1)
    with pytest.raises(FileNotFoundError):
        store.read("missing.md")
    with pytest.raises(IsADirectoryError):
        store.read("tables")


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_unclean_paths_are_refused_everywhere(bundle: Path, bad: str) -> None:
    store = LocalDocumentStore(bundle)
    before = sorted(str(p) for p in bundle.parent.rglob("*"))
    with pytest.raises(KnowledgePathError):
        store.read(bad)
    with pytest.raises(KnowledgePathError):
        store.read_head(bad, 10)
    with pytest.raises(KnowledgePathError):
        store.write(bad, b"pwned")
    assert sorted(str(p) for p in bundle.parent.rglob("*")) == before
    assert (bundle.parent / "secret.md").read_text() == "SECRET"


def test_symlinks_out_of_the_root_are_skipped_and_refused(bundle: Path) -> None:
    outside = bundle.parent / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("LEAK")
    (bundle / "escape.md").symlink_to(bundle.parent / "secret.md")
    (bundle / "escape-dir").symlink_to(outside)
    (bundle / "to-git.md").symlink_to(bundle / ".git" / "config")
    store = LocalDocumentStore(bundle)

    assert paths(store) == ["index.md", "tables/orders.md"]
    assert len(store.diagnostics) == 3
    assert all("outside the bundle" in d for d in store.diagnostics)
    for bad in ("escape.md", "escape-dir/leak.md", "to-git.md"):
        with pytest.raises(KnowledgePathError):
            store.read(bad)
    with pytest.raises(KnowledgePathError):
        store.write("escape-dir/new.md", b"x")
    with pytest.raises(KnowledgePathError):
        store.write("escape.md", b"x")
    assert sorted(p.name for p in outside.iterdir()) == ["leak.md"]
    assert (bundle.parent / "secret.md").read_text() == "SECRET"


def test_symlinks_inside_the_root_are_followed_once(bundle: Path) -> None:
    (bundle / "alias.md").symlink_to(bundle / "index.md")
    (bundle / "tables" / "loop").symlink_to(bundle)  # a cycle back to the root
    (bundle / "dangling.md").symlink_to(bundle / "nowhere.md")
    (bundle / "self").symlink_to(".")
    store = LocalDocumentStore(bundle)
    assert paths(store) == ["alias.md", "index.md", "tables/orders.md"]
    assert store.read("alias.md") == b"# Index\n"
    assert sorted(store.diagnostics) == [
        "skipped 'dangling.md': No such file or directory",
        "skipped 'self': a symlink to a directory already listed",
        "skipped 'tables/loop': a symlink to a directory already listed",
    ]
    with pytest.raises(KnowledgePathError):
        store.write("self", b"x")  # would rename over the root


def test_a_directory_alias_is_skipped_and_the_directory_listed_under_its_own_path(
    bundle: Path,
) -> None:
    (bundle / "aaa-alias").symlink_to(bundle / "tables")  # sorts before "tables"
    store = LocalDocumentStore(bundle)
    assert paths(store) == ["index.md", "tables/orders.md"]
    assert store.diagnostics == ["skipped 'aaa-alias': a symlink to a directory already listed"]
    assert store.read("aaa-alias/orders.md") == store.read("tables/orders.md")  # inside: allowed
    assert paths(store, "aaa-alias") == ["aaa-alias/orders.md"]


def test_special_files_are_skipped_and_never_block(bundle: Path) -> None:
    os.mkfifo(bundle / "pipe.md")
    (bundle / "back\\slash.md").write_text("x")
    store = LocalDocumentStore(bundle)
    assert paths(store) == ["index.md", "tables/orders.md"]
    assert len(store.diagnostics) == 2
    with pytest.raises(KnowledgePathError, match="not a regular file"):
        store.read("pipe.md")  # opened non-blocking, refused: no writer needed


def test_diagnostics_describe_the_latest_walk_only(
    bundle: Path, caplog: pytest.LogCaptureFixture
) -> None:
    link = bundle / "escape.md"
    link.symlink_to(bundle.parent / "secret.md")
    store = LocalDocumentStore(bundle)
    with caplog.at_level(logging.DEBUG, logger="agentkernel.storage"):
        list(store.walk())
        first = store.diagnostics
        list(store.walk())
    assert len(first) == 1
    assert store.diagnostics == first
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG]  # no spam
    link.unlink()
    list(store.walk())
    assert store.diagnostics == []
    assert len(first) == 1  # a caller's copy of the earlier walk is kept


def test_read_heads_answers_each_path_as_read_head_does(bundle: Path) -> None:
    # the walk reads every document through read_heads, which opens each directory once:
    # for every kind of path it must give read_head's bytes, or the very error it raises
    outside = bundle.parent / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("LEAK")
    (bundle / "escape.md").symlink_to(bundle.parent / "secret.md")
    (bundle / "escape-dir").symlink_to(outside)
    (bundle / "alias.md").symlink_to(bundle / "index.md")
    (bundle / "aaa-alias").symlink_to(bundle / "tables")
    (bundle / "big.md").write_bytes(b"y" * 50_000)
    os.mkfifo(bundle / "pipe.md")
    asked = [
        "index.md", "tables/orders.md", "big.md", "alias.md", "aaa-alias/orders.md",
        "escape.md", "escape-dir/leak.md", "pipe.md", "missing.md", "nowhere/x.md", "tables",
        *BAD_PATHS,
    ]  # fmt: skip
    store = LocalDocumentStore(bundle, writable=False)
    for max_bytes in (0, 5, 16_384):
        got = store.read_heads(asked, max_bytes)
        assert len(got) == len(asked)
        for path, answer in zip(asked, got, strict=True):
            try:
                expected: bytes | Exception = store.read_head(path, max_bytes)
            except Exception as exc:
                expected = exc
            if isinstance(expected, bytes):
                assert answer == expected, path
            else:
                assert type(answer) is type(expected), path
                assert str(answer) == str(expected), path
    heads = dict(zip(asked, store.read_heads(asked, 16_384), strict=True))
    assert heads["big.md"] == b"y" * 16_384
    assert heads["alias.md"] == b"# Index\n"
    assert isinstance(heads["escape.md"], KnowledgePathError)
    assert isinstance(heads["escape-dir/leak.md"], KnowledgePathError)
    assert isinstance(heads["pipe.md"], KnowledgePathError)
    assert isinstance(heads["missing.md"], FileNotFoundError)
    assert isinstance(heads["../outside.md"], KnowledgePathError)
    assert (bundle.parent / "secret.md").read_text() == "SECRET"
