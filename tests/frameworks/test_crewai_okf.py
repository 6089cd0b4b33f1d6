"""Configuration-driven OKF attached to CrewAI agents (``CrewAIModule``), keyed by ``role``.

Real: the installed crewai (``Agent``, ``Task``, ``Crew``, ``BaseTool``), the scripted
``BaseLLM`` of ``test_crewai`` playing the model offline, real OKF bundles copied into
``tmp_path`` and served by a real ``OKFManager`` over a real ``DocumentStore`` that counts
its I/O. Nothing is patched.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

# First: test_crewai prepares crewai's environment (no telemetry, scratch HOME) before it
# imports crewai, and skips (or fails, when the extra is required) without the extra.
from tests.frameworks import test_crewai

ScriptedLLM = test_crewai.ScriptedLLM

from crewai import Agent, Crew, Task  # noqa: E402

from agentkernel.crewai import CrewAIModule, CrewAIToolBuilder  # noqa: E402
from tests.support import okf_agents as run  # noqa: E402


def scripted(script: run.Script, sent: list[str] | None = None) -> ScriptedLLM:
    def step(messages: list[dict[str, Any]]) -> Any:
        if sent is not None:
            sent.extend(str(m.get("content")) for m in messages if m.get("role") == "system")
        outputs = [str(m["content"]) for m in messages if m.get("role") == "tool"]
        played = script.next(outputs[-1] if outputs and script.turns else None)
        if isinstance(played, str):
            return played
        name, args = played
        function = {"name": name, "arguments": json.dumps(args)}
        return [{"id": f"call-{script.turns}", "type": "function", "function": function}]

    return ScriptedLLM(model="scripted", steps=[step for _ in script.steps], seen_tools=[])


def agent(role: str, llm: Any = None, tools: list[Any] | None = None) -> Agent:
    return Agent(
        role=role,
        goal="Keep the roastery's knowledge",
        backstory="You work at Larkspur.",
        llm=llm,
        tools=tools or [],
    )


def play(member: Agent, question: str) -> str:
    task = Task(description=question, expected_output="The answer", agent=member)
    return str(Crew(agents=[member], tasks=[task]).kickoff().raw)


def test_producer_writes_a_concept_the_consumer_then_finds(tmp_path: Path) -> None:
    producer_script, consumer_script = run.producer_script(), run.consumer_script()
    sent: list[str] = []
    consumer_llm = scripted(consumer_script, sent)
    producer = agent(run.PRODUCER, scripted(producer_script))
    consumer = agent(run.CONSUMER, consumer_llm)

    module = CrewAIModule([producer, consumer], config=run.okf_config(tmp_path))
    assert run.store_calls() == {}  # registering opened no store

    play(producer, "Record the moisture gate.")
    answer = play(consumer, "What happens to wet green lots?")

    run.assert_run(producer_script, consumer_script, answer)
    assert [t["function"]["name"] for t in consumer_llm.seen_tools[0]] == run.OKF_TOOLS
    assert module.capability is not None
    expected = module.capability.instructions_for(run.CONSUMER)
    assert sent and expected in sent[0]  # the backstory reaches the system prompt


def test_backstory_carries_the_instructions(tmp_path: Path) -> None:
    module = CrewAIModule(config=run.okf_config(tmp_path))
    assert module.capability is not None
    consumer = module.register(agent(run.CONSUMER))
    expected = module.capability.instructions_for(run.CONSUMER)
    assert expected
    assert consumer.backstory == f"You work at Larkspur.\n\n{expected}"
    assert [t.name for t in consumer.tools] == run.OKF_TOOLS
    assert run.store_calls() == {}


def test_hand_bound_knowledge_tools_warn_and_attach_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    module = CrewAIModule(config=run.okf_config(tmp_path))
    assert module.capability is not None
    own = CrewAIToolBuilder.bind(module.capability.tools_for(run.PRODUCER)[:2])
    member = agent(run.PRODUCER, tools=own)
    with caplog.at_level(logging.WARNING, logger="agentkernel.roles.attach"):
        module.register(member)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "['get_schemas', 'read_kb']" in warnings[0] and run.PRODUCER in warnings[0]
    assert [t.name for t in member.tools] == ["get_schemas", "read_kb", *run.OKF_TOOLS]


def test_unnamed_agents_and_configs_without_okf_are_untouched(tmp_path: Path) -> None:
    bystander = agent(run.BYSTANDER)
    CrewAIModule([bystander], config=run.okf_config(tmp_path))
    assert bystander.backstory == "You work at Larkspur." and not bystander.tools

    member = agent(run.CONSUMER)
    module = CrewAIModule([member], config={"schedule": {"every": "1h"}})
    assert module.capability is None
    assert member.backstory == "You work at Larkspur." and not member.tools
