"""What runs inside each measuring subprocess; every worker returns one JSON-able dict.

Each system is measured in a fresh interpreter of its own, so that its peak RSS is its own and
no system warms a cache for another. Latencies are ``time.perf_counter`` around one public call.
"""

from __future__ import annotations

import random
import resource
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import _corpus
import _peers

MB = 1024 * 1024


def peak_rss_mb() -> float:
    """This process's peak RSS (``VmHWM``).

    Not ``ru_maxrss``: Linux carries that across ``fork`` + ``exec``, so a worker started by a
    big parent would report the parent's peak. ``VmHWM`` belongs to the new address space.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / MB


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def cpu_seconds() -> float:
    """User + system CPU of this process, all threads (immune to waiting for a busy CPU)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_both(call: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def summary(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": statistics.median(ordered) * 1e3, "p95_ms": p95 * 1e3, "n": len(ordered)}


def search_runs(
    search: Callable[[str], list[str]], queries: list[_corpus.Query], repeat: int
) -> dict[str, Any]:
    """One untimed pass (MRR@10), then ``repeat`` timed passes; medians over passes."""
    reciprocal = []
    misses = []
    for query in queries:
        ids = search(query.text)
        rank = ids.index(query.target) + 1 if query.target in ids[:10] else 0
        reciprocal.append(1 / rank if rank else 0.0)
        if not rank:
            misses.append(query.target)
    passes = []
    cpu_passes = []
    for _ in range(repeat):
        both = [timed_both(lambda q=q: search(q.text)) for q in queries]
        passes.append(summary([wall for wall, _cpu in both]))
        cpu_passes.append(summary([cpu for _wall, cpu in both]))
    return {
        "mrr10": sum(reciprocal) / len(reciprocal),
        "hits_at_1": sum(1 for r in reciprocal if r == 1.0),
        "misses": len(misses),
        "p50_ms": statistics.median(p["p50_ms"] for p in passes),
        "p95_ms": statistics.median(p["p95_ms"] for p in passes),
        "cpu_p50_ms": statistics.median(p["p50_ms"] for p in cpu_passes),
        "passes": passes,
    }


def _unique_doc(n: int) -> tuple[str, str, str]:
    """A title, body and query made of words that occur nowhere in the corpus."""
    rng = random.Random(1000 + n)
    letters = "bcdfghjklmnpqrstvwxz"
    tokens = ["".join(rng.choice(letters) for _ in range(9)) for _ in range(6)]
    title = f"benchwrite {tokens[0]} {tokens[1]}"
    body = f"Written by the bench: {' '.join(tokens[2:])} and some ordinary words.\n"
    return title, body, f"{tokens[1]} {tokens[3]} {tokens[4]}"


# --------------------------------------------------------------------------- peers


def peer_worker(name: str, corpus: _corpus.Corpus, repeat: int, writes: int) -> dict[str, Any]:
    peer = _peers.PEERS[name]()
    rss_before = current_rss_mb()
    cpu = cpu_seconds()
    seconds, docs = timed(lambda: _peers.load_bundle(corpus.bundle))
    build_s, _ = timed(lambda: peer.build(docs))
    out: dict[str, Any] = {
        "system": name,
        "connect_s": seconds + build_s,
        "connect_cpu_s": cpu_seconds() - cpu,
        "read_s": seconds,
        "index_s": build_s,
        "rss_base_mb": rss_before,
        "peak_rss_mb": peak_rss_mb(),
        "concepts": len(docs),
    }
    out["search"] = search_runs(lambda q: peer.search(q, 10), corpus.queries, repeat)
    visible = []
    for n in range(writes):
        title, body, query = _unique_doc(n)
        doc = _peers.Doc(f"generated/bench-{n}", title, "", "", "note", body)

        def write_then_find(doc: _peers.Doc = doc, query: str = query) -> bool:
            peer.add(doc)
            return doc.id in peer.search(query, 10)

        seconds, found = timed(write_then_find)
        if not found:
            raise RuntimeError(f"{name}: a written document was not found by search")
        visible.append(seconds)
    out["write_visible"] = summary(visible)
    return out


# --------------------------------------------------------------------------- OKFManager


class CountingStore:
    """Wraps a DocumentStore and counts the calls OKFManager makes (LIST = walk, GET = reads)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counts: Counter[str] = Counter()

    def take(self) -> dict[str, int]:
        found = dict(self.counts)
        self.counts.clear()
        return found


def counting(inner: Any) -> Any:
    """A ``DocumentStore`` subclass instance delegating to ``inner``, counting every call."""
    from agentkernel.storage.base import DocumentStore, StoredFile

    class _Counting(DocumentStore):
        def __init__(self) -> None:
            self.counter = CountingStore(inner)

        @property
        def writable(self) -> bool:
            return bool(inner.writable)

        @property
        def location(self) -> str:
            return str(inner.location)

        @property
        def diagnostics(self) -> list[str]:
            found: list[str] = inner.diagnostics
            return found

        def walk(self, prefix: str = "") -> Iterator[StoredFile]:
            self.counter.counts["walk"] += 1
            return iter(list(inner.walk(prefix)))

        def read(self, path: str) -> bytes:
            self.counter.counts["read"] += 1
            data: bytes = inner.read(path)
            return data

        def read_head(self, path: str, max_bytes: int) -> bytes:
            self.counter.counts["read_head"] += 1
            data: bytes = inner.read_head(path, max_bytes)
            return data

        def read_heads(
            self, paths: Sequence[str], max_bytes: int, *, workers: int = 1
        ) -> list[bytes | Exception]:
            self.counter.counts["read_head"] += len(paths)
            found: list[bytes | Exception] = inner.read_heads(paths, max_bytes, workers=workers)
            return found

        def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
            self.counter.counts["write"] += 1
            stored: StoredFile = inner.write(path, data, overwrite=overwrite)
            return stored

        def close(self) -> None:
            inner.close()

    return _Counting()


def _record_ids(records: Sequence[Any]) -> list[str]:
    return [str(r["metadata"].get("id")) for r in records]


def _changed_text(concept: _corpus.Concept, n: int) -> bytes:
    extra = f"\nChanged by the bench, revision {n}: quokkachange{n}.\n"
    return (concept.render() + extra).encode()


def okf_connect_worker(bundle: Path) -> dict[str, Any]:
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.local import LocalDocumentStore

    rss_before = current_rss_mb()
    store = LocalDocumentStore(bundle, writable=False)
    # the default max_concepts (10,000) would truncate a larger corpus: walk all of it
    cap = max(10_000, sum(1 for _ in bundle.rglob("*.md")))
    cpu = cpu_seconds()
    seconds, kb = timed(
        lambda: OKFManager(store, name="bench", refresh_seconds=None, max_concepts=cap)
    )
    cpu = cpu_seconds() - cpu
    schema = kb.schema()
    return {
        "connect_s": seconds,
        "connect_cpu_s": cpu,
        "rss_base_mb": rss_before,
        "peak_rss_mb": peak_rss_mb(),
        "rss_after_mb": current_rss_mb(),
        "concepts": schema.get("concept_count", schema.get("concepts")),
        "diagnostics": len(kb.diagnostics),
        "schema": {k: v for k, v in schema.items() if k not in ("capabilities",)},
    }


def okf_worker(
    bundle: Path, corpus: _corpus.Corpus, repeat: int, writes: int, changed: int
) -> dict[str, Any]:
    """Everything but S3 on one writable copy of the bundle.

    ``max_concepts`` is raised above the bundle size here so that the written concepts do not
    push the bundle over the cap (a truncating walk would drop concepts and blur the counts).
    """
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.local import LocalDocumentStore

    rss_before = current_rss_mb()
    store = counting(LocalDocumentStore(bundle, writable=True))
    cap = 2 * len(corpus.concepts)
    seconds, kb = timed(
        lambda: OKFManager(store, name="bench", refresh_seconds=None, max_concepts=cap)
    )
    out: dict[str, Any] = {
        "system": "okf",
        "connect_s": seconds,
        "rss_base_mb": rss_before,
        "peak_rss_mb": peak_rss_mb(),
        "connect_requests": store.counter.take(),
        "diagnostics": len(kb.diagnostics),
    }
    out["search"] = search_runs(
        lambda q: _record_ids(kb.search(q, limit=10)), corpus.queries, repeat
    )
    store.counter.take()

    rng = random.Random(7)
    ids = [c.id for c in rng.sample(corpus.concepts, 200)]
    fetch_passes = []
    for _ in range(repeat):
        fetch_passes.append([timed(lambda i=i: kb.fetch([i]))[0] for i in ids])
    got = kb.fetch([ids[0]])
    if not got or got[0]["metadata"].get("id") != ids[0]:
        raise RuntimeError(f"okf: fetch({ids[0]!r}) returned {got!r}")
    out["fetch"] = summary([statistics.median(col) for col in zip(*fetch_passes, strict=True)])
    reads = store.counter.take()
    out["fetch_requests_per_call"] = sum(reads.values()) / (repeat * len(ids) + 1)

    sections = sorted({c.section for c in corpus.concepts})
    biggest = max(sections, key=lambda s: sum(1 for c in corpus.concepts if c.section == s))
    out["browse_section"] = biggest
    out["browse_root"] = summary([timed(lambda: kb.browse("", limit=50))[0] for _ in range(200)])
    out["browse_dir"] = summary(
        [timed(lambda s=s: kb.browse(s, limit=50))[0] for s in sections for _ in range(3)]
    )
    out["browse_big"] = summary([timed(lambda: kb.browse(biggest, limit=50))[0] for _ in range(50)])
    store.counter.take()

    visible = []
    for n in range(writes):
        title, body, query = _unique_doc(n)
        record = {"text": f"{title}\n\n{body}", "metadata": {"source": "bench"}}

        def write_then_find(record: dict[str, Any] = record, query: str = query) -> bool:
            written = kb.write([record])
            return bool(written) and written[0] in _record_ids(kb.search(query, limit=10))

        seconds, found = timed(write_then_find)
        if not found:
            raise RuntimeError("okf: a written concept was not found by the next search")
        visible.append(seconds)
    out["write_visible"] = summary(visible)
    out["write_requests"] = store.counter.take()

    unchanged = []
    for _ in range(repeat):
        seconds, stats = timed(kb.reload)
        unchanged.append(seconds)
        requests = store.counter.take()  # per reload: the last one is reported
    out["refresh_unchanged"] = {
        "s": statistics.median(unchanged),
        "requests": requests,
        "stats": _stats(stats),
    }

    victims = rng.sample(corpus.concepts, changed)
    for n, concept in enumerate(victims):
        (bundle / concept.path).write_bytes(_changed_text(concept, n))
    seconds, stats = timed(kb.reload)
    requests = store.counter.take()
    probe = victims[0]
    found = probe.id in _record_ids(kb.search("quokkachange0", limit=10))
    out["refresh_changed"] = {
        "s": seconds,
        "changed": changed,
        "requests": requests,
        "stats": _stats(stats),
        "change_visible": found,
    }
    out["peak_rss_end_mb"] = peak_rss_mb()
    return out


def _stats(stats: Any) -> dict[str, Any]:
    return {k: getattr(stats, k) for k in ("listed", "reads", "changed", "dropped", "seconds")}


def okf_s3_worker(endpoint: str, corpus: _corpus.Corpus, changed: int) -> dict[str, Any]:
    import _s3

    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.s3 import S3DocumentStore

    s3 = _s3.client(endpoint)
    counter = _s3.RequestCounter(s3)
    store = S3DocumentStore(_s3.BUCKET, _s3.PREFIX, client=s3)
    cpu = cpu_seconds()
    seconds, kb = timed(lambda: OKFManager(store, name="bench-s3", refresh_seconds=None))
    cpu = cpu_seconds() - cpu
    out: dict[str, Any] = {
        "connect_s": seconds,
        "connect_cpu_s": cpu,
        "connect_requests": counter.take(),
        "peak_rss_mb": peak_rss_mb(),
        "diagnostics": len(kb.diagnostics),
    }
    query = corpus.queries[0]
    out["search_ok"] = query.target in _record_ids(kb.search(query.text, limit=10))
    counter.take()
    seconds, stats = timed(kb.reload)
    out["refresh_unchanged"] = {"s": seconds, "requests": counter.take(), "stats": _stats(stats)}

    other = _s3.client(endpoint)  # uncounted: stands for another writer
    rng = random.Random(11)
    victims = rng.sample(corpus.concepts, changed)
    for n, concept in enumerate(victims):
        other.put_object(
            Bucket=_s3.BUCKET, Key=f"{_s3.PREFIX}/{concept.path}", Body=_changed_text(concept, n)
        )
    seconds, stats = timed(kb.reload)
    requests = counter.take()
    found = victims[0].id in _record_ids(kb.search("quokkachange0", limit=10))
    out["refresh_changed"] = {
        "s": seconds,
        "changed": changed,
        "requests": requests,
        "stats": _stats(stats),
        "change_visible": found,
    }
    return out
