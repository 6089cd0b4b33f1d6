#!/usr/bin/env python3
"""OKFManager at 10,000 concepts, side by side with bm25s, tantivy and SQLite FTS5.

The corpus is Debian's English package descriptions (one concept per package; see
``bench/_corpus.py``), prepared on first use into ``bench/.data/`` and reused. The queries are
known-item queries: 8 consecutive words of one concept's body, whose target is that concept.

Every system runs in a fresh subprocess of its own (so peak RSS is its own), once per round;
the S3 part starts a moto server on 127.0.0.1, uploads the bundle and counts the requests
OKFManager makes. See bench/README.md.

Usage:
    python bench/okf_bench.py                 # everything, prints the table
    python bench/okf_bench.py --no-s3 --rounds 1
    python bench/okf_bench.py --write-results # also rewrite bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEFAULT_DATA = HERE / ".data"
SEED = 20260530


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okf_bench.py",
        description=(
            "Benchmark OKFManager on a 10,000-concept OKF bundle built from Debian package "
            "descriptions, against bm25s, tantivy and SQLite FTS5 over the same text. On first "
            "use it runs `apt-get update -o Acquire::Languages=en` if the Translation-en lists "
            "are missing, and writes the bundle into --data."
        ),
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="cache dir (default: bench/.data)"
    )
    parser.add_argument("--size", type=int, default=10_000, help="concepts in the bundle (10000)")
    parser.add_argument("--queries", type=int, default=200, help="known-item queries (200)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed for sampling and queries")
    parser.add_argument("--rounds", type=int, default=3, help="fresh-process rounds per system (3)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per round (3)")
    parser.add_argument(
        "--connect-runs",
        type=int,
        default=3,
        help="OKFManager walks per round, each in a fresh process (3): the walk is a few seconds "
        "of CPU, so several samples steady its median on a shared machine",
    )
    parser.add_argument(
        "--writes", type=int, default=5, help="write->visible samples per round (5)"
    )
    parser.add_argument(
        "--systems",
        default="okf,okf-pure,bm25s,tantivy,fts5,bm25s-stem,tantivy-stem,fts5-porter",
        help=(
            "comma list of okf,okf-pure and the peers bm25s,tantivy,fts5,bm25s-stem,"
            "tantivy-stem,fts5-porter (default: all); okf-pure is "
            "OKFManager with numpy hidden (its pure-Python index path, as on a core install)"
        ),
    )
    parser.add_argument("--no-s3", action="store_true", help="skip the moto S3 part (the slowest)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached corpus")
    parser.add_argument(
        "--write-results", action="store_true", help="rewrite bench/RESULTS.md with this run"
    )
    parser.add_argument("--json", type=Path, help="also save the raw results as JSON here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--pure", action="store_true", help=argparse.SUPPRESS)
    return parser


# --------------------------------------------------------------------------- worker side


def _worker(args: argparse.Namespace) -> None:
    # every walk is a whole walk here; bench/lexical_start_bench.py measures the warm start
    os.environ.setdefault("AGENTKERNEL_LEXICAL_CACHE", "off")
    if args.pure:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # import numpy -> ImportError
    import _corpus
    import _workers

    if args.worker == "okf-connect":  # the walk alone: its peak holds no query corpus
        print(json.dumps(_workers.okf_connect_worker(Path(args.target))))
        return
    corpus = _corpus.prepare(args.data, args.size, args.queries, args.seed, lambda _m: None)
    changed = max(1, args.size // 100)
    if args.worker == "peer":
        result = _workers.peer_worker(args.target, corpus, args.repeat, args.writes)
    elif args.worker == "okf":
        result = _workers.okf_worker(Path(args.target), corpus, args.repeat, args.writes, changed)
    elif args.worker == "okf-s3":
        result = _workers.okf_s3_worker(args.target, corpus, changed)
    else:
        raise SystemExit(f"unknown worker {args.worker!r}")
    print(json.dumps(result))


def _run_worker(
    args: argparse.Namespace, kind: str, target: str, pure: bool = False
) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker", kind, "--target", target,
        "--data", str(args.data), "--size", str(args.size), "--queries", str(args.queries),
        "--seed", str(args.seed), "--repeat", str(args.repeat), "--writes", str(args.writes),
    ]  # fmt: skip
    if pure:
        command.append("--pure")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise RuntimeError(f"worker {kind} {target} failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- orchestration


def _okf_importable() -> str | None:
    """``None`` when OKFManager imports, else why not."""
    if importlib.util.find_spec("agentkernel") is None:
        return "agentkernel is not installed in this interpreter"
    done = subprocess.run(
        [sys.executable, "-c", "from agentkernel.knowledgebase.okf.manager import OKFManager"],
        capture_output=True,
        text=True,
    )
    return None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


def _fresh_copy(bundle: Path, scratch: Path, n: int) -> Path:
    target = scratch / f"bundle-{n}"
    shutil.copytree(bundle, target)
    return target


def _measure(args: argparse.Namespace, corpus: Any) -> tuple[dict[str, Any], list[str]]:
    import _report

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    notes: list[str] = []
    rounds: dict[str, list[dict[str, Any]]] = {}
    okf_problem = _okf_importable() if "okf" in systems else "not selected"
    if "okf" in systems and okf_problem:
        _log(f"OKFManager column skipped: {okf_problem}")
        notes.append(f"OKFManager not measured: {okf_problem}")
    if not okf_problem:
        numpy_there = importlib.util.find_spec("numpy") is not None
        notes.append(
            "OKFManager column: numpy is "
            + ("importable here, so its index scores with numpy" if numpy_there else "absent")
            + "; 'OKF, no numpy' hides numpy (the pure-Python path of a core install). "
            "The targets are checked on the OKFManager column."
        )
    with tempfile.TemporaryDirectory(prefix="okf-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        for n in range(args.rounds):
            for peer in _report.PEERS:
                if peer in systems:
                    _log(f"round {n + 1}/{args.rounds}: {peer}: read bundle, index, search ...")
                    rounds.setdefault(peer, []).append(_run_worker(args, "peer", peer))
            for system in ("okf", "okf-pure"):
                if okf_problem or system not in systems:
                    continue
                pure = system == "okf-pure"
                key = system.replace("-", "_")
                label = "OKFManager (numpy hidden)" if pure else "OKFManager"
                _log(f"round {n + 1}/{args.rounds}: {label} walk (read-only, RSS) ...")
                for _ in range(max(1, args.connect_runs)):
                    rounds.setdefault(f"{key}_connect", []).append(
                        _run_worker(args, "okf-connect", str(corpus.bundle), pure)
                    )
                copy = _fresh_copy(corpus.bundle, scratch, n)
                _log(
                    f"round {n + 1}/{args.rounds}: {label} search/fetch/browse/write/refresh "
                    "on a scratch copy ..."
                )
                rounds.setdefault(key, []).append(_run_worker(args, "okf", str(copy), pure))
                shutil.rmtree(copy)
    results = {name: _report.merge_rounds(runs) for name, runs in rounds.items()}
    for key in ("okf", "okf_pure"):
        if key in results and f"{key}_connect" in results:
            # the walk of record is the read-only one; RSS there is the walk's alone
            for field in ("connect_s", "peak_rss_mb", "connect_cpu_s"):
                results[key][field] = results[f"{key}_connect"][field]
    if not okf_problem and not args.no_s3:
        results["okf_s3"] = _measure_s3(args, corpus, notes)
    return results, notes


def _measure_s3(args: argparse.Namespace, corpus: Any, notes: list[str]) -> dict[str, Any]:
    import _s3

    log_path = args.data / "moto.log"
    _log("S3: starting a moto server on 127.0.0.1, seeded with the bundle ...")
    start = time.perf_counter()
    with _s3.moto_server(log_path, corpus.bundle) as (endpoint, count):
        seeded = time.perf_counter() - start
        _log(
            f"S3: {count} objects at {endpoint}/{_s3.BUCKET}/{_s3.PREFIX}/ after {seeded:.0f} s; "
            "OKFManager walk + refreshes (moto is slow: minutes) ..."
        )
        result = _run_worker(args, "okf-s3", endpoint)
    notes.append(
        f"S3 is moto {_moto_version()} on 127.0.0.1, its bucket seeded in-process with the "
        f"{count} files: moto's latencies say little, the request counts are the point."
    )
    return result


def _moto_version() -> str:
    try:
        from importlib.metadata import version

        return version("moto")
    except Exception:
        return "?"


def _machine() -> str:
    cpus = os.cpu_count()
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{cpus} cores ({model}), {system}, Python {platform.python_version()}"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("bm25s", "tantivy", "numpy", "moto", "boto3"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} missing")
    import sqlite3

    found.append(f"SQLite {sqlite3.sqlite_version}")
    return ", ".join(found)


def _write_results(text: str, args: argparse.Namespace) -> Path:
    path = HERE / "RESULTS.md"
    command = "python bench/okf_bench.py --write-results"
    if args.rounds != 3 or args.repeat != 3:
        command += f" --rounds {args.rounds} --repeat {args.repeat}"
    if args.no_s3:
        command += " --no-s3"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        "# Bench results",
        "",
        f"Date: {now}. Machine: {_machine()} (shared, noisy: read the ratios).",
        f"Versions: {_versions()}.",
        "",
        f"Reproduce: `pip install -e '.[bench,aws]'` then `{command}`",
        "(first run builds the corpus from Debian's apt lists; see bench/README.md).",
        "",
        "```",
        text.rstrip(),
        "```",
        "",
    ]
    # sections after this bench's own block (the backends bench's) are kept as they are
    kept = ""
    if path.exists():
        earlier = path.read_text(encoding="utf-8")
        start = earlier.find("\n## ")
        if start != -1:
            kept = "\n" + earlier[start + 1 :]
    path.write_text("\n".join(body) + kept, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.data = args.data.resolve()
    if args.worker:
        _worker(args)
        return 0
    import _corpus
    import _report

    _log(f"machine: {_machine()}")
    args.data.mkdir(parents=True, exist_ok=True)
    corpus = _corpus.prepare(
        args.data, args.size, args.queries, args.seed, lambda m: _log(m), args.rebuild
    )
    _log(f"queries: {len(corpus.queries)} known-item queries, e.g. {corpus.queries[0].text!r}")
    results, notes = _measure(args, corpus)
    context = {
        "concepts": len(corpus.concepts),
        "bytes_mb": corpus.info["bytes"] / 1e6,
        "queries": len(corpus.queries),
        "seed": args.seed,
        "fingerprint": corpus.info["fingerprint"],
        "rounds": args.rounds,
        "connect_runs": max(1, args.connect_runs),
        "repeat": args.repeat,
        "notes": notes,
    }
    text = _report.render(results, context)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"context": context, "results": results}, indent=1))
    if args.write_results:
        _log(f"wrote {_write_results(text, args)}")
    failed = [name for name, _m, ok in _report.targets(results) if ok is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
