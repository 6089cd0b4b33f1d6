#!/usr/bin/env python3
"""agentkernel's Python WordPiece tokenizer against ``tokenizers``, side by side in one run.

The default embedder's tokenizer (:mod:`agentkernel.retrieval._wordpiece`) and ``tokenizers``
(Rust), both on the packaged all-MiniLM-L6-v2's ``tokenizer.json``, no padding, truncated to
256 word pieces, on the texts as the embedder gives them (stripped):

* **load**: import and read ``tokenizer.json``, in a fresh process (median of ``--rounds``);
* **query**: each question of ``bench/questions.jsonl`` encoded alone (p50, p99), ours with
  its word memo emptied before each query (every word new) and warm;
* **corpus**: the Debian corpus's concept texts (``--concepts`` of the 10,000; title,
  description, body head and name, as the index embeds them), ours from an empty memo, with
  ``encode`` per text and ``tokenizers``' ``encode`` per text and ``encode_batch`` (Rust
  threads): wall and process CPU;
* the ids are compared on every text: the run fails if one differs.

Run it under the bench lock: ``flock /tmp/ak-bench.lock python bench/wordpiece_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

LOAD = """
import sys, time
t = time.perf_counter()
from agentkernel.retrieval import default_model_path
path = default_model_path() / "tokenizer.json"
if sys.argv[1] == "ours":
    from agentkernel.retrieval._wordpiece import WordPiece
    tokenizer = WordPiece.from_file(path, 256)
    tokenizer.encode("warm up")
else:
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    tokenizer.encode("warm up")
print(time.perf_counter() - t)
"""


def load_seconds(which: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        run = subprocess.run(
            [sys.executable, "-c", LOAD, which], capture_output=True, text=True, check=True
        )
        times.append(float(run.stdout))
    return statistics.median(times)


def timed(call: object) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()  # type: ignore[operator]
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concepts", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes for load")
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()

    import _corpus
    from tokenizers import Tokenizer

    from agentkernel.retrieval import default_model_path
    from agentkernel.retrieval._wordpiece import WordPiece
    from agentkernel.retrieval.embedders import document_texts

    corpus = _corpus.prepare(args.data, 10_000, 10, 13, _corpus.stderr_log)
    concepts = corpus.concepts[: args.concepts]
    texts = [
        t.strip()
        for t in dict.fromkeys(
            t for c in concepts for t in document_texts(c.title, c.description, c.body[:2000])
        )
    ]
    questions = [
        json.loads(line)["question"].strip()
        for line in (HERE / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    path = default_model_path() / "tokenizer.json"
    theirs = Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.enable_truncation(max_length=256)

    loads = {w: load_seconds(w, args.rounds) for w in ("ours", "tokenizers")}

    ours = WordPiece.from_file(path, 256)
    cold, warm, rust = [], [], []
    for _ in range(20):
        for q in questions:
            ours._memo.clear()
            t = time.perf_counter()
            ours.encode(q)
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            ours.encode(q)
            warm.append(time.perf_counter() - t)
            t = time.perf_counter()
            theirs.encode(q)
            rust.append(time.perf_counter() - t)

    def pct(values: list[float], p: float) -> float:
        values = sorted(values)
        return values[min(len(values) - 1, int(p * len(values)))] * 1e6

    fresh = WordPiece.from_file(path, 256)
    got: list[list[int]] = []
    corpus_ours = timed(lambda: got.extend(fresh.encode(t) for t in texts))
    corpus_warm = timed(lambda: [fresh.encode(t) for t in texts])
    one: list[list[int]] = []
    corpus_rust = timed(lambda: one.extend(theirs.encode(t).ids for t in texts))
    batch: list[list[int]] = []
    corpus_batch = timed(lambda: batch.extend(e.ids for e in theirs.encode_batch(texts)))
    different = sum(a != b for a, b in zip(got, batch, strict=True)) + sum(
        a != b for a, b in zip(one, batch, strict=True)
    )
    differ_q = sum(ours.encode(q) != theirs.encode(q).ids for q in questions)
    chars = sum(len(t) for t in texts)
    pieces = sum(len(i) for i in got)
    report = {
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "load_seconds": {k: round(v, 4) for k, v in loads.items()},
        "questions": len(questions),
        "query_us (p50, p99)": {
            "ours, every word new": [round(pct(cold, p), 1) for p in (0.5, 0.99)],
            "ours, memo warm": [round(pct(warm, p), 1) for p in (0.5, 0.99)],
            "tokenizers encode": [round(pct(rust, p), 1) for p in (0.5, 0.99)],
        },
        "corpus": {"concepts": len(concepts), "texts": len(texts), "chars": chars, "ids": pieces},
        "corpus_s (wall, cpu)": {
            "ours, memo empty": [round(x, 3) for x in corpus_ours],
            "ours, memo warm": [round(x, 3) for x in corpus_warm],
            "tokenizers encode per text": [round(x, 3) for x in corpus_rust],
            "tokenizers encode_batch": [round(x, 3) for x in corpus_batch],
        },
        "memo_words": len(fresh._memo),
        "texts_with_different_ids": different + differ_q,
    }
    print(json.dumps(report, indent=1))
    return 1 if different + differ_q else 0


if __name__ == "__main__":
    raise SystemExit(main())
