"""KnowledgeCapabilities: the manual's fields and defaults, and the two invariants.

Pure contract code: nothing to start, nothing stood in for.
"""

from __future__ import annotations

import dataclasses

import pytest

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeCapabilities


def test_fields_and_defaults_are_the_manuals() -> None:
    defaults = {f.name: f for f in dataclasses.fields(KnowledgeCapabilities)}
    assert list(defaults) == [
        "kinds",
        "search",
        "search_mode",
        "query",
        "query_language",
        "fetch",
        "browse",
        "writable",
        "derives_schema",
    ]
    caps = KnowledgeCapabilities()
    assert caps.as_dict() == {
        "kinds": [],
        "search": False,
        "search_mode": None,
        "query": False,
        "query_language": None,
        "fetch": False,
        "browse": False,
        "writable": False,
        "derives_schema": False,
    }


@pytest.mark.parametrize("given", [["graph", "structured"], ("graph", "structured")])
def test_kinds_is_a_tuple_whatever_iterable_it_was_given(given: object) -> None:
    caps = KnowledgeCapabilities(kinds=given, query=True, query_language="cypher")  # type: ignore[arg-type]
    assert caps.kinds == ("graph", "structured")
    assert caps.as_dict()["kinds"] == ["graph", "structured"]
    assert caps == KnowledgeCapabilities(kinds=iter(["graph", "structured"]), **_CYPHER)
    hash(caps)  # frozen all the way down: a declaration can key a dict


def test_the_list_a_declaration_was_built_from_cannot_change_it() -> None:
    kinds = ["vector"]
    caps = KnowledgeCapabilities(kinds=kinds, search=True)
    kinds.append("graph")
    assert caps.kinds == ("vector",)
    assert KnowledgeCapabilities().kinds == ()


_CYPHER: dict[str, object] = {"query": True, "query_language": "cypher"}


def test_declaration_is_immutable() -> None:
    caps = KnowledgeCapabilities(search=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.search = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"search": "yes"}, TypeError),
        ({"writable": 1}, TypeError),
        ({"kinds": "vector"}, TypeError),
        ({"kinds": ["vector", 3]}, TypeError),
        ({"kinds": b"vector"}, TypeError),
        ({"kinds": 3}, TypeError),
        ({"search_mode": "fuzzy"}, ValueError),
        ({"query": True, "query_language": 5}, TypeError),
    ],
)
def test_wrong_types_get_a_clear_error(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        KnowledgeCapabilities(**kwargs)  # type: ignore[arg-type]


def test_search_mode_is_advisory_and_does_not_imply_search() -> None:
    caps = KnowledgeCapabilities(search_mode="semantic", browse=True)
    assert caps.search is False
    assert caps.operations() == ["browse"]


def test_validate_capabilities_is_static_and_names_the_subject() -> None:
    with pytest.raises(ValueError, match="'Orders' declares no operation"):
        KnowledgeBase.validate_capabilities(KnowledgeCapabilities(kinds=["vector"]), "Orders")
    with pytest.raises(ValueError, match="'Graph' declares query=True without a query_language"):
        KnowledgeBase.validate_capabilities(KnowledgeCapabilities(query=True), "Graph")
    with pytest.raises(ValueError, match="'SQL' declares query_language='sql' but not query"):
        KnowledgeBase.validate_capabilities(
            KnowledgeCapabilities(query_language="sql", fetch=True), "SQL"
        )
    with pytest.raises(TypeError, match="must be a KnowledgeCapabilities"):
        KnowledgeBase.validate_capabilities({"search": True}, "X")  # type: ignore[arg-type]
    KnowledgeBase.validate_capabilities(
        KnowledgeCapabilities(query=True, query_language="cypher"), "ok"
    )
