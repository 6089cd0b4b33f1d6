"""CrewAI adapter (agentkernel.crewai).

Real: the installed crewai SDK (``BaseTool.run``/``arun`` with its argument validation, the
``CrewStructuredTool`` path, the converter that produces the schemas and callables its
native function-calling executor uses, and a full ``Crew.kickoff`` of an ``Agent`` with a
``Task``), and a real ``OKFManager`` over the GA4 bundle in ``shared/data/okf-bundles``. The
LLM is a scripted ``BaseLLM`` subclass defined here (CrewAI's documented extension point for
custom LLMs): it returns OpenAI-style tool calls, then a final answer built from the tool
results it was sent, instead of calling a hosted model. Telemetry is disabled; CrewAI's data
directories point into a scratch directory removed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is not None:
    # Before crewai is first imported: no telemetry, and its import-time files (a
    # credentials key, a user id, the kickoff database) go to a scratch directory rather
    # than the home directory.
    _SCRATCH = tempfile.mkdtemp(prefix="ak-crewai-")
    atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
    os.environ.update(
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_DISABLE_TRACKING="true",
        OTEL_SDK_DISABLED="true",
        HOME=_SCRATCH,
        XDG_DATA_HOME=os.path.join(_SCRATCH, "data"),
        XDG_CONFIG_HOME=os.path.join(_SCRATCH, "config"),
        CREWAI_STORAGE_DIR=os.path.join(_SCRATCH, "storage"),
    )

from tests.support import require_extra

require_extra("crewai", "crewai")

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from crewai.utilities.agent_utils import convert_tools_to_openai_schema  # noqa: E402

from agentkernel._tooling.spec import tool_spec  # noqa: E402
from agentkernel.crewai import CrewAIToolBuilder, KnowledgeTool  # noqa: E402
from agentkernel.errors import MissingExtraError  # noqa: E402
from tests.support import agent_run  # noqa: E402

Step = Callable[[list[dict[str, Any]]], Any]


class ScriptedLLM(BaseLLM):
    """A CrewAI LLM that plays a script of tool calls and answers."""

    steps: list[Step]
    seen_tools: list[list[dict[str, Any]]] = []

    def call(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        calls = len(self.seen_tools)
        if calls >= len(self.steps):
            raise AssertionError(f"unscripted LLM call #{calls + 1}")
        self.seen_tools.append(list(tools or []))
        history = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        return self.steps[calls](list(history))

    def supports_function_calling(self) -> bool:
        return True

    def get_input_tokens_count(self, *args: Any, **kwargs: Any) -> int:
        return 0


def _call(name: str, args: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    function = {"name": name, "arguments": json.dumps(args)}
    return [{"id": call_id, "type": "function", "function": function}]


def _last_tool_output(messages: list[dict[str, Any]]) -> str:
    outputs = [m for m in messages if m.get("role") == "tool"]
    assert outputs, "the LLM expected a tool result"
    return str(outputs[-1]["content"])


async def forecast(city: str, days: int = 2) -> str:
    """Forecast a city's weather, asynchronously.

    Args:
        city: The city to forecast.
        days: How many days ahead.
    """
    await asyncio.sleep(0)
    return f"{city}: sunny for {days} days"


def test_bind_keeps_types_names_and_order() -> None:
    funcs = agent_run.ga4_builder().build()
    tools = CrewAIToolBuilder.bind(funcs)
    assert all(isinstance(tool, KnowledgeTool) and isinstance(tool, BaseTool) for tool in tools)
    assert [tool.name for tool in tools] == [f.__name__ for f in funcs]
    assert len(tools) == 7


def test_args_schema_carries_types_defaults_required_and_descriptions() -> None:
    funcs = agent_run.ga4_builder().build()
    for func, tool in zip(funcs, CrewAIToolBuilder.bind(funcs), strict=True):
        spec = tool_spec(func)
        assert tool.description == spec.description
        schema = tool.args_schema.model_json_schema()
        assert list(schema["properties"]) == [p.name for p in spec.parameters]
        assert schema.get("required", []) == [p.name for p in spec.parameters if p.required]
        for param in spec.parameters:
            prop = schema["properties"][param.name]
            assert prop["description"] == param.description != ""
            assert prop["type"] == {str: "string", int: "integer"}[param.annotation]
            if not param.required:
                assert prop["default"] == param.default


def test_the_schema_crewai_sends_the_model_keeps_descriptions_and_defaults() -> None:
    tools = CrewAIToolBuilder.bind(agent_run.ga4_tools())
    schemas, _, _ = convert_tools_to_openai_schema(tools)
    by_name = {s["function"]["name"]: s["function"] for s in schemas}
    assert list(by_name) == [tool.name for tool in tools]
    search = by_name["search_kb"]
    assert search["description"].startswith("Rank a backend's records by relevance")
    limit = search["parameters"]["properties"]["limit"]
    assert limit["description"] == "The most records to return (default 3)."
    assert limit["default"] == 3 and limit["type"] == "integer"
    # CrewAI sends strict schemas, where every property is listed as required; the
    # default above is what tells the model the value to use.
    assert set(search["parameters"]["required"]) == {"backend", "query", "limit"}


def test_tools_run_through_crewai_run_arun_and_structured_tool() -> None:
    funcs = {f.__name__: f for f in agent_run.ga4_tools()}
    tools = {t.name: t for t in CrewAIToolBuilder.bind(funcs.values())}
    backend = agent_run.BACKEND

    assert backend in json.loads(tools["get_schemas"].run())
    assert backend in tools["get_all_kb_descriptions"].run()
    found = tools["search_kb"].run(backend=backend, query="purchasers")
    assert found == funcs["search_kb"](backend, "purchasers")
    assert agent_run.first_id(found) == agent_run.EXPECTED_ID
    read = asyncio.run(tools["read_kb"].arun(backend=backend, query="purchasers", limit=1))
    assert read.count("\n- [") == 0 and agent_run.EXPECTED_ID in read
    structured = tools["fetch_kb"].to_structured_tool()
    fetched = structured.invoke({"backend": backend, "ids": agent_run.EXPECTED_ID})
    assert agent_run.EXPECTED_FACT in fetched
    assert "references" in tools["browse_kb"].run(backend=backend)
    # the callables CrewAI's native tool-calling executor uses
    _, available, _ = convert_tools_to_openai_schema(list(tools.values()))
    assert agent_run.EXPECTED_ID in available["search_kb"](backend=backend, query="purchasers")


def test_crewai_validates_arguments_against_the_schema() -> None:
    search = next(t for t in CrewAIToolBuilder.bind(agent_run.ga4_tools()) if t.name == "search_kb")
    with pytest.raises(ValueError, match=r"arguments validation failed[\s\S]*query"):
        search.run(backend=agent_run.BACKEND)
    # the tool's own checks still answer with a string
    assert search.run(backend="nope", query="x").startswith("Unknown backend 'nope'")


def test_async_callables_work_with_run_and_arun() -> None:
    (tool,) = CrewAIToolBuilder.bind([forecast])
    props = tool.args_schema.model_json_schema()["properties"]
    assert props["days"]["description"] == "How many days ahead."
    assert tool.run(city="Oslo") == "Oslo: sunny for 2 days"
    assert asyncio.run(tool.arun(city="Oslo", days=3)) == "Oslo: sunny for 3 days"

    async def sync_run_inside_a_loop() -> str:
        return str(tool.run(city="Rome"))

    assert asyncio.run(sync_run_inside_a_loop()) == "Rome: sunny for 2 days"


@pytest.mark.parametrize("bad", [None, "search_kb", 42])
def test_non_callables_are_rejected_with_their_name(bad: Any) -> None:
    funcs = [*agent_run.ga4_tools(), bad]
    with pytest.raises(TypeError, match=rf"item {len(funcs) - 1} is not callable: {bad!r}"):
        CrewAIToolBuilder.bind(funcs)


def test_offline_crew_run_gets_schemas_searches_fetches_and_answers() -> None:
    seen: dict[str, str] = {}

    def search(messages: list[dict[str, Any]]) -> Any:
        seen["schemas"] = _last_tool_output(messages)
        backend = agent_run.schemas_backend(seen["schemas"])
        return _call("search_kb", {"backend": backend, "query": agent_run.SEARCH_QUERY}, "c2")

    def fetch(messages: list[dict[str, Any]]) -> Any:
        seen["search"] = _last_tool_output(messages)
        ids = agent_run.first_id(seen["search"])
        return _call("fetch_kb", {"backend": agent_run.BACKEND, "ids": ids}, "c3")

    def final(messages: list[dict[str, Any]]) -> Any:
        seen["fetch"] = _last_tool_output(messages)
        return agent_run.answer(agent_run.fact_from(seen["fetch"]))

    llm = ScriptedLLM(
        model="scripted",
        steps=[lambda _: _call("get_schemas", {}, "c1"), search, fetch, final],
        seen_tools=[],
    )
    agent = Agent(
        role="Knowledge router",
        goal="Answer from the knowledge bases",
        backstory="You inspect schemas, search, then fetch.",
        llm=llm,
        tools=CrewAIToolBuilder.bind(agent_run.ga4_tools()),
    )
    task = Task(description=agent_run.QUESTION, expected_output="The answer", agent=agent)

    output = Crew(agents=[agent], tasks=[task]).kickoff()

    assert len(llm.seen_tools) == 4
    assert [t["function"]["name"] for t in llm.seen_tools[0]] == [
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
    assert agent_run.EXPECTED_FACT in output.raw


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "agentkernel.crewai" or name.startswith("agentkernel.crewai."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "crewai.tools", None)
    with pytest.raises(MissingExtraError, match=r"'crewai' extra") as info:
        importlib.import_module("agentkernel.crewai")
    assert isinstance(info.value.__cause__, ImportError)
