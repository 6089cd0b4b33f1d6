"""``ask QUESTION``: the manual's KB router agent, or a retrieval-only answer without a model.

With a model configured (``OPENAI_API_KEY``, or ``--model`` for any model the OpenAI Agents
SDK can reach), the ``KB_Router_Agent`` answers, and each tool call is printed as it happens.
With none, the command says so and answers retrieval-only: the best concepts for the
question, then the top ones fetched whole, with their ids, trust and staleness.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

from agentkernel._tooling.result import ToolResult
from agentkernel.cli._bundle import add_full_argument, nonempty, positive, result_limit
from agentkernel.cli._options import subcommand
from agentkernel.cli._sources import Sources, add_source_arguments, resolve_sources
from agentkernel.errors import AKConfigError, missing_extra

_SHOWN = 600  # characters of each tool result shown while the agent runs


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", type=nonempty, help="what to ask")
    add_source_arguments(parser)
    parser.add_argument("--model", help="a model name for the OpenAI Agents SDK")
    parser.add_argument(
        "-n", "--limit", type=result_limit, default=5, help="search results (default 5)"
    )
    parser.add_argument(
        "--fetch", type=positive, default=2, help="concepts fetched whole (default 2)"
    )
    add_full_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Answer the question.

    Args:
        args: The parsed arguments.

    Returns:
        0 when an answer (or retrieval) was printed.

    Raises:
        AKConfigError: A usage or configuration problem, or the model cannot be used (no
            API key, a key refused, the API out of reach): one line saying what to do.
        MissingExtraError: ``--model`` without the ``openai`` extra.
    """
    sources = resolve_sources(args, writable=False)
    print(skipped_note(sources), end="", file=sys.stderr)
    if args.model or os.environ.get("OPENAI_API_KEY"):
        try:
            asyncio.run(run_agent(args.question, sources, model=args.model, out=print))
        except Exception as exc:
            problem = model_problem(exc)
            if problem is None:
                raise
            raise AKConfigError(problem) from exc
        return 0
    print(
        "No model configured (set OPENAI_API_KEY, or pass --model): answering retrieval-only "
        "with the best matching concepts.\n"
    )
    from agentkernel.cli._cuts import as_commands, fetch_commands, say_cut

    blocks = _retrieved(args.question, sources, limit=args.limit, fetch=args.fetch)
    commands = fetch_commands(sources.builder.backends if sources.builder else {})
    print(_joined([(heading, as_commands(result, commands)) for heading, result in blocks]))
    say_cut([result for _, result in blocks], "ask")
    return 0


def model_problem(exc: BaseException) -> str | None:
    """Word an expected failure to use the model (the OpenAI client's own errors).

    Args:
        exc: What running the agent raised.

    Returns:
        One line saying what to do, or ``None`` for an unexpected error.
    """
    kind = type(exc)
    if not kind.__module__.startswith("openai"):
        return None
    names = {k.__name__ for k in kind.__mro__}
    if "AuthenticationError" in names or "api_key" in str(exc).lower():
        return (
            "the model needs a valid OpenAI API key: set OPENAI_API_KEY (or run without "
            "--model for a retrieval-only answer)"
        )
    if "APIConnectionError" in names:
        return f"cannot reach the model's API ({exc}); check the network, or run without --model"
    if "OpenAIError" in names:
        return f"the model's API refused the request: {exc}"
    return None


def skipped_note(sources: Sources) -> str:
    """Say how many files the walk skipped and why, pointing to ``check``; empty when none.

    Args:
        sources: The opened sources.

    Returns:
        One line per backend that skipped files (with a trailing newline), or ``""``.
    """
    from agentkernel.cli._bundle import skipped_summary

    lines = []
    for name, kb in sources.builder.backends.items() if sources.builder else ():
        line = skipped_summary(name, kb)
        if line:
            lines.append(line + "\n")
    return "".join(lines)


def retrieve(question: str, sources: Sources, *, limit: int = 5, fetch: int = 2) -> str:
    """Answer without a model: rank concepts in every backend, then fetch the best whole.

    Args:
        question: The question, used as the search query.
        sources: The tools and backends.
        limit: Search results per backend.
        fetch: How many of the best results per backend to fetch whole.

    Returns:
        The ranked summaries (ids, titles, trust, staleness) and the fetched concepts.
    """
    return _joined(_retrieved(question, sources, limit=limit, fetch=fetch))


def _retrieved(question: str, sources: Sources, *, limit: int, fetch: int) -> list[tuple[str, str]]:
    """What :func:`retrieve` prints: each block's heading and the tool's answer."""
    tools = {tool.__name__: tool for tool in sources.tools}
    search = tools.get("search_kb") or tools["read_kb"]
    blocks: list[tuple[str, str]] = []
    for backend in sources.backends:
        found = search(backend, question, limit)
        blocks.append((f"## {backend}: best matches", found))
        ids = _fetchable_ids(found, sources, backend)[: max(fetch, 0)]
        if ids and "fetch_kb" in tools:
            blocks.append((f"## {backend}: fetched", tools["fetch_kb"](backend, ",".join(ids))))
    return blocks


def _joined(blocks: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"{heading}\n{result}" for heading, result in blocks)


def _fetchable_ids(found: str, sources: Sources, backend: str) -> list[str]:
    """The ids of the records a search result shows, unless its backend cannot fetch them."""
    kb = sources.builder.backends.get(backend) if sources.builder else None
    if (kb is not None and not kb.capabilities.fetch) or not isinstance(found, ToolResult):
        return []
    return list(found.ids)


async def run_agent(
    question: str, sources: Sources, *, model: Any = None, out: Callable[[str], Any] = print
) -> str:
    """Run the KB router agent on the OpenAI Agents SDK, reporting each tool call.

    Args:
        question: The user's question.
        sources: The tools, backends and extra instructions.
        model: A model name or an ``agents`` Model object; the SDK's default when ``None``.
        out: Receives each line of the live transcript.

    Returns:
        The agent's final answer (also passed to ``out``).

    Raises:
        MissingExtraError: The ``openai`` extra is not installed.
    """
    try:
        from agents import Agent, RunConfig, Runner
    except ImportError as exc:
        raise missing_extra("openai-agents", "openai", feature="ask with a model") from exc

    from agentkernel.knowledgebase.router import router_instructions
    from agentkernel.openai import OpenAIToolBuilder

    tools: list[Any] = list(OpenAIToolBuilder.bind(sources.tools))
    agent = Agent(
        name="KB_Router_Agent",
        instructions=router_instructions(sources.instructions),
        tools=tools,
        model=model,
    )
    offline = not os.environ.get("OPENAI_API_KEY")
    result = Runner.run_streamed(agent, question, run_config=RunConfig(tracing_disabled=offline))
    async for event in result.stream_events():
        if event.type != "run_item_stream_event":
            continue
        item = event.item
        if event.name == "tool_called":
            raw = item.raw_item
            name = getattr(raw, "name", None) or (raw.get("name") if isinstance(raw, dict) else "")
            arguments = getattr(raw, "arguments", None) or (
                raw.get("arguments") if isinstance(raw, dict) else ""
            )
            out(f"-> {name}({arguments})")
        elif event.name == "tool_output":
            text = str(item.output)
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + " ..."
            out("   " + shown.replace("\n", "\n   "))
    answer = str(result.final_output)
    out(answer)
    return answer


register = subcommand("ask", run, _arguments, help="answer a question from knowledge bases")
