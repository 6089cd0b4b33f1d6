"""LangGraph adapter (agentkernel.langgraph).

Real: langchain-core's ``StructuredTool`` (validation, ``invoke``/``ainvoke``), LangGraph's
``StateGraph``, ``ToolNode`` and ``tools_condition`` running a compiled agent graph, and a
real ``OKFManager`` over the GA4 bundle in ``shared/data/okf-bundles``. The chat model is a
scripted ``BaseChatModel`` subclass defined here (LangChain's own fakes cannot bind tools): it
implements the real model interface, records the tool schemas it is bound with, and answers
from the messages it receives instead of calling a hosted LLM.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.support import require_extra

require_extra("langgraph", "langgraph")

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.runnables import Runnable  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from agentkernel._tooling.spec import tool_spec  # noqa: E402
from agentkernel.errors import MissingExtraError  # noqa: E402
from agentkernel.langgraph import LangGraphToolBuilder  # noqa: E402
from tests.support import agent_run  # noqa: E402

Step = Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a script: each call answers with the next step's message."""

    steps: list[Step]
    _calls: int = PrivateAttr(default=0)
    _bound: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def bound_tools(self) -> list[dict[str, Any]]:
        return self._bound

    @property
    def remaining(self) -> int:
        return len(self.steps) - self._calls

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        self._bound = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=self._bound, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._calls >= len(self.steps):
            raise AssertionError(f"unscripted model call #{self._calls + 1}")
        step = self.steps[self._calls]
        self._calls += 1
        return ChatResult(generations=[ChatGeneration(message=step(messages))])


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _last_tool_output(messages: list[BaseMessage]) -> str:
    outputs = [m for m in messages if isinstance(m, ToolMessage)]
    assert outputs, "the model expected a tool result"
    return str(outputs[-1].content)


def _graph(model: ScriptedChatModel, tools: list[StructuredTool]) -> Any:
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


def _three_step_script(seen: dict[str, str]) -> list[Step]:
    def search(messages: list[BaseMessage]) -> AIMessage:
        seen["schemas"] = _last_tool_output(messages)
        backend = agent_run.schemas_backend(seen["schemas"])
        return _call("search_kb", {"backend": backend, "query": agent_run.SEARCH_QUERY}, "c2")

    def fetch(messages: list[BaseMessage]) -> AIMessage:
        seen["search"] = _last_tool_output(messages)
        ids = agent_run.first_id(seen["search"])
        return _call("fetch_kb", {"backend": agent_run.BACKEND, "ids": ids}, "c3")

    def final(messages: list[BaseMessage]) -> AIMessage:
        seen["fetch"] = _last_tool_output(messages)
        return AIMessage(content=agent_run.answer(agent_run.fact_from(seen["fetch"])))

    return [lambda _: _call("get_schemas", {}, "c1"), search, fetch, final]


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
    tools = LangGraphToolBuilder.bind(funcs)
    assert all(isinstance(tool, StructuredTool) for tool in tools)
    assert [tool.name for tool in tools] == [f.__name__ for f in funcs]
    assert len(tools) == 7


def test_schema_fields_and_descriptions_follow_the_docstrings() -> None:
    funcs = agent_run.ga4_builder().build()
    for func, tool in zip(funcs, LangGraphToolBuilder.bind(funcs), strict=True):
        spec = tool_spec(func)
        assert tool.description == spec.description
        assert "Args:" not in tool.description
        # what a chat model is shown
        parameters = convert_to_openai_tool(tool)["function"]["parameters"]
        assert list(parameters["properties"]) == [p.name for p in spec.parameters]
        assert parameters.get("required", []) == [p.name for p in spec.parameters if p.required]
        for param in spec.parameters:
            prop = parameters["properties"][param.name]
            assert prop["description"] == param.description != ""
            assert prop["type"] == {str: "string", int: "integer"}[param.annotation]
            if not param.required:
                assert prop["default"] == param.default


def test_tools_run_through_langchain_invoke_and_ainvoke() -> None:
    funcs = {f.__name__: f for f in agent_run.ga4_tools()}
    tools = {t.name: t for t in LangGraphToolBuilder.bind(funcs.values())}
    backend = agent_run.BACKEND

    assert backend in json.loads(tools["get_schemas"].invoke({}))
    assert backend in tools["get_all_kb_descriptions"].invoke({})
    found = tools["search_kb"].invoke({"backend": backend, "query": "purchasers"})
    assert found == funcs["search_kb"](backend, "purchasers")  # default limit applied
    assert agent_run.first_id(found) == agent_run.EXPECTED_ID
    read = tools["read_kb"].invoke({"backend": backend, "query": "purchasers", "limit": 1})
    assert read.count("\n- [") == 0 and agent_run.EXPECTED_ID in read
    fetched = asyncio.run(
        tools["fetch_kb"].ainvoke({"backend": backend, "ids": agent_run.EXPECTED_ID})
    )
    assert agent_run.EXPECTED_FACT in fetched
    assert "references" in tools["browse_kb"].invoke({"backend": backend})
    # a tool call as a model emits it, through the ToolMessage path
    message = tools["search_kb"].invoke(
        {
            "type": "tool_call",
            "name": "search_kb",
            "id": "x1",
            "args": {"backend": backend, "query": "purchasers"},
        }
    )
    assert isinstance(message, ToolMessage) and message.tool_call_id == "x1"
    assert agent_run.EXPECTED_ID in message.content


def test_invalid_arguments_become_a_message_not_a_crash() -> None:
    search = next(
        t for t in LangGraphToolBuilder.bind(agent_run.ga4_tools()) if t.name == "search_kb"
    )
    assert search.invoke({"backend": agent_run.BACKEND}) == (
        "Invalid arguments for search_kb: query is required"
    )
    assert "limit" in search.invoke({"backend": "ga4", "query": "x", "limit": "many"})
    assert "extra_forbidden" not in search.invoke({"backend": "ga4", "query": "x", "who": 1})
    assert "who" in search.invoke({"backend": "ga4", "query": "x", "who": 1})


def test_async_callables_work_sync_and_async() -> None:
    (tool,) = LangGraphToolBuilder.bind([forecast])
    assert tool.coroutine is not None
    assert tool.args["days"] == {
        "default": 2,
        "description": "How many days ahead.",
        "title": "Days",
        "type": "integer",
    }
    assert asyncio.run(tool.ainvoke({"city": "Oslo"})) == "Oslo: sunny for 2 days"
    assert tool.invoke({"city": "Oslo", "days": 4}) == "Oslo: sunny for 4 days"

    async def inside_a_loop() -> str:
        return str(tool.invoke({"city": "Rome"}))  # sync path called from async code

    assert asyncio.run(inside_a_loop()) == "Rome: sunny for 2 days"


@pytest.mark.parametrize("bad", [None, "search_kb", 42])
def test_non_callables_are_rejected_with_their_name(bad: Any) -> None:
    funcs = [*agent_run.ga4_tools(), bad]
    with pytest.raises(TypeError, match=rf"item {len(funcs) - 1} is not callable: {bad!r}"):
        LangGraphToolBuilder.bind(funcs)


def test_offline_graph_run_gets_schemas_searches_fetches_and_answers() -> None:
    seen: dict[str, str] = {}
    model = ScriptedChatModel(steps=_three_step_script(seen))
    app = _graph(model, LangGraphToolBuilder.bind(agent_run.ga4_tools()))

    state = app.invoke({"messages": [("user", agent_run.QUESTION)]})

    assert model.remaining == 0
    assert [tool["function"]["name"] for tool in model.bound_tools] == [
        "get_schemas",
        "read_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    calls = [m.tool_calls[0]["name"] for m in state["messages"] if getattr(m, "tool_calls", None)]
    assert calls == ["get_schemas", "search_kb", "fetch_kb"]
    assert agent_run.first_id(seen["search"]) == agent_run.EXPECTED_ID
    assert agent_run.EXPECTED_FACT in seen["fetch"]
    assert agent_run.EXPECTED_FACT in state["messages"][-1].content


def test_offline_graph_run_async() -> None:
    seen: dict[str, str] = {}
    model = ScriptedChatModel(steps=_three_step_script(seen))
    app = _graph(model, LangGraphToolBuilder.bind(agent_run.ga4_tools()))

    state = asyncio.run(app.ainvoke({"messages": [("user", agent_run.QUESTION)]}))

    assert model.remaining == 0
    assert agent_run.EXPECTED_FACT in state["messages"][-1].content


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "agentkernel.langgraph" or name.startswith("agentkernel.langgraph."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "langchain_core.tools", None)
    with pytest.raises(MissingExtraError, match=r"'langgraph' extra") as info:
        importlib.import_module("agentkernel.langgraph")
    assert isinstance(info.value.__cause__, ImportError)
