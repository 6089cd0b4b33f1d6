"""Peak memory and wall time of one hostile query through SQLManager, this tree against another.

The second table is the cost of a small query (median of 200, after 20 to warm up), since
the server-side check and the column probe add round trips. Each case runs in a fresh
process (``--worker``): it opens the manager, runs a small query
(the idle state), then the hostile one, and reports its peak RSS above idle (``ru_maxrss``),
the peak RSS of the child process that runs DuckDB's queries above its own idle state (its
``VmHWM`` while it lives, ``RUSAGE_CHILDREN`` once it was killed and reaped), and the query's
wall time, with ``timeout_seconds=5`` and the default ``max_result_bytes`` (1 MB).
``--only latency`` runs the small-query table alone (``--repeat`` times each, the median kept).
The same case runs with this tree's ``src`` and with ``--previous SRC`` (default
``/work/main/src``), side by side. PostgreSQL is a throw-away cluster (``initdb`` on
127.0.0.1); DuckDB and SQLite are files in a temporary folder.

Example::

    python bench/sql_bounded_bench.py --previous /work/main/src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "sqlite zeroblob(700000000)": ("sqlite", "SELECT zeroblob(700000000) AS z"),
    "duckdb repeat('x', 3*10^8)": ("duckdb", "SELECT repeat('x', 300000000) AS big"),
    "duckdb repeat('x', 10^9)": ("duckdb", "SELECT repeat('x', 1000000000) AS big"),
    "duckdb string_agg 3*10^8": (
        "duckdb",
        "SELECT string_agg('xxxxxxxxxx', '') AS s FROM range(30000000)",
    ),
    "duckdb list of 10^8": ("duckdb", "SELECT list(range) AS l FROM range(100000000)"),
    "duckdb blob 3*10^8": ("duckdb", "SELECT encode(repeat('x', 300000000)) AS b"),
    "duckdb runaway recursion": (
        "duckdb",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    ),
    "sqlite runaway recursion": (
        "sqlite",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    ),
    "postgresql string_agg 3*10^8": (
        "postgresql",
        "SELECT string_agg(repeat('x', 1000), '') AS s FROM generate_series(1, 300000)",
    ),
    "postgresql repeat('x', 3*10^7)": ("postgresql", "SELECT repeat('x', 30000000) AS big"),
    "postgresql repeat('x', 10^8)": ("postgresql", "SELECT repeat('x', 100000000) AS big"),
    "duckdb 200 rows of 5 MB": (
        "duckdb",
        "SELECT repeat('y', 5000000) AS big FROM range(200) LIMIT 200",
    ),
    "sqlite 200 rows of 5 MB": (
        "sqlite",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 200) "
        "SELECT printf('%.*c', 5000000, 'y') AS big FROM r LIMIT 200",
    ),
    "postgresql 200 rows of 5 MB": (
        "postgresql",
        "SELECT repeat('y', 5000000) AS big FROM generate_series(1, 200) LIMIT 200",
    ),
}


def _kib(pid: int, field: str) -> int:
    """A field of /proc/PID/status in KiB, 0 when the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(status.split(field + ":")[1].split()[0])


def _child(manager: object) -> int | None:
    """The process id of the manager's DuckDB worker (this tree), else ``None``."""
    return getattr(getattr(manager, "_worker", None), "pid", None)


def _worker(url: str, statement: str) -> None:
    from agentkernel.knowledgebase.sql import SQLManager

    child_idle = child_peak = 0
    with SQLManager(url, timeout_seconds=5, allow_privileged_role=True) as manager:
        manager.query("SELECT 1 AS one")
        first = _child(manager)
        if first is not None:
            child_idle = _kib(first, "VmRSS")
        if statement.startswith("trips:"):  # 20 to warm up, then N more, for strace to count
            count, small = statement.removeprefix("trips:").split(":", 1)
            for _ in range(20 + int(count)):
                manager.query(small)
            return
        if statement.startswith("latency:"):  # the cost of a small query, median of 200
            small = statement.removeprefix("latency:")
            times = []
            for _ in range(220):
                start = time.perf_counter()
                manager.query(small)
                times.append(time.perf_counter() - start)
            print(json.dumps({"ms": sorted(times[20:])[100] * 1000}))
            return
        idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.monotonic()
        try:
            records = manager.query(statement, limit=200)
            outcome = f"{len(records)} rows, {sum(len(str(r['text'])) for r in records):,} chars"
        except Exception as exc:  # the bench reports any outcome
            outcome = f"{type(exc).__name__}: {str(exc)[:60]}"
        wall = time.monotonic() - start
        if first is not None and _child(manager) == first:  # alive: its own peak
            child_peak = _kib(first, "VmHWM")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # killed or closed workers
    child = (max(child_peak, reaped) - child_idle) / 1024 if first is not None else 0.0
    print(json.dumps({"mb": (peak - idle) / 1024, "child": child, "s": wall, "outcome": outcome}))


def _run(src: str, url: str, statement: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src}:{ROOT}"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", url, statement],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    if not lines:
        nan = float("nan")
        return {"mb": nan, "child": nan, "s": nan, "outcome": done.stderr.strip()[-80:]}
    return dict(json.loads(lines[-1]))


def _postgres(folder: Path) -> tuple[str, list[str]]:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not initdb or not pg_ctl:
        raise SystemExit("initdb and pg_ctl are needed")
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, user="nobody")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = folder / "data"
    subprocess.run([*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust",
                    "--no-sync"], check=True, capture_output=True)  # fmt: skip
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = [*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w"]
    subprocess.run([*start, "start"], check=True, capture_output=True)
    stop = [*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", default="/work/main/src", help="the other tree's src")
    parser.add_argument("--only", choices=["cases", "latency", "trips"], help="run one table only")
    parser.add_argument("--repeat", type=int, default=1, help="latency runs per cell")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(*args.worker)
        return
    folder = Path(tempfile.mkdtemp(prefix="ak-sqlbench-"))
    sqlite_path = folder / "kb.sqlite"
    sqlite3.connect(sqlite_path).close()
    import duckdb

    duckdb.connect(str(folder / "kb.duckdb")).close()
    pg_folder = Path(tempfile.mkdtemp(prefix="ak-sqlbench-pg-"))  # initdb's user owns it
    pg_url, stop = _postgres(pg_folder)
    urls = {
        "sqlite": f"sqlite:///{sqlite_path}",
        "duckdb": f"duckdb:///{folder / 'kb.duckdb'}",
        "postgresql": pg_url,
    }
    try:
        if args.only in (None, "cases"):
            _cases(args.previous, urls)
        if args.only in (None, "latency"):
            _latency(args.previous, urls, args.repeat)
        if args.only in (None, "trips") and shutil.which("strace"):
            _trips(args.previous, urls["postgresql"])
    finally:
        subprocess.run(stop, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(pg_folder, ignore_errors=True)


def _cases(previous: str, urls: dict[str, str]) -> None:
    print("| case | this tree: MB above idle (process + DuckDB's) / s | previous: MB above idle "
          "/ s | this tree's outcome |\n|---|---|---|---|")  # fmt: skip
    for name, (backend, statement) in CASES.items():
        now = _run(str(ROOT / "src"), urls[backend], statement)
        before = _run(previous, urls[backend], statement)
        cells = (f"{now['mb']:,.0f} + {now['child']:,.0f} / {now['s']:.1f}",
                 f"{before['mb']:,.0f} / {before['s']:.1f}")  # fmt: skip
        print(f"| {name} | {cells[0]} | {cells[1]} | {now['outcome']} |", flush=True)


def _latency(previous: str, urls: dict[str, str], repeat: int) -> None:
    print("\n| small query, p50 ms | this tree | previous | ratio |\n|---|---|---|---|")
    small = "latency:SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b' ORDER BY n"
    for backend, url in urls.items():
        now, before = [], []
        for _ in range(repeat):  # alternate, so load hits both alike
            now.append(float(_run(str(ROOT / "src"), url, small).get("ms", "nan")))
            before.append(float(_run(previous, url, small).get("ms", "nan")))
        now_ms, before_ms = statistics.median(now), statistics.median(before)
        print(f"| {backend} | {now_ms:.2f} | {before_ms:.2f} | {now_ms / before_ms:.2f}x |",
              flush=True)  # fmt: skip


TRIPS = {
    "LIMIT appended by the guard": "SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b' ORDER BY n",
    "own LIMIT": "SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b' ORDER BY n LIMIT 2",
}


def _sends(src: str, url: str, statement: str) -> int:
    """``sendto`` calls of one worker process (each starts a round trip to the server)."""
    env = {**os.environ, "PYTHONPATH": f"{src}:{ROOT}"}
    done = subprocess.run(
        ["strace", "-f", "-qq", "-c", "-e", "trace=sendto", sys.executable, __file__,
         "--worker", url, statement],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    for line in done.stderr.splitlines():
        if line.rstrip().endswith("sendto"):
            return int(line.split()[3])
    return 0


def _trips(previous: str, url: str) -> None:
    """Round trips to PostgreSQL per query (sends of 100 queries, less those of none)."""
    print("\n| PostgreSQL round trips per query | this tree | previous |\n|---|---|---|")
    for name, small in TRIPS.items():
        cells = []
        for src in (str(ROOT / "src"), previous):
            runs = [_sends(src, url, f"trips:{n}:{small}") for n in (0, 100)]
            cells.append(f"{(runs[1] - runs[0]) / 100:.1f}")
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
