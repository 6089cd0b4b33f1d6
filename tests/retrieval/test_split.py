"""The helper thread a query's forward pass splits its layers over (``retrieval._split``).

Real threads; no model. A half the helper has not begun is run by the caller, so a busy
helper never blocks a caller, errors reach the caller, and concurrent callers all finish.
"""

from __future__ import annotations

import threading

import pytest

from agentkernel.retrieval import _split


def test_both_halves_run_once_and_come_back_in_order() -> None:
    runs: list[str] = []
    assert _split.both(lambda: runs.append("a") or 1, lambda: runs.append("b") or 2) == (1, 2)
    assert sorted(runs) == ["a", "b"]


def test_a_busy_helper_never_holds_the_caller() -> None:
    release = threading.Event()
    started = threading.Event()

    def hold() -> str:
        started.set()
        release.wait(30)
        return "held"

    holder = threading.Thread(target=lambda: _split.both(lambda: release.wait(30), hold))
    holder.start()
    try:
        assert started.wait(30)  # the helper is inside `hold` until released
        names: list[str] = []
        done = _split.both(lambda: "mine", lambda: names.append(threading.current_thread().name))
        assert done[0] == "mine"
        assert names == [threading.current_thread().name]  # taken back, run by the caller
    finally:
        release.set()
        holder.join(30)


def test_an_error_in_either_half_reaches_the_caller() -> None:
    def fail() -> int:
        raise ValueError("half failed")

    with pytest.raises(ValueError, match="half failed"):
        _split.both(lambda: 1, fail)
    with pytest.raises(ValueError, match="half failed"):
        _split.both(fail, lambda: 1)
    assert _split.both(lambda: 3, lambda: 4) == (3, 4)  # the helper still serves


def test_concurrent_callers_all_get_their_own_results() -> None:
    results: dict[int, list[tuple[int, int]]] = {}

    def call(n: int) -> None:
        results[n] = [_split.both(lambda: n, lambda: -n) for _ in range(200)]

    workers = [threading.Thread(target=call, args=(n,)) for n in range(1, 7)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert results == {n: [(n, -n)] * 200 for n in range(1, 7)}
