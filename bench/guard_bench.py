"""CPU cost of the SQL statement guard per statement, per dialect: parsed anew and cached.

Every statement of the benign corpus of ``tests/security/hostile_sql_corpus.py`` (what an
analyst writes: joins, CTEs, window functions, JSON, dates) goes through ``guard_statement``
in its dialect. "uncached" clears the verdict cache before each call, so the statement is
tokenized, parsed and judged (what an agent's new statement costs); "cached" repeats a
statement already accepted. A refusal is timed over the hostile corpus (never cached). The
table shows p50 / p90 / max over all statements, median of ``--rounds`` rounds.

Example::

    python bench/guard_bench.py --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security import hostile_sql_corpus as corpus  # noqa: E402

from agentkernel.knowledgebase._sql import guard as _sqlguard  # noqa: E402
from agentkernel.knowledgebase.errors import SQLRefusedError  # noqa: E402

CORPORA: dict[str, tuple[list[str], list[str]]] = {
    "postgres": (corpus.POSTGRES_BENIGN, corpus.postgres_hostile()),
    "duckdb": (corpus.DUCKDB_BENIGN, corpus.duckdb_hostile()),
    "sqlite": (corpus.SQLITE_BENIGN, corpus.sqlite_hostile()),
    "trino": (corpus.TRINO_BENIGN, corpus.trino_hostile()),
}


def _time(statements: list[str], call: Callable[[str], object], clear: bool) -> list[float]:
    """Microseconds per statement."""
    out = []
    for statement in statements:
        if clear:
            _sqlguard._guard_cached.cache_clear()
        start = time.perf_counter_ns()
        with contextlib.suppress(SQLRefusedError):
            call(statement)
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def _summary(samples: list[list[float]]) -> tuple[float, float, float]:
    """Median over rounds of each round's p50, p90 and max."""
    rows = [(statistics.median(s), statistics.quantiles(s, n=10)[-1], max(s)) for s in samples]
    return tuple(statistics.median(column) for column in zip(*rows, strict=True))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds; times in microseconds\n")
    print(
        "| dialect | benign | uncached p50 | p90 | max | cached p50 | hostile | refusal p50 | p90 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for dialect, (benign, hostile) in CORPORA.items():

        def guard(s: str, d: str = dialect) -> object:
            return _sqlguard.guard_statement(s, dialect=d, limit=3)

        _time(benign + hostile, guard, clear=True)  # warm up imports and dialect tables
        uncached = [_time(benign, guard, clear=True) for _ in range(args.rounds)]
        _time(benign, guard, clear=False)
        cached = [_time(benign, guard, clear=False) for _ in range(args.rounds)]
        refused = [_time(hostile, guard, clear=True) for _ in range(args.rounds)]
        u50, u90, umax = _summary(uncached)
        c50, _, _ = _summary(cached)
        r50, r90, _ = _summary(refused)
        print(
            f"| {dialect} | {len(benign)} | {u50:,.0f} | {u90:,.0f} | {umax:,.0f} | {c50:,.1f} "
            f"| {len(hostile)} | {r50:,.0f} | {r90:,.0f} |"
        )


if __name__ == "__main__":
    main()
