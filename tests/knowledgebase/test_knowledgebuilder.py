"""KnowledgeBuilder: gating, routing, semantic_map, messages, and never raising.

Backends are real in-memory KnowledgeBase subclasses (memory_backend.py) declared like the
built-in ones; the tools are called exactly as a framework calls them.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, KnowledgeError, KnowledgePathError

from .memory_backend import MemoryBackend, chroma_like, neo4j_like, okf_like, starburst_like

Tools = dict[str, Callable[..., str]]


def tools_of(*backends: MemoryBackend, writable: bool = True, **kwargs: Any) -> Tools:
    return {t.__name__: t for t in KnowledgeBuilder(list(backends), **kwargs).build(writable)}


COMPAT = ["get_schemas", "read_kb", "write_kb", "get_all_kb_descriptions"]


@pytest.mark.parametrize(
    ("backends", "writable", "expected"),
    [
        ([chroma_like], True, [*COMPAT, "search_kb"]),
        ([chroma_like, neo4j_like, starburst_like], True, [*COMPAT, "search_kb"]),
        ([okf_like], True, [*COMPAT, "search_kb", "fetch_kb", "browse_kb"]),
        ([starburst_like], True, COMPAT),
        ([starburst_like], False, ["get_schemas", "read_kb", "get_all_kb_descriptions"]),
        (
            [okf_like],
            False,
            [
                "get_schemas",
                "read_kb",
                "get_all_kb_descriptions",
                "search_kb",
                "fetch_kb",
                "browse_kb",
            ],
        ),
        ([neo4j_like, lambda: MemoryBackend("B", browse=True)], True, [*COMPAT, "browse_kb"]),
    ],
)
def test_tool_set_follows_the_declarations(
    backends: list[Callable[[], MemoryBackend]], writable: bool, expected: list[str]
) -> None:
    built = KnowledgeBuilder([make() for make in backends]).build(writable=writable)
    assert [tool.__name__ for tool in built] == expected
    assert len(built) == len(expected)


def test_read_kb_routes_on_the_declaration() -> None:
    graph, vector = neo4j_like(), chroma_like()
    vector.docs["d1"] = "the moon is made of rock"
    tools = tools_of(graph, vector)
    assert "ran MATCH (n) RETURN n limit 2" in tools["read_kb"]("Neo4jDB", "MATCH (n) RETURN n", 2)
    assert graph.calls == [("query", "MATCH (n) RETURN n")]
    assert tools["read_kb"]("ChromaDB", "moon") == "- the moon is made of rock (source: memory)"
    assert vector.calls == [("search", "moon")]


def test_read_kb_on_a_backend_that_can_neither_query_nor_search_explains() -> None:
    browse_only = MemoryBackend("Files", browse=True)
    message = tools_of(browse_only, okf_like())["read_kb"]("Files", "anything")
    assert message.startswith("Backend 'Files' does not support search.")
    assert "Backends that support search: ['OKF']" in message
    assert browse_only.calls == []


def test_search_kb_refuses_a_backend_that_cannot_search() -> None:
    graph = neo4j_like()
    message = tools_of(graph, chroma_like())["search_kb"]("Neo4jDB", "who")
    assert message == (
        "Backend 'Neo4jDB' does not support search. Backends that support search: ['ChromaDB']"
    )
    assert graph.calls == []


def test_fetch_kb_takes_one_or_several_comma_separated_ids() -> None:
    okf = okf_like()
    okf.docs.update({"a": "first", "b": "second"})
    fetch = tools_of(okf)["fetch_kb"]
    assert fetch("OKF", "a") == "- [a] first (source: memory)"
    assert fetch("OKF", " a , b ,") == "- [a] first (source: memory)\n- [b] second (source: memory)"
    assert okf.calls[-1] == ("fetch", ["a", "b"])
    assert fetch("OKF", "a,zzz").endswith("\nNot found: ['zzz']")
    assert fetch("OKF", " , ").startswith("Give at least one id")


def test_semantic_map_is_resolved_at_every_site() -> None:
    okf, sql = okf_like(), neo4j_like("SQL")
    okf.docs["tables/orders"] = "orders table"
    smap = {"<ROOT>": "tables", "<SRC>": "catalog.schema.clients", "<SRC_V2>": "catalog.v2.clients"}
    tools = tools_of(okf, sql, semantic_map=smap)
    tools["read_kb"]("SQL", "SELECT * FROM <SRC> JOIN <SRC_V2>")
    assert sql.calls[-1] == (
        "query",
        "SELECT * FROM catalog.schema.clients JOIN catalog.v2.clients",
    )
    tools["search_kb"]("OKF", "rows in <ROOT>")
    assert okf.calls[-1] == ("search", "rows in tables")
    tools["read_kb"]("OKF", "<ROOT> again")
    assert okf.calls[-1] == ("search", "tables again")
    tools["browse_kb"]("OKF", "<ROOT>/")
    assert okf.calls[-1] == ("browse", "tables/")
    assert "[tables/orders]" in tools["fetch_kb"]("OKF", "<ROOT>/orders, <ROOT>/x")
    assert okf.calls[-1] == ("fetch", ["tables/orders", "tables/x"])
    tools["write_kb"]("SQL", query="CREATE (:T {src: '<SRC>'})", params_json='{"k": "<SRC>"}')
    written = sql.written[-1]["metadata"]
    assert written["query"] == "CREATE (:T {src: 'catalog.schema.clients'})"
    assert written["params"] == {"k": "<SRC>"}  # values are data, not placeholders


def test_write_kb_declines_a_read_only_backend_naming_the_writable_ones() -> None:
    trino = starburst_like()
    tools = tools_of(chroma_like(), trino, neo4j_like())
    assert tools["write_kb"]("StarburstDB", text="a fact") == (
        "Backend 'StarburstDB' is read-only. "
        "Knowledge bases that accept writes: ['ChromaDB', 'Neo4jDB']"
    )
    assert trino.calls == []


def test_write_kb_writes_generic_metadata_keys() -> None:
    graph = neo4j_like()
    result = tools_of(graph)["write_kb"](
        "Neo4jDB", text="", source="crawler", query="MERGE (n:X {id: $id})", params_json='{"id": 7}'
    )
    assert result == "Wrote 1 record(s) to 'Neo4jDB': ['doc1']"
    metadata = graph.written[0]["metadata"]
    assert metadata == {"source": "crawler", "query": "MERGE (n:X {id: $id})", "params": {"id": 7}}
    assert not any(key.startswith("cypher_") for key in metadata)


def test_write_kb_text_only_record() -> None:
    vector = chroma_like()
    assert tools_of(vector)["write_kb"]("ChromaDB", text="The sky is blue.") == (
        "Wrote 1 record(s) to 'ChromaDB': ['doc1']"
    )
    assert vector.written == [{"text": "The sky is blue.", "metadata": {"source": "agent"}}]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "x", "query": "Q", "params_json": "{oops"}, "params_json is not valid JSON"),
        ({"text": "x", "query": "Q", "params_json": "[1]"}, "params_json must be a JSON object"),
        ({}, "Nothing to write"),
        ({"text": 5}, "text must be a string, got int."),
    ],
)
def test_write_kb_bad_input_is_a_message_and_writes_nothing(
    kwargs: dict[str, Any], message: str
) -> None:
    graph = neo4j_like()
    assert message in tools_of(graph)["write_kb"]("Neo4jDB", **kwargs)
    assert graph.written == []


def test_unknown_backend_is_the_same_message_from_every_tool() -> None:
    tools = tools_of(okf_like(), chroma_like())
    expected = "Unknown backend 'Nope'. Available: ['OKF', 'ChromaDB']"
    assert tools["read_kb"]("Nope", "q") == expected
    assert tools["search_kb"]("Nope", "q") == expected
    assert tools["fetch_kb"]("Nope", "a") == expected
    assert tools["browse_kb"]("Nope") == expected
    assert tools["write_kb"]("Nope", text="t") == expected
    assert tools["read_kb"](None, "q") == "Unknown backend 'None'. Available: ['OKF', 'ChromaDB']"


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("connection reset"),
        KnowledgePathError("Path '../x' climbs out of the bundle"),
        KnowledgeError("bad statement"),
        NotImplementedError("half-written backend"),
    ],
)
def test_backend_exceptions_become_strings(failure: Exception) -> None:
    broken = MemoryBackend(
        "Broken", fail=failure, search=True, fetch=True, browse=True, writable=True
    )
    tools = tools_of(broken)
    for name, args in [
        ("read_kb", ("Broken", "q")),
        ("search_kb", ("Broken", "q")),
        ("fetch_kb", ("Broken", "a")),
        ("browse_kb", ("Broken", "")),
        ("write_kb", ("Broken", "text")),
    ]:
        result = tools[name](*args)
        assert result.startswith("Error from backend 'Broken' during ")
        assert str(failure) in result


def test_bad_limits_and_empty_queries_are_messages() -> None:
    tools = tools_of(chroma_like())
    assert (
        tools["search_kb"]("ChromaDB", "q", limit="3") == "limit must be a whole number, got '3'."
    )
    assert tools["read_kb"]("ChromaDB", "q", 0) == "limit must be between 1 and 1000, got 0."
    assert tools["read_kb"]("ChromaDB", "   ") == "query must not be empty."


def test_get_schemas_is_json_and_degrades_per_backend() -> None:
    good = chroma_like().add_schema({"description": "vectors"})
    no_schema = neo4j_like()
    schemas = json.loads(tools_of(good, no_schema)["get_schemas"]())
    assert schemas["ChromaDB"]["description"] == "vectors"
    assert schemas["ChromaDB"]["capabilities"]["search_mode"] == "semantic"
    assert list(schemas["Neo4jDB"]) == ["error"]
    assert "has no schema" in schemas["Neo4jDB"]["error"]


def test_get_all_kb_descriptions_lists_every_backend() -> None:
    class Mute(MemoryBackend):
        def get_description(self) -> str:
            raise OSError("store offline")

    text = tools_of(chroma_like(), Mute("Mute", browse=True))["get_all_kb_descriptions"]()
    assert text.splitlines() == [
        "- ChromaDB: In-memory store ChromaDB",
        "- Mute: (description unavailable: OSError: store offline)",
    ]


def test_every_tool_documents_every_argument_google_style() -> None:
    for tool in tools_of(okf_like()).values():
        doc = inspect.getdoc(tool) or ""
        params = list(inspect.signature(tool).parameters)
        assert doc.splitlines()[0], tool.__name__
        if params:
            args_section = doc.split("Args:")[1].split("Returns:")[0]
            documented = re.findall(r"^\s{4}(\w+):", args_section, flags=re.M)
            assert documented == params, tool.__name__
        assert "Returns:" in doc


def test_tool_signatures_are_the_manuals() -> None:
    tools = tools_of(okf_like())
    assert (
        str(inspect.signature(tools["read_kb"]))
        == "(backend: 'str', query: 'str', limit: 'int' = 3) -> 'str'"
    )
    assert str(inspect.signature(tools["write_kb"])) == (
        "(backend: 'str', text: 'str' = '', source: 'str' = 'agent', query: 'str' = '', "
        "params_json: 'str' = '{}') -> 'str'"
    )
    assert (
        str(inspect.signature(tools["search_kb"]))
        == "(backend: 'str', query: 'str', limit: 'int' = 3) -> 'str'"
    )
    assert str(inspect.signature(tools["fetch_kb"])) == "(backend: 'str', ids: 'str') -> 'str'"
    assert (
        str(inspect.signature(tools["browse_kb"]))
        == "(backend: 'str', path: 'str' = '', limit: 'int' = 50) -> 'str'"
    )


@pytest.mark.parametrize(
    ("backends", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, "at least one backend"),
        ([chroma_like(), chroma_like()], {}, ValueError, "Duplicate backend name 'ChromaDB'"),
        ([MemoryBackend("  ", search=True)], {}, ValueError, "empty backend_name"),
        (["not a backend"], {}, TypeError, "got str"),
        ([chroma_like()], {"semantic_map": {"<A>": 1}}, TypeError, "semantic_map"),
    ],
)
def test_builder_rejects_bad_registrations(
    backends: list[Any], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        KnowledgeBuilder(backends, **kwargs)
