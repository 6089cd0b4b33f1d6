"""Configuration-driven OKF attached to OpenAI Agents SDK agents (``OpenAIModule``).

Real: the installed openai-agents SDK (``Agent``, ``Runner``, ``FunctionTool``), the SDK's
own ``agents.testing.ScriptedModel`` playing the model offline, real OKF bundles copied into
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

agents = require_extra("agents", "openai")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.okf.manager import OKFManager  # noqa: E402
from agentkernel.openai import OpenAIModule, OpenAIToolBuilder  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.support import okf_agents as run  # noqa: E402


def scripted(script: run.Script) -> ScriptedModel:
    """The SDK's scripted model, each turn playing the script on the last tool output."""

    def respond(call: Any) -> Any:
        outputs = [
            str(item["output"])
            for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        step = script.next(outputs[-1] if outputs and script.turns else None)
        if isinstance(step, str):
            return [assistant_message(step)]
        name, arguments = step
        return [function_call(name, arguments, call_id=f"call-{script.turns}")]

    return ScriptedModel([ModelStep.respond(respond) for _ in script.steps])


def play(agent: Agent[Any], question: str) -> str:
    result = Runner.run(agent, question, run_config=RunConfig(tracing_disabled=True))
    return str(asyncio.run(result).final_output)


def test_producer_writes_a_concept_the_consumer_then_finds(tmp_path: Path) -> None:
    producer_script, consumer_script = run.producer_script(), run.consumer_script()
    producer_model, consumer_model = scripted(producer_script), scripted(consumer_script)
    producer = Agent(name=run.PRODUCER, instructions="You ingest.", model=producer_model)
    consumer = Agent(name=run.CONSUMER, instructions="You answer.", model=consumer_model)

    module = OpenAIModule([producer, consumer], config=run.okf_config(tmp_path))
    assert run.store_calls() == {}  # registering opened no store

    play(producer, "Record the moisture gate.")
    answer = play(consumer, "What happens to wet green lots?")

    run.assert_run(producer_script, consumer_script, answer)
    assert [t.name for t in consumer_model.calls[0].tools] == run.OKF_TOOLS
    assert module.capability is not None
    expected = module.capability.instructions_for(run.CONSUMER)
    assert consumer_model.calls[0].system_instructions == f"You answer.\n\n{expected}"
    producer_model.assert_complete()
    consumer_model.assert_complete()


def test_instructions_are_appended_and_tools_attached(tmp_path: Path) -> None:
    module = OpenAIModule(config=run.okf_config(tmp_path))
    assert module.capability is not None
    consumer = module.register(Agent(name=run.CONSUMER, instructions="You answer."))
    expected = module.capability.instructions_for(run.CONSUMER)
    assert expected and isinstance(consumer.instructions, str)
    assert consumer.instructions == f"You answer.\n\n{expected}"
    assert [t.name for t in consumer.tools] == run.OKF_TOOLS
    bare = module.register(Agent(name=run.PRODUCER))
    assert bare.instructions == module.capability.instructions_for(run.PRODUCER)
    assert run.store_calls() == {}


def test_callable_instructions_are_wrapped(tmp_path: Path) -> None:
    async def dynamic(context: Any, agent: Agent[Any]) -> str:
        return f"You are {agent.name}."

    agent = Agent(name=run.CONSUMER, instructions=dynamic)
    module = OpenAIModule([agent], config=run.okf_config(tmp_path))
    assert module.capability is not None
    text = asyncio.run(agent.get_system_prompt(None))  # type: ignore[arg-type]
    expected = module.capability.instructions_for(run.CONSUMER)
    assert text == f"You are {run.CONSUMER}.\n\n{expected}"


def test_hand_bound_knowledge_tools_warn_and_attach_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = run.okf_config(tmp_path)
    store = LocalDocumentStore(tmp_path / run.DB, writable=False)
    by_hand = KnowledgeBuilder([OKFManager(store, name="manual", refresh_seconds=None)])
    agent = Agent(name=run.CONSUMER, tools=OpenAIToolBuilder.bind(by_hand.build(writable=False)))
    with caplog.at_level(logging.WARNING, logger="agentkernel.roles.attach"):
        OpenAIModule([agent], config=config)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    for name in ("get_schemas", "read_kb", "get_all_kb_descriptions", "search_kb", "fetch_kb"):
        assert f"'{name}'" in warnings[0]
    assert "'write_kb'" not in warnings[0]  # it was not bound by hand
    assert run.CONSUMER in warnings[0]
    assert len(agent.tools) == 6 + 7  # attached anyway: both sets


def test_unnamed_agents_and_configs_without_okf_are_untouched(tmp_path: Path) -> None:
    bystander = Agent(name=run.BYSTANDER, instructions="Forecast.")
    OpenAIModule([bystander], config=run.okf_config(tmp_path))
    assert bystander.instructions == "Forecast." and bystander.tools == []

    agent = Agent(name=run.CONSUMER, instructions="You answer.")
    module = OpenAIModule([agent], config={"schedule": {"every": "1h"}})
    assert module.capability is None
    assert agent.instructions == "You answer." and agent.tools == []


def test_default_config_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = run.okf_config(tmp_path)
    import yaml

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("AK_CONFIG_PATH_OVERRIDE", str(path))
    agent = Agent(name=run.PRODUCER)
    OpenAIModule([agent])
    assert [t.name for t in agent.tools] == run.OKF_TOOLS
