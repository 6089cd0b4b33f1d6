"""The DocumentStore contract: path cleaning and ``DocumentStore.from_uri``.

Real: the filesystem for local stores, moto's S3 server on 127.0.0.1 for ``s3://`` (see
``tests/support/fixtures_s3.py``), and a store class defined in this very module, imported by
its dotted path exactly as a user's own class would be.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.storage import _paths as store_paths
from agentkernel.storage.base import (
    DocumentStore,
    StoredFile,
    clean_file_path,
    clean_path,
    is_walkable,
)
from agentkernel.storage.local import LocalDocumentStore
from tests.support import examples, require_extra


class MemoryStore(DocumentStore):
    """A user's own store: ``python:tests.storage.test_base.MemoryStore``."""

    def __init__(self, location: str = "memory://", writable: bool = True) -> None:
        self._location = location
        self._writable = writable
        self.files: dict[str, bytes] = {}

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def location(self) -> str:
        return self._location

    def walk(self, prefix: str = "") -> Iterator[StoredFile]:
        start = clean_path(prefix)
        self._reset_diagnostics()
        for path, data in sorted(self.files.items()):
            if not start or path.startswith(start + "/"):
                yield StoredFile(path, len(data), str(hash(data)))

    def read(self, path: str) -> bytes:
        return self.files[clean_file_path(path)]

    def read_head(self, path: str, max_bytes: int) -> bytes:
        return self.read(path)[:max_bytes]

    def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
        cleaned = clean_file_path(path)
        if not overwrite and cleaned in self.files:
            raise FileExistsError(cleaned)
        self.files[cleaned] = bytes(data)
        return StoredFile(cleaned, len(data), str(hash(data)))


class NotAStore:
    """A class that is not a DocumentStore."""


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        (".", ""),
        ("./", ""),
        ("a", "a"),
        ("./a//b/./c.md", "a/b/c.md"),
        ("a/b/", "a/b"),
        ("tables/orders.md", "tables/orders.md"),
        ("ünïcode/ドキュメント.md", "ünïcode/ドキュメント.md"),
        ("a..b.md", "a..b.md"),
        ("...", "..."),
    ],
)
def test_clean_path_normalises(given: str, expected: str) -> None:
    assert clean_path(given) == expected


@pytest.mark.parametrize(
    "bad",
    ["..", "../a", "a/../../b", "a/..", "/a", "C:/a", "c:a", "a\\b", "a\x00b", "a\x1bb", "\ud800"],
)
def test_clean_path_refuses_escapes(bad: str) -> None:
    with pytest.raises(KnowledgePathError):
        clean_path(bad)


@settings(max_examples=examples(400), deadline=None)
@given(st.text(alphabet="ab./:\\-_~@é \x00\t", max_size=14))
def test_the_plain_path_shortcut_answers_as_the_full_checks(path: str) -> None:
    # plain ASCII paths skip the checks (a walk meets 10,000 of them); the answer is the same
    def outcome(check: Callable[[str], str], shortcut: bool) -> str | type[Exception]:
        never = re.compile(r"(?!)")
        with patch.object(store_paths, "_PLAIN", store_paths._PLAIN if shortcut else never):
            try:
                return check(path)
            except KnowledgePathError:
                return KnowledgePathError

    for check in (clean_path, clean_file_path):
        assert outcome(check, shortcut=True) == outcome(check, shortcut=False)


def test_clean_path_refuses_non_strings() -> None:
    with pytest.raises(KnowledgePathError, match="string"):
        clean_path(b"a.md")  # type: ignore[arg-type]


def test_file_paths_must_name_a_visible_file() -> None:
    assert clean_file_path("./a/b.md") == "a/b.md"
    for bad in ("", ".", ".git/config", "a/.hidden.md", ".env"):
        with pytest.raises(KnowledgePathError):
            clean_file_path(bad)
    assert is_walkable("a/b.md")
    assert not is_walkable("a//b.md")
    assert not is_walkable("./a.md")
    assert not is_walkable(".git/config")


def test_from_uri_plain_paths_are_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bundle").mkdir()
    store = DocumentStore.from_uri(str(tmp_path / "bundle"), writable=False)
    assert isinstance(store, LocalDocumentStore)
    assert store.location == str((tmp_path / "bundle").resolve())
    assert store.writable is False
    monkeypatch.chdir(tmp_path)
    assert DocumentStore.from_uri("./bundle").location == str((tmp_path / "bundle").resolve())
    assert DocumentStore.from_uri("  bundle  ").location == str((tmp_path / "bundle").resolve())


def test_from_uri_file_uris_are_local(tmp_path: Path) -> None:
    root = tmp_path / "my kb"
    root.mkdir()
    store = DocumentStore.from_uri(root.as_uri())  # percent-encoded: file:///.../my%20kb
    assert isinstance(store, LocalDocumentStore)
    assert store.location == str(root.resolve())
    local = DocumentStore.from_uri(f"file://localhost{root.resolve()}")
    assert local.location == str(root.resolve())
    for bad in (f"file:{root}", f"file://remote-host{root}"):
        with pytest.raises(AKConfigError):
            DocumentStore.from_uri(bad)


def test_a_dotted_path_without_python_scheme_is_a_local_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"python:mypkg\.stores\.GitStore"):
        DocumentStore.from_uri("mypkg.stores.GitStore")
    (tmp_path / "mypkg.stores.GitStore").mkdir()
    store = DocumentStore.from_uri("mypkg.stores.GitStore")
    assert isinstance(store, LocalDocumentStore)
    assert store.location == str(tmp_path / "mypkg.stores.GitStore")


def test_from_uri_python_scheme_builds_a_users_own_store() -> None:
    store = DocumentStore.from_uri(
        "python:tests.storage.test_base.MemoryStore",
        location="memory://notes",
        writable=False,
    )
    assert isinstance(store, MemoryStore)
    assert (store.location, store.writable) == ("memory://notes", False)


@pytest.mark.parametrize(
    "bad",
    [
        "python:tests.storage.test_base.NotAStore",
        "python:tests.storage.test_base.Missing",
        "python:no_such_module_anywhere.Store",
        "python:Store",
        "python:",
    ],
)
def test_from_uri_python_scheme_refuses_what_is_not_a_store(bad: str) -> None:
    with pytest.raises(AKConfigError):
        DocumentStore.from_uri(bad)


@pytest.mark.parametrize(
    "bad",
    ["http://example.com/kb", "gs://bucket/kb", "git+ssh://host/repo", "", "   ", "s3:bucket"],
)
def test_from_uri_refuses_unknown_schemes_and_empty_values(bad: str) -> None:
    with pytest.raises(AKConfigError):
        DocumentStore.from_uri(bad)


def test_from_uri_s3_forwards_client_options(s3_endpoint: str, s3_bucket: str) -> None:
    require_extra("boto3", "aws")
    from agentkernel.storage.s3 import S3DocumentStore

    store = DocumentStore.from_uri(
        f"s3://{s3_bucket}/bundles/kb/", endpoint_url=s3_endpoint, writable=False
    )
    assert isinstance(store, S3DocumentStore)
    assert (store.location, store.writable) == (f"s3://{s3_bucket}/bundles/kb", False)
    assert list(store.walk()) == []  # it reached the local server: the bucket exists
    whole = DocumentStore.from_uri(f"S3://{s3_bucket}", endpoint_url=s3_endpoint)
    assert whole.location == f"s3://{s3_bucket}"
