"""Files that are not served are said, never silently dropped: check, fetch, index, descriptions.

What is real: ``agentkernel.cli.main`` on a bundle written to a temporary directory (a file
without frontmatter, a text file, a link out of the bundle, a concept over the answer budget)
and on the example bundle read in place; ``index`` builds a real Lance dataset in the temporary
directory (the ``lancedb`` extra). Nothing is mocked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder
from agentkernel.knowledgebase.okf.manager import OKFManager
from agentkernel.storage.local import LocalDocumentStore
from tests.cli.cli_support import run_cli
from tests.support import REPO, require_extra

EXAMPLE = REPO / "examples" / "cli" / "knowledgebase" / "openai" / "okf" / "bundle"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "good.md").write_text(
        "---\ntype: note\ntitle: Good\n---\nSee [outside](../outside.md).\n", encoding="utf-8"
    )
    (root / "plain.md").write_text("no frontmatter\n", encoding="utf-8")
    (root / "notes.txt").write_text("text\n", encoding="utf-8")
    (root / "diagram.png").write_bytes(b"\x89PNG")
    long_body = "".join(f"line {n}\n" for n in range(5_000))
    (root / "long.md").write_text(f"---\ntype: note\ntitle: Long\n---\n{long_body}")
    return root


def test_check_reports_ignored_files_leaving_links_and_long_concepts(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_cli(["check", str(bundle)], capsys)
    assert status == 1  # plain.md breaks rule 11.1
    ignored = [line for line in out.splitlines() if "not markdown" in line]
    assert len(ignored) == 1 and "ignored 2 file(s)" in ignored[0]
    assert "diagram.png" in ignored[0] and "notes.txt" in ignored[0]
    assert "good.md: link leaves the bundle: ../outside.md" in out
    assert "long.md:" in out and "over the 20,000-character answer budget" in out


def test_fetch_of_a_skipped_file_says_why(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(["fetch", str(bundle), "plain"], capsys)
    assert status == 1 and out == ""
    assert "'plain.md' exists but is not served: no YAML frontmatter" in err


def test_index_reports_skips_like_search(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_extra("lancedb", "lancedb")
    target = str(tmp_path / "kb.lance")
    for _ in range(2):  # the first build, then a run that reads nothing new
        status, _, err = run_cli(["index", str(bundle), "--to", target, "--quiet"], capsys)
        assert status == 0
        assert "1 file(s) skipped (1 no YAML frontmatter)" in err
        assert f"agentkernel-kb check {bundle}" in err
    status, _, err = run_cli(["search", str(bundle), "good"], capsys)
    assert "1 file(s) skipped (1 no YAML frontmatter)" in err


def test_descriptions_name_the_bundle_once_and_every_type() -> None:
    manager = OKFManager(LocalDocumentStore(EXAMPLE, writable=False), refresh_seconds=None)
    tools = {t.__name__: t for t in KnowledgeBuilder([manager]).build(writable=False)}
    described = tools["get_all_kb_descriptions"]()
    assert "bundle bundle" not in described
    types = set(manager.schema()["types"])
    assert len(types) == 7
    assert all(kind in described for kind in types)
