"""Tool introspection: a callable in, a framework-neutral description out.

Every framework adapter (and the MCP server) needs the same facts about a tool callable:
its name, a one-paragraph summary, every parameter with its type, default, required-ness
and description (from the Google-style ``Args:`` section), the return annotation, and
whether it is a coroutine function. :func:`tool_spec` gathers them once; this is the one
docstring parser every adapter and both MCP servers use (:mod:`agentkernel._tooling.schema`
turns a spec into the pydantic model and JSON Schema they advertise).

No third-party import happens here.

Example:
    >>> def greet(name: str, times: int = 1) -> str:
    ...     '''Say hello.
    ...
    ...     Args:
    ...         name: Who to greet.
    ...         times: How often.
    ...     '''
    ...     return "hello " * times + name
    >>> spec = tool_spec(greet)
    >>> spec.name, spec.summary, [p.name for p in spec.parameters]
    ('greet', 'Say hello.', ['name', 'times'])
    >>> spec.parameter("times").default
    1
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EMPTY",
    "ParamSpec",
    "ToolSpec",
    "parse_docstring",
    "tool_spec",
]

#: Marks a parameter without a default (``ParamSpec.default`` when ``required`` is true).
EMPTY: Any = inspect.Parameter.empty

# Section headers of Google-style docstrings; the ones mapped to a key are parsed.
_SECTIONS = {
    "args": "args",
    "arguments": "args",
    "parameters": "args",
    "params": "args",
    "keyword args": "args",
    "keyword arguments": "args",
    "returns": "returns",
    "return": "returns",
    "yields": "returns",
    "raises": "raises",
    "example": None,
    "examples": None,
    "note": None,
    "notes": None,
    "see also": None,
    "warning": None,
    "warnings": None,
    "attributes": None,
    "todo": None,
    "references": None,
}
_SECTION_RE = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
# "name: text", "name (int): text", "name (int, optional): text", "*args: text"
_ARG_RE = re.compile(
    r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(?P<desc>.*)$"
)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a tool.

    Attributes:
        name: The parameter name, as the framework passes it by keyword.
        annotation: The resolved type (``typing.Any`` when unannotated; the annotation
            string itself when it cannot be resolved).
        default: The default value, or :data:`EMPTY` when the parameter is required.
        required: Whether a caller must give it (true exactly when there is no default).
        description: The text of its ``Args:`` entry, continuation lines joined; empty
            when the docstring does not describe it.
    """

    name: str
    annotation: Any
    default: Any
    required: bool
    description: str


@dataclass(frozen=True)
class ToolSpec:
    """Everything a framework needs to expose a callable as a tool.

    Attributes:
        name: The tool name (the function's ``__name__``).
        summary: The docstring's first paragraph, on one line; the tool description
            frameworks show a model.
        description: The docstring's prose before its first section (summary and any
            further paragraphs), without ``Args:``/``Returns:``/``Raises:``.
        doc: The whole docstring, dedented; empty when there is none.
        parameters: The parameters, in signature order.
        returns: The resolved return annotation (``typing.Any`` when unannotated).
        returns_description: The text of the ``Returns:`` section.
        is_async: Whether calling the tool returns an awaitable to await.
        func: The callable itself.
    """

    name: str
    summary: str
    description: str
    doc: str
    parameters: tuple[ParamSpec, ...]
    returns: Any
    returns_description: str
    is_async: bool
    func: Callable[..., Any]

    def parameter(self, name: str) -> ParamSpec:
        """Look a parameter up by name.

        Args:
            name: The parameter name.

        Returns:
            Its spec.

        Raises:
            KeyError: The tool has no such parameter.
        """
        for param in self.parameters:
            if param.name == name:
                return param
        raise KeyError(name)


@dataclass(frozen=True)
class _Docstring:
    summary: str
    description: str
    args: dict[str, str]
    returns: str


def parse_docstring(doc: str | None) -> tuple[str, str, dict[str, str], str]:
    """Split a Google-style docstring into the parts a tool schema uses.

    Args:
        doc: The raw docstring (``None`` is treated as empty).

    Returns:
        ``(summary, description, args, returns)``: the first paragraph on one line, the
        prose before the first section, the ``Args:`` entries by parameter name (each
        with its continuation lines joined by spaces), and the ``Returns:`` text.
    """
    parsed = _parse_docstring(doc)
    return parsed.summary, parsed.description, dict(parsed.args), parsed.returns


def _parse_docstring(doc: str | None) -> _Docstring:
    text = inspect.cleandoc(doc) if doc else ""
    lines = text.splitlines()
    prose: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        header = _SECTION_RE.match(line)
        if header and header.group(1).strip().lower() in _SECTIONS:
            key = _SECTIONS[header.group(1).strip().lower()]
            current = sections.setdefault(key, []) if key else []
            continue
        if current is None:
            prose.append(line)
        else:
            current.append(line)
    description = "\n".join(prose).strip()
    summary = " ".join(description.split("\n\n", 1)[0].split()) if description else ""
    return _Docstring(
        summary=summary,
        description=description,
        args=_parse_args(sections.get("args", [])),
        returns=" ".join(" ".join(sections.get("returns", [])).split()),
    )


def _parse_args(lines: list[str]) -> dict[str, str]:
    """Read ``name: text`` entries; deeper-indented lines continue the entry above."""
    indented = [line for line in lines if line.strip()]
    if not indented:
        return {}
    base = min(len(line) - len(line.lstrip()) for line in indented)
    entries: dict[str, list[str]] = {}
    name: str | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_RE.match(line.strip()) if indent == base else None
        if match:
            name = match.group("name")
            entries[name] = [match.group("desc")]
        elif name is not None:
            entries[name].append(line.strip())
    return {key: " ".join(" ".join(parts).split()) for key, parts in entries.items()}


def _unwrap(func: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose name, docstring and annotations describe ``func``."""
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isfunction(target) or inspect.ismethod(target) or inspect.isbuiltin(target):
        return typing.cast(Callable[..., Any], target)
    if not isinstance(target, type) and not inspect.isroutine(target):
        return typing.cast(Callable[..., Any], target.__call__)  # a callable object
    return typing.cast(Callable[..., Any], target)


def _tool_name(func: Callable[..., Any]) -> str:
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__name__", None)
    if not isinstance(name, str) or not name or name == "<lambda>":
        name = type(target).__name__ if not inspect.isroutine(target) else ""
    if not name or not name.isidentifier():
        raise TypeError(f"Cannot name the tool {func!r}: give it a function name.")
    return name


def _is_async(func: Callable[..., Any]) -> bool:
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004
    return not inspect.isroutine(target) and inspect.iscoroutinefunction(call)


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """Resolve annotations (strings under ``from __future__ import annotations`` included)."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # an unresolvable forward reference: resolve what can be resolved
        raw = getattr(func, "__annotations__", {}) or {}
        hints: dict[str, Any] = {}
        namespace = getattr(func, "__globals__", {})
        for key, value in raw.items():
            if isinstance(value, str):
                # what get_type_hints does per name; a failure keeps the string, which
                # the schema then treats as any value
                with contextlib.suppress(Exception):
                    value = eval(value, dict(namespace))
            hints[key] = value
        return hints


def tool_spec(func: Callable[..., Any]) -> ToolSpec:
    """Introspect a tool callable.

    Functions, bound methods, ``functools.partial`` objects and callable instances are
    accepted; a partial's bound arguments are left out of the parameters.

    Args:
        func: The tool callable.

    Returns:
        Its :class:`ToolSpec`.

    Raises:
        TypeError: ``func`` is not callable, has no usable name, or takes ``*args``,
            ``**kwargs`` or positional-only parameters (frameworks pass arguments by
            keyword, so such a tool could not be called as described).
    """
    if not callable(func):
        raise TypeError(f"A tool must be callable; got {type(func).__name__}: {func!r}")
    name = _tool_name(func)
    described = _unwrap(func)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Cannot read the signature of tool {name!r}: {exc}") from exc
    hints = _type_hints(described)
    doc = _parse_docstring(inspect.getdoc(described))
    params: list[ParamSpec] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"Tool {name!r} takes {param.kind.description} parameter {param.name!r}; "
                "tools take named parameters only, since frameworks pass arguments by keyword."
            )
        annotation = hints.get(param.name, param.annotation)
        if annotation is EMPTY:
            annotation = Any
        params.append(
            ParamSpec(
                name=param.name,
                annotation=annotation,
                default=param.default,
                required=param.default is EMPTY,
                description=doc.args.get(param.name, ""),
            )
        )
    returns = hints.get("return", signature.return_annotation)
    return ToolSpec(
        name=name,
        summary=doc.summary,
        description=doc.description,
        doc=inspect.cleandoc(inspect.getdoc(described) or ""),
        parameters=tuple(params),
        returns=Any if returns is EMPTY else returns,
        returns_description=doc.returns,
        is_async=_is_async(func),
        func=func,
    )
