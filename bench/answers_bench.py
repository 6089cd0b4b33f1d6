"""What the answer budget and the bounded fetch cost and save (issues 27 and 28).

Runs the builder's ``fetch_kb`` over an OKF bundle written to a temporary directory (a 2 MB
concept, a small one; the tests' ``answers_bundle``) and prints one table, side by side:

- ``budget``: this version (20,000-character answers, ids read once, at most 50 per call);
- ``whole``: the same builder with ``answer_chars=None`` (the whole text);
- ``before``: what the previous version did, reproduced with the backend's own calls: every
  id of the request fetched (duplicates included) and the whole rendering returned.

Rows: the first answer for the 2 MB concept, reading it whole (through the notes for
``budget``), and 20,000 copies of one id in one call. Each cell is the median of
``--repeat`` timed runs; the machine is shared, so read the ratios.

Usage: ``python bench/answers_bench.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.knowledgebase.test_answer_budget import answers_bundle

from agentkernel.knowledgebase import KnowledgeBuilder
from agentkernel.knowledgebase.okf.manager import OKFManager
from agentkernel.storage.local import LocalDocumentStore

_READ_ON = re.compile(r'ids="([^"]+)"')


def _timed(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result: Any = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _read_through_notes(fetch: Callable[..., str]) -> tuple[int, int]:
    ids, calls, chars = "notes/big", 0, 0
    while True:
        answer = fetch("kb", ids)
        calls += 1
        chars = max(chars, len(answer))
        _, cut, note = answer.rpartition("\n[cut] ")
        match = _READ_ON.search(note) if cut else None
        if match is None:
            return calls, chars
        ids = match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = answers_bundle(Path(folder))
        kb = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
        budget = {t.__name__: t for t in KnowledgeBuilder([kb]).build(writable=False)}
        whole = {
            t.__name__: t for t in KnowledgeBuilder([kb], answer_chars=None).build(writable=False)
        }
        copies = ",".join(["notes/small"] * 20_000)

        def before(ids: str) -> str:
            wanted = [part.strip() for part in ids.split(",") if part.strip()]
            return kb.format_results(kb.fetch(wanted))

        rows: list[tuple[str, str, str, str]] = []
        fresh = KnowledgeBuilder  # a new builder per run: no rendering kept from the last

        def first_budget() -> str:
            return {t.__name__: t for t in fresh([kb]).build(writable=False)}["fetch_kb"](
                "kb", "notes/big"
            )

        t_b, a_b = _timed(first_budget, args.repeat)
        t_w, a_w = _timed(lambda: whole["fetch_kb"]("kb", "notes/big"), args.repeat)
        t_0, a_0 = _timed(lambda: before("notes/big"), args.repeat)
        rows.append(
            (
                "2 MB concept: first answer, s / chars",
                f"{t_b:.3f} / {len(a_b):,}",
                f"{t_w:.3f} / {len(a_w):,}",
                f"{t_0:.3f} / {len(a_0):,}",
            )
        )

        def read_budget() -> tuple[int, int]:
            tools = {t.__name__: t for t in fresh([kb]).build(writable=False)}
            return _read_through_notes(tools["fetch_kb"])

        t_r, (calls, largest) = _timed(read_budget, args.repeat)
        rows.append(
            (
                "2 MB concept read whole, s (calls, largest answer)",
                f"{t_r:.3f} ({calls} calls, {largest:,})",
                f"{t_w:.3f} (1 call, {len(a_w):,})",
                f"{t_0:.3f} (1 call, {len(a_0):,})",
            )
        )
        t_b, a_b = _timed(lambda: budget["fetch_kb"]("kb", copies), args.repeat)
        t_w, a_w = _timed(lambda: whole["fetch_kb"]("kb", copies), args.repeat)
        t_0, a_0 = _timed(lambda: before(copies), max(1, args.repeat // 2))
        rows.append(
            (
                "20,000 copies of one id, s / chars",
                f"{t_b:.3f} / {len(a_b):,}",
                f"{t_w:.3f} / {len(a_w):,}",
                f"{t_0:.3f} / {len(a_0):,}",
            )
        )
    header = ("fetch_kb", "budget (this version)", "whole (answer_chars=None)", "before")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()
