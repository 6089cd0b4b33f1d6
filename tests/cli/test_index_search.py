"""``search --index`` and ``serve --index`` search with the embedder the index was built with.

What is real: ``agentkernel.cli.main`` (what the console script runs) on the real GA4 bundle,
read in place; the Lance bundle index built by the real ``index`` command with the packaged
default embedder (all-MiniLM-L6-v2 on ONNX Runtime); the vector cache on disk in ``tmp_path``.
Nothing is mocked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentkernel.cli._bundle import index_embedder
from agentkernel.retrieval import Embedder
from agentkernel.retrieval.embedders import load_embedder
from tests.cli.cli_support import run_cli
from tests.support import okf_bundle, require_extra

GA4 = str(okf_bundle("ga4"))
LANCE_BM25 = "lexical (Lance's BM25 over the index's analysed terms, one field; not BM25F)"


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    require_extra("lancedb", "lancedb")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return load_embedder("default")


def test_an_index_built_with_an_embedder_is_searched_with_it(
    minilm: Embedder,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index = str(tmp_path / "kb.lance")
    status, _, err = run_cli(["index", GA4, "--to", index, "--embedder", "default"], capsys)
    assert status == 0, err
    assert index_embedder(index, []) == "default"  # the index names the embedder it was built with
    query = "power users"
    status, out, err = run_cli(["search", GA4, query, "--index", index, "-n", "3"], capsys)
    assert status == 0, err
    assert err.splitlines()[-1].startswith(f"ga4: search is hybrid: {LANCE_BM25} and dense (st:")
    # the same concepts as the walk searching hybrid with that embedder
    _, walked, _ = run_cli(["search", GA4, query, "--embedder", "default", "-n", "3"], capsys)
    assert out == walked and out.startswith("- [references/metrics/")
    # --lexical asks for Lance's BM25 alone, and the label says so
    status, out, err = run_cli(["search", GA4, query, "--index", index, "--lexical"], capsys)
    assert status == 0 and err.splitlines()[-1] == f"ga4: search is {LANCE_BM25}"


def test_an_index_without_vectors_is_searched_lexically_and_says_which_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_extra("lancedb", "lancedb")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index = str(tmp_path / "kb.lance")
    assert run_cli(["index", GA4, "--to", index], capsys)[0] == 0
    assert index_embedder(index, []) is None
    status, _, err = run_cli(["search", GA4, "purchasers", "--index", index], capsys)
    assert status == 0 and err.splitlines()[-1] == f"ga4: search is {LANCE_BM25}"
