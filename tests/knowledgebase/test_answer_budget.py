"""The answer budget, fetch amplification and skipped files, through the builder's tools.

What is real: an ``OKFManager`` over an OKF bundle written to a temporary directory (a 2 MB
concept, files the walk skips), and the in-memory backend of ``memory_backend.py`` (a real
``KnowledgeBase`` subclass) for records without a bundle. The tools are called as a framework
calls them; the agent's reading is done by following the ``[cut]`` notes' words.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS
from agentkernel._tooling.result import is_error
from agentkernel.knowledgebase import KnowledgeBuilder, Record, _answers
from agentkernel.knowledgebase.okf.manager import OKFManager
from agentkernel.storage.local import LocalDocumentStore

from .memory_backend import MemoryBackend

Tools = dict[str, Callable[..., str]]
_READ_ON = re.compile(r'fetch_kb\(backend="([^"]+)", ids="([^"]+)"\)')
_FRAME = re.compile(r"\A\[[^\]\n]+#offset=(\d+)\] characters (\d+) to (\d+) of (\d+) of [^\n]*:\n")


def big_document(size: int = 2_000_000, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = ["roast", "yield", "bean", "crema", "grind", "bloom", "über", "café", "温度"]
    lines = ["---", "type: note", "title: Big", "description: a very long note", "---"]
    used = 0
    while used < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(0, 18)))
        line += " " * rng.randint(0, 2)  # trailing blanks must survive the cut too
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) + "\n"


def answers_bundle(tmp_path: Path) -> Path:
    """An OKF bundle ``kb``: a 2 MB concept, a small one, and two files the walk skips."""
    root = tmp_path / "kb"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "big.md").write_text(big_document(), encoding="utf-8")
    (root / "notes" / "small.md").write_text(
        "---\ntype: note\ntitle: Small\n---\nA small note.\n", encoding="utf-8"
    )
    (root / "plain.md").write_text("no frontmatter at all\n", encoding="utf-8")
    (root / "latin.md").write_bytes(b"---\ntype: note\ntitle: L\n---\n\xe9t\xe9\n")
    return root


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return answers_bundle(tmp_path)


def tools_over(root: Path, **kwargs: object) -> Tools:
    manager = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    return {t.__name__: t for t in KnowledgeBuilder([manager], **kwargs).build(writable=False)}  # type: ignore[arg-type]


def read_whole(fetch: Callable[..., str], backend: str, first: str) -> tuple[str, int]:
    """Read a record as an agent would: call, keep the part, follow the note's call."""
    parts: list[str] = []
    answer = fetch(backend, first)
    calls = 1
    while True:
        assert len(answer) <= DEFAULT_ANSWER_CHARS
        body, cut, note = answer.rpartition("\n[cut] ")
        if not cut:
            body, note = answer, ""
        frame = _FRAME.match(body)
        if parts:
            assert frame is not None, body[:200]
            assert int(frame.group(1)) == sum(len(p) for p in parts)
            body = body[frame.end() :]
            assert int(frame.group(3)) - int(frame.group(2)) == len(body)
        parts.append(body)
        if not note:
            return "".join(parts), calls
        match = _READ_ON.search(note)
        assert match is not None, note
        assert match.group(1) == backend
        answer = fetch(backend, match.group(2))
        calls += 1


def test_a_2_mb_concept_comes_back_within_the_budget_and_reads_whole_by_the_notes(
    bundle: Path,
) -> None:
    fetch = tools_over(bundle)["fetch_kb"]
    first = fetch("kb", "notes/big")
    assert len(first) <= DEFAULT_ANSWER_CHARS and not is_error(first)
    assert "[cut] " in first and 'ids="notes/big#offset=' in first
    whole, calls = read_whole(fetch, "kb", "notes/big")
    document = (bundle / "notes" / "big.md").read_text(encoding="utf-8")
    assert calls > len(document) // DEFAULT_ANSWER_CHARS
    unbudgeted = tools_over(bundle, answer_chars=None)["fetch_kb"]("kb", "notes/big")
    assert whole == unbudgeted  # every character of the rendering, in order
    assert document.rstrip() in whole  # the document, byte for byte


def test_budget_is_configurable_and_checked(bundle: Path) -> None:
    small = tools_over(bundle, answer_chars=5_000)["fetch_kb"]("kb", "notes/big")
    assert len(small) <= 5_000 and "5,000-character answer budget" in small
    with pytest.raises(ValueError, match="answer_chars"):
        tools_over(bundle, answer_chars=10)


def test_offset_past_the_end_says_so(bundle: Path) -> None:
    answer = tools_over(bundle)["fetch_kb"]("kb", "notes/small#offset=99999")
    assert "nothing from character 99999" in answer


def test_several_ids_fill_the_budget_then_name_the_rest(bundle: Path) -> None:
    fetch = tools_over(bundle)["fetch_kb"]
    answer = fetch("kb", "notes/small,notes/big,notes/small#offset=3")
    assert len(answer) <= DEFAULT_ANSWER_CHARS
    assert answer.startswith("[notes/small] Small")
    match = _READ_ON.search(answer)
    assert match is not None
    assert match.group(2).startswith("notes/big#offset=")
    assert match.group(2).endswith(",notes/small#offset=3")


def test_twenty_thousand_copies_of_one_id_give_one_small_answer(bundle: Path) -> None:
    fetch = tools_over(bundle)["fetch_kb"]
    answer = fetch("kb", ",".join(["notes/small"] * 20_000))
    assert answer.count("[notes/small] Small") == 1
    assert "19999 repeated id(s) were read once" in answer
    assert len(answer) < 1_000


def test_one_call_reads_at_most_fifty_ids_and_names_the_rest() -> None:
    backend = MemoryBackend("M", fetch=True)
    backend.docs = {f"d{i}": f"doc {i}" for i in range(80)}
    fetch = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}["fetch_kb"]
    answer = fetch("M", ",".join(f"d{i}" for i in range(80)))
    fetched = [ids for op, ids in backend.calls if op == "fetch"]
    assert sum(len(ids) for ids in fetched) == 50
    assert "at most 50 ids; 30 more were not read" in answer
    match = _READ_ON.search(answer)
    assert match is not None
    assert match.group(2).split(",") == [f"d{i}" for i in range(50, 80)]


def test_a_fetch_that_finds_nothing_is_an_error_and_a_partial_one_is_not(bundle: Path) -> None:
    fetch = tools_over(bundle)["fetch_kb"]
    missing = fetch("kb", "nope,neither")
    assert is_error(missing) and "Not found: ['nope', 'neither']" in missing
    partial = fetch("kb", "notes/small,nope")
    assert not is_error(partial) and partial.rstrip().endswith("Not found: ['nope']")


def test_fetch_of_a_skipped_file_says_it_exists_why_and_how_to_fix_it(bundle: Path) -> None:
    fetch = tools_over(bundle)["fetch_kb"]
    plain = fetch("kb", "plain")
    assert is_error(plain)
    assert "'plain.md' exists but is not served: no YAML frontmatter" in plain
    assert "curator can fix the file" in plain
    latin = fetch("kb", "latin")
    assert "'latin.md' exists but is not served: not UTF-8 text" in latin


def test_browse_of_a_missing_path_is_an_error(bundle: Path) -> None:
    browse = tools_over(bundle)["browse_kb"]
    assert is_error(browse("kb", "no/such/dir"))
    assert not is_error(browse("kb", "notes"))


def test_a_long_list_is_cut_and_names_what_did_not_fit() -> None:
    backend = MemoryBackend("M", search=True, fetch=True)
    backend.docs = {f"d{i:02}": "needle " + "x" * 3_000 for i in range(20)}
    search = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}["search_kb"]
    answer = search("M", "needle", 20)
    assert len(answer) <= DEFAULT_ANSWER_CHARS
    shown = answer.count("- [d")
    assert 0 < shown < 20
    match = _READ_ON.search(answer)
    assert match is not None
    assert match.group(2).split(",") == [f"d{i:02}" for i in range(shown, 20)]


def test_one_huge_record_without_an_id_says_how_to_narrow() -> None:
    backend = MemoryBackend("Q", query=True, query_language="sql")
    tools = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}
    backend.query = lambda statement, limit=3, **kw: [  # type: ignore[method-assign]
        {"text": "y" * 100_000, "metadata": {}}
    ]
    answer = tools["read_kb"]("Q", "SELECT 1")
    assert len(answer) <= DEFAULT_ANSWER_CHARS
    assert "[cut] The first record is cut" in answer and "fewer columns" in answer


def test_a_failure_names_no_absolute_path(tmp_path: Path) -> None:
    secret = tmp_path / "srv" / "kb" / ("a" * 300 + ".md")
    backend = MemoryBackend("M", search=True, fail=OSError(36, "File name too long", str(secret)))
    search = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}["search_kb"]
    answer = search("M", "x")
    assert is_error(answer) and "File name too long" in answer
    assert str(tmp_path) not in answer and "/srv/" not in answer


def test_schemas_and_descriptions_name_no_server_path(bundle: Path, tmp_path: Path) -> None:
    from tests.support import require_extra

    require_extra("lancedb", "lancedb")
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    store = LocalDocumentStore(bundle, writable=False)
    index = str(tmp_path / "indexes" / "kb.lance")
    index_bundle(store, index)
    manager = OKFManager(store, index=index, refresh_seconds=None)
    tools = {t.__name__: t for t in KnowledgeBuilder([manager]).build(writable=False)}
    for answer in (tools["get_schemas"](), tools["get_all_kb_descriptions"]()):
        assert str(tmp_path) not in answer, answer
    assert "kb.lance" in tools["get_schemas"]()


def test_notes_about_missing_and_skipped_ids_stay_within_the_budget(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "big.md").write_text(big_document(200_000), encoding="utf-8")
    for n in range(30):
        (root / f"skipped-{n}-{'s' * 150}.md").write_text("no frontmatter\n", encoding="utf-8")
    fetch = tools_over(root)["fetch_kb"]
    asked = ["big"] + [f"skipped-{n}-{'s' * 150}" for n in range(30)]
    asked += [f"missing-{n}-{'m' * 250}" for n in range(19)]
    answer = fetch("kb", ",".join(asked))
    assert len(answer) <= DEFAULT_ANSWER_CHARS
    assert "exists but is not served" in answer
    assert "more of the ids name files not served" in answer
    assert 'ids="big#offset=' in answer


def test_a_call_stops_reading_once_its_budget_is_spent() -> None:
    backend = MemoryBackend("M", fetch=True)
    backend.docs = {f"d{i:02}": "z" * 30_000 for i in range(50)}
    fetch = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}["fetch_kb"]
    answer = fetch("M", ",".join(sorted(backend.docs)))
    asked = [ids for op, ids in backend.calls if op == "fetch"]
    assert asked == [[f"d{i:02}" for i in range(10)]]  # one batch, then the budget was spent
    assert len(answer) <= DEFAULT_ANSWER_CHARS
    match = _READ_ON.search(answer)
    assert match is not None
    rest = match.group(2).split(",")
    assert rest[0].startswith("d00#offset=") and rest[1:] == [f"d{i:02}" for i in range(1, 50)]


class _SlowBackend(MemoryBackend):
    """A backend whose every fetch takes a while, like a slow database."""

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        time.sleep(0.3)
        return super().fetch(ids, **kwargs)


def test_a_slow_fetch_stops_at_its_time_limit_and_names_the_ids_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One call holds the (one-at-a-time) server for FETCH_SECONDS at most: #28 item 6."""
    monkeypatch.setattr(_answers, "FETCH_SECONDS", 0.4)
    backend = _SlowBackend("M", fetch=True)
    backend.docs = {f"d{i}": f"doc {i}" for i in range(40)}
    fetch = {t.__name__: t for t in KnowledgeBuilder([backend]).build()}["fetch_kb"]
    answer = fetch("M", ",".join(f"d{i}" for i in range(40)))
    asked = [ids for op, ids in backend.calls if op == "fetch"]
    assert 1 <= len(asked) < 4, asked  # stopped between batches, not after all four
    read = sum(len(ids) for ids in asked)
    assert "[d0]" in answer and f"[d{read}]" not in answer
    match = _READ_ON.search(answer)
    assert match is not None, answer
    assert match.group(2).split(",") == [f"d{i}" for i in range(read, 40)]
