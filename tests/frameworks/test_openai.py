"""OpenAI Agents SDK adapter (agentkernel.openai).

Real: the installed openai-agents SDK (its ``function_tool`` pipeline, ``FunctionTool``
invocation, ``Agent`` and ``Runner``), a real ``OKFManager`` over the GA4 bundle in
``shared/data/okf-bundles``, and the SDK's own ``agents.testing.ScriptedModel``, a
``Model`` implementation that plays scripted responses instead of calling a hosted LLM.
Nothing is patched.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

agents = require_extra("agents", "openai")

from agents import Agent, FunctionTool, RunConfig, Runner  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

from agentkernel._tooling.spec import tool_spec  # noqa: E402
from agentkernel.errors import MissingExtraError  # noqa: E402
from agentkernel.openai import OpenAIToolBuilder  # noqa: E402
from tests.support import agent_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _invoke(tool: FunctionTool, arguments: dict[str, Any]) -> Any:
    """Run a tool the way the SDK's runner does: JSON arguments through on_invoke_tool."""
    payload = json.dumps(arguments)
    context = ToolContext(
        context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=payload
    )
    return asyncio.run(tool.on_invoke_tool(context, payload))


async def lookup_async(city: str, days: int = 2) -> str:
    """Forecast a city's weather, asynchronously.

    Args:
        city: The city to forecast.
        days: How many days ahead.
    """
    await asyncio.sleep(0)
    return f"{city}: sunny for {days} days"


def test_bind_keeps_types_names_and_order() -> None:
    funcs = agent_run.ga4_builder().build()
    tools = OpenAIToolBuilder.bind(funcs)
    assert all(isinstance(tool, FunctionTool) for tool in tools)
    assert [tool.name for tool in tools] == [f.__name__ for f in funcs]
    assert [tool.name for tool in tools] == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]


def test_schema_fields_and_descriptions_follow_the_docstrings() -> None:
    funcs = agent_run.ga4_builder().build()
    for func, tool in zip(funcs, OpenAIToolBuilder.bind(funcs), strict=True):
        spec = tool_spec(func)
        assert tool.description == spec.description
        assert tool.description.startswith(spec.summary)
        assert "Args:" not in tool.description
        schema = tool.params_json_schema
        assert list(schema["properties"]) == [p.name for p in spec.parameters]
        assert schema.get("required", []) == [p.name for p in spec.parameters if p.required]
        for param in spec.parameters:
            prop = schema["properties"][param.name]
            assert prop["description"] == param.description != ""
            assert prop["type"] == {str: "string", int: "integer"}[param.annotation]
            if not param.required:
                assert prop["default"] == param.default

    search = OpenAIToolBuilder.bind([f for f in funcs if f.__name__ == "search_kb"])[0]
    assert search.params_json_schema["properties"]["limit"]["default"] == 3
    assert search.params_json_schema["required"] == ["backend", "query"]


def test_tools_run_through_the_sdk_invocation_path() -> None:
    funcs = {f.__name__: f for f in agent_run.ga4_builder().build(writable=False)}
    tools = {t.name: t for t in OpenAIToolBuilder.bind(funcs.values())}
    backend = agent_run.BACKEND

    schemas = json.loads(_invoke(tools["get_schemas"], {}))
    assert schemas[backend]["capabilities"]["fetch"] is True
    assert backend in _invoke(tools["get_all_kb_descriptions"], {})
    found = _invoke(tools["search_kb"], {"backend": backend, "query": "purchasers"})
    assert agent_run.first_id(found) == agent_run.EXPECTED_ID
    # the default limit comes from the signature when the model leaves it out
    assert found == funcs["search_kb"](backend, "purchasers")
    assert agent_run.EXPECTED_ID in _invoke(
        tools["read_kb"], {"backend": backend, "query": "purchasers", "limit": 1}
    )
    fetched = _invoke(tools["fetch_kb"], {"backend": backend, "ids": agent_run.EXPECTED_ID})
    assert agent_run.EXPECTED_FACT in fetched
    assert "references" in _invoke(tools["browse_kb"], {"backend": backend})
    # a tool's own failure message reaches the model as a string
    assert "Unknown backend 'nope'" in _invoke(tools["fetch_kb"], {"backend": "nope", "ids": "x"})


def test_invalid_arguments_become_a_message_not_a_crash() -> None:
    search = next(t for t in OpenAIToolBuilder.bind(agent_run.ga4_tools()) if t.name == "search_kb")
    result = _invoke(search, {"backend": agent_run.BACKEND})  # query is required
    assert result.startswith("Tool search_kb could not run: Invalid JSON input")
    assert "backend (required), query (required), limit (default 3)" in result
    context = ToolContext(context=None, tool_name="search_kb", tool_call_id="c", tool_arguments="{")
    broken = asyncio.run(search.on_invoke_tool(context, "{"))
    assert broken.startswith("Tool search_kb could not run")


def test_async_callables_are_awaited() -> None:
    (tool,) = OpenAIToolBuilder.bind([lookup_async])
    assert tool.name == "lookup_async"
    assert tool.description == "Forecast a city's weather, asynchronously."
    assert tool.params_json_schema["properties"]["days"]["description"] == "How many days ahead."
    assert _invoke(tool, {"city": "Oslo"}) == "Oslo: sunny for 2 days"
    assert _invoke(tool, {"city": "Oslo", "days": 5}) == "Oslo: sunny for 5 days"


@pytest.mark.parametrize("bad", [None, "search_kb", 42])
def test_non_callables_are_rejected_with_their_name(bad: Any) -> None:
    funcs = [*agent_run.ga4_tools(), bad]
    with pytest.raises(TypeError, match=rf"item {len(funcs) - 1} is not callable: {bad!r}"):
        OpenAIToolBuilder.bind(funcs)


def test_a_single_callable_must_be_wrapped_in_a_list() -> None:
    with pytest.raises(TypeError, match="wrap it in a list"):
        OpenAIToolBuilder.bind(lookup_async)  # type: ignore[arg-type]


def test_offline_agent_run_gets_schemas_searches_fetches_and_answers() -> None:
    seen: dict[str, str] = {}

    def outputs(call: Any) -> list[str]:
        return [
            str(item["output"])
            for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]

    def search_step(call: Any) -> Any:
        seen["schemas"] = outputs(call)[-1]
        backend = agent_run.schemas_backend(seen["schemas"])
        arguments = {"backend": backend, "query": agent_run.SEARCH_QUERY}
        return [function_call("search_kb", arguments, call_id="call-search")]

    def fetch_step(call: Any) -> Any:
        seen["search"] = outputs(call)[-1]
        arguments = {"backend": agent_run.BACKEND, "ids": agent_run.first_id(seen["search"])}
        return [function_call("fetch_kb", arguments, call_id="call-fetch")]

    def answer_step(call: Any) -> Any:
        seen["fetch"] = outputs(call)[-1]
        return [assistant_message(agent_run.answer(agent_run.fact_from(seen["fetch"])))]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="call-schemas")],
            ModelStep.respond(search_step),
            ModelStep.respond(fetch_step),
            ModelStep.respond(answer_step),
        ]
    )
    agent = Agent(
        name="KB_Router_Agent",
        instructions="Use get_schemas first, then search_kb and fetch_kb.",
        tools=OpenAIToolBuilder.bind(agent_run.ga4_tools()),
        model=model,
    )
    result = asyncio.run(
        Runner.run(agent, agent_run.QUESTION, run_config=RunConfig(tracing_disabled=True))
    )

    model.assert_complete()
    assert [tool.name for tool in model.calls[0].tools] == [
        "get_schemas",
        "read_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    assert agent_run.BACKEND in json.loads(seen["schemas"])
    assert agent_run.first_id(seen["search"]) == agent_run.EXPECTED_ID
    assert agent_run.EXPECTED_FACT in seen["fetch"]
    assert agent_run.EXPECTED_FACT in result.final_output


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "agentkernel.openai" or name.startswith("agentkernel.openai."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "agents", None)  # makes `import agents` fail
    with pytest.raises(MissingExtraError, match=r"'openai' extra") as info:
        importlib.import_module("agentkernel.openai")
    assert isinstance(info.value.__cause__, ImportError)
    assert "pip install 'agentkernel[openai]'" in str(info.value)


def test_sdk_imports_are_the_installed_packages_not_this_one() -> None:
    code = (
        "import agentkernel.openai, agents, openai, sys\n"
        "print(agents.__file__); print(openai.__file__)\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentkernel.openai')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    package = str(ROOT / "src" / "agentkernel")
    assert not out[0].startswith(package) and "site-packages" in out[0]
    assert not out[1].startswith(package) and "site-packages" in out[1]
    assert out[2] == "['agentkernel.openai', 'agentkernel.openai._tools']"
