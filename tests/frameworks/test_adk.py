"""Google ADK adapter (agentkernel.adk).

Real: the installed google-adk SDK (``FunctionTool.run_async`` with its mandatory-argument
checks, the ``FunctionDeclaration`` an ``LlmAgent`` sends its model, a full
``InMemoryRunner`` run with its in-memory session service), and a real ``OKFManager`` over
the GA4 bundle in ``shared/data/okf-bundles``. The model is a scripted ``BaseLlm`` subclass
defined here (ADK's extension point for models): it yields function calls, then a final
answer built from the function responses it was sent, instead of calling Gemini.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import AsyncGenerator, Callable
from typing import Any

import pytest

from tests.support import require_extra

require_extra("google.adk", "adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.invocation_context import InvocationContext  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import BaseTool, FunctionTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402

from agentkernel._tooling.spec import tool_spec  # noqa: E402
from agentkernel.adk import ADKToolBuilder, KnowledgeFunctionTool  # noqa: E402
from agentkernel.errors import MissingExtraError  # noqa: E402
from tests.support import agent_run  # noqa: E402

Step = Callable[[list[types.Content]], types.Content]
APP = "agentkernel-tests"


class ScriptedLlm(BaseLlm):
    """An ADK model that plays a script: each turn yields the next step's content."""

    steps: list[Step]
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        turn = len(self.requests)
        if turn >= len(self.steps):
            raise AssertionError(f"unscripted model turn #{turn + 1}")
        self.requests.append(llm_request)
        yield LlmResponse(content=self.steps[turn](list(llm_request.contents)))


def _call(name: str, args: dict[str, Any]) -> types.Content:
    call = types.FunctionCall(name=name, args=args)
    return types.Content(role="model", parts=[types.Part(function_call=call)])


def _last_result(contents: list[types.Content]) -> str:
    for content in reversed(contents):
        for part in content.parts or []:
            if part.function_response is not None:
                response = part.function_response.response or {}
                return str(response.get("result", response))
    raise AssertionError("the model expected a function response")


async def _tool_context(tools: list[BaseTool]) -> ToolContext:
    """A tool context inside a real in-memory session, as ADK builds one for a call."""
    agent = LlmAgent(name="kb_router", model=ScriptedLlm(model="scripted", steps=[]), tools=tools)
    runner = InMemoryRunner(agent=agent, app_name=APP)
    session = await runner.session_service.create_session(app_name=APP, user_id="user")
    invocation = InvocationContext(
        session_service=runner.session_service,
        invocation_id="invocation-1",
        agent=agent,
        session=session,
    )
    return ToolContext(invocation, function_call_id="call-1")


def _run(tool: BaseTool, args: dict[str, Any], context: ToolContext) -> Any:
    return asyncio.run(tool.run_async(args=args, tool_context=context))


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
    tools = ADKToolBuilder.bind(funcs)
    assert all(isinstance(t, KnowledgeFunctionTool) and isinstance(t, FunctionTool) for t in tools)
    assert [tool.name for tool in tools] == [f.__name__ for f in funcs]
    assert len(tools) == 7


def test_declarations_carry_types_defaults_required_and_descriptions() -> None:
    funcs = agent_run.ga4_builder().build()
    for func, tool in zip(funcs, ADKToolBuilder.bind(funcs), strict=True):
        spec = tool_spec(func)
        declaration = tool._get_declaration()
        assert declaration.name == spec.name
        assert declaration.description == spec.description == tool.description
        assert "Args:" not in declaration.description
        schema = declaration.parameters_json_schema
        assert list(schema["properties"]) == [p.name for p in spec.parameters]
        assert schema["required"] == [p.name for p in spec.parameters if p.required]
        for param in spec.parameters:
            prop = schema["properties"][param.name]
            assert prop["description"] == param.description != ""
            assert prop["type"] == {str: "string", int: "integer"}[param.annotation]
            if not param.required:
                assert prop["default"] == param.default


def test_tools_run_through_adk_run_async() -> None:
    funcs = {f.__name__: f for f in agent_run.ga4_tools()}
    tools = {t.name: t for t in ADKToolBuilder.bind(funcs.values())}
    context = asyncio.run(_tool_context(list(tools.values())))
    backend = agent_run.BACKEND

    assert backend in json.loads(_run(tools["get_schemas"], {}, context))
    assert backend in _run(tools["get_all_kb_descriptions"], {}, context)
    found = _run(tools["search_kb"], {"backend": backend, "query": "purchasers"}, context)
    assert found == funcs["search_kb"](backend, "purchasers")
    assert agent_run.first_id(found) == agent_run.EXPECTED_ID
    read = _run(tools["read_kb"], {"backend": backend, "query": "purchasers", "limit": 1}, context)
    assert read.count("\n- [") == 0 and agent_run.EXPECTED_ID in read
    fetched = _run(tools["fetch_kb"], {"backend": backend, "ids": agent_run.EXPECTED_ID}, context)
    assert agent_run.EXPECTED_FACT in fetched
    assert "references" in _run(tools["browse_kb"], {"backend": backend}, context)


def test_missing_arguments_come_back_as_an_error_result() -> None:
    tools = {t.name: t for t in ADKToolBuilder.bind(agent_run.ga4_tools())}
    context = asyncio.run(_tool_context(list(tools.values())))
    result = _run(tools["search_kb"], {"backend": agent_run.BACKEND}, context)
    assert "mandatory input parameters are not present" in result["error"]
    assert "query" in result["error"]
    wrong = _run(tools["search_kb"], {"backend": "ga4", "query": "x", "limit": "many"}, context)
    assert wrong == "limit must be a whole number, got 'many'."


def test_async_callables_are_awaited() -> None:
    (tool,) = ADKToolBuilder.bind([forecast])
    context = asyncio.run(_tool_context([tool]))
    props = tool._get_declaration().parameters_json_schema["properties"]
    assert props["days"] == {"type": "integer", "description": "How many days ahead.", "default": 2}
    assert _run(tool, {"city": "Oslo"}, context) == "Oslo: sunny for 2 days"
    assert _run(tool, {"city": "Oslo", "days": 6}, context) == "Oslo: sunny for 6 days"


@pytest.mark.parametrize("bad", [None, "search_kb", 42])
def test_non_callables_are_rejected_with_their_name(bad: Any) -> None:
    funcs = [*agent_run.ga4_tools(), bad]
    with pytest.raises(TypeError, match=rf"item {len(funcs) - 1} is not callable: {bad!r}"):
        ADKToolBuilder.bind(funcs)


def test_offline_agent_run_gets_schemas_searches_fetches_and_answers() -> None:
    seen: dict[str, str] = {}

    def search(contents: list[types.Content]) -> types.Content:
        seen["schemas"] = _last_result(contents)
        backend = agent_run.schemas_backend(seen["schemas"])
        return _call("search_kb", {"backend": backend, "query": agent_run.SEARCH_QUERY})

    def fetch(contents: list[types.Content]) -> types.Content:
        seen["search"] = _last_result(contents)
        ids = agent_run.first_id(seen["search"])
        return _call("fetch_kb", {"backend": agent_run.BACKEND, "ids": ids})

    def final(contents: list[types.Content]) -> types.Content:
        seen["fetch"] = _last_result(contents)
        text = agent_run.answer(agent_run.fact_from(seen["fetch"]))
        return types.Content(role="model", parts=[types.Part(text=text)])

    model = ScriptedLlm(
        model="scripted",
        steps=[lambda _: _call("get_schemas", {}), search, fetch, final],
        requests=[],
    )
    agent = LlmAgent(
        name="kb_router",
        model=model,
        instruction="Use get_schemas first, then search_kb and fetch_kb.",
        tools=ADKToolBuilder.bind(agent_run.ga4_tools()),
    )

    async def run() -> list[str]:
        runner = InMemoryRunner(agent=agent, app_name=APP)
        session = await runner.session_service.create_session(app_name=APP, user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=agent_run.QUESTION)])
        answers = []
        async for event in runner.run_async(
            user_id="user", session_id=session.id, new_message=message
        ):
            if event.is_final_response() and event.content and event.content.parts:
                answers.append(event.content.parts[0].text or "")
        return answers

    answers = asyncio.run(run())

    assert len(model.requests) == 4
    declarations = model.requests[0].config.tools[0].function_declarations
    assert [d.name for d in declarations] == [
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
    assert len(answers) == 1 and agent_run.EXPECTED_FACT in answers[0]


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "agentkernel.adk" or name.startswith("agentkernel.adk."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "google.adk.tools.function_tool", None)
    with pytest.raises(MissingExtraError, match=r"'adk' extra") as info:
        importlib.import_module("agentkernel.adk")
    assert isinstance(info.value.__cause__, ImportError)
