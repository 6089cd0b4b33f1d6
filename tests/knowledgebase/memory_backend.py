"""An in-memory knowledge base for testing the contract and tool layer.

It is a real custom backend (the manual's "Custom KnowledgeBase Adapters"), not a mock: it
implements every operation and lets the declaration decide which ones may run, and it records
the calls it receives so tests can check routing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeCapabilities, Record


class MemoryBackend(KnowledgeBase):
    def __init__(self, name: str, *, fail: Exception | None = None, **declared: Any) -> None:
        super().__init__(KnowledgeCapabilities(**declared), name=name)
        self.docs: dict[str, str] = {}
        self.calls: list[tuple[str, Any]] = []
        self.written: list[Record] = []
        self.fail = fail
        self.connect()

    @property
    def backend_name(self) -> str:
        return self.name

    def connect(self, **kwargs: Any) -> None:
        self.connected = True

    def get_description(self) -> str:
        return f"In-memory store {self.name}"

    def _maybe_fail(self) -> None:
        if self.fail is not None:
            raise self.fail

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        self.calls.append(("search", query))
        self._maybe_fail()
        words = query.lower().split()
        scored = [
            (sum(text.lower().count(w) for w in words), doc_id, text)
            for doc_id, text in self.docs.items()
        ]
        hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return [
            {"text": text, "metadata": {"id": doc_id, "source": "memory"}}
            for _, doc_id, text in hits[:limit]
        ]

    def query(self, statement: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        self.calls.append(("query", statement))
        self._maybe_fail()
        return [{"text": f"ran {statement} limit {limit}", "metadata": {"source": "memory"}}]

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        self.calls.append(("fetch", list(ids)))
        self._maybe_fail()
        return [
            {"text": self.docs[i], "metadata": {"id": i, "source": "memory"}}
            for i in ids
            if i in self.docs
        ]

    def browse(self, path: str = "", limit: int = 50, **kwargs: Any) -> list[Record]:
        self.calls.append(("browse", path))
        self._maybe_fail()
        return [
            {"text": doc_id, "metadata": {"id": doc_id}}
            for doc_id in sorted(self.docs)
            if doc_id.startswith(path)
        ][:limit]

    def write(self, records: Iterable[Record], **kwargs: Any) -> list[str]:
        self._maybe_fail()
        ids = []
        for record in records:
            self.calls.append(("write", record))
            self.written.append(record)
            doc_id = f"doc{len(self.docs) + 1}"
            self.docs[doc_id] = record["text"]
            ids.append(doc_id)
        return ids


def chroma_like(name: str = "ChromaDB") -> MemoryBackend:
    return MemoryBackend(name, kinds=["vector"], search=True, search_mode="semantic", writable=True)


def neo4j_like(name: str = "Neo4jDB") -> MemoryBackend:
    return MemoryBackend(
        name, kinds=["graph", "structured"], query=True, query_language="cypher", writable=True
    )


def starburst_like(name: str = "StarburstDB") -> MemoryBackend:
    return MemoryBackend(name, kinds=["structured"], query=True, query_language="sql")


def okf_like(name: str = "OKF") -> MemoryBackend:
    return MemoryBackend(
        name,
        kinds=["document"],
        search=True,
        search_mode="lexical",
        fetch=True,
        browse=True,
        writable=True,
        derives_schema=True,
    )
