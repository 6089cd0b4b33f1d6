"""Configuration-driven OKF attached to Google ADK agents (``ADKModule``).

Real: the installed google-adk (``LlmAgent``, ``InMemoryRunner``, ``FunctionTool``), the
scripted ``BaseLlm`` of ``test_adk`` playing the model offline, real OKF bundles copied into
``tmp_path`` and served by a real ``OKFManager`` over a real ``DocumentStore`` that counts
its I/O. Nothing is patched.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("google.adk", "adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from agentkernel.adk import ADKModule, ADKToolBuilder  # noqa: E402
from tests.frameworks.test_adk import ScriptedLlm  # noqa: E402
from tests.support import okf_agents as run  # noqa: E402

APP = "okf_attach"


def scripted(script: run.Script) -> ScriptedLlm:
    def step(contents: list[types.Content]) -> types.Content:
        outputs = [
            str((part.function_response.response or {}).get("result"))
            for content in contents
            for part in content.parts or []
            if part.function_response is not None
        ]
        played = script.next(outputs[-1] if outputs and script.turns else None)
        if isinstance(played, str):
            return types.Content(role="model", parts=[types.Part(text=played)])
        name, args = played
        call = types.FunctionCall(name=name, args=args)
        return types.Content(role="model", parts=[types.Part(function_call=call)])

    return ScriptedLlm(model="scripted", steps=[step for _ in script.steps], requests=[])


def agent(name: str, model: Any = None, tools: list[Any] | None = None) -> LlmAgent:
    model = model or ScriptedLlm(model="scripted", steps=[], requests=[])
    return LlmAgent(name=name, model=model, instruction="You work at Larkspur.", tools=tools or [])


def play(member: LlmAgent, question: str) -> str:
    async def go() -> list[str]:
        runner = InMemoryRunner(agent=member, app_name=APP)
        session = await runner.session_service.create_session(app_name=APP, user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=question)])
        answers = []
        async for event in runner.run_async(
            user_id="user", session_id=session.id, new_message=message
        ):
            if event.is_final_response() and event.content and event.content.parts:
                answers.append(event.content.parts[0].text or "")
        return answers

    answers = asyncio.run(go())
    assert len(answers) == 1, answers
    return answers[0]


def test_producer_writes_a_concept_the_consumer_then_finds(tmp_path: Path) -> None:
    producer_script, consumer_script = run.producer_script(), run.consumer_script()
    consumer_llm = scripted(consumer_script)
    producer = agent(run.PRODUCER, scripted(producer_script))
    consumer = agent(run.CONSUMER, consumer_llm)

    module = ADKModule([producer, consumer], config=run.okf_config(tmp_path))
    assert run.store_calls() == {}  # registering opened no store

    play(producer, "Record the moisture gate.")
    answer = play(consumer, "What happens to wet green lots?")

    run.assert_run(producer_script, consumer_script, answer)
    request = consumer_llm.requests[0]
    declarations = request.config.tools[0].function_declarations
    assert [d.name for d in declarations] == run.OKF_TOOLS
    assert module.capability is not None
    assert module.capability.instructions_for(run.CONSUMER) in str(
        request.config.system_instruction
    )


def test_instruction_carries_the_instructions(tmp_path: Path) -> None:
    module = ADKModule(config=run.okf_config(tmp_path))
    assert module.capability is not None
    consumer = module.register(agent(run.CONSUMER))
    expected = module.capability.instructions_for(run.CONSUMER)
    assert expected
    assert consumer.instruction == f"You work at Larkspur.\n\n{expected}"
    assert [t.name for t in consumer.tools] == run.OKF_TOOLS
    assert run.store_calls() == {}


def test_instruction_providers_are_wrapped(tmp_path: Path) -> None:
    async def dynamic(context: Any) -> str:
        return f"You are {context.agent_name}."

    producer_script = run.producer_script()
    llm = scripted(producer_script)
    member = LlmAgent(name=run.PRODUCER, model=llm, instruction=dynamic)
    module = ADKModule([member], config=run.okf_config(tmp_path))
    assert module.capability is not None
    play(member, "Record the moisture gate.")
    expected = module.capability.instructions_for(run.PRODUCER)
    sent = str(llm.requests[0].config.system_instruction)
    assert f"You are {run.PRODUCER}.\n\n{expected}" in sent


def test_hand_bound_knowledge_tools_warn_and_attach_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    module = ADKModule(config=run.okf_config(tmp_path))
    assert module.capability is not None
    own = ADKToolBuilder.bind(module.capability.tools_for(run.PRODUCER)[:2])
    member = agent(run.PRODUCER, tools=own)
    with caplog.at_level(logging.WARNING, logger="agentkernel.roles.attach"):
        module.register(member)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "['get_schemas', 'read_kb']" in warnings[0] and run.PRODUCER in warnings[0]
    assert [t.name for t in member.tools] == ["get_schemas", "read_kb", *run.OKF_TOOLS]


def test_unnamed_agents_and_configs_without_okf_are_untouched(tmp_path: Path) -> None:
    bystander = agent(run.BYSTANDER)
    ADKModule([bystander], config=run.okf_config(tmp_path))
    assert bystander.instruction == "You work at Larkspur." and not bystander.tools

    member = agent(run.CONSUMER)
    module = ADKModule([member], config={"schedule": {"every": "1h"}})
    assert module.capability is None
    assert member.instruction == "You work at Larkspur." and not member.tools
