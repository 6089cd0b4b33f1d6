"""Ready at once, complete soon: a cold vector cache, this tree against another checkout (main).

A bundle of ``--size`` real Debian concepts (the first ones, in path order, of the bench
corpus, ``_corpus.py``) is served by fresh processes of each version, every run with an empty
cache folder (``XDG_CACHE_HOME``: no vector cache, no lexical warm start), the ``embeddings``
extra installed (hybrid search with the packaged default is what the command line and the
configuration pick):

* **fetch** / **browse**: ``agentkernel-kb fetch BUNDLE ID`` and ``browse BUNDLE`` end to end,
  with the extra (hybrid chosen) and with ``--lexical`` (as without the extra); the ratio is
  the target ("within 10% of without the extra");
* **serve**: ``agentkernel-kb serve --config`` (one database, ``embedder: default``) over
  HTTP; a client polls ``search_kb`` from the moment the process starts: seconds to the first
  answer (lexical in this tree, said in the answer), and to the first hybrid answer.

The machine is shared and noisy: each cheap row is the median of ``--runs`` processes, the two
versions alternating; a serve row is one process of each (the other version embeds the whole
bundle before it answers). Run it under ``flock /tmp/ak-bench.lock``:

    flock /tmp/ak-bench.lock python bench/warm_start_bench.py --other /work/wt/base12 [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
THIS = HERE.parent
CORPUS = Path("/work/helpers/benchdata/debian-10000-s13-v1/bundle")
QUERY = "python library for parsing yaml"
SERVE = [sys.executable, "-m", "agentkernel.cli", "serve"]


def make_bundle(source: Path, size: int, target: Path) -> tuple[Path, str]:
    """Copy the first ``size`` concepts (path order) of the corpus; return it and one id."""
    files = sorted(p for p in source.rglob("*.md") if p.name not in ("index.md", "log.md"))
    if len(files) < size:
        raise SystemExit(f"{source} holds {len(files)} concepts, fewer than {size}")
    if target.exists():
        shutil.rmtree(target)
    for path in files[:size]:
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    first = files[0].relative_to(source).with_suffix("").as_posix()
    return target, first


def environment(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKERNEL_")}
    env.update(PYTHONPATH=str(tree / "src"), XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1")
    return env


def timed_command(tree: Path, argv: list[str]) -> float:
    """Seconds one ``agentkernel-kb`` process takes, with an empty cache folder."""
    with tempfile.TemporaryDirectory(prefix="warm-bench-") as cache:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "agentkernel.cli", *argv],
            env=environment(tree, Path(cache)),
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return seconds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _search(url: str) -> str | None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    try:
        async with (
            streamable_http_client(url) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "search_kb", {"backend": "debian", "query": QUERY, "limit": 3}
            )
    except Exception:  # not listening yet
        return None
    return "\n".join(getattr(block, "text", "") for block in result.content)


def serve_run(tree: Path, bundle: Path, limit: float) -> dict[str, Any]:
    """Seconds from the process start to its first answer, and to its first hybrid one."""
    with tempfile.TemporaryDirectory(prefix="warm-bench-") as cache:
        config = Path(cache) / "config.yaml"
        config.write_text(
            "okf:\n  databases:\n    debian:\n      type: local\n"
            f"      uri: {bundle}\n      embedder: default\n"
            "      consumer: [Reader]\n"
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        log = Path(cache) / "stderr.log"
        with log.open("w") as errors:
            started = time.perf_counter()
            server = subprocess.Popen(
                [*SERVE, "--config", str(config), "--http", f"127.0.0.1:{port}"],
                env=environment(tree, Path(cache) / "xdg"),
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            found: dict[str, Any] = {"first": None, "hybrid": None, "first_said": ""}
            try:
                while time.perf_counter() - started < limit and server.poll() is None:
                    answer = asyncio.run(_search(url))
                    now = time.perf_counter() - started
                    if answer is None or not answer.strip():
                        time.sleep(0.05)
                        continue
                    if found["first"] is None:
                        found["first"], found["first_said"] = now, answer.splitlines()[0]
                    if not answer.startswith("(search:"):
                        found["hybrid"] = now
                        break
                    time.sleep(0.5)
            finally:
                server.terminate()
                server.wait(30)
        found["progress_lines"] = sum(
            1 for line in log.read_text().splitlines() if "embedding concepts" in line
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the other checkout (main)")
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--serve-limit", type=float, default=900.0)
    parser.add_argument("--no-serve", action="store_true", help="the commands only")
    parser.add_argument(
        "--no-other-hybrid", action="store_true", help="skip the other version's hybrid commands"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="warm-bench-bundle-"))
    bundle, first = make_bundle(args.corpus, args.size, work / "debian")
    trees = {"this": THIS, "main": args.other.resolve()}
    print(f"bundle: {args.size} Debian concepts in {bundle}; fetch {first}", flush=True)
    rows: dict[str, dict[str, list[float]]] = {}
    commands = {
        "fetch, lexical": ["fetch", str(bundle), first, "--lexical"],
        "fetch, hybrid chosen": ["fetch", str(bundle), first],
        "browse, lexical": ["browse", str(bundle), "--lexical"],
        "browse, hybrid chosen": ["browse", str(bundle)],
    }
    for label, argv in commands.items():
        for name, tree in trees.items():
            # the other version embeds the whole bundle here: once is enough to show it
            runs = 1 if name == "main" and "hybrid" in label else args.runs
            if name == "main" and "hybrid" in label and args.no_other_hybrid:
                rows.setdefault(label, {})[name] = [float("nan")]
                continue
            rows.setdefault(label, {})[name] = [timed_command(tree, argv) for _ in range(runs)]
            print(f"  {label:24} {name:5} {rows[label][name]}", flush=True)
    print()
    print(f"| command ({args.size} concepts, cold caches) | this (s) | main (s) | this/main |")
    print("|---|---|---|---|")
    medians = {k: {n: statistics.median(v) for n, v in r.items()} for k, r in rows.items()}
    for label, by in medians.items():
        print(f"| {label} | {by['this']:.2f} | {by['main']:.2f} | {by['this'] / by['main']:.2f} |")
    for what in ("fetch", "browse"):
        for name in trees:
            ratio = medians[f"{what}, hybrid chosen"][name] / medians[f"{what}, lexical"][name]
            print(f"{what}: hybrid chosen / lexical, {name}: {ratio:.2f} (target <= 1.10)")
    if args.no_serve:
        shutil.rmtree(work, ignore_errors=True)
        return
    print()
    print("| serve --config, hybrid, cold | first answer (s) | says | first hybrid answer (s) |")
    print("|---|---|---|---|")
    for name, tree in trees.items():
        found = serve_run(tree, bundle, args.serve_limit)
        said = found["first_said"][:70].replace("|", "/")
        first = "n/a" if found["first"] is None else f"{found['first']:.2f}"
        hybrid = "n/a" if found["hybrid"] is None else f"{found['hybrid']:.1f}"
        print(f"| {name} | {first} | {said} | {hybrid} |", flush=True)
        print(f"  ({name}: {found['progress_lines']} progress line(s) on stderr)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
