"""Serve tool callables over MCP, on stdio or streamable HTTP: a builder's, or a store's.

Example:
    >>> from agentkernel.mcp import create_server
    >>> server = create_server(KnowledgeBuilder([okf]), name="knowledge")  # doctest: +SKIP
    >>> server.run_stdio()  # doctest: +SKIP

The server lists exactly the tools ``KnowledgeBuilder.build(writable)`` returns, with
annotation hints taken from the backends' capability declarations (see
:mod:`agentkernel.mcp._tools`). A tool call never brings the server down: invalid arguments,
the builder's refusals ("Unknown backend ...", "Backend 'x' is read-only ...") and exceptions
raised by a tool all come back as ``isError`` results carrying a message the model can act on.
An unknown tool name is answered the same way (an ``isError`` result listing the tools).
:func:`agentkernel.mcp.store.create_knowledge_server` serves a knowledge store's tools with
the same class, so both list, check and answer alike.

Blocking tool callables run in worker threads; ``max_concurrency`` bounds how many run at
once. The default, 1, runs calls one at a time, since the ``KnowledgeBase`` contract promises
no thread safety; raise it for backends known to be thread-safe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

from agentkernel import __version__
from agentkernel._loopback import is_loopback
from agentkernel.errors import echo
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from agentkernel.mcp import _sdk
from agentkernel.mcp._audit import AuditLog
from agentkernel.mcp._conn import ConnectionLimits
from agentkernel.mcp._door import DEFAULT_MAX_REQUEST_BYTES, BodyBound, guard_host
from agentkernel.mcp._limits import SharedLimiter
from agentkernel.mcp._listen import Listener, TLSFiles
from agentkernel.mcp._observe import Observer, Probes
from agentkernel.mcp._tools import (
    Annotate,
    ToolDefinition,
    call_tool,
    check_arguments,
    define_tools,
    tool_annotations,
)

logger = logging.getLogger(__name__)

__all__ = ["KnowledgeServer", "create_server"]

_INSTRUCTIONS = (
    "Durable knowledge from {count} knowledge base(s): {names}. Call get_schemas first: it "
    "shows each knowledge base's schema and which tools serve it."
)


class KnowledgeServer:
    """An MCP server over a fixed set of tool callables.

    Build it with :func:`create_server`. The underlying SDK server is :attr:`sdk_server`,
    for embedding in a host of your own.
    """

    def __init__(
        self,
        tools: Iterable[Callable[..., Any]],
        *,
        name: str = "knowledge",
        builder: KnowledgeBuilder | None = None,
        max_concurrency: int = 1,
        annotate: Annotate | None = None,
        instructions: str | None = None,
        asking: Sequence[Callable[..., Any]] = (),
        identity: str = "local",
        audit: AuditLog | None = None,
        max_calls: int | None = None,
        limiter: SharedLimiter | None = None,
        observer: Observer | None = None,
    ) -> None:
        """Describe the tools and create the SDK server.

        Args:
            tools: The tool callables to serve.
            name: The server name reported to clients.
            builder: The builder the tools came from.
            max_concurrency: How many blocking tool calls may run at once (at least 1).
            annotate: The hints of each tool; by default the tool's own, as it was made.
            instructions: What the server tells the client's model; by default a summary
                of the builder's knowledge bases.
            asking: SDK-specific versions of some of ``tools`` that ask the person through
                elicitation (matched by name); the SDK runs those once their arguments
                were checked like any other tool's.
            identity: Who this server answers (the authenticated caller over HTTP); named in
                the audit trail and in limit errors.
            audit: Where each call is recorded; ``None`` for no trail.
            max_calls: How many calls of this identity may be in flight at once; one more is
                answered at once with an error result. ``None``: no bound.
            limiter: Shares ``max_concurrency`` with other servers over the same backends
                (one per identity over HTTP); by default this server has its own.
            observer: Counts each call for ``/metrics`` (shared by the process's servers).

        Raises:
            TypeError: A tool cannot be described (see ``define_tools``).
            ValueError: Two tools share a name, ``name`` is empty, or ``max_concurrency``
                is below 1.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"The server needs a non-empty name, got {name!r}.")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise ValueError(f"max_concurrency must be a whole number, got {max_concurrency!r}.")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}.")
        self.name = name
        self._definitions: dict[str, ToolDefinition] = {
            d.name: d for d in define_tools(list(tools), annotate or tool_annotations)
        }
        self._shared = limiter or SharedLimiter(max_concurrency)
        self.identity = identity
        self._audit = audit
        self._observer = observer
        self._max_calls = max_calls
        self._in_flight = 0
        self.sdk_server: Any = _sdk.low_level_server(
            name,
            __version__,
            instructions if instructions is not None else _instructions(builder),
            [
                _sdk.tool(d.name, d.description, d.input_schema, d.annotations)
                for d in self._definitions.values()
            ],
            self.call,
            asking=asking,
            check=self.check,
            observe=self._observed,
        )

    @property
    def tool_names(self) -> list[str]:
        """The names of the served tools, in listing order."""
        return list(self._definitions)

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The served tools as listed: description, input schema and annotation hints."""
        return list(self._definitions.values())

    def check(self, name: str, arguments: Mapping[str, Any] | None) -> str | None:
        """Check a ``tools/call`` request's arguments without running the tool.

        Args:
            name: The tool name.
            arguments: The arguments, as a client sends them.

        Returns:
            What is wrong (as :meth:`call` would answer it), or ``None`` when they are valid.
        """
        definition = self._definitions.get(name)
        if definition is None:
            return f"Unknown tool {echo(name)}. Available tools: {self.tool_names}"
        return check_arguments(definition, arguments)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
        """Run one tool as a ``tools/call`` request would; never raises for tool failures.

        Args:
            name: The tool name.
            arguments: The arguments, as a client sends them.

        Returns:
            ``(text, is_error)``.
        """
        started = time.perf_counter()
        definition = self._definitions.get(name)
        if definition is None:
            text = f"Unknown tool {echo(name)}. Available tools: {self.tool_names}"
            self._record(name, arguments, "refused", started, text)
            return text, True
        if self._max_calls is not None and self._in_flight >= self._max_calls:
            text = (
                f"Too many calls at once for {self.identity!r}: at most {self._max_calls} may "
                "run together. Wait for one to finish, then retry. Nothing was run."
            )
            self._record(name, arguments, "limit", started, text)
            return text, True
        limiter = self._shared.get()

        async def run_sync(func: Callable[[], Any]) -> Any:
            return await anyio.to_thread.run_sync(func, limiter=limiter)

        self._in_flight += 1
        try:
            text, failed = await call_tool(definition, arguments, run_sync)
        finally:
            self._in_flight -= 1
        self._record(name, arguments, "error" if failed else "ok", started, text)
        return text, failed

    def _observed(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        started: float,
        text: str,
        failed: bool,
    ) -> None:
        self._record(name, arguments, "error" if failed else "ok", started, text)

    def _record(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        outcome: str,
        started: float,
        text: str,
    ) -> None:
        if self._observer is not None:
            backend = arguments.get("backend") if isinstance(arguments, Mapping) else None
            tool = name if name in self._definitions else "unknown"
            self._observer.call(tool, backend, outcome, time.perf_counter() - started, text)
        if self._audit is None:
            return
        definition = self._definitions.get(name)
        writes = definition is not None and not definition.annotations.get("readOnlyHint", False)
        self._audit.call(
            identity=self.identity,
            tool=name,
            arguments=arguments,
            outcome=outcome,
            started=started,
            text=text,
            writes=writes,
        )

    async def serve_stdio(self) -> None:
        """Serve one client over stdin/stdout until it disconnects."""
        logger.info("Serving MCP %r on stdio (%d tools)", self.name, len(self._definitions))
        await _sdk.run_stdio(self.sdk_server)

    def run_stdio(self) -> None:
        """Blocking form of :meth:`serve_stdio`."""
        anyio.run(self.serve_stdio)

    def http_app(
        self,
        *,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        public_url: str | None = None,
        stateless: bool = False,
    ) -> Any:
        """Build the ASGI application serving streamable HTTP at ``path``.

        A request body over ``max_request_bytes`` gets ``413`` (and an audit line); on a
        loopback host, a request whose ``Host`` or ``Origin`` names anything but this server
        is refused (DNS-rebinding protection).

        Args:
            host: The host the app will be bound to.
            path: The endpoint path.
            max_request_bytes: The largest request body accepted.
            public_url: The URL clients reach the server by, when a proxy in front names
                it otherwise (its host is accepted too).
            stateless: Keep no MCP session between requests, so replicas behind a
                round-robin balancer need no affinity.

        With an ``observer``, ``/healthz``, ``/readyz`` and ``/metrics`` are answered too
        (see :mod:`agentkernel.mcp._observe`).

        Returns:
            An ASGI application (it runs its own lifespan); run it with any ASGI server.
        """
        app: Any = BodyBound(
            _sdk.http_app(self.sdk_server, host=host, path=path, stateless=stateless),
            max_request_bytes,
            identity=self.identity,
            audit=self._audit,
        )
        if self._observer is not None:
            app = Probes(app, self._observer)
        return guard_host(app, host, public_url=public_url, audit=self._audit)

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        on_ready: Callable[[str], None] | None = None,
        tls: TLSFiles | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        limits: ConnectionLimits | None = None,
    ) -> None:
        """Serve streamable HTTP with uvicorn until cancelled, without authentication.

        For a server many callers share, with tokens and per-identity tools, see
        :func:`agentkernel.mcp._gate.gated_app` (what ``serve --http`` with an auth option runs).

        Args:
            host: The interface to bind.
            port: The port; 0 picks a free one (the URL given to ``on_ready`` names it).
            path: The endpoint path.
            on_ready: Called with the endpoint URL once the socket is bound.
            tls: Serve https with this certificate and key.
            max_request_bytes: The largest request body accepted.
            limits: The header deadline and the connection cap.
        """
        listener = Listener(host, port, path, tls, limits)
        # a caller given the URL announces it; otherwise the log is where it is found
        logger.log(
            logging.DEBUG if on_ready else logging.INFO,
            "Serving MCP %r at %s (%d tools)",
            self.name,
            listener.url,
            len(self._definitions),
        )
        if not is_loopback(host):
            logger.warning(
                "MCP server %r listens on %s without authentication: anyone who can reach it "
                "can call its tools. Bind to 127.0.0.1, or serve with tokens "
                "(agentkernel-kb serve --auth-tokens FILE; see docs/deployment.md).",
                self.name,
                host,
            )
        app = self.http_app(host=host, path=path, max_request_bytes=max_request_bytes)
        await listener.serve(app, on_ready)

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, *, path: str = "/mcp") -> None:
        """Blocking form of :meth:`serve_http`.

        Args:
            host: The interface to bind.
            port: The port; 0 picks a free one.
            path: The endpoint path.
        """
        anyio.run(lambda: self.serve_http(host, port, path=path))


def create_server(
    builder_or_tools: KnowledgeBuilder | Iterable[Callable[..., Any]],
    name: str = "knowledge",
    writable: bool = True,
    *,
    max_concurrency: int = 1,
) -> KnowledgeServer:
    """Create an MCP server for a builder's tools (or for tool callables built elsewhere).

    Args:
        builder_or_tools: A ``KnowledgeBuilder`` (its ``build(writable)`` tools are served),
            or the tool callables themselves.
        name: The server name reported to clients.
        writable: When false, ``write_kb`` is not served. With callables, it is dropped
            from them if present.
        max_concurrency: How many blocking tool calls may run at once.

    Returns:
        The server; call ``run_stdio()`` or ``run_http(host, port)``.

    Raises:
        TypeError: ``builder_or_tools`` is neither a builder nor an iterable of callables,
            or a tool cannot be described.
        ValueError: Two tools share a name, or a setting is invalid.
    """
    if isinstance(builder_or_tools, KnowledgeBuilder):
        builder: KnowledgeBuilder | None = builder_or_tools
        tools: list[Callable[..., Any]] = list(builder_or_tools.build(writable=writable))
    elif isinstance(builder_or_tools, Iterable) and not isinstance(
        builder_or_tools, str | bytes | Mapping
    ):
        builder = None
        tools = list(builder_or_tools)
        if not writable:
            tools = [t for t in tools if getattr(t, "__name__", None) != "write_kb"]
    else:
        raise TypeError(
            "create_server() takes a KnowledgeBuilder or a list of tool callables, got "
            f"{type(builder_or_tools).__name__}"
        )
    return KnowledgeServer(tools, name=name, builder=builder, max_concurrency=max_concurrency)


def _instructions(builder: KnowledgeBuilder | None) -> str:
    if builder is None:
        return "Durable knowledge tools. Call get_schemas first, where it is offered."
    names = list(builder.backends)
    return _INSTRUCTIONS.format(count=len(names), names=", ".join(names))
