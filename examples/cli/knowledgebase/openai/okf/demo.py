"""The KB_Router_Agent over the checked-in OKF bundle; offline and scripted without a model.

    python examples/cli/knowledgebase/openai/okf/demo.py ["your question"]

No API key and no network needed: the bundle is read from ./bundle through a read-only
LocalDocumentStore and the tools are the plain callables KnowledgeBuilder builds. With
``OPENAI_API_KEY`` set (or ``--model``, and the ``openai`` extra installed) the
KB_Router_Agent answers with those tools. Without one the demo says so and makes the calls
an agent would make itself: get_schemas -> browse_kb at the root -> search_kb for the
question -> fetch_kb on the best id.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from agentkernel.knowledgebase import (
    KnowledgeBase,
    KnowledgeBuilder,
    LocalDocumentStore,
    OKFManager,
)
from agentkernel.knowledgebase.okf.walkthrough import render, retrieval_run
from agentkernel.knowledgebase.router import router_instructions

BUNDLE = Path(__file__).resolve().parent / "bundle"
QUESTION = "How do I recover when the nightly load fails?"
# Paths and ids are resolved too: <RUNBOOKS> stands for the bundle's runbook namespace.
SEMANTIC_MAP = {"<RUNBOOKS>": "runbooks"}
ROUTING = """\
OKF is a bundle of markdown concepts about Larkspur Coffee Roasters' data (sources, warehouse
tables, metrics, runbooks, dashboards, glossary). Browse from the root (browse_kb with path "")
or a namespace such as <RUNBOOKS>, search_kb for the question, and fetch_kb the ids you use
before answering. Say how trusted each source is (its trust tier) and warn when it is STALE."""


def build_backends(bundle: str | os.PathLike[str] = BUNDLE) -> list[KnowledgeBase]:
    """The demo's one backend: the bundle, read-only.

    Args:
        bundle: An OKF bundle directory.
    """
    return [OKFManager(LocalDocumentStore(bundle, writable=False), name="OKF")]


def build_agent(
    model: Any = None,
    *,
    backends: list[KnowledgeBase] | None = None,
    semantic_map: dict[str, str] | None = None,
) -> Any:
    """The KB_Router_Agent with the knowledge tools bound (needs the ``openai`` extra).

    Args:
        model: A model name or an Agents SDK ``Model``; the SDK's default when ``None``.
        backends: The backends to route over; ``build_backends()`` when ``None``.
        semantic_map: Placeholders to resolve; ``SEMANTIC_MAP`` when ``None``.
    """
    from agents import Agent

    from agentkernel.openai import OpenAIToolBuilder

    builder = KnowledgeBuilder(
        backends if backends is not None else build_backends(),
        semantic_map=SEMANTIC_MAP if semantic_map is None else semantic_map,
    )
    return Agent(
        name="KB_Router_Agent",
        instructions=router_instructions(ROUTING),
        tools=OpenAIToolBuilder.bind(builder.build()),
        model=model,
    )


def ask(agent: Any, question: str) -> str:
    """Run the agent on a question, print each tool call and result, return the answer."""
    from agents import RunConfig, Runner, ToolCallItem, ToolCallOutputItem

    print(f"Question: {question}\n")
    tracing = bool(os.environ.get("OPENAI_API_KEY"))
    result = Runner.run_sync(agent, question, run_config=RunConfig(tracing_disabled=not tracing))
    for item in result.new_items:
        if isinstance(item, ToolCallItem):
            raw: Any = item.raw_item
            print(f"-> {getattr(raw, 'name', '?')}({getattr(raw, 'arguments', '')})")
        elif isinstance(item, ToolCallOutputItem):
            text = str(item.output)
            text = text if len(text) <= 800 else text[:800] + " ..."
            print("   " + text.replace("\n", "\n   "))
    answer = str(result.final_output)
    print(f"\nAnswer: {answer}")
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("question", nargs="*", help=f"default: {QUESTION!r}")
    parser.add_argument("--bundle", default=str(BUNDLE), help="an OKF bundle directory")
    parser.add_argument("--full", action="store_true", help="print tool results uncut")
    parser.add_argument("--model", help="a model name for the OpenAI Agents SDK")
    args = parser.parse_args(argv)
    question = " ".join(args.question) or QUESTION
    backends = build_backends(args.bundle)

    if args.model or os.environ.get("OPENAI_API_KEY"):
        ask(build_agent(args.model, backends=backends), question)
        return 0
    tools = KnowledgeBuilder(backends, semantic_map=SEMANTIC_MAP).build()
    print(
        "No model configured (set OPENAI_API_KEY, or pass --model): making the calls an agent "
        "would make, scripted.\n"
    )
    print(f"Question: {question}")
    print(f"Tools: {', '.join(tool.__name__ for tool in tools)}\n")
    calls = retrieval_run(tools, "OKF", question)
    print(render(calls, max_chars=None if args.full else 1800))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
