"""Peak memory and wall time of one huge-value query through SQLManager, this tree against another.

The second table is the cost of a small query (median of 200, after 20 to warm up), since
the server-side check and the column probe add round trips. Each case runs in a fresh
process (``--worker``): it opens the manager, runs a small query
(the idle state), then the huge one, and reports its peak RSS above idle (``ru_maxrss``) and
the query's wall time, with ``timeout_seconds=5`` and the default ``max_result_bytes`` (1 MB).
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "sqlite zeroblob(700000000)": ("sqlite", "SELECT zeroblob(700000000) AS z"),
    "duckdb repeat('x', 3*10^8)": ("duckdb", "SELECT repeat('x', 300000000) AS big"),
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


def _worker(url: str, statement: str) -> None:
    from agentkernel.knowledgebase.sql import SQLManager

    with SQLManager(url, timeout_seconds=5, allow_privileged_role=True) as manager:
        manager.query("SELECT 1 AS one")
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
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"mb": (peak - idle) / 1024, "s": wall, "outcome": outcome}))


def _run(src: str, url: str, statement: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": f"{src}:{ROOT}"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", url, statement],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    if not lines:
        return {"mb": float("nan"), "s": float("nan"), "outcome": done.stderr.strip()[-80:]}
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
        print("| case | this tree: MB above idle / s | previous: MB above idle / s | this "
              "tree's outcome |")  # fmt: skip
        print("|---|---|---|---|")
        for name, (backend, statement) in CASES.items():
            now = _run(str(ROOT / "src"), urls[backend], statement)
            before = _run(args.previous, urls[backend], statement)
            print(f"| {name} | {now['mb']:,.0f} / {now['s']:.1f} | "
                  f"{before['mb']:,.0f} / {before['s']:.1f} | {now['outcome']} |")  # fmt: skip
        print("\n| small query, p50 ms | this tree | previous | ratio |\n|---|---|---|---|")
        small = "latency:SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b' ORDER BY n"
        for backend, url in urls.items():
            now_ms = float(str(_run(str(ROOT / "src"), url, small).get("ms", "nan")))
            before_ms = float(str(_run(args.previous, url, small).get("ms", "nan")))
            print(f"| {backend} | {now_ms:.2f} | {before_ms:.2f} | {now_ms / before_ms:.2f}x |")
    finally:
        subprocess.run(stop, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(pg_folder, ignore_errors=True)


if __name__ == "__main__":
    main()
