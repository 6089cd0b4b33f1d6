"""Hostile input: generated frontmatter, bytes, link targets, ids and browse paths.

Real directories and the real LocalDocumentStore; hypothesis generates the input. A secret
document sits beside each bundle root: no operation may ever read it or return its text,
and every path the manager asks the store for must be one the store's own walk listed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkernel.bundle.links import resolve_target
from agentkernel.knowledgebase import OKFManager
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.okf._links import resolve_links
from agentkernel.storage.local import LocalDocumentStore
from tests.knowledgebase.okf.helpers import Clock, concept, write_bundle
from tests.support import examples

SECRET = "xyzzysecretword"


class RecordingStore(LocalDocumentStore):
    """The real local store, remembering every path it was asked to read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, writable=True)
        self.asked: list[str] = []

    def read(self, path: str) -> bytes:
        self.asked.append(path)
        return super().read(path)

    def read_head(self, path: str, max_bytes: int) -> bytes:
        self.asked.append(path)
        return super().read_head(path, max_bytes)

    def read_heads(self, paths, max_bytes, *, workers=1):  # type: ignore[no-untyped-def]
        self.asked.extend(paths)  # the walk's batch read
        return super().read_heads(paths, max_bytes, workers=workers)


def _world(files: dict[str, str | bytes]) -> tuple[tempfile.TemporaryDirectory[str], Path]:
    holder = tempfile.TemporaryDirectory()
    base = Path(holder.name)
    (base / "secret.md").write_text(concept("Secret", SECRET, body=f"{SECRET}\n"))
    (base / "bundle-sibling").mkdir()
    (base / "bundle-sibling" / "x.md").write_text(concept("Secret", SECRET))
    root = write_bundle(base / "bundle", files)
    root.mkdir(exist_ok=True)
    (root / "link-out.md").symlink_to(base / "secret.md")
    return holder, root


yaml_ish = st.text(
    alphabet=st.sampled_from(list("type: \n-[]{}'\"&*!|>%@#,?abcXYZ0123\t\\\x85\u2028é")),
    max_size=80,
)
documents = st.one_of(
    yaml_ish.map(lambda fm: f"---\n{fm}\n---\nbody\n"),
    yaml_ish.map(lambda fm: f"---\ntype: Note\n{fm}\n---\nbody\n"),
    st.binary(max_size=64),
    st.text(max_size=64),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents, min_size=1, max_size=6))
def test_malformed_documents_never_stop_the_load(docs: list[str | bytes]) -> None:
    files: dict[str, str | bytes] = {f"d{i}.md": d for i, d in enumerate(docs)}
    files["anchor.md"] = concept("Note", "Anchor")
    holder, root = _world(files)
    with holder:
        kb = OKFManager(RecordingStore(root), clock=Clock())
        schema = kb.schema()
        # every document is a concept or a diagnostic (the outward symlink is the store's)
        assert schema["concepts"] + schema["diagnostics"] == len(files) + 1
        assert schema["concepts"] >= 1
        for row in kb.search("type note body abc", 10) + kb.browse("", 50):
            assert isinstance(row["text"], str)
        kb.get_description()


segment = st.sampled_from(
    [
        "..",
        ".",
        "",
        "a",
        "b.md",
        "index.md",
        "secret.md",
        "%2e%2e",
        "/",
        "\\",
        "~",
        "bundle-sibling",
        "x.md",
        "C:",
    ]
)
link_target = st.lists(segment, max_size=6).map("/".join)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(link_target, min_size=1, max_size=5), link_target)
def test_links_and_ids_never_reach_outside_the_root(targets: list[str], hostile: str) -> None:
    body = " ".join(f"[l{i}]({t})" for i, t in enumerate(targets)) + "\n"
    holder, root = _world(
        {"a/doc.md": concept("Note", "Doc", body=body), "a/b.md": concept(), "x.md": concept()}
    )
    with holder:
        store = RecordingStore(root)
        kb = OKFManager(store, clock=Clock())
        listed = {f.path for f in store.walk()}
        record = kb.fetch(["a/doc"])[0]
        for linked in record["metadata"]["links"]:
            assert f"{linked}.md" in listed
        for candidate in (hostile, *targets):
            for call in (lambda c=candidate: kb.fetch([c]), lambda c=candidate: kb.browse(c)):
                try:
                    rows = call()
                except KnowledgeError:
                    continue
                assert all(SECRET not in str(r) for r in rows)
        assert all(SECRET not in str(r) for r in kb.search(SECRET, 10))
        assert set(store.asked) <= listed


@settings(max_examples=examples(200), deadline=None)
@given(link_target, st.sampled_from(["doc.md", "a/doc.md", "a/b/doc.md"]))
def test_resolved_link_paths_are_clean(target: str, source: str) -> None:
    resolved = resolve_target(source, target, lambda _p: True)
    if resolved is not None:
        assert not resolved.startswith("/")
        assert ".." not in resolved.split("/")
        assert "\\" not in resolved
    links = resolve_links(source, f"[x]({target})", lambda _i: True, lambda _d: True)
    for found in links.concepts + links.broken + links.directories:
        assert ".." not in found.split("/") and not found.startswith("/")
