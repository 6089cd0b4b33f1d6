"""The exported contract check catches each way a backend can break its declaration.

The backends are real subclasses, some deliberately broken the way a backend author might
break one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeCapabilities, Record
from agentkernel.knowledgebase.testing import assert_backend_contract, check_backend

from .memory_backend import MemoryBackend, chroma_like, neo4j_like, okf_like, starburst_like


@pytest.mark.parametrize("make", [chroma_like, neo4j_like, starburst_like, okf_like])
def test_well_behaved_backends_pass(make: Any) -> None:
    backend = make().add_schema({"description": "test"})
    backend.docs.update({"a": "knowledge about a", "b": "knowledge about b"})
    assert_backend_contract(
        backend,
        query_statement="MATCH (n) RETURN n",
        sample_write=[{"text": "new", "metadata": {}}],
    )


def test_declared_but_not_implemented_is_reported() -> None:
    class Lazy(KnowledgeBase):
        def __init__(self) -> None:
            super().__init__(KnowledgeCapabilities(search=True, fetch=True), name="Lazy")
            self.add_schema({})

        @property
        def backend_name(self) -> str:
            return self.name

        def connect(self, **kwargs: Any) -> None: ...

        def get_description(self) -> str:
            return "lazy"

        def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
            return []

    problems = check_backend(Lazy())
    assert problems == ["Lazy declares fetch but does not implement fetch()"]


def test_bad_records_ids_limits_and_schema_are_reported() -> None:
    class Sloppy(MemoryBackend):
        def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
            return [
                {"text": "a", "metadata": {"id": "x,y"}},
                {"text": "b", "metadata": {}},
                {"text": 3, "metadata": {}},
                {"text": "c", "metadata": {"id": "ok"}},
            ]

        def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
            return []

        def _derived_schema(self) -> dict[str, Any]:
            return {"when": object()}

    problems = check_backend(Sloppy("Sloppy", search=True, fetch=True, derives_schema=True))
    text = "\n".join(problems)
    assert "not JSON-serialisable" in text
    assert "more than the limit 2" in text
    assert "comma-free id, got 'x,y'" in text
    assert "comma-free id, got None" in text
    assert "without str 'text'" in text
    assert "fetch() did not return ids it listed or was given" in text


def test_undeclared_operation_raising_the_wrong_error_is_reported() -> None:
    backend = chroma_like().add_schema({})
    # Bypass the class-level guard the way a careless subclass could: an instance attribute.
    backend.fetch = lambda ids, **kw: []  # type: ignore[method-assign]

    def browse(path: str = "", limit: int = 50, **kw: Any) -> list[Record]:
        raise NotImplementedError

    backend.browse = browse  # type: ignore[method-assign]
    problems = check_backend(backend)
    assert "undeclared fetch() returned instead of raising KnowledgeCapabilityError" in problems
    assert (
        "undeclared browse() raised NotImplementedError, not KnowledgeCapabilityError" in problems
    )


def test_assert_backend_contract_lists_every_problem() -> None:
    with pytest.raises(AssertionError, match="Backend contract broken:\n- schema\\(\\) raised"):
        assert_backend_contract(chroma_like())
