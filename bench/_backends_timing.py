"""Interleaved timing of the arms of one workload, and the statistics reported.

A workload has two or three *arms* doing the same logical call: ``raw`` (the SDK call a user
would write), ``manager`` (the backend method, when it differs from raw) and ``tool`` (the
``KnowledgeBuilder`` tool callable). Every arm is a function of the call number, so each call
can use a fresh statement or text. Within a round the arms are interleaved call by call, their
order rotating, so drift on a shared, noisy machine hits every arm alike.
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Arm = Callable[[int], Any]


@dataclass
class Workload:
    """One logical operation measured through several arms.

    Attributes:
        backend: The row label of the backend (``PostgreSQL``, ``Chroma (embedded)``, ...).
        operation: What is measured (``read_kb, repeated SELECT``, ...).
        arms: ``raw``, optionally ``manager``, and ``tool``: callables taking the call number.
        note: One line on what ``raw`` is, for the table's footnotes.
        check: Optional validation of one tool result (raises when the tool returned an
            error string, so a broken setup is not benchmarked as a fast failure).
        informative: A row for context, not held to the target (its raw call gives less than
            the tool does, e.g. no read-only guarantee).
    """

    backend: str
    operation: str
    arms: dict[str, Arm]
    note: str = ""
    check: Callable[[Any], None] | None = None
    informative: bool = False


@dataclass
class ArmStats:
    """Per-round p50/p95 of one arm, in microseconds."""

    p50: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)
    cpu50: list[float] = field(default_factory=list)  # process CPU time, all threads


@dataclass
class Result:
    """All rounds of one workload."""

    workload: Workload
    arms: dict[str, ArmStats]
    ratios: list[float]  # tool p50 / raw p50, per round
    manager_ratios: list[float]  # manager p50 / raw p50, per round (empty without manager)

    @property
    def overheads(self) -> list[float]:
        """Tool p50 minus raw p50 in microseconds, per round."""
        return [t - r for t, r in zip(self.arms["tool"].p50, self.arms["raw"].p50, strict=True)]

    def median(self, arm: str, key: str) -> float | None:
        stats = self.arms.get(arm)
        values = getattr(stats, key) if stats else []
        return statistics.median(values) if values else None


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def measure(workload: Workload, *, calls: int, rounds: int, warmup: int) -> Result:
    """Run ``rounds`` rounds of ``calls`` interleaved calls per arm.

    Args:
        workload: What to measure.
        calls: Timed calls per arm per round.
        rounds: Rounds; each reports p50/p95 per arm and the tool/raw ratio.
        warmup: Untimed calls per arm before the first round.

    Returns:
        The per-round statistics.
    """
    names = list(workload.arms)
    counter = 0
    for _ in range(warmup):
        for name in names:
            result = workload.arms[name](counter)
            if name == "tool" and workload.check is not None:
                workload.check(result)
            counter += 1
    stats = {name: ArmStats() for name in names}
    ratios: list[float] = []
    manager_ratios: list[float] = []
    for _ in range(rounds):
        samples: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        gc.collect()
        for call in range(calls):
            shift = call % len(names)
            for name in names[shift:] + names[:shift]:
                arm = workload.arms[name]
                cpu_started = time.process_time_ns()
                started = time.perf_counter_ns()
                arm(counter)
                samples[name].append((time.perf_counter_ns() - started) / 1e3)
                cpu[name].append((time.process_time_ns() - cpu_started) / 1e3)
                counter += 1
        for name in names:
            stats[name].p50.append(statistics.median(samples[name]))
            stats[name].p95.append(percentile(samples[name], 95))
            stats[name].cpu50.append(statistics.median(cpu[name]))
        ratios.append(stats["tool"].p50[-1] / stats["raw"].p50[-1])
        if "manager" in stats:
            manager_ratios.append(stats["manager"].p50[-1] / stats["raw"].p50[-1])
    return Result(workload, stats, ratios, manager_ratios)


def profile(workload: Workload, *, calls: int, top: int = 25) -> str:
    """cProfile the tool arm for ``calls`` calls; the report sorted by own time.

    Args:
        workload: What to profile.
        calls: How many tool calls to profile.
        top: How many functions to list.

    Returns:
        The pstats text (cumulative and own-time listings).
    """
    tool = workload.arms["tool"]
    for i in range(10):
        tool(-1 - i)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        tool(10_000_000 + i)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()
