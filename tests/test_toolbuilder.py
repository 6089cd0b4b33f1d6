"""The shared adapter base (agentkernel._tooling.bind) and the args model (._tooling.schema).

Real: the tool callables KnowledgeBuilder builds over the in-memory custom backend of the
tests, pydantic validation, asyncio event loops. The ``ToolBuilder`` subclass here binds each
callable to its spec; it is the smallest real adapter, not a stand-in for one.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentkernel._tooling.bind import ToolBuilder, plain_function, run_sync
from agentkernel._tooling.schema import args_model, call_arguments
from agentkernel._tooling.spec import ToolSpec, tool_spec
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from tests.knowledgebase.memory_backend import okf_like

ROOT = Path(__file__).resolve().parents[1]


class SpecBuilder(ToolBuilder[ToolSpec]):
    framework = "specs"

    @classmethod
    def _bind_one(cls, spec: ToolSpec) -> ToolSpec:
        return spec


def _tools() -> list[Any]:
    backend = okf_like("notes")
    backend.docs["a"] = "alpha note"
    return KnowledgeBuilder([backend]).build()


async def forecast(city: str, days: int = 2) -> str:
    """Forecast.

    Args:
        city: The city.
        days: Days ahead.
    """
    await asyncio.sleep(0)
    return f"{city} {days}"


def test_bind_keeps_order_and_describes_each_callable() -> None:
    funcs = _tools()
    specs = SpecBuilder.bind(funcs)
    assert [s.name for s in specs] == [f.__name__ for f in funcs]
    assert [s.func for s in specs] == funcs
    assert SpecBuilder.bind(iter(funcs)) == specs  # any iterable
    assert SpecBuilder.bind([]) == []


@pytest.mark.parametrize(
    ("funcs", "message"),
    [
        ("search_kb", "got str"),
        ({"search_kb": print}, "got dict"),
        (42, "got int"),
        (forecast, "got the single callable"),
    ],
)
def test_bind_rejects_what_is_not_a_list_of_callables(funcs: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        SpecBuilder.bind(funcs)


def test_bind_names_the_non_callable_and_its_position() -> None:
    with pytest.raises(
        TypeError, match=r"SpecBuilder.bind\(\): item 1 is not callable: 'x' \(str\)"
    ):
        SpecBuilder.bind([forecast, "x"])


def test_bind_names_a_callable_that_cannot_be_a_tool() -> None:
    def star(*args: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"item 1: Tool 'star' takes variadic positional"):
        SpecBuilder.bind([forecast, star])


def test_duplicate_names_are_bound_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    funcs = _tools()
    with caplog.at_level(logging.WARNING, logger="agentkernel._toolbuilder"):
        specs = SpecBuilder.bind([*funcs, funcs[0]])
    assert len(specs) == len(funcs) + 1
    assert "duplicate names ['get_schemas']" in caplog.text


def test_plain_function_mirrors_the_tool() -> None:
    spec = tool_spec(_tools()[1])  # read_kb
    wrapper = plain_function(spec)
    assert wrapper.__name__ == "read_kb"
    assert wrapper.__doc__ == spec.doc
    params = inspect.signature(wrapper).parameters
    assert list(params) == ["backend", "query", "limit"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert params["limit"].default == 3 and params["limit"].annotation is int
    assert "alpha" in wrapper(backend="notes", query="alpha")

    async_wrapper = plain_function(tool_spec(forecast))
    assert inspect.iscoroutinefunction(async_wrapper)
    assert asyncio.run(async_wrapper(city="Oslo")) == "Oslo 2"


def test_run_sync_with_and_without_a_running_loop() -> None:
    assert run_sync(forecast, city="Oslo") == "Oslo 2"

    async def inside() -> Any:
        return run_sync(forecast, city="Rome", days=1)

    assert asyncio.run(inside()) == "Rome 1"


def test_args_model_validates_like_the_signature() -> None:
    spec = tool_spec(_tools()[1])  # read_kb
    model = args_model(spec)
    schema = model.model_json_schema()
    assert schema["required"] == ["backend", "query"]
    assert schema["properties"]["limit"]["default"] == 3
    assert schema["properties"]["query"]["description"] == spec.parameter("query").description
    values = model(backend="notes", query="alpha")
    assert call_arguments(spec, values) == {"backend": "notes", "query": "alpha", "limit": 3}
    with pytest.raises(ValidationError, match="query"):
        model(backend="notes")
    with pytest.raises(ValidationError, match="Extra inputs"):
        model(backend="notes", query="q", surprise=1)


def test_importing_the_adapter_base_pulls_in_no_framework_sdk() -> None:
    code = (
        "import sys, agentkernel, agentkernel._tooling.bind, agentkernel._tooling.spec, "
        "agentkernel._tooling.schema, agentkernel._tooling.result, agentkernel.roles.agents\n"
        "sdks = ('agents', 'openai', 'langchain_core', 'langgraph', 'crewai', 'google.adk',"
        " 'mcp')\n"
        "print([m for m in sdks if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
