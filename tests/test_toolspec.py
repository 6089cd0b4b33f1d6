"""Tool introspection (agentkernel._tooling.spec) and the schema built from it (.schema).

Everything here is real: the tool callables KnowledgeBuilder builds (over the in-memory
custom backend of the tests), plus small functions written the way users write tools, and
pydantic (the one schema source) for the JSON Schema.
"""

from __future__ import annotations

import enum
import functools
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest

from agentkernel._tooling.schema import parameters_json_schema
from agentkernel._tooling.spec import EMPTY, parse_docstring, tool_spec
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from tests.knowledgebase.memory_backend import okf_like


def _kb_tools() -> dict[str, Any]:
    return {t.__name__: t for t in KnowledgeBuilder([okf_like()]).build()}


def lookup(city: str, days: int = 3, units: Literal["c", "f"] = "c") -> str:
    """Look up the weather forecast.

    Reads the cached forecast first; falls back to the
    provider when the cache is stale.

    Args:
        city: The city name,
            spelled as on a map.
        days (int): How many days ahead (default 3).
        units: Celsius or Fahrenheit.

    Returns:
        The forecast, one line
        per day.

    Raises:
        ValueError: Never; tools return strings.
    """
    return f"{city} {days} {units}"


async def alookup(city: str) -> str:
    """Look up asynchronously.

    Args:
        city: The city.
    """
    return city


def test_knowledge_tools_are_described_from_their_docstrings() -> None:
    spec = tool_spec(_kb_tools()["search_kb"])
    assert spec.name == "search_kb"
    assert spec.summary == "Rank a backend's records by relevance to the query, best first."
    assert "Only backends declaring search serve this" in spec.description
    assert "Args:" not in spec.description
    assert [p.name for p in spec.parameters] == ["backend", "query", "limit"]
    backend, query, limit = spec.parameters
    # annotations are strings under `from __future__ import annotations`: they are resolved
    assert (backend.annotation, query.annotation, limit.annotation) == (str, str, int)
    assert backend.required and query.required and not limit.required
    assert backend.default is EMPTY and limit.default == 3
    assert backend.description == "The backend name, as listed by get_schemas."
    assert limit.description == "The most records to return (default 3)."
    assert spec.returns is str
    assert spec.returns_description.startswith("The best matches, one per line")
    assert spec.is_async is False


def test_every_knowledge_tool_parameter_has_a_description() -> None:
    for name, func in _kb_tools().items():
        spec = tool_spec(func)
        assert spec.summary, name
        for param in spec.parameters:
            assert param.description, f"{name}.{param.name} has no Args: entry"


def test_continuation_lines_and_typed_entries_are_joined() -> None:
    spec = tool_spec(lookup)
    assert spec.summary == "Look up the weather forecast."
    assert spec.description.startswith("Look up the weather forecast.\n\nReads the cached")
    assert spec.parameter("city").description == "The city name, spelled as on a map."
    assert spec.parameter("days").description == "How many days ahead (default 3)."
    assert spec.returns_description == "The forecast, one line per day."
    with pytest.raises(KeyError):
        spec.parameter("nope")


def test_multi_line_summary_is_one_line() -> None:
    def tool(x: int) -> int:
        """Do a thing over
        two lines.

        More text.
        """
        return x

    assert tool_spec(tool).summary == "Do a thing over two lines."


def test_parameters_json_schema_carries_types_defaults_and_descriptions() -> None:
    schema = parameters_json_schema(tool_spec(lookup))
    assert schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name, spelled as on a map."},
            "days": {
                "type": "integer",
                "description": "How many days ahead (default 3).",
                "default": 3,
            },
            "units": {
                "type": "string",
                "enum": ["c", "f"],
                "description": "Celsius or Fahrenheit.",
                "default": "c",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    json.dumps(schema)  # serializable as is


def test_async_callables_are_recognised() -> None:
    spec = tool_spec(alookup)
    assert spec.is_async is True
    assert spec.parameter("city").description == "The city."
    assert tool_spec(functools.partial(alookup)).is_async is True


def test_tool_without_docstring_or_annotations() -> None:
    def bare(a, b=2):  # type: ignore[no-untyped-def]
        return a

    spec = tool_spec(bare)
    assert spec.summary == "" and spec.description == "" and spec.doc == ""
    assert [p.annotation for p in spec.parameters] == [Any, Any]
    assert spec.returns is Any
    assert parameters_json_schema(spec)["properties"] == {"a": {}, "b": {"default": 2}}


def test_partials_methods_and_callable_objects() -> None:
    partial = functools.partial(lookup, units="f")
    spec = tool_spec(partial)
    assert spec.name == "lookup"
    assert spec.parameter("units").default == "f"
    assert spec.parameter("city").description == "The city name, spelled as on a map."

    class Finder:
        def find(self, term: str) -> str:
            """Find a term.

            Args:
                term: What to find.
            """
            return term

        async def __call__(self, term: str) -> str:
            """Find asynchronously.

            Args:
                term: What to find.
            """
            return term

    method = tool_spec(Finder().find)
    assert method.name == "find" and [p.name for p in method.parameters] == ["term"]
    instance = tool_spec(Finder())
    assert instance.name == "Finder" and instance.is_async
    assert instance.summary == "Find asynchronously."
    assert instance.parameter("term").description == "What to find."


@pytest.mark.parametrize("bad", [None, 3, "search_kb", ["x"]])
def test_non_callables_are_rejected(bad: Any) -> None:
    with pytest.raises(TypeError, match="must be callable"):
        tool_spec(bad)


def test_lambdas_and_star_parameters_are_rejected() -> None:
    with pytest.raises(TypeError, match="give it a function name"):
        tool_spec(lambda x: x)

    def star(*args: str) -> str:
        return ""

    def kw(**kwargs: str) -> str:
        return ""

    def pos(a: str, /) -> str:
        return a

    for func, word in ((star, "args"), (kw, "kwargs"), (pos, "'a'")):
        with pytest.raises(TypeError, match=word):
            tool_spec(func)


def test_unresolvable_annotation_is_kept_and_accepts_anything() -> None:
    def tool(a: NotDefinedAnywhere, b: int = 1) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    spec = tool_spec(tool)
    assert spec.parameter("a").annotation == "NotDefinedAnywhere"
    assert spec.parameter("b").annotation is int
    assert parameters_json_schema(spec)["properties"]["a"] == {}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: int
    y: int = 0


def _property(annotation: Any) -> dict[str, Any]:
    """The schema a tool parameter of this type gets, ``$ref`` resolved."""

    def tool(value: Any) -> str:
        return ""

    tool.__annotations__ = {"value": annotation, "return": str}
    schema = parameters_json_schema(tool_spec(tool))
    prop: dict[str, Any] = schema["properties"]["value"]
    ref = prop.get("$ref", "")
    return schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else prop


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Annotated[int, "How many."], {"type": "integer", "description": "How many."}),
        (Colour, {"type": "string", "enum": ["red", "blue"], "title": "Colour"}),
        (
            Point,
            {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
                "required": ["x"],
                "title": "Point",
            },
        ),
        (Any, {}),
        (object, {}),
    ],
)
def test_parameter_types_in_the_schema(annotation: Any, expected: dict[str, Any]) -> None:
    schema = _property(annotation)
    # pydantic >= 2.14 carries the tool's "no unknown arguments" into a nested dataclass
    if "properties" in schema:
        schema.pop("additionalProperties", None)
    assert schema == expected


def test_an_arbitrary_class_accepts_any_value() -> None:
    class Opaque:
        pass

    assert _property(Opaque) == {}


def test_pydantic_models_use_their_own_schema() -> None:
    from pydantic import BaseModel

    class Filter(BaseModel):
        field: str
        value: int = 0

    schema = _property(Filter)
    assert schema["properties"]["field"]["type"] == "string"
    assert schema["required"] == ["field"]


def test_enum_default_is_written_as_its_value() -> None:
    def paint(colour: Colour = Colour.RED, when: object = object()) -> str:
        return ""

    props = parameters_json_schema(tool_spec(paint))["properties"]
    assert props["colour"]["default"] == "red"
    assert "default" not in props["when"]  # not JSON: left out rather than mangled


def test_parse_docstring_sections() -> None:
    summary, description, args, returns = parse_docstring(
        """Summary line.

        Example:
            >>> x = 1

        Args:
            a: First.
            *rest: Others.
        """
    )
    assert summary == "Summary line."
    assert description == "Summary line."
    assert args == {"a": "First.", "rest": "Others."}
    assert returns == ""
    assert parse_docstring(None) == ("", "", {}, "")
