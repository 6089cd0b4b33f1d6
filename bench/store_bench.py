#!/usr/bin/env python3
"""The knowledge stores from 1,000 to 20,000 pages, side by side with SQLite FTS5.

The pages are Debian package descriptions (``bench/_corpus.py``): one ``entity`` page per
package, title = the package name, ``description`` = its short description, ``tags`` = its
section, content = its long description and a last line ``Package: <name>.``. The sizes are
nested (the 1,000 pages are the first of the 5,000, and so on), grown through the store's own
``create_many`` in batches of 500.

Every store runs in a fresh subprocess of its own, one after the other, so no system warms a
cache for another and each one's peak RSS is its own. At each size a *new* store object is
opened on the grown folder or database (its first call loads the catalog: "open"), then each
operation is timed one call at a time, wall clock and process CPU, and reported as the
median (p50):

* ``create``: 100 new pages, one ``create`` each (the file store rewrites ``index.md`` too);
* ``read``: 200 pages drawn at random;
* ``search``: 200 known-item queries (8 consecutive words of one page's long description,
  whose target is that page), ``limit=10``; hit@10 is the share whose target is in the top 10.
  Also reported, untimed: hit@10 over the queries whose 8 words occur in one page only, and
  over 200 *named* queries, windows of 8 words chosen to occur in their page only
  (:func:`_named_queries`, a rule fixed before any engine ran on them);
* ``edit``: 100 pages, ``Package: <name>`` replaced by ``Package: <name> (ed.)``;
* ``check``: 5 calls.

After the largest size, a *paired* pass (:func:`_paired`) times the same operations on a copy
of the store kept at the smallest size and on the grown store, calls alternating between them,
so the ratio of the two p50s is not also the ratio of two moments of a shared machine.

Two corpora ("variants") are run, each in its own store: ``plain`` as above, where no page links
to another (so ``check`` reports every page as an orphan and its answer grows with the store),
and ``linked``, a wiki whose pages link to each other by this rule, fixed before any run with
it: each page's content ends with a line ``See also: [<title>](entity/<slug>), ...`` linking

1. the page created just before it in that store (its creation order: the grown pages, then
   the timed creates, across sizes), so every page but the newest has a page linking to it;
2. then, in text order, up to 3 more pages created before it whose package name occurs as a
   whole word (lowercase, ``[a-z0-9][a-z0-9.+-]*[a-z0-9+]``, names of 3 characters or more)
   in its long description, each once.

Every link resolves when its page is created (a store refuses links to nowhere), no page is
retired, so ``check`` finds one orphan (the newest page) and no broken link. The queries are
built from the long descriptions as in ``plain``; only the stores' contents differ.

The peer is SQLite FTS5 queried directly (``porter unicode61`` tokenizer, ``bm25`` with title,
description and body weighted 10, 5 and 1, the query's words OR-ed): one ``INSERT`` per
create, one ``SELECT`` by key per read, the same queries for search.

``postgresql`` is :class:`PostgreSQLKnowledgeStore` on a throw-away PostgreSQL cluster started
as the tests start theirs (``bench/_backends_servers.py``), a new database per run; its peer
``pgfts`` is PostgreSQL's own text search over the same pages (a stored ``tsvector``, title,
description and body weighted A, B and D, a GIN index, ``ts_rank_cd``, the query's words
OR-ed): the measurement the store's search engine was chosen by. Neither has a paired pass.

Usage:
    python bench/store_bench.py                      # 1,000 5,000 10,000 20,000
    python bench/store_bench.py --sizes 1000,5000    # what fits
    python bench/store_bench.py --write-results      # also put the table into RESULTS.md
    python bench/store_bench.py --variants linked    # only the linked corpus
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime
import itertools
import json
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402

DEFAULT_DATA = HERE / ".data"
SEED = 20260530
SIZES = (1_000, 5_000, 10_000, 20_000)
POOL = 1_000  # pages beyond the largest size, for the timed creates
CORPUS = max(SIZES) + POOL  # one corpus whatever sizes run, so a size means the same pages
CREATES = 100
READS = 200
QUERIES = 200
EDITS = 100
CHECKS = 5
BATCH = 500
SYSTEMS = ("file", "bundle", "sqlite", "fts5", "postgresql", "pgfts")
POSTGRES_SYSTEMS = ("postgresql", "pgfts")  # run on one throw-away cluster (the tests' own)
VARIANTS = ("plain", "linked")
MENTIONS = 3  # linked variant: pages named in a description linked at most
_NAME_WORD = re.compile(r"[a-z0-9][a-z0-9.+-]*[a-z0-9+]")
LABELS = {
    "file": "FileKnowledgeStore",
    "bundle": "BundleKnowledgeStore (local)",
    "sqlite": "SQLiteKnowledgeStore",
    "fts5": "SQLite FTS5",
    "postgresql": "PostgreSQLKnowledgeStore",
    "pgfts": "PostgreSQL text search",
}
RESULTS_HEADING = "## Knowledge store at scale (store_bench.py)"


def _log(message: str) -> None:
    print(f"[store-bench] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- pages


def _slug(name: str) -> str:
    return "-".join(part for part in re.split(r"[^a-z0-9]+", name.lower()) if part)


def _pages(data: Path, count: int) -> list[_corpus.Concept]:
    """``count`` packages with distinct slugs, in a seeded order (sizes are prefixes)."""
    corpus = _corpus.prepare(data, count, 10, SEED, _log)
    concepts = list(corpus.concepts)
    random.Random(SEED).shuffle(concepts)
    seen: set[str] = set()
    unique = []
    for concept in concepts:
        slug = _slug(concept.title)
        if slug and slug not in seen:
            seen.add(slug)
            unique.append(concept)
    return unique


def _content(concept: _corpus.Concept) -> str:
    return f"{concept.body.strip()}\n\nPackage: {concept.title}."


class _Linker:
    """The linked variant's rule (see the module docstring), applied in creation order."""

    def __init__(self) -> None:
        self.previous: _corpus.Concept | None = None
        self.created: dict[str, _corpus.Concept] = {}  # lowercase name -> page

    def content(self, concept: _corpus.Concept) -> str:
        """The page's content with its ``See also`` line; the page counts as created."""
        linked: dict[str, _corpus.Concept] = {}
        if self.previous is not None:
            linked[self.previous.title] = self.previous
        mentioned = 0
        for word in _NAME_WORD.findall(concept.body.lower()):
            if mentioned == MENTIONS:
                break
            page = self.created.get(word)
            if len(word) >= 3 and page is not None and page.title not in linked:
                linked[page.title] = page
                mentioned += 1
        self.previous = concept
        self.created[concept.title.lower()] = concept
        links = ", ".join(f"[{c.title}]({_page_id(c)})" for c in linked.values())
        return f"{_content(concept)}\n\nSee also: {links}." if links else _content(concept)


def _page_id(concept: _corpus.Concept) -> str:
    return f"entity/{_slug(concept.title)}"


def _queries(concepts: Sequence[_corpus.Concept]) -> list[tuple[str, str]]:
    picked = _corpus.make_queries(list(concepts), QUERIES, SEED)
    by_id = {c.id: c for c in concepts}
    return [(q.text, _page_id(by_id[q.target])) for q in picked]


def _named_queries(concepts: Sequence[_corpus.Concept]) -> list[tuple[str, str]]:
    """Known-item queries that name their page: a window of 8 words found in that page only.

    The rule (fixed before any engine ran on these queries): pages are drawn in a seeded
    order (seed :data:`SEED`), each with a seeded start word in its long description; the
    query is the first window of 8 consecutive words, from the start word on and wrapping
    round, that occurs verbatim (spacing aside) in the text of no other page of the store;
    a page with no such window is passed over for the next drawn page. :func:`_queries`
    quotes 8 words from the start word whatever other pages hold them, so a query can occur
    verbatim in hundreds of pages of a family (``libghc-*``) and no ranker can know which
    one was meant; these queries are what a known-item search presumes, one page meant.
    """
    texts = [" ".join(_content(c).split()) for c in concepts]
    joined = "\n".join(texts)  # no text holds a newline once its spacing is normalised
    starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))

    def pages_holding(window: str, most: int) -> int:
        found: set[int] = set()
        at = joined.find(window)
        while at >= 0 and len(found) < most:
            found.add(bisect.bisect_right(starts, at) - 1)
            at = joined.find(window, at + 1)
        return len(found)

    rng = random.Random(SEED)
    eligible = [c for c in concepts if len(c.body.split()) >= 8]
    queries: list[tuple[str, str]] = []
    for concept in rng.sample(eligible, len(eligible)):
        words = concept.body.split()
        first = rng.randrange(0, len(words) - 8 + 1)
        for start in itertools.chain(range(first, len(words) - 7), range(first)):
            window = " ".join(words[start : start + 8])
            if pages_holding(window, 2) == 1:
                queries.append((window, _page_id(concept)))
                break
        if len(queries) == QUERIES:
            break
    return queries


# --------------------------------------------------------------------------- timing


class _Times(list[float]):
    """Wall-clock milliseconds of each call, with the process CPU milliseconds beside."""

    cpu: list[float]


def _timed(call: Callable[[Any], Any], arguments: Iterable[Any]) -> _Times:
    """Time ``call(argument)`` once per argument, in milliseconds (wall and CPU)."""
    times = _Times()
    times.cpu = []
    for argument in arguments:
        cpu = time.process_time()
        start = time.perf_counter()
        call(argument)
        times.append((time.perf_counter() - start) * 1000)
        times.cpu.append((time.process_time() - cpu) * 1000)
    return times


def _summary(times: _Times) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "cpu_p50": statistics.median(times.cpu),
        "n": len(ordered),
    }


def _hit_at_10(ranked: list[list[str]], targets: list[str]) -> float:
    return sum(target in ids[:10] for ids, target in zip(ranked, targets, strict=True)) / len(
        targets
    )


def _unique(queries: list[tuple[str, str]], concepts: Sequence[_corpus.Concept]) -> list[bool]:
    """Whether each query's 8 words occur, in order, in its target's text only.

    Families of packages share whole paragraphs ("a library for the Haskell programming
    language"), so some queries are found verbatim in tens of pages, and no engine can tell
    which one was meant; hit@10 is also reported over the queries that name one page.
    """
    texts = [" ".join(_content(c).split()) for c in concepts]
    return [sum(query in text for text in texts) == 1 for query, _ in queries]


def _hits(
    ranked: list[list[str]], queries: list[tuple[str, str]], unique: list[bool]
) -> dict[str, float]:
    targets = [t for _, t in queries]
    only = [i for i, u in enumerate(unique) if u]
    return {
        "hit10": _hit_at_10(ranked, targets),
        "hit10_unique": _hit_at_10([ranked[i] for i in only], [targets[i] for i in only]),
        "unique_queries": len(only),
    }


def _named_hit(search: Callable[[str], list[str]], present: Sequence[_corpus.Concept]) -> float:
    """hit@10 over :func:`_named_queries` (untimed)."""
    queries = _named_queries(present)
    return _hit_at_10([search(q) for q, _ in queries], [t for _, t in queries])


# --------------------------------------------------------------------------- the stores


def _open_store(kind: str, path: Path | str) -> Any:
    from agentkernel.knowledgestore import FileKnowledgeStore, SQLiteKnowledgeStore

    if kind == "postgresql":  # path: the database's URL
        from agentkernel.knowledgestore import PostgreSQLKnowledgeStore

        return PostgreSQLKnowledgeStore(str(path))
    path = Path(path)
    if kind == "bundle":  # the same files through a LocalDocumentStore, compare-and-swap writes
        from agentkernel.knowledgestore import BundleKnowledgeStore
        from agentkernel.storage.local import LocalDocumentStore

        path.mkdir(parents=True, exist_ok=True)
        return BundleKnowledgeStore(LocalDocumentStore(path))
    return FileKnowledgeStore(path) if kind == "file" else SQLiteKnowledgeStore(path)


def _new_page(concept: _corpus.Concept, linker: _Linker | None = None) -> Any:
    from agentkernel.knowledgestore import NewPage

    fields = {"description": concept.description, "tags": concept.section}
    content = _content(concept) if linker is None else linker.content(concept)
    return NewPage("entity", _slug(concept.title), concept.title, content, fields)


def _store_worker(
    kind: str,
    sizes: list[int],
    pages: list[_corpus.Concept],
    scratch: Path,
    variant: str,
    url: str | None = None,
) -> None:
    linker = _Linker() if variant == "linked" else None
    path: Path | str = scratch / ("knowledge.db" if kind == "sqlite" else "knowledge")
    if kind == "postgresql":
        assert url is not None, "the postgresql worker needs --postgres-url"
        path = url
    pool = iter(pages[max(SIZES) :])
    rng = random.Random(SEED)
    loaded = 0
    for size in sizes:
        store = _open_store(kind, path)
        start = time.perf_counter()
        for first in range(loaded, size, BATCH):
            batch = pages[first : min(size, first + BATCH)]
            store.create_many([_new_page(c, linker) for c in batch])
        grow = time.perf_counter() - start
        store.close()
        loaded = size
        present = pages[:size]

        store = _open_store(kind, path)
        start = time.perf_counter()
        store.search("warm up", 1)  # the first call loads the catalog
        opened = time.perf_counter() - start

        ids = [_page_id(c) for c in rng.sample(present, READS)]
        read = _timed(store.read, ids)

        queries = _queries(present)
        ranked: list[list[str]] = []
        search = _timed(
            lambda q, s=store, out=ranked: out.append([h.id for h in s.search(q, 10)]),
            [q for q, _ in queries],
        )
        cpu_start = time.process_time()
        for query, _ in queries:
            store.search(query, 10)
        search_cpu = (time.process_time() - cpu_start) * 1000 / len(queries)
        named = _named_hit(lambda q, s=store: [h.id for h in s.search(q, 10)], present)

        fresh = [next(pool) for _ in range(CREATES)]
        create = _timed(lambda c, s=store: s.create_many([_new_page(c, linker)]), fresh)
        edit = _timed(
            lambda c, s=store: s.edit(
                _page_id(c), f"Package: {c.title}", f"Package: {c.title} (ed.)"
            ),
            rng.sample(present, EDITS),
        )
        check = _timed(lambda _, s=store: s.check(), range(CHECKS))
        report = store.check()
        store.close()
        paired = len(sizes) > 1 and isinstance(path, Path)  # not PostgreSQL's (a server's)
        if size == sizes[0] and paired and isinstance(path, Path):
            _copy_store(kind, path, scratch / f"small-{path.name}")
        row = {
            "system": kind,
            "variant": variant,
            "orphans": len(report.orphans),
            "broken": len(report.broken_links),
            "size": size,
            "pages": size + CREATES * (sizes.index(size) + 1),
            "grow_s": grow,
            "open_ms": opened * 1000,
            "create": _summary(create),
            "read": _summary(read),
            "search": _summary(search),
            "search_cpu_ms": search_cpu,
            "edit": _summary(edit),
            "check": _summary(check),
            **_hits(ranked, queries, _unique(queries, present)),
            "hit10_named": named,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        print(json.dumps(row), flush=True)
    if len(sizes) > 1 and isinstance(path, Path):
        _paired(kind, variant, sizes, pages, scratch / f"small-{path.name}", path, pool)


def _copy_store(kind: str, path: Path, copy: Path) -> None:
    """Keep a copy of the store at the smallest size, for :func:`_paired`."""
    if kind != "sqlite":
        shutil.copytree(path, copy)
        return
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    source.close()
    target.close()


def _paired(
    kind: str,
    variant: str,
    sizes: list[int],
    pages: list[_corpus.Concept],
    small_path: Path,
    large_path: Path,
    pool: Iterable[_corpus.Concept],
) -> None:
    """Time each operation on the smallest and the largest store in one window, alternating.

    The sizes above are measured one after the other, minutes apart, on a machine other
    agents share: a ratio of two such p50s moves with the load in between. Here the copy of
    the store kept at the smallest size and the grown store are open side by side, and each
    operation's calls alternate between them (which one goes first alternates too), so both
    sides see the same load. Creates add pages without links (in both variants: a link must
    resolve in the store it is created in).
    """
    rng = random.Random(SEED + 1)
    small_size, large_size = sizes[0], sizes[-1]
    stores = (_open_store(kind, small_path), _open_store(kind, large_path))
    present = (pages[:small_size], pages[:large_size])
    for store in stores:
        store.search("warm up", 1)
    small, large = stores
    fresh = iter(pool)
    calls: dict[str, list[tuple[Callable[[], Any], Callable[[], Any]]]] = {
        "read": [
            (partial(small.read, _page_id(a)), partial(large.read, _page_id(b)))
            for a, b in zip(
                rng.sample(present[0], READS), rng.sample(present[1], READS), strict=True
            )
        ],
        "search": [
            (partial(small.search, a, 10), partial(large.search, b, 10))
            for (a, _), (b, _) in zip(_queries(present[0]), _queries(present[1]), strict=True)
        ],
        "check": [(small.check, large.check)] * CHECKS,
        "edit": [
            (
                partial(
                    small.edit, _page_id(a), f"Package: {a.title}", f"Package: {a.title} (ed.)"
                ),
                partial(
                    large.edit, _page_id(b), f"Package: {b.title}", f"Package: {b.title} (ed.)"
                ),
            )
            for a, b in zip(
                rng.sample(present[0], EDITS), rng.sample(present[1], EDITS), strict=True
            )
        ],
        "create": [
            (
                partial(small.create_many, [_new_page(next(fresh))]),
                partial(large.create_many, [_new_page(next(fresh))]),
            )
            for _ in range(CREATES)
        ],
    }
    cpu: dict[str, list[float]] = {}
    for op in OPS:
        times: tuple[list[float], list[float]] = ([], [])
        for i, pair in enumerate(calls[op]):
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                start = time.process_time()
                pair[side]()
                times[side].append((time.process_time() - start) * 1000)
        cpu[op] = [statistics.median(t) for t in times]
    for store in stores:
        store.close()
    row = {"system": kind, "variant": variant, "paired": [small_size, large_size], "cpu": cpu}
    print(json.dumps(row), flush=True)


_FTS_SCHEMA = """
CREATE TABLE pages (id TEXT PRIMARY KEY, title TEXT, description TEXT, body TEXT);
CREATE VIRTUAL TABLE pages_fts USING fts5 (
    id UNINDEXED, title, description, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


def _fts_match(query: str) -> str:
    words = dict.fromkeys(re.findall(r"\w+", query.lower()))
    return " OR ".join(f'"{w}"' for w in words)


def _fts_worker(sizes: list[int], pages: list[_corpus.Concept], scratch: Path) -> None:
    db = sqlite3.connect(scratch / "fts.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(_FTS_SCHEMA)
    pool = iter(pages[max(SIZES) :])
    rng = random.Random(SEED)

    def insert(concept: _corpus.Concept) -> None:
        values = (_page_id(concept), concept.title, concept.description, _content(concept))
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO pages VALUES (?, ?, ?, ?)", values)
        db.execute("INSERT INTO pages_fts VALUES (?, ?, ?, ?)", values)
        db.execute("COMMIT")

    def search(query: str) -> list[str]:
        rows = db.execute(
            "SELECT id FROM pages_fts WHERE pages_fts MATCH ? "
            "ORDER BY bm25(pages_fts, 0.0, 10.0, 5.0, 1.0) LIMIT 10",
            (_fts_match(query),),
        )
        return [row[0] for row in rows]

    def read(page_id: str) -> Any:
        return db.execute("SELECT * FROM pages WHERE id = ?", (page_id,)).fetchone()

    loaded = 0
    for size in sizes:
        start = time.perf_counter()
        db.execute("BEGIN")
        for concept in pages[loaded:size]:
            values = (_page_id(concept), concept.title, concept.description, _content(concept))
            db.execute("INSERT INTO pages VALUES (?, ?, ?, ?)", values)
            db.execute("INSERT INTO pages_fts VALUES (?, ?, ?, ?)", values)
        db.execute("COMMIT")
        grow = time.perf_counter() - start
        loaded = size
        fresh = [next(pool) for _ in range(CREATES)]
        row = _peer_row(pages[:size], rng, read, search, fresh, insert)
        print(json.dumps({"system": "fts5", "size": size, "grow_s": grow, **row}), flush=True)
    db.close()


def _peer_row(
    present: Sequence[_corpus.Concept],
    rng: random.Random,
    read: Callable[[str], Any],
    search: Callable[[str], list[str]],
    fresh: list[_corpus.Concept],
    insert: Callable[[_corpus.Concept], None],
) -> dict[str, Any]:
    """Time a peer engine's reads, searches and inserts on the pages ``present``."""
    read_times = _timed(read, [_page_id(c) for c in rng.sample(present, READS)])
    queries = _queries(present)
    ranked: list[list[str]] = []
    search_times = _timed(lambda q, out=ranked: out.append(search(q)), [q for q, _ in queries])
    cpu_start = time.process_time()
    for query, _ in queries:
        search(query)
    search_cpu = (time.process_time() - cpu_start) * 1000 / len(queries)
    named = _named_hit(search, present)
    create_times = _timed(insert, fresh)
    return {
        "variant": "plain",
        "create": _summary(create_times),
        "read": _summary(read_times),
        "search": _summary(search_times),
        "search_cpu_ms": search_cpu,
        **_hits(ranked, queries, _unique(queries, present)),
        "hit10_named": named,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


_PG_FTS_SCHEMA = """
CREATE TABLE pages (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, description TEXT NOT NULL, content TEXT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A')
        || setweight(to_tsvector('english', description), 'B')
        || setweight(to_tsvector('english', content), 'D')) STORED
);
CREATE INDEX pages_tsv ON pages USING GIN (tsv)
"""


def _pg_fts_worker(sizes: list[int], pages: list[_corpus.Concept], url: str) -> None:
    """PostgreSQL's own text search over the same pages: the peer the store's engine is
    chosen against (``ts_rank_cd`` over a weighted ``tsvector``, GIN, the words OR-ed)."""
    import psycopg

    db = psycopg.connect(url, autocommit=True)
    db.execute(_PG_FTS_SCHEMA)
    pool = iter(pages[max(SIZES) :])
    rng = random.Random(SEED)

    def values(concept: _corpus.Concept) -> tuple[str, str, str, str]:
        return (_page_id(concept), concept.title, concept.description, _content(concept))

    def insert(concept: _corpus.Concept) -> None:
        db.execute("INSERT INTO pages VALUES (%s, %s, %s, %s)", values(concept))

    def search(query: str) -> list[str]:
        words = " | ".join(dict.fromkeys(re.findall(r"[a-z0-9]+", query.lower())))
        rows = db.execute(
            "SELECT id FROM pages, to_tsquery('english', %s) q WHERE tsv @@ q "
            "ORDER BY ts_rank_cd(tsv, q) DESC LIMIT 10",
            (words,),
        )
        return [row[0] for row in rows]

    def read(page_id: str) -> Any:
        return db.execute(
            "SELECT id, title, description, content FROM pages WHERE id = %s", (page_id,)
        ).fetchone()

    loaded = 0
    for size in sizes:
        start = time.perf_counter()
        with db.transaction(), db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO pages VALUES (%s, %s, %s, %s)", [values(c) for c in pages[loaded:size]]
            )
        db.execute("ANALYZE pages")
        grow = time.perf_counter() - start
        loaded = size
        fresh = [next(pool) for _ in range(CREATES)]
        row = _peer_row(pages[:size], rng, read, search, fresh, insert)
        print(json.dumps({"system": "pgfts", "size": size, "grow_s": grow, **row}), flush=True)
    db.close()


# --------------------------------------------------------------------------- the run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="store_bench.py", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="corpus cache dir")
    parser.add_argument(
        "--sizes", default=",".join(str(s) for s in SIZES), help="comma-separated page counts"
    )
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help="file,bundle,sqlite,fts5,postgresql,pgfts"
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="plain,linked (FTS5 runs plain only)"
    )
    parser.add_argument("--variant", choices=VARIANTS, default="plain", help=argparse.SUPPRESS)
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--postgres-url", help=argparse.SUPPRESS)
    return parser


def _worker(args: argparse.Namespace, sizes: list[int]) -> None:
    pages = _pages(args.data, CORPUS)
    if args.worker == "fts5":
        _fts_worker(sizes, pages, args.scratch)
    elif args.worker == "pgfts":
        _pg_fts_worker(sizes, pages, args.postgres_url)
    else:
        _store_worker(args.worker, sizes, pages, args.scratch, args.variant, args.postgres_url)


def _database(server: Any, name: str) -> str:
    """A new, empty database on the bench's PostgreSQL cluster; its URL."""
    import psycopg

    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url(name, driver="postgresql")


def _run(
    system: str, variant: str, args: argparse.Namespace, sizes: list[int], server: Any = None
) -> list[dict[str, Any]]:
    scratch = Path(tempfile.mkdtemp(prefix=f"store-bench-{system}-{variant}-"))
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        system,
        "--sizes",
        ",".join(str(s) for s in sizes),
        "--data",
        str(args.data),
        "--scratch",
        str(scratch),
        "--variant",
        variant,
    ]
    if system in POSTGRES_SYSTEMS:
        command += ["--postgres-url", _database(server, f"bench_{system}_{variant}")]
    _log(f"{LABELS[system]} ({variant}): {', '.join(f'{s:,}' for s in sizes)} pages ...")
    rows = []
    try:
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as worker:
            assert worker.stdout is not None
            for line in worker.stdout:
                if line.startswith("{"):
                    rows.append(json.loads(line))
                    _log(f"  {line.strip()}")
        if worker.returncode != 0:
            _log(f"{LABELS[system]} worker failed (exit {worker.returncode}); kept {len(rows)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f} ms"
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


def _op(row: dict[str, Any] | None, op: str, stat: str = "p50") -> float | None:
    node = (row or {}).get(op)
    return node.get(stat) if isinstance(node, dict) else None


OPS = ("create", "read", "search", "edit", "check")
TARGETS = {  # at 10,000 pages, p50 in ms
    ("file", "create"): 25.0,
    ("sqlite", "create"): 10.0,
    ("file", "read"): 2.0,
    ("sqlite", "read"): 2.0,
    ("file", "search"): 5.0,
    ("sqlite", "search"): 5.0,
    ("file", "check"): 1000.0,
    ("sqlite", "check"): 1000.0,
    ("postgresql", "create"): 10.0,
    ("postgresql", "search"): 10.0,
    ("postgresql", "edit"): 10.0,
}


def _row_label(system: str, variant: str) -> str:
    return LABELS[system] if system in ("fts5", "pgfts") else f"{LABELS[system]}, {variant}"


def _ratio_table(
    at: dict[tuple[str, str, int], dict[str, Any]], low: int, high: int, stat: str
) -> list[str]:
    lines = ["| system, corpus | " + " | ".join(OPS) + " |", "|---|" + "---|" * len(OPS)]
    for variant in VARIANTS:
        for system in SYSTEMS:
            a, b = at.get((system, variant, low)), at.get((system, variant, high))
            if a is None or b is None:
                continue
            cells = []
            for op in OPS:
                x, y = _op(a, op, stat), _op(b, op, stat)
                cells.append(f"{y / x:.2f}x" if x and y else "-")
            lines.append(f"| {_row_label(system, variant)} | " + " | ".join(cells) + " |")
    return lines


def render(rows: list[dict[str, Any]], sizes: list[int], context: dict[str, Any]) -> str:
    """The tables and the targets, as markdown."""
    paired = [r for r in rows if "paired" in r]
    at = {(r["system"], r.get("variant", "plain"), r["size"]): r for r in rows if "size" in r}
    lines = [
        RESULTS_HEADING,
        "",
        f"Run {context['when']} on {context['machine']}; corpus: Debian package descriptions "
        f"({context['source']}). Per single operation, p50 (wall clock); hit@10 over "
        f"{QUERIES} known-item queries; corpus `plain` (no links) or `linked` (the rule in "
        "the docstring of `bench/store_bench.py`); orphans / broken: what the last `check` "
        "reported.",
        "",
        "| pages | system, corpus | create | read | search | search CPU | edit | check "
        "| orphans / broken | hit@10 | hit@10, one-page queries | hit@10, named queries "
        "| open | grow | RSS |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        for variant in VARIANTS:
            for system in SYSTEMS:
                row = at.get((system, variant, size))
                if row is None:
                    continue
                found = f"{row['orphans']:,} / {row['broken']:,}" if "orphans" in row else "-"
                lines.append(
                    f"| {size:,} | {_row_label(system, variant)} | "
                    + " | ".join(_ms(_op(row, op)) for op in ("create", "read", "search"))
                    + f" | {_ms(row.get('search_cpu_ms'))} | "
                    + " | ".join(_ms(_op(row, op)) for op in ("edit", "check"))
                    + f" | {found} | {row['hit10']:.3f} "
                    f"| {row['hit10_unique']:.3f} ({row['unique_queries']}) "
                    f"| {row['hit10_named']:.3f} | {_ms(row.get('open_ms'))} "
                    f"| {row['grow_s']:.1f} s | {row['rss_mb']:.0f} MB |"
                )
    low, high = min(sizes), max(sizes)
    if low != high:
        lines += ["", f"Cost at {high:,} pages / cost at {low:,} pages (target <= 2x):", ""]
        lines += _ratio_table(at, low, high, "p50")
        lines += [
            "",
            "The same ratios on process CPU time (p50), which a busy machine moves less:",
            "",
        ]
        lines += _ratio_table(at, low, high, "cpu_p50")
    if paired:
        lines += [
            "",
            f"Paired: the store kept at {low:,} pages and the one grown to {high:,} open side by "
            "side, calls alternating (`_paired`): CPU p50 at the larger / at the smaller size, "
            "with the two p50s:",
            "",
            "| system, corpus | " + " | ".join(OPS) + " |",
            "|---|" + "---|" * len(OPS),
        ]
        for row in paired:
            cells = []
            for op in OPS:
                x, y = row["cpu"][op]
                ratio = f"{y / x:.2f}x" if x and y else "-"
                cells.append(f"{ratio} ({x:.2f} / {y:.2f} ms)")
            label = _row_label(row["system"], row["variant"])
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Targets at 10,000 pages:", ""]
    for variant in VARIANTS:
        for (system, op), limit in TARGETS.items():
            row = at.get((system, variant, 10_000))
            if row is None:
                continue
            value = _op(row, op)
            verdict = "PASS" if value is not None and value <= limit else "FAIL"
            lines.append(
                f"- {_row_label(system, variant)} {op} p50 {_ms(value)} <= {_ms(limit)}: {verdict}"
            )
        for system in ("file", "sqlite", "postgresql"):
            row = at.get((system, variant, 10_000))
            if row is None:
                continue
            for key, label in (("hit10", "queries"), ("hit10_named", "named queries")):
                value = row[key]
                verdict = "PASS" if value >= 0.95 else "FAIL"
                lines.append(
                    f"- {_row_label(system, variant)} known-item hit@10 ({label}) "
                    f"{value:.3f} >= 0.95: {verdict}"
                )
    return "\n".join(lines) + "\n"


def _write_results(text: str) -> None:
    path = HERE / "RESULTS.md"
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    start = current.find(RESULTS_HEADING)
    if start >= 0:
        end = current.find("\n## ", start + len(RESULTS_HEADING))
        current = current[:start] + current[end + 1 :] if end >= 0 else current[:start]
    path.write_text(current.rstrip() + "\n\n" + text, encoding="utf-8")


def main() -> None:
    """Run the bench, or one worker of it."""
    args = _parser().parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.worker:
        _worker(args, sizes)
        return
    _pages(args.data, CORPUS)  # build the corpus once, before any timing
    rows: list[dict[str, Any]] = []
    systems = [s for s in args.systems.split(",") if s]
    with contextlib.ExitStack() as stack:
        server = None
        if set(systems) & set(POSTGRES_SYSTEMS):
            from _backends_servers import postgres

            server = stack.enter_context(postgres())
        for variant in [v for v in args.variants.split(",") if v]:
            for system in systems:
                if system not in ("fts5", "pgfts") or variant == "plain":
                    rows += _run(system, variant, args, sizes, server)
    meta = json.loads(
        (
            args.data / f"debian-{CORPUS}-s{SEED}-v{_corpus.CORPUS_VERSION}" / "corpus.json"
        ).read_text()
    )
    context = {
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        "source": meta.get("source", "?"),
    }
    text = render(rows, sizes, context)
    print(text)
    if args.write_results:
        _write_results(text)


if __name__ == "__main__":
    main()
