"""The one tool factory: a plain function in, a tool callable out that never raises.

Both tool surfaces build every callable they hand out here: the knowledge base's
(``KnowledgeBuilder.build()``: ``get_schemas``, ``read_kb``...) and the curated store's
(``create_knowledge_tools``: ``knowledge_index``, ``knowledge_read``...). A tool made here

- keeps its function's name, signature and docstring (``functools.wraps``), so every framework
  adapter and the MCP servers describe it from the function alone
  (:func:`agentkernel._tooling.spec.tool_spec`), a docstring written at build time included
  (the store's ``knowledge_create`` lists the store's page types in it);
- returns a :class:`~agentkernel._tooling.result.ToolResult`: the function's answer (with the
  records it carries), still flagged when the function flagged it an error. A refusal is
  raised where it is decided and caught here, once: a
  :class:`~agentkernel._tooling.errors.ToolRefusal` comes back as its answer, word for word;
  an expected exception of the surface (one of ``refusals``) as its message, and any other
  exception is logged and comes back as ``failure(exc)``, those two with local paths shortened
  (:func:`~agentkernel._tooling.result.pathless`). All are flagged as errors: a tool never
  raises into an agent framework;
- carries its effects, stated where it is made (:func:`tool_effects`): whether it only reads
  and whether it may replace or delete what is stored, what clients see as MCP's
  ``readOnlyHint`` and ``destructiveHint``.

The answer budget is checked once per surface with
:func:`~agentkernel._tooling.budget.checked_answer_chars` and applied inside the tools by the
cuts of :mod:`agentkernel._tooling.budget`, which end a cut answer saying how to read on.

Example:
    >>> def shout(text: str) -> str:
    ...     '''Say it louder.
    ...
    ...     Args:
    ...         text: What to say.
    ...     '''
    ...     return text.upper()
    >>> tool = make_tool(shout, read_only=True)
    >>> tool("hi"), tool.__name__, reads_only(tool), tool_effects(tool).destructive
    ('HI', 'shout', True, False)
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentkernel._tooling.errors import ToolRefusal
from agentkernel._tooling.result import ToolResult, pathless

logger = logging.getLogger(__name__)

__all__ = ["Effects", "make_tool", "reads_only", "tool_effects"]

_EFFECTS = "__ak_effects__"


@dataclass(frozen=True)
class Effects:
    """What calling a tool may do to what is stored.

    Attributes:
        read_only: It changes nothing, however often it is called.
        destructive: It may replace or delete what is stored (not only add to it).
    """

    read_only: bool
    destructive: bool = False


def _failed(name: str) -> Callable[[Exception], str]:
    def failure(exc: Exception) -> str:
        return f"Tool {name} failed: {type(exc).__name__}: {exc}"

    return failure


def make_tool(
    func: Callable[..., Any],
    *,
    read_only: bool,
    destructive: bool = False,
    refusals: tuple[type[Exception], ...] = (),
    failure: Callable[[Exception], str] | None = None,
) -> Callable[..., str]:
    """Make one tool callable from a plain synchronous function.

    Args:
        func: The tool's body; its name, signature and docstring become the tool's. It may
            return text or a :class:`ToolResult`, and may raise.
        read_only: The tool changes nothing, however often it is called.
        destructive: The tool may replace or delete what is stored (never with
            ``read_only``).
        refusals: Exceptions that are expected answers (a bad argument, a refused write):
            their message is the answer, flagged as an error, and nothing is logged.
            :class:`~agentkernel._tooling.errors.ToolRefusal` always is one, its answer
            returned word for word.
        failure: The answer, flagged as an error, to any other exception (which is logged
            with its traceback); by default ``Tool <name> failed: <type>: <message>``.

    Returns:
        The tool: called with ``func``'s arguments, it returns a ``ToolResult`` and never
        raises an ``Exception``.

    Raises:
        TypeError: ``func`` is a coroutine function (both surfaces' tools are synchronous).
        ValueError: A tool said to be both read-only and destructive.
    """
    if inspect.iscoroutinefunction(func):
        raise TypeError(f"make_tool takes a synchronous function, got {func!r}")
    if read_only and destructive:
        raise ValueError(f"A read-only tool cannot be destructive: {func.__name__}")
    name = func.__name__
    answer_failure = failure or _failed(name)

    @functools.wraps(func)
    def tool(*args: Any, **kwargs: Any) -> str:
        try:
            result = func(*args, **kwargs)
        except ToolRefusal as refusal:
            return ToolResult.error(refusal.answer)
        except refusals as exc:
            return ToolResult.error(pathless(str(exc)))
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return ToolResult.error(pathless(answer_failure(exc)))
        return result if isinstance(result, ToolResult) else ToolResult(str(result))

    setattr(tool, _EFFECTS, Effects(read_only, destructive))
    return tool


def tool_effects(tool: Callable[..., Any]) -> Effects | None:
    """What a tool made by :func:`make_tool` may do, as it was made.

    Args:
        tool: A tool callable; a wrapper made with ``functools.wraps`` keeps them.

    Returns:
        The tool's effects; ``None`` for a callable made elsewhere.
    """
    effects = getattr(tool, _EFFECTS, None)
    return effects if isinstance(effects, Effects) else None


def reads_only(tool: Callable[..., Any]) -> bool | None:
    """Whether a tool made by :func:`make_tool` only reads.

    Args:
        tool: A tool callable.

    Returns:
        ``True`` or ``False`` as the tool was made; ``None`` for a callable made elsewhere.
    """
    effects = tool_effects(tool)
    return None if effects is None else effects.read_only
