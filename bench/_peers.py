"""The three peer engines, over the same fields of the same bundle.

Each peer reads the bundle from disk exactly as OKFManager would see it (every ``*.md`` except
the reserved ``index.md`` / ``log.md``, frontmatter parsed with the project's own loader), and
indexes the same fields: id, title, description, tags, type and the whole body.

All three index one text per concept: the six fields joined with spaces (bm25s has no fields,
and giving tantivy one field per OKF field let the very short title / id / tags fields dominate
BM25: its MRR@10 fell from 0.87 to 0.69 on this corpus, so the fair peer is the joined text).

* ``bm25s``: English stop words, no stemmer, numpy backend.
* ``tantivy``: RAM index, default tokenizer, a disjunction of the query's words.
* ``fts5``: SQLite FTS5 (shipped with Python), unicode61 tokenizer, ``ORDER BY rank`` (bm25),
  an ``OR`` of the query's words.

Each has a stemmed twin, the configuration its documentation gives for English:
``bm25s-stem`` (PyStemmer's Snowball English stemmer), ``tantivy-stem`` (the ``en_stem``
tokenizer) and ``fts5-porter`` (``tokenize='porter unicode61'``).

Queries are reduced to their word tokens before they reach tantivy or FTS5, whose query
languages would otherwise read punctuation such as ``-`` or ``:`` as operators.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentkernel.storage import frontmatter

RESERVED = {"index.md", "log.md"}
FIELDS = ("id", "title", "description", "tags", "type", "body")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    description: str
    tags: str
    type: str
    body: str

    def text(self) -> str:
        return " ".join(getattr(self, name) for name in FIELDS)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return str(value)


def load_bundle(root: Path) -> list[Doc]:
    """Read every concept of a bundle from disk (what a peer pays to get the text)."""
    docs: list[Doc] = []
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if not name.endswith(".md") or name in RESERVED:
                continue
            path = Path(directory, name)
            data, body = frontmatter.parse(path.read_text(encoding="utf-8"))
            rel = path.relative_to(root).as_posix()[: -len(".md")]
            docs.append(
                Doc(
                    id=rel,
                    title=_as_text(data.get("title")),
                    description=_as_text(data.get("description")),
                    tags=_as_text(data.get("tags")),
                    type=_as_text(data.get("type")),
                    body=body,
                )
            )
    return docs


def words(query: str) -> list[str]:
    return _WORD.findall(query)


class Peer(Protocol):
    name: str

    def build(self, docs: list[Doc]) -> None: ...

    def search(self, query: str, k: int) -> list[str]: ...

    def add(self, doc: Doc) -> None: ...


class Bm25sPeer:
    name = "bm25s"

    def __init__(self, stem: bool = False) -> None:
        import bm25s

        self._bm25s = bm25s
        self._stemmer: Any = None
        if stem:
            import Stemmer

            self.name = "bm25s-stem"
            self._stemmer = Stemmer.Stemmer("english")
        self._docs: list[Doc] = []
        self._ids: list[str] = []
        self._retriever: Any = None

    def build(self, docs: list[Doc]) -> None:
        self._docs = list(docs)
        self._ids = [doc.id for doc in self._docs]
        tokens = self._bm25s.tokenize(
            [doc.text() for doc in self._docs],
            stopwords="en",
            stemmer=self._stemmer,
            show_progress=False,
        )
        self._retriever = self._bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[str]:
        tokens = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stemmer, show_progress=False
        )
        if not tokens.vocab:
            return []
        k = min(k, len(self._ids))
        results, _scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
        return [self._ids[int(i)] for i in results[0]]

    def add(self, doc: Doc) -> None:
        # bm25s has no incremental update: a new document means a full rebuild
        self.build([*self._docs, doc])


class TantivyPeer:
    name = "tantivy"

    def __init__(self, stem: bool = False) -> None:
        import tantivy

        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        if stem:
            self.name = "tantivy-stem"
            builder.add_text_field("text", tokenizer_name="en_stem")
        else:
            builder.add_text_field("text")
        self._index = tantivy.Index(builder.build())

    def _document(self, doc: Doc) -> Any:
        return self._tantivy.Document(id=doc.id, text=doc.text())

    def _commit(self, docs: list[Doc], heap: int) -> None:
        writer = self._index.writer(heap_size=heap, num_threads=1)
        for doc in docs:
            writer.add_document(self._document(doc))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def build(self, docs: list[Doc]) -> None:
        self._commit(docs, 64_000_000)

    def search(self, query: str, k: int) -> list[str]:
        terms = words(query)
        if not terms:
            return []
        parsed = self._index.parse_query(" ".join(terms), ["text"])
        searcher = self._index.searcher()
        hits = searcher.search(parsed, k).hits
        return [searcher.doc(address)["id"][0] for _score, address in hits]

    def add(self, doc: Doc) -> None:
        self._commit([doc], 15_000_000)


class Fts5Peer:
    name = "fts5"

    def __init__(self, stem: bool = False) -> None:
        self._db = sqlite3.connect(":memory:")
        tokenizer = ", tokenize='porter unicode61'" if stem else ""
        if stem:
            self.name = "fts5-porter"
        self._db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, text{tokenizer})")

    def build(self, docs: list[Doc]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT INTO docs VALUES (?, ?)", [(doc.id, doc.text()) for doc in docs]
            )

    def search(self, query: str, k: int) -> list[str]:
        terms = words(query)
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = self._db.execute(
            "SELECT id FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?", (match, k)
        ).fetchall()
        return [row[0] for row in rows]

    def add(self, doc: Doc) -> None:
        self.build([doc])


PEERS: dict[str, Callable[[], Peer]] = {
    "bm25s": Bm25sPeer,
    "tantivy": TantivyPeer,
    "fts5": Fts5Peer,
    "bm25s-stem": lambda: Bm25sPeer(stem=True),
    "tantivy-stem": lambda: TantivyPeer(stem=True),
    "fts5-porter": lambda: Fts5Peer(stem=True),
}
