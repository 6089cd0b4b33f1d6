"""The shared half of every framework adapter: check the callables, describe them, bind each.

A framework adapter (``agentkernel.openai.OpenAIToolBuilder`` and its siblings) subclasses
:class:`ToolBuilder` and implements one method, :meth:`ToolBuilder._bind_one`, that turns a
:class:`~agentkernel._tooling.spec.ToolSpec` into the framework's tool object. Validation,
introspection and the duplicate-name warning happen here, once, for all of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, Generic, TypeVar, cast

from agentkernel._tooling.spec import ToolSpec, tool_spec

logger = logging.getLogger(__name__)

ToolT = TypeVar("ToolT")

__all__ = ["ToolBuilder", "plain_function", "run_sync"]


class ToolBuilder(ABC, Generic[ToolT]):
    """Bind plain tool callables (``KnowledgeBuilder.build()``) into one agent framework.

    Subclasses set :attr:`framework` and implement :meth:`_bind_one`; users only call
    :meth:`bind`.

    Example:
        >>> tools = OpenAIToolBuilder.bind(KnowledgeBuilder([okf]).build())  # doctest: +SKIP
    """

    #: The framework's name, for messages.
    framework: ClassVar[str] = "agent framework"

    @classmethod
    def bind(cls, funcs: Iterable[Callable[..., Any]]) -> list[ToolT]:
        """Turn tool callables into the framework's tools, keeping their order.

        Each tool keeps its callable's name, its docstring's prose as the description,
        and every parameter's type, default, required-ness and ``Args:`` description.
        Both plain functions and coroutine functions are accepted.

        Args:
            funcs: The callables, for example ``KnowledgeBuilder(...).build()``.

        Returns:
            One framework tool per callable, in the same order.

        Raises:
            TypeError: ``funcs`` is not an iterable of callables (a single callable, a
                string or a mapping included), or one of them cannot be described as a
                tool; the message names the offending item and its position.
        """
        specs = cls.specs(funcs)
        names = Counter(spec.name for spec in specs)
        duplicates = sorted(name for name, count in names.items() if count > 1)
        if duplicates:
            logger.warning(
                "Binding %d tools for %s with duplicate names %s; frameworks that reject "
                "duplicate tool names will fail on them.",
                len(specs),
                cls.framework,
                duplicates,
            )
        return [cls._bind_one(spec) for spec in specs]

    @classmethod
    def specs(cls, funcs: Iterable[Callable[..., Any]]) -> list[ToolSpec]:
        """Validate the callables and describe each one.

        Args:
            funcs: The callables.

        Returns:
            Their specs, in order.

        Raises:
            TypeError: As for :meth:`bind`.
        """
        if callable(funcs) and not isinstance(funcs, type):
            raise TypeError(
                f"{cls.__name__}.bind() takes a list of tool callables, got the single "
                f"callable {_describe(funcs)}; wrap it in a list."
            )
        if isinstance(funcs, str | bytes) or hasattr(funcs, "keys"):
            raise TypeError(
                f"{cls.__name__}.bind() takes a list of tool callables, got {type(funcs).__name__}."
            )
        try:
            items = list(funcs)
        except TypeError:
            raise TypeError(
                f"{cls.__name__}.bind() takes a list of tool callables, got {type(funcs).__name__}."
            ) from None
        specs = []
        for position, func in enumerate(items):
            if not callable(func):
                raise TypeError(
                    f"{cls.__name__}.bind(): item {position} is not callable: "
                    f"{_describe(func)}. Pass the callables KnowledgeBuilder.build() returns."
                )
            try:
                specs.append(tool_spec(func))
            except TypeError as exc:
                raise TypeError(f"{cls.__name__}.bind(): item {position}: {exc}") from exc
        return specs

    @classmethod
    @abstractmethod
    def _bind_one(cls, spec: ToolSpec) -> ToolT:
        """Build the framework's tool for one described callable."""


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def run_sync(func: Callable[..., Awaitable[Any]], /, **kwargs: Any) -> Any:
    """Call a coroutine function from synchronous code and return its result.

    For frameworks that invoke a tool synchronously. Without a running event loop the
    coroutine runs on a fresh one; inside one (a sync tool path called from async code) it
    runs on a fresh loop in a worker thread, so the caller's loop is never re-entered.

    Args:
        func: The coroutine function.
        **kwargs: Its arguments.

    Returns:
        What the coroutine returned.
    """

    async def call() -> Any:
        return await func(**kwargs)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return cast(Any, pool.submit(asyncio.run, call()).result())


def plain_function(spec: ToolSpec) -> Callable[..., Any]:
    """A plain function standing for the tool, for frameworks that introspect functions.

    Partials, bound methods and callable objects are awkward for some frameworks; this
    wrapper is a module-level-looking function with the tool's name and docstring, a
    keyword-only signature carrying the resolved annotations and defaults, and the same
    sync or async nature. It calls the original callable by keyword.

    Args:
        spec: The tool's spec.

    Returns:
        The wrapper function.
    """
    func = spec.func
    wrapper: Callable[..., Any]
    if spec.is_async:

        async def async_tool(**kwargs: Any) -> Any:
            return await func(**kwargs)

        wrapper = async_tool
    else:

        def sync_tool(**kwargs: Any) -> Any:
            return func(**kwargs)

        wrapper = sync_tool
    annotations = {
        param.name: Any if isinstance(param.annotation, str) else param.annotation
        for param in spec.parameters
    }
    returns = Any if isinstance(spec.returns, str) else spec.returns
    parameters = [
        inspect.Parameter(
            param.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=param.default,
            annotation=annotations[param.name],
        )
        for param in spec.parameters
    ]
    meta = cast(Any, wrapper)
    meta.__name__ = meta.__qualname__ = spec.name
    meta.__doc__ = spec.doc or None
    meta.__signature__ = inspect.Signature(parameters, return_annotation=returns)
    meta.__annotations__ = {**annotations, "return": returns}
    meta.__module__ = getattr(func, "__module__", None) or __name__
    return wrapper
