"""BERT's WordPiece tokenizer in Python: the word pieces ``tokenizers`` gives, without it.

:class:`WordPiece` reads a model folder's ``tokenizer.json`` of the BERT shape (a
``BertNormalizer``, the ``BertPreTokenizer``, a ``WordPiece`` model, a template or BERT post-
processor adding ``[CLS]`` and ``[SEP]``, added tokens matched as written) and encodes texts to
exactly the ids ``tokenizers.Tokenizer.from_file(...)`` gives with no padding and truncation to
``max_length`` (tested against it, text by text and over random Unicode). A ``tokenizer.json``
of another shape is refused (:func:`refusals`), never tokenized differently.

The steps, as ``tokenizers`` does them:

- added tokens (``[CLS]``, ``[MASK]``... written in the text) are found first, leftmost and
  longest, in the raw text, and kept whole; the text between them goes through the rest;
- the normaliser removes control and format characters, turns whitespace into spaces, pads
  CJK ideographs with spaces, decomposes (NFD) and drops nonspacing marks (``strip_accents``,
  which follows ``lowercase`` when unset) and lowercases character by character
  (:mod:`~agentkernel.retrieval._bert_chars` has the classes as ``tokenizers`` has them);
- the pre-tokeniser splits on whitespace and makes each punctuation character a word;
- WordPiece cuts each word greedily into the longest vocabulary entries, later pieces with the
  ``##`` prefix: a word with a part that matches nothing, or longer than
  ``max_input_chars_per_word``, is one ``[UNK]``;
- the content is cut to ``max_length`` less the special tokens, which frame it.

Fast in plain Python: an ASCII text is normalised by one ``str.translate``, every text split by
one regular expression, and each word's pieces are remembered (a bounded memo), so a query
costs a few microseconds and a corpus mostly dictionary look-ups.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agentkernel.retrieval import _bert_chars as chars
from agentkernel.retrieval._embedding import EmbedderError
from agentkernel.retrieval._modelfolder import read_json

MAX_TOKENIZER_BYTES = 64 * 1024 * 1024
"""The largest ``tokenizer.json`` read (BERT's is under 1 MB; the largest vocabularies ~20 MB)."""

MEMO_WORDS = 200_000
"""Words whose pieces are remembered at most (the memo starts over when full)."""


@cache
def _patterns() -> dict[str, re.Pattern[str]]:
    """The character classes as compiled expressions (once per process, on first use)."""

    def klass(table: str) -> str:
        return "[" + chars.char_class(table) + "]"

    punctuation = chars.char_class(chars.PUNCTUATION)
    space = chars.char_class(chars.WHITESPACE)
    return {
        "control": re.compile(klass(chars.CONTROL) + "+"),
        "space": re.compile(klass(chars.WHITESPACE)),
        "cjk": re.compile(klass(chars.CJK)),
        "mark": re.compile(klass(chars.NONSPACING) + "+"),
        "barrier": re.compile("(" + klass(chars.NFD_BARRIERS) + ")"),
        "lower": re.compile("[" + "".join(chars.lower_overrides()) + "]"),
        "word": re.compile(f"[^{space}{punctuation}]+|[{punctuation}]"),
    }


def refusals(spec: dict[str, Any]) -> list[str]:
    """What in a parsed ``tokenizer.json`` is not the BERT shape :class:`WordPiece` reads.

    Args:
        spec: The parsed file.

    Returns:
        The reasons (empty: it reads it exactly).
    """
    reasons = []
    normalizer = _part(spec, "normalizer")
    if normalizer.get("type") != "BertNormalizer":
        reasons.append(f"normalizer {normalizer.get('type')!r}, not BertNormalizer")
    elif any(not isinstance(normalizer.get(flag, True), bool | None) for flag in _FLAGS):
        reasons.append("a BertNormalizer setting is neither true, false nor null")
    pre = _part(spec, "pre_tokenizer")
    if pre.get("type") != "BertPreTokenizer":
        reasons.append(f"pre-tokenizer {pre.get('type')!r}, not BertPreTokenizer")
    model = _part(spec, "model")
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        reasons.append(f"model {model.get('type')!r}, not WordPiece")
    elif not isinstance(model.get("unk_token"), str) or model["unk_token"] not in vocab:
        reasons.append("the unknown token is not in the vocabulary")
    elif not all(type(i) is int for i in vocab.values()):
        reasons.append("the vocabulary has ids that are not integers")
    elif not isinstance(model.get("continuing_subword_prefix", "##"), str) or (
        type(model.get("max_input_chars_per_word", 100)) is not int
    ):
        reasons.append("the WordPiece prefix or word length is not a string and an integer")
    if _frame(spec.get("post_processor")) is None:
        kind = _part(spec, "post_processor").get("type")
        reasons.append(f"post-processor {kind!r}, not [CLS] text [SEP]")
    added = spec.get("added_tokens") or []
    for token in added if isinstance(added, list) else [added]:
        if not isinstance(token, dict):
            reasons.append(f"added token {token!r} is not an object")
        elif not isinstance(token.get("content"), str) or type(token.get("id")) is not int:
            reasons.append(f"added token {token!r} has no text or no integer id")
        elif token.get("normalized") or token.get("lstrip") or token.get("rstrip"):
            reasons.append(f"added token {token['content']!r} is normalised or strips")
        elif token.get("single_word"):
            reasons.append(f"added token {token['content']!r} matches single words")
    return reasons


_FLAGS = ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")


def _part(spec: dict[str, Any], key: str) -> dict[str, Any]:
    """``spec[key]`` when it is an object, else an empty one."""
    value = spec.get(key)
    return value if isinstance(value, dict) else {}


def file_refusals(path: Path) -> list[str]:
    """:func:`refusals` of a ``tokenizer.json`` file.

    Args:
        path: The file.

    Returns:
        The reasons (empty: :class:`WordPiece` reads it exactly).

    Raises:
        EmbedderError: The file cannot be read, is not JSON, is over
            :data:`MAX_TOKENIZER_BYTES` or nests too deeply.
    """
    try:
        spec = read_json(path, MAX_TOKENIZER_BYTES)
    except FileNotFoundError as exc:
        raise EmbedderError(f"{path} cannot be read: {exc}") from exc
    return refusals(spec) if isinstance(spec, dict) else [f"{path.name} is not an object"]


def _frame(processor: Any) -> tuple[list[int], list[int]] | None:
    """The ids a post-processor puts before and after one text, ``None`` if not BERT's."""
    if not isinstance(processor, dict):
        return None
    if processor.get("type") == "BertProcessing":
        ids = [
            pair[1]
            for pair in (processor.get("cls"), processor.get("sep"))
            if isinstance(pair, list) and len(pair) == 2 and type(pair[1]) is int
        ]
        return ([ids[0]], [ids[1]]) if len(ids) == 2 else None
    if processor.get("type") != "TemplateProcessing":
        return None
    specials = _part(processor, "special_tokens")
    before: list[int] = []
    after: list[int] = []
    texts = 0
    single = processor.get("single")
    for piece in single if isinstance(single, list) else []:
        sequence = _part(piece, "Sequence") if isinstance(piece, dict) else {}
        special = _part(piece, "SpecialToken") if isinstance(piece, dict) else {}
        given = _part(specials, str(special.get("id"))).get("ids")
        if sequence.get("id") == "A" and not texts:
            texts = 1
        elif isinstance(given, list) and all(type(i) is int for i in given):
            (after if texts else before).extend(given)
        else:
            return None
    return (before, after) if texts else None


class WordPiece:
    """A BERT WordPiece tokenizer giving ``tokenizers``' ids (see the module docstring).

    Thread-safe: the memo is a dictionary read and written whole entries at a time.

    Example:
        >>> from agentkernel.retrieval import default_model_path
        >>> path = default_model_path() / "tokenizer.json"  # doctest: +SKIP
        >>> WordPiece.from_file(path, 256).encode("power users")  # doctest: +SKIP
        [101, 2373, 5198, 102]
    """

    def __init__(self, spec: dict[str, Any], max_length: int) -> None:
        """Build from a parsed ``tokenizer.json``.

        Args:
            spec: The parsed file.
            max_length: Ids at most in an encoding, the special tokens included.

        Raises:
            EmbedderError: The file is not the BERT shape (:func:`refusals`), or
                ``max_length`` leaves no room for a word piece.
        """
        reasons = refusals(spec)
        if reasons:
            raise EmbedderError(
                f"The tokenizer is not BERT WordPiece as the default embedder reads it "
                f"({'; '.join(reasons)}); sentence-transformers loads it "
                "(pip install 'agentkernel[embeddings-torch]')."
            )
        frame = _frame(spec["post_processor"])
        assert frame is not None  # refusals() checked it
        self._before, self._after = frame
        self._room = max_length - len(self._before) - len(self._after)
        if self._room < 1:
            raise EmbedderError(f"max_length {max_length} leaves no room for the text")
        normalizer, model = spec["normalizer"], spec["model"]
        self._clean = bool(normalizer.get("clean_text", True))
        self._cjk = bool(normalizer.get("handle_chinese_chars", True))
        self._lower = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
        self._strip = self._lower if strip is None else bool(strip)
        self._re = _patterns()
        self._ascii = _ascii_table(self._clean, self._lower, self._re)
        vocab: dict[str, int] = model["vocab"]
        prefix: str = model.get("continuing_subword_prefix", "##")
        self._starts = vocab
        self._continues = {k[len(prefix) :]: v for k, v in vocab.items() if k.startswith(prefix)}
        self._longest = max(len(k) for k in vocab)
        self._unk = (vocab[model["unk_token"]],)
        self._max_chars: int = model.get("max_input_chars_per_word", 100)
        added = {t["content"]: t["id"] for t in spec.get("added_tokens") or [] if t["content"]}
        self._added = added
        self._added_re = (
            re.compile("|".join(re.escape(t) for t in sorted(added, key=len, reverse=True)))
            if added
            else None
        )
        self._added_starts = "".join(sorted({t[0] for t in added}))
        self._memo: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: str | Path, max_length: int) -> WordPiece:
        """Read a ``tokenizer.json``.

        Args:
            path: The file.
            max_length: Ids at most in an encoding, the special tokens included.

        Returns:
            The tokenizer.

        Raises:
            EmbedderError: The file is not the BERT shape (see :meth:`__init__`), cannot be
                read, is not JSON, is over :data:`MAX_TOKENIZER_BYTES` or nests too deeply.
        """
        try:
            spec = read_json(Path(path), MAX_TOKENIZER_BYTES)
        except FileNotFoundError as exc:
            raise EmbedderError(f"{path} cannot be read: {exc}") from exc
        if not isinstance(spec, dict):
            raise EmbedderError(f"{path} is not a tokenizer.json")
        return cls(spec, max_length)

    def encode(self, text: str) -> list[int]:
        """The ids of one text: the special tokens around its first word pieces.

        Args:
            text: The text.

        Returns:
            At most ``max_length`` ids.
        """
        if self._added_re is not None and any(c in text for c in self._added_starts):
            content = self._with_added(text)
        else:
            content = self._content(text)
        return [*self._before, *content[: self._room], *self._after]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text, in order."""
        return [self.encode(text) for text in texts]

    def normalize(self, text: str) -> str:
        """The text as the normaliser leaves it (no added-token matching)."""
        if text.isascii():
            return text.translate(self._ascii)
        patterns = self._re
        if self._clean:
            text = patterns["control"].sub("", text)
            text = patterns["space"].sub(" ", text)
        if self._cjk:
            text = patterns["cjk"].sub(r" \g<0> ", text)
        if self._strip:
            text = patterns["mark"].sub("", _nfd(text, patterns["barrier"]))
        if self._lower:
            # per character, as tokenizers does: no final sigma (Python's only context rule)
            text = text.replace("\u03a3", "\u03c3").lower()
            text = patterns["lower"].sub(lambda m: _LOWER[m.group()], text)
        return text

    def pre_tokenize(self, text: str) -> list[str]:
        """The words of a normalised text: runs between whitespace, each punctuation alone."""
        return self._re["word"].findall(text)

    def _with_added(self, text: str) -> list[int]:
        """The content ids of a text that may hold added tokens, each kept as its id."""
        assert self._added_re is not None
        ids: list[int] = []
        start = 0
        for match in self._added_re.finditer(text):
            ids += self._content(text[start : match.start()])
            ids.append(self._added[match.group()])
            start = match.end()
            if len(ids) >= self._room:
                return ids
        ids += self._content(text[start:])
        return ids

    def _content(self, text: str) -> list[int]:
        """The word pieces' ids of text without added tokens (stops once past the room)."""
        ids: list[int] = []
        if not text:
            return ids
        memo, room = self._memo, self._room
        for word in self._re["word"].findall(self.normalize(text)):
            pieces = memo.get(word)
            if pieces is None:
                pieces = self._pieces(word)
                if len(memo) >= MEMO_WORDS:
                    memo.clear()
                memo[word] = pieces
            ids += pieces
            if len(ids) >= room:
                break
        return ids

    def _pieces(self, word: str) -> tuple[int, ...]:
        """WordPiece: the longest vocabulary entries, left to right, or one ``[UNK]``."""
        if len(word) > self._max_chars:
            return self._unk
        ids = []
        start, end_of_word = 0, len(word)
        vocab = self._starts
        while start < end_of_word:
            end = min(end_of_word, start + self._longest)
            while end > start:
                found = vocab.get(word[start:end])
                if found is not None:
                    break
                end -= 1
            else:
                return self._unk
            ids.append(found)
            start, vocab = end, self._continues
        return tuple(ids)


def _ascii_table(
    clean: bool, lower: bool, patterns: dict[str, re.Pattern[str]]
) -> dict[int, int | None]:
    """The normaliser on ASCII text as one ``str.translate`` table."""
    table: dict[int, int | None] = {}
    for code in range(128):
        char = chr(code)
        if clean and patterns["control"].match(char):
            table[code] = None
        elif clean and patterns["space"].match(char):
            table[code] = ord(" ")
        elif lower and "A" <= char <= "Z":
            table[code] = ord(char.lower())
    return table


def _nfd(text: str, barrier: re.Pattern[str]) -> str:
    """NFD as ``tokenizers`` has it: nothing decomposed or reordered across its unknowns."""
    if barrier.search(text) is None:
        return unicodedata.normalize("NFD", text)
    parts = barrier.split(text)  # the barriers at odd places
    return "".join(p if i % 2 else unicodedata.normalize("NFD", p) for i, p in enumerate(parts))


_LOWER = chars.lower_overrides()
