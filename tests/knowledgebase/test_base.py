"""The KnowledgeBase ABC: abstract members, declared-only operations, schema, formatting.

Backends here are real subclasses written as a user would write one (tests/knowledgebase/
memory_backend.py and the manual's MyBackend); nothing is stood in for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from agentkernel.knowledgebase import (
    KnowledgeBase,
    KnowledgeCapabilities,
    KnowledgeCapabilityError,
    KnowledgeError,
    Record,
)

from .memory_backend import MemoryBackend, chroma_like, okf_like, starburst_like


class ManualBackend(KnowledgeBase):
    """The manual's minimal example, close to verbatim."""

    def __init__(self) -> None:
        super().__init__(
            capabilities=KnowledgeCapabilities(
                kinds=["vector"], search=True, search_mode="semantic", writable=True
            ),
        )
        self.store: list[Record] = []

    @property
    def backend_name(self) -> str:
        return "MyBackend"

    def connect(self, **kwargs: Any) -> None:
        self.store = []

    def write(self, records: Iterable[Record], **kwargs: Any) -> None:
        self.store.extend(records)

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        return [r for r in self.store if query in r["text"]][:limit]

    def get_description(self) -> str:
        return "MyBackend stores domain-specific knowledge."


def test_exactly_three_members_are_abstract() -> None:
    assert KnowledgeBase.__abstractmethods__ == {"backend_name", "connect", "get_description"}


def test_there_is_no_read_on_the_abc() -> None:
    assert not hasattr(KnowledgeBase, "read")


def test_manual_example_works_as_written() -> None:
    backend = ManualBackend()
    backend.write([{"text": "alpha beta", "metadata": {}}])
    assert backend.search("alpha") == [{"text": "alpha beta", "metadata": {}}]


@pytest.mark.parametrize(
    ("operation", "call"),
    [
        ("query", lambda kb: kb.query("MATCH (n) RETURN n")),
        ("fetch", lambda kb: kb.fetch(["a"])),
        ("browse", lambda kb: kb.browse()),
    ],
)
def test_undeclared_base_operations_raise_capability_error(operation: str, call: Any) -> None:
    backend = ManualBackend()
    with pytest.raises(KnowledgeCapabilityError) as info:
        call(backend)
    assert not isinstance(info.value, NotImplementedError)
    assert isinstance(info.value, KnowledgeError)
    assert info.value.operation == operation
    assert "MyBackend" in str(info.value)
    assert "It declares: search, writable" in str(info.value)


def test_implemented_but_undeclared_operation_still_refuses() -> None:
    # A backend may implement write and declare it false (an OKF bundle on a read-only store).
    backend = starburst_like()
    with pytest.raises(KnowledgeCapabilityError, match="does not support write"):
        backend.write([{"text": "x", "metadata": {}}])
    with pytest.raises(KnowledgeCapabilityError, match="does not support search"):
        backend.search("x")
    assert backend.written == []


def test_subclass_of_subclass_keeps_the_guard_and_super_calls() -> None:
    class Louder(MemoryBackend):
        def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
            return [
                {"text": r["text"].upper(), "metadata": r["metadata"]}
                for r in super().search(query, limit)
            ]

    loud = Louder("L", search=True)
    loud.docs["d"] = "hello world"
    assert loud.search("hello")[0]["text"] == "HELLO WORLD"
    quiet = Louder("Q", browse=True)
    with pytest.raises(KnowledgeCapabilityError):
        quiet.search("hello")


def test_invariants_name_the_backend_even_before_subclass_attributes_exist() -> None:
    class Early(KnowledgeBase):
        def __init__(self) -> None:
            super().__init__(KnowledgeCapabilities(kinds=["vector"]))
            self.label = "never reached"

        @property
        def backend_name(self) -> str:
            return self.label  # not yet set when super().__init__ validates

        def connect(self, **kwargs: Any) -> None: ...

        def get_description(self) -> str:
            return ""

    with pytest.raises(ValueError, match="'Early' declares no operation"):
        Early()
    with pytest.raises(ValueError, match="'Orders' declares query=True"):
        MemoryBackend("Orders", query=True)


def test_capabilities_are_required() -> None:
    class NoCaps(ManualBackend):
        def __init__(self) -> None:
            KnowledgeBase.__init__(self)  # type: ignore[call-arg]

    with pytest.raises(TypeError):
        NoCaps()


def test_schema_merge_order_and_capabilities_last() -> None:
    class Derived(MemoryBackend):
        def _derived_schema(self) -> dict[str, Any]:
            return {"version": "0.2", "count": 3, "backend": "spoofed"}

    backend = Derived("OKF", browse=True, derives_schema=True)
    backend.add_schema({"count": 4, "usage": "browse it", "capabilities": "overridden?"})
    schema = backend.schema()
    assert list(schema) == ["backend", "version", "count", "usage", "capabilities"]
    assert schema["backend"] == "spoofed"  # derived content follows the backend key
    assert schema["count"] == 4  # add_schema() wins over the derived schema
    assert schema["capabilities"] == backend.capabilities.as_dict()  # never overridable


def test_schema_without_add_schema_or_derivation_raises() -> None:
    backend = chroma_like()
    with pytest.raises(ValueError, match="'ChromaDB' has no schema"):
        backend.schema()
    assert backend.add_schema({}) is backend  # chainable; an empty schema is still a schema
    assert backend.schema() == {
        "backend": "ChromaDB",
        "capabilities": backend.capabilities.as_dict(),
    }


def test_add_schema_rejects_non_mappings() -> None:
    with pytest.raises(TypeError, match="takes a mapping"):
        chroma_like().add_schema([("a", 1)])  # type: ignore[arg-type]


def test_derives_schema_needs_no_add_schema() -> None:
    assert okf_like().schema()["backend"] == "OKF"


def test_format_results_prefixes_ids_only_for_fetch_capable_backends() -> None:
    rows: list[Record] = [
        {"text": "Orders table", "metadata": {"id": "tables/orders", "source": "bundle"}},
        {"text": "No source", "metadata": {"id": "x"}},
    ]
    assert okf_like().format_results(rows) == (
        "- [tables/orders] Orders table (source: bundle)\n- [x] No source"
    )
    assert chroma_like().format_results(rows) == "- Orders table (source: bundle)\n- No source"
    assert chroma_like().format_results([]) == "No results."


def test_close_is_a_no_op_and_backends_are_context_managers() -> None:
    with chroma_like() as backend:
        backend.close()
    backend.close()
