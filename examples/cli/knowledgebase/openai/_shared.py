"""What every KB_Router_Agent demo here does the same way: the agent, the transcript, the CLI.

Each ``<name>/demo.py`` keeps only what is its own (backends, sample data, semantic_map,
routing text) and loads this file by path, as ``shared`` (the example folders are not
packages, and ``chromadb/`` or ``neo4j/`` on ``sys.path`` would shadow the SDKs).

The OpenAI Agents SDK is imported only when an agent is built or run, so a demo that can
answer without a model (okf/) still runs without the ``openai`` extra.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from agentkernel.knowledgebase import KnowledgeBase, KnowledgeBuilder
from agentkernel.knowledgebase.router import router_instructions

HERE = Path(__file__).resolve().parent
SHOWN = 800  # characters of each tool result printed in the transcript
NO_MODEL = (
    "OPENAI_API_KEY is not set, so there is no model to run the KB_Router_Agent. "
    "Set it (or pass --model) and run again; see README.md."
)


def load_demo(name: str) -> ModuleType:
    """Load ``<name>/demo.py`` next to this file (``chromadb`` as a package would clash)."""
    spec = importlib.util.spec_from_file_location(f"kb_router_{name}_demo", HERE / name / "demo.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the {name} demo")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def router_agent(
    routing: str, backends: list[KnowledgeBase], semantic_map: dict[str, str], model: Any = None
) -> Any:
    """The KB_Router_Agent: the manual's router instructions plus ``routing``, tools bound."""
    from agents import Agent

    from agentkernel.openai import OpenAIToolBuilder

    builder = KnowledgeBuilder(backends, semantic_map=semantic_map)
    return Agent(
        name="KB_Router_Agent",
        instructions=router_instructions(routing),
        tools=OpenAIToolBuilder.bind(builder.build()),
        model=model,
    )


def agent_builder(
    routing: str, build_backends: Callable[[], list[KnowledgeBase]], semantic_map: dict[str, str]
) -> Callable[..., Any]:
    """A demo's ``build_agent(model=None, *, backends=None, semantic_map=None)``.

    Args:
        routing: The demo's routing text, appended to the manual's router instructions.
        build_backends: Builds the demo's backends when ``backends`` is not given.
        semantic_map: The demo's placeholders, used when ``semantic_map`` is not given.
    """

    def build_agent(
        model: Any = None,
        *,
        backends: list[KnowledgeBase] | None = None,
        semantic_map: dict[str, str] | None = None,
    ) -> Any:
        """The KB_Router_Agent with the knowledge tools bound.

        Args:
            model: A model name or an Agents SDK ``Model``; the SDK's default when ``None``.
            backends: The backends to route over; ``build_backends()`` when ``None``.
            semantic_map: Placeholders to resolve; the demo's ``SEMANTIC_MAP`` when ``None``.
        """
        return router_agent(
            routing,
            backends if backends is not None else build_backends(),
            default_map if semantic_map is None else semantic_map,
            model,
        )

    default_map = semantic_map
    return build_agent


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
            text = text if len(text) <= SHOWN else text[:SHOWN] + " ..."
            print("   " + text.replace("\n", "\n   "))
    answer = str(result.final_output)
    print(f"\nAnswer: {answer}")
    return answer


def parser(doc: str | None, question: str) -> argparse.ArgumentParser:
    """The demos' command line: a question (``question`` by default) and ``--model``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("question", nargs="*", help=f"default: {question!r}")
    parser.add_argument("--model", help="a model name for the OpenAI Agents SDK")
    return parser


def has_model(args: argparse.Namespace) -> bool:
    """Whether a model can run the agent: ``--model`` or ``OPENAI_API_KEY``."""
    return bool(args.model or os.environ.get("OPENAI_API_KEY"))


def run(
    args: argparse.Namespace,
    question: str,
    build_backends: Callable[[], list[KnowledgeBase]],
    build_agent: Callable[..., Any],
    *,
    seed: Callable[[list[KnowledgeBase]], None] | None = None,
    semantic_map: dict[str, str] | None = None,
    extras: str = "openai",
) -> int:
    """A demo's ``main()``: no model -> say so; else build, seed, ask, and close the backends.

    Args:
        extras: The extras the demo's README installs, named when one is missing.

    Returns:
        0 when the agent answered, 2 when no model is configured or something expected is
        missing (an extra, the API key): one line on stderr says what to do.
    """
    if not has_model(args):
        print(NO_MODEL)
        return 2
    try:
        backends = build_backends()
        try:
            if seed is not None:
                seed(backends)
            agent = build_agent(args.model, backends=backends, semantic_map=semantic_map)
            ask(agent, " ".join(args.question) or question)
        finally:
            for backend in backends:
                backend.close()
    except Exception as exc:
        problem = expected_problem(exc, extras)
        if problem is None:
            raise
        print(problem, file=sys.stderr)
        return 2
    return 0


def expected_problem(exc: BaseException, extras: str) -> str | None:
    """One line for a failure a user can fix: a missing extra, or no usable API key.

    Args:
        exc: What the demo raised.
        extras: The extras the demo's README installs.

    Returns:
        What to do, or ``None`` for anything else (which keeps its traceback).
    """
    from agentkernel.cli.ask import model_problem
    from agentkernel.errors import AKConfigError
    from agentkernel.knowledgebase.errors import KnowledgeError

    # the library's own errors say what is wrong and where (a server out of reach, say)
    if isinstance(exc, AKConfigError | KnowledgeError | FileNotFoundError | NotADirectoryError):
        return str(exc)
    if isinstance(exc, ImportError):
        cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else exc
        missing = cause.name or "a package"
        return (
            f"{missing} is not installed: pip install 'agentkernel[{extras}]' (see this "
            "demo's README.md)"
        )
    problem = model_problem(exc)
    return None if problem is None else f"{problem} (see this demo's README.md)"
