"""Configuration-driven OKF for LangGraph graphs (``LangGraphModule``), bound before compile.

Real: langchain-core and langgraph (``StateGraph``, ``ToolNode``, ``StructuredTool``), the
scripted ``BaseChatModel`` of ``test_langgraph`` playing the model offline, real OKF bundles
copied into ``tmp_path`` and served by a real ``OKFManager`` over a real ``DocumentStore``
that counts its I/O. Nothing is patched.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("langgraph", "langgraph")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

from agentkernel.langgraph import LangGraphModule, LangGraphToolBuilder  # noqa: E402
from tests.frameworks.test_langgraph import ScriptedChatModel  # noqa: E402
from tests.support import okf_agents as run  # noqa: E402


def scripted(script: run.Script) -> ScriptedChatModel:
    def step(messages: list[BaseMessage]) -> AIMessage:
        outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        played = script.next(outputs[-1] if outputs and script.turns else None)
        if isinstance(played, str):
            return AIMessage(content=played)
        name, args = played
        call = {"name": name, "args": args, "id": f"call-{script.turns}"}
        return AIMessage(content="", tool_calls=[call])

    return ScriptedChatModel(steps=[step for _ in script.steps])


def agent_graph(module: LangGraphModule, name: str, model: ScriptedChatModel, prompt: str) -> Any:
    """The documented pattern: tools and prompt bound before ``compile()``."""
    tools = module.tools_for(name)
    system = SystemMessage(module.prompt_for(name, prompt))
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke([system, *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


def play(app: Any, question: str) -> str:
    result = app.invoke({"messages": [HumanMessage(question)]})
    return str(result["messages"][-1].content)


def test_producer_writes_a_concept_the_consumer_then_finds(tmp_path: Path) -> None:
    module = LangGraphModule(run.okf_config(tmp_path))
    producer_script, consumer_script = run.producer_script(), run.consumer_script()
    consumer_model = scripted(consumer_script)
    producer = agent_graph(module, run.PRODUCER, scripted(producer_script), "You ingest.")
    consumer = agent_graph(module, run.CONSUMER, consumer_model, "You answer.")
    assert run.store_calls() == {}  # building and compiling opened no store

    play(producer, "Record the moisture gate.")
    answer = play(consumer, "What happens to wet green lots?")

    run.assert_run(producer_script, consumer_script, answer)
    assert [t["function"]["name"] for t in consumer_model.bound_tools] == run.OKF_TOOLS


def test_prompt_carries_the_instructions(tmp_path: Path) -> None:
    module = LangGraphModule(run.okf_config(tmp_path))
    assert module.capability is not None
    expected = module.capability.instructions_for(run.CONSUMER)
    assert expected
    assert module.prompt_for(run.CONSUMER, "You answer.") == f"You answer.\n\n{expected}"
    assert module.prompt_for(run.CONSUMER) == expected
    tools = module.tools_for(run.CONSUMER)
    assert all(isinstance(t, StructuredTool) for t in tools)
    assert [t.name for t in tools] == run.OKF_TOOLS
    assert run.store_calls() == {}


def test_hand_bound_knowledge_tools_warn_and_attach_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    module = LangGraphModule(run.okf_config(tmp_path))
    own = LangGraphToolBuilder.bind(module.capability.tools_for(run.PRODUCER)[:2])  # type: ignore[union-attr]
    with caplog.at_level(logging.WARNING, logger="agentkernel.roles.attach"):
        tools = module.tools_for(run.PRODUCER, own)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "['get_schemas', 'read_kb']" in warnings[0] and run.PRODUCER in warnings[0]
    assert [t.name for t in tools] == run.OKF_TOOLS


def test_unnamed_agents_and_configs_without_okf_get_nothing(tmp_path: Path) -> None:
    module = LangGraphModule(run.okf_config(tmp_path))
    assert module.tools_for(run.BYSTANDER) == []
    assert module.prompt_for(run.BYSTANDER, "Forecast.") == "Forecast."
    empty = LangGraphModule({"schedule": {"every": "1h"}})
    assert empty.capability is None
    assert empty.tools_for(run.CONSUMER) == []
    assert empty.prompt_for(run.CONSUMER, "You answer.") == "You answer."
