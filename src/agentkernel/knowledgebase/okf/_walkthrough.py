"""A scripted, agent-like retrieval run over the knowledge tools, for demos and smoke checks.

It calls the same tool callables an agent would get from ``KnowledgeBuilder.build()``, in the
order the OKF navigation protocol recommends: ``get_schemas`` to see what each backend
declares, ``browse_kb`` at the root to see how the bundle is organised, ``search_kb`` for the
question, and ``fetch_kb`` on the best id the search returned (read from the records the
search result carries, never from its text). No model and no network are involved, so it runs
anywhere the bundle can be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agentkernel._tooling.result import ToolResult


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the run and what the tool returned.

    Attributes:
        name: The tool's name (``search_kb``, ...).
        arguments: The keyword arguments it was called with.
        result: The string the tool returned.
    """

    name: str
    arguments: dict[str, Any]
    result: str


def best_id(search_result: str) -> str | None:
    """Return the id of the first record a ``search_kb`` result shows.

    Args:
        search_result: What ``search_kb`` returned (a
            :class:`~agentkernel._tooling.result.ToolResult` carrying its records).

    Returns:
        The id of the best match; ``None`` when nothing matched, or for text that carries
        no records (the text is for the agent and is never parsed).
    """
    ids = search_result.ids if isinstance(search_result, ToolResult) else ()
    return ids[0] if ids else None


def retrieval_run(
    tools: Iterable[Callable[..., str]], backend: str, question: str, *, limit: int = 3
) -> list[ToolCall]:
    """Answer-gathering as an agent would do it: schemas, root, search, fetch the best hit.

    Args:
        tools: The callables from ``KnowledgeBuilder.build()``; ``search_kb``, ``fetch_kb``
            and ``browse_kb`` are used when present.
        backend: The backend to read, as named in ``get_schemas``.
        question: What to look for.
        limit: How many search results to ask for.

    Returns:
        The calls made, in order, with their results.

    Raises:
        ValueError: ``tools`` holds no ``get_schemas`` (not a built tool set).
    """
    by_name = {getattr(tool, "__name__", ""): tool for tool in tools}
    if "get_schemas" not in by_name:
        raise ValueError("retrieval_run needs the tools built by KnowledgeBuilder.build().")
    calls: list[ToolCall] = []

    def call(name: str, **arguments: Any) -> str:
        result = by_name[name](**arguments)
        calls.append(ToolCall(name, arguments, result))
        return result

    call("get_schemas")
    if "browse_kb" in by_name:
        call("browse_kb", backend=backend, path="")
    search = "search_kb" if "search_kb" in by_name else "read_kb"
    found = call(search, backend=backend, query=question, limit=limit)
    target = best_id(found)
    if target is not None and "fetch_kb" in by_name:
        call("fetch_kb", backend=backend, ids=target)
    return calls


def render(calls: Iterable[ToolCall], *, max_chars: int | None = 4000) -> str:
    """Render a run as a readable transcript: each call, then its (possibly cut) result.

    Args:
        calls: The calls of a run.
        max_chars: Cut each result to this many characters; ``None`` keeps it whole.

    Returns:
        The transcript.
    """
    blocks = []
    for number, item in enumerate(calls, start=1):
        arguments = ", ".join(f"{k}={v!r}" for k, v in item.arguments.items())
        result = item.result
        if max_chars is not None and len(result) > max_chars:
            result = (
                result[:max_chars].rstrip()
                + f"\n... ({len(item.result) - max_chars} more characters)"
            )
        blocks.append(f"[{number}] {item.name}({arguments})\n{result.rstrip()}")
    return "\n\n".join(blocks) + "\n"
