"""The okf/ example: its KB_Router_Agent run offline, and the demo's no-model path.

Real: ``examples/cli/knowledgebase/openai/okf/demo.py`` as shipped (its backend over the
checked-in bundle, semantic_map, instructions and agent), the OpenAI Agents SDK runner and
tool pipeline, ``OKFManager`` over a read-only ``LocalDocumentStore``; the demo's main job is
run as a subprocess, as the README tells a user to. Stand-in: the hosted LLM, played by the
SDK's own ``agents.testing.ScriptedModel``, which decides each step from the tool results.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.examples import OPENAI_EXAMPLES, load_demo, tool_outputs
from tests.support import require_extra

require_extra("agents", "openai")

from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentkernel.knowledgebase.router import ROUTER_INSTRUCTIONS  # noqa: E402


def best_id(text: str) -> str | None:
    """The first ``[id]`` the model reads in a search answer, as a model picks it from text."""
    match = re.search(r"^-\s*\[([^\]\n]+)\]", text, re.MULTILINE)
    return match.group(1) if match else None


def test_router_agent_browses_through_a_placeholder_searches_fetches_and_answers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    demo = load_demo("okf")
    seen: dict[str, str] = {}

    def search_step(call: Any) -> Any:
        seen["browse"] = tool_outputs(call)[-1]
        arguments = {"backend": "OKF", "query": "nightly load failure recover"}
        return [function_call("search_kb", arguments, call_id="c-search")]

    def fetch_step(call: Any) -> Any:
        seen["search"] = tool_outputs(call)[-1]
        ids = best_id(seen["search"])
        assert ids is not None, seen["search"]
        return [function_call("fetch_kb", {"backend": "OKF", "ids": ids}, call_id="c-fetch")]

    def answer_step(call: Any) -> Any:
        seen["fetch"] = tool_outputs(call)[-1]
        steps = seen["fetch"].split("Steps to recover", 1)[1].strip().splitlines()[0]
        return [assistant_message(f"From runbooks/nightly_load_failure: {steps}")]

    model = ScriptedModel(
        [
            [function_call("get_schemas", {}, call_id="c-schemas")],
            [function_call("browse_kb", {"backend": "OKF", "path": "<RUNBOOKS>"}, call_id="c-b")],
            ModelStep.respond(search_step),
            ModelStep.respond(fetch_step),
            ModelStep.respond(answer_step),
        ]
    )
    agent = demo.build_agent(model)
    answer = demo.ask(agent, demo.QUESTION)

    model.assert_complete()
    first = model.calls[0]
    assert first.system_instructions.startswith(ROUTER_INSTRUCTIONS)
    assert [tool.name for tool in first.tools] == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    # <RUNBOOKS> resolved to the runbooks/ namespace, whose index.md is returned verbatim
    assert "nightly_load_failure" in seen["browse"]
    assert best_id(seen["search"]) == "runbooks/nightly_load_failure"
    assert "Steps to recover" in seen["fetch"]
    assert answer.startswith("From runbooks/nightly_load_failure: ")
    assert answer.split(": ", 1)[1] in seen["fetch"]
    assert "-> browse_kb(" in capsys.readouterr().out


def test_without_a_model_the_demo_says_so_and_runs_the_scripted_calls() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(OPENAI_EXAMPLES / "okf" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No model configured (set OPENAI_API_KEY")
    assert "[4] fetch_kb(backend='OKF', ids='runbooks/nightly_load_failure')" in done.stdout
