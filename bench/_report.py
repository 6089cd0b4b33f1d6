"""Turning worker results into the side-by-side table, the targets and RESULTS.md."""

from __future__ import annotations

import statistics
from typing import Any

PEERS = ("bm25s", "tantivy", "fts5", "bm25s-stem", "tantivy-stem", "fts5-porter")
LABEL = {
    "okf": "OKFManager",
    "okf_pure": "OKF, no numpy",
    "bm25s": "bm25s",
    "tantivy": "tantivy",
    "fts5": "SQLite FTS5",
    "bm25s-stem": "bm25s+stem",
    "tantivy-stem": "tantivy en_stem",
    "fts5-porter": "FTS5 porter",
}


def _peers_in(results: dict[str, Any]) -> list[str]:
    return [p for p in PEERS if p in results]


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of every numeric leaf across rounds (first value for everything else)."""
    first = rounds[0]
    if isinstance(first, dict):
        keys = [k for k in first if all(isinstance(r, dict) and k in r for r in rounds)]
        return {k: merge_rounds([r[k] for r in rounds]) for k in keys}
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    if not all(isinstance(r, int | float) and not isinstance(r, bool) for r in rounds):
        return first
    value = statistics.median(rounds)
    if all(isinstance(r, int) for r in rounds) and float(value).is_integer():
        return int(value)
    return value


def _get(data: dict[str, Any] | None, *path: str) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _requests(found: dict[str, int] | None) -> str:
    if found is None:
        return "n/a"
    if not found:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in sorted(found.items()))


def _ratio(okf: float | None, peers: list[float | None], higher_is_better: bool = False) -> str:
    values = [p for p in peers if p is not None]
    if okf is None or not values:
        return "n/a"
    best = max(values) if higher_is_better else min(values)
    if best == 0:
        return "n/a"
    return f"{okf / best:.2f}x"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
        line(r) for r in rows
    ]


def side_by_side(results: dict[str, Any]) -> list[str]:
    peers_run = _peers_in(results)
    systems = ["okf", *(["okf_pure"] if "okf_pure" in results else []), *peers_run]
    rows_spec: list[tuple[str, tuple[str, ...], int, bool]] = [
        ("connect / build, s (read bundle + index)", ("connect_s",), 2, False),
        ("  same, CPU s (all threads)", ("connect_cpu_s",), 2, False),
        ("peak RSS after connect, MB", ("peak_rss_mb",), 0, False),
        ("search p50, ms", ("search", "p50_ms"), 3, False),
        ("search p95, ms", ("search", "p95_ms"), 3, False),
        ("search p50, CPU ms", ("search", "cpu_p50_ms"), 3, False),
        ("known-item MRR@10", ("search", "mrr10"), 3, True),
        ("known-item hits@1 (of queries)", ("search", "hits_at_1"), 0, True),
        ("write -> visible p50, ms", ("write_visible", "p50_ms"), 2, False),
    ]
    header = ["metric", *(LABEL[s] for s in systems), "OKF / best peer"]
    rows = []
    for label, path, digits, higher in rows_spec:
        values = [_get(results.get(s), *path) for s in systems]
        cells = [_fmt(float(v) if isinstance(v, int) else v, digits) for v in values]
        peers = values[-len(peers_run) :] if peers_run else []
        rows.append([label, *cells, _ratio(values[0], peers, higher)])
    return _table(header, rows)


def okf_only(results: dict[str, Any]) -> list[str]:
    okf = results.get("okf") or {}
    s3 = results.get("okf_s3") or {}
    rows: list[list[str]] = []

    def lat(label: str, node: Any) -> None:
        rows.append([label, _fmt(_get(node, "p50_ms"), 3), _fmt(_get(node, "p95_ms"), 3), ""])

    lat("fetch one concept (full read + links)", okf.get("fetch"))
    per_call = okf.get("fetch_requests_per_call")
    if per_call is not None:
        rows[-1][3] = f"read {per_call:.2f} per call"
    lat("browse root (index.md verbatim)", okf.get("browse_root"))
    lat("browse each section (derived listing, limit 50)", okf.get("browse_dir"))
    biggest = okf.get("browse_section", "?")
    lat(f"browse biggest section '{biggest}' (limit 50)", okf.get("browse_big"))

    def refresh(label: str, node: Any) -> None:
        seconds = _get(node, "s")
        rows.append(
            [
                label,
                _fmt(None if seconds is None else seconds * 1e3, 1),
                "",
                _requests(_get(node, "requests")),
            ]
        )

    refresh(
        "local connect (walk)", {"s": okf.get("connect_s"), "requests": okf.get("connect_requests")}
    )
    refresh("local refresh, nothing changed", okf.get("refresh_unchanged"))
    changed = _get(okf, "refresh_changed", "changed") or "1%"
    refresh(f"local refresh, {changed} docs (1%) changed", okf.get("refresh_changed"))
    refresh(
        "S3 connect (walk)",
        {"s": s3.get("connect_s"), "requests": s3.get("connect_requests")} if s3 else None,
    )
    refresh("S3 refresh, nothing changed", s3.get("refresh_unchanged"))
    changed = _get(s3, "refresh_changed", "changed") or "1%"
    refresh(f"S3 refresh, {changed} docs (1%) changed", s3.get("refresh_changed"))
    return _table(["OKFManager operation", "p50 ms (or ms)", "p95 ms", "store requests"], rows)


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    okf = results.get("okf")
    connect = results.get("okf_connect") or okf or {}
    s3 = results.get("okf_s3")
    peer_p50 = [_get(results.get(p), "search", "p50_ms") for p in PEERS]
    peer_p50 = [p for p in peer_p50 if p is not None]
    fastest = min(peer_p50) if peer_p50 else None
    tantivy_p50 = _get(results.get("tantivy"), "search", "p50_ms")
    p50 = _get(okf, "search", "p50_ms")
    mrr = _get(okf, "search", "mrr10")
    peer_mrr = {p: _get(results.get(p), "search", "mrr10") for p in PEERS}
    scored = {p: m for p, m in peer_mrr.items() if m is not None}
    best_peer = max(scored, key=lambda p: scored[p]) if scored else None
    walk = _get(connect, "connect_s")
    rss = _get(connect, "peak_rss_mb")
    out: list[tuple[str, str, bool | None]] = []

    def check(name: str, measured: str, ok: bool | None) -> None:
        out.append((name, measured, ok))

    walk_cpu = _get(connect, "connect_cpu_s")
    check(
        "walk <= 2 s",
        f"{_fmt(walk)} s wall ({_fmt(walk_cpu)} s CPU)",
        None if walk is None else walk <= 2.0,
    )
    check("peak RSS <= 200 MB", f"{_fmt(rss, 0)} MB", None if rss is None else rss <= 200)
    cpu50 = _get(okf, "search", "cpu_p50_ms")
    check(
        "search p50 <= 2 ms",
        f"{_fmt(p50, 3)} ms wall ({_fmt(cpu50, 3)} ms CPU)",
        None if p50 is None else p50 <= 2.0,
    )
    check(
        "search p50 <= 2x fastest peer",
        f"{_fmt(p50, 3)} ms vs {_fmt(fastest, 3)} ms ({_ratio(p50, [fastest])})",
        None if p50 is None or fastest is None else p50 <= 2 * fastest,
    )
    check(
        "search p50 <= 1.5x tantivy",
        f"{_fmt(p50, 3)} ms vs {_fmt(tantivy_p50, 3)} ms ({_ratio(p50, [tantivy_p50])})",
        None if p50 is None or tantivy_p50 is None else p50 <= 1.5 * tantivy_p50,
    )
    best_mrr = scored.get(best_peer) if best_peer else None
    check(
        "MRR@10 >= best peer",
        f"{_fmt(mrr, 3)} vs {LABEL.get(best_peer or '', '-')} {_fmt(best_mrr, 3)}",
        None if mrr is None or best_mrr is None else mrr >= best_mrr - 1e-9,
    )
    unchanged = _get(s3, "refresh_unchanged", "requests")
    listing_only = None
    if unchanged is not None:
        listing_only = bool(unchanged) and all(k.startswith("ListObjects") for k in unchanged)
    check("unchanged S3 refresh = listing only", _requests(unchanged), listing_only)
    return out


def render(results: dict[str, Any], context: dict[str, Any]) -> str:
    lines = [
        f"Corpus: {context['concepts']} Debian package concepts ({context['bytes_mb']:.1f} MB), "
        f"{context['queries']} known-item queries, seed {context['seed']}, "
        f"fingerprint {context['fingerprint']}.",
        f"Rounds: {context['rounds']} (each system in a fresh process per round), "
        f"{context['repeat']} timed passes over the queries per round; "
        "values are medians (of passes, then of rounds); the OKFManager walk is the median "
        f"of {context['connect_runs']} fresh processes per round.",
        "",
        *side_by_side(results),
        "",
        *okf_only(results),
        "",
    ]
    verdicts = targets(results)
    rows = [[n, m, "n/a" if ok is None else ("PASS" if ok else "FAIL")] for n, m, ok in verdicts]
    lines += _table(["target", "measured", "verdict"], rows)
    notes = context.get("notes") or []
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"
