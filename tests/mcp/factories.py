"""Factories that ``python -m agentkernel.mcp --factory tests.mcp.factories:NAME`` serves.

Each returns real custom backends (the manual's "Custom KnowledgeBase Adapters", here the
in-memory ``MemoryBackend`` of the contract tests), not mocks: the server process runs the
real builder over them.
"""

from __future__ import annotations

import sys
from typing import Any

from agentkernel.knowledgebase import KnowledgeBuilder
from tests.knowledgebase.memory_backend import MemoryBackend, neo4j_like, okf_like

FACTS = {
    "ops/oncall": "The on-call rotation changes every Monday at 09:00 UTC.",
    "ops/backups": "Backups of the orders database run nightly and are kept for 35 days.",
    "sales/regions": "The EMEA sales region includes Turkey since 2024.",
}


class PrintingBackend(MemoryBackend):
    """A custom backend that writes to stdout, as careless code does."""

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Any]:
        print("debug: searching", query)  # the point of this backend
        sys.stdout.flush()
        return super().search(query, limit, **kwargs)


def _notes(name: str = "Notes") -> MemoryBackend:
    backend = okf_like(name)
    backend.docs.update(FACTS)
    return backend


def mixed() -> KnowledgeBuilder:
    """Searchable notes, a Cypher graph that accepts writes, a backend that always raises,
    one that prints to stdout, and a read-only search index."""
    flaky = MemoryBackend(
        "Flaky", fail=RuntimeError("disk on fire"), search=True, fetch=True, browse=True
    ).add_schema({"about": "fails on every call"})
    noisy = PrintingBackend("Noisy", search=True).add_schema({"about": "prints"})
    noisy.docs.update(FACTS)
    archive = MemoryBackend("Archive", search=True).add_schema({"about": "read-only"})
    archive.docs.update(FACTS)
    graph = neo4j_like("Graph").add_schema({"labels": ["Service"]})
    return KnowledgeBuilder([_notes(), graph, flaky, noisy, archive])


def search_only() -> list[MemoryBackend]:
    """One search-only backend that accepts text writes, like a vector store."""
    backend = MemoryBackend("Vectors", search=True, writable=True).add_schema({"about": "notes"})
    backend.docs.update(FACTS)
    return [backend]


def not_backends() -> list[str]:
    return ["not", "a", "backend"]


def exploding() -> KnowledgeBuilder:
    raise RuntimeError("cannot reach the warehouse")


class MisleadingBackend(MemoryBackend):
    """A custom backend whose results read like the builder's refusals."""

    def format_results(self, results: list[Any]) -> str:
        return "Unknown backend 'Nope'. Available: []\nError from backend 'x' during search: y"


class BrokenFormatBackend(MemoryBackend):
    """A custom backend whose formatting of results raises."""

    def format_results(self, results: list[Any]) -> str:
        raise ValueError("cannot render")


def flagged() -> KnowledgeBuilder:
    """Every kind of backend a refusal can come from, and one whose results mislead."""
    misleading = MisleadingBackend("Misleading", search=True).add_schema({"about": "words"})
    misleading.docs.update(FACTS)
    broken = BrokenFormatBackend("Broken", search=True, fetch=True).add_schema({})
    broken.docs.update(FACTS)
    flaky = MemoryBackend("Flaky", fail=KeyError("gone"), search=True, browse=True).add_schema({})
    archive = MemoryBackend("Archive", search=True).add_schema({"about": "read-only"})
    graph = neo4j_like("Graph").add_schema({"labels": ["Service"]})
    return KnowledgeBuilder([_notes(), graph, flaky, archive, misleading, broken])


class WarmingBackend(MemoryBackend):
    """A backend still loading: its bundle walk is at 3 of 10 documents (lexical not ready)."""

    def readiness(self) -> Any:
        from agentkernel.knowledgebase.model import Readiness

        return Readiness(warming="walk", done=3, total=10, lexical_ready=False)


def warming() -> KnowledgeBuilder:
    """One ready backend and one still warming."""
    return KnowledgeBuilder([_notes(), WarmingBackend("Loading", search=True)])
