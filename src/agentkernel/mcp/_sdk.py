"""The one module that knows the ``mcp`` SDK's shape, for both lines the extra accepts.

The ``mcp`` extra pins ``mcp>=1.30,<3``. The 2.x line registers handlers in the low-level
``Server`` constructor (``on_list_tools=``, ``on_call_tool=``) and builds its own
streamable-HTTP app; the 1.x line (the one an environment with ``crewai``, which pins
``mcp<2``, resolves to) registers them with decorators and leaves the HTTP app to the caller.
Everything else (types built from wire names, ``stdio_server``, ``Server.run``) is shared.

A tool that asks the person before it acts (a store's ``knowledge_retire``) needs MCP
elicitation, which the SDK's high-level server provides: ``MCPServer`` with a resolver on
2.x (a standalone request on handshake-era protocol versions, an ``InputRequiredResult``
round on 2026-07-28 and later), ``FastMCP`` with ``ctx.elicit()`` on 1.x. A server with such
tools is that high-level server listing and calling every other tool through the same
handlers as the low-level one; the SDK's names for it are re-exported here.

Both transports are guarded so that a message the SDK cannot read gets an error response
instead of silence (see :mod:`agentkernel.mcp._wire`): on stdio, what the SDK's reader hands
over as an exception is answered; over HTTP, a body holding a lone surrogate is answered
before the SDK sees it. :func:`run_stdio` and :func:`http_app` serve any server this way.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import IO, Any, cast

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import Route

from agentkernel.mcp._door import replay, send_json
from agentkernel.mcp._stdin import IdCheckedLines
from agentkernel.mcp._wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    SURROGATE_ESCAPE,
    answer_invalid,
    answer_unparsed,
    bad_id,
)

logger = logging.getLogger(__name__)

#: The major version line of the installed SDK (1 or 2), told apart by the server's API.
SDK_LINE = 2 if "on_call_tool" in inspect.signature(Server.__init__).parameters else 1

# The high-level server and what elicitation needs (typed as Any: their shapes differ by line;
# the names only 2.x has are None on 1.x).
_high: Any = importlib.import_module(
    "mcp.server.mcpserver" if SDK_LINE >= 2 else "mcp.server.fastmcp"
)
HighLevelServer: Any = _high.MCPServer if SDK_LINE >= 2 else _high.FastMCP
HighLevelContext: Any = _high.Context
AcceptedElicitation: Any = getattr(_high, "AcceptedElicitation", None) if SDK_LINE >= 2 else None
Elicit: Any = getattr(_high, "Elicit", None) if SDK_LINE >= 2 else None
ElicitationResult: Any = getattr(_high, "ElicitationResult", None) if SDK_LINE >= 2 else None
Resolve: Any = getattr(_high, "Resolve", None) if SDK_LINE >= 2 else None

CallHandler = Callable[[str, Mapping[str, Any] | None], Awaitable[tuple[str, bool]]]
CheckHandler = Callable[[str, Mapping[str, Any] | None], str | None]
ObserveHandler = Callable[[str, Mapping[str, Any] | None, float, str, bool], None]

#: DNS-rebinding protection is decided at the door (:mod:`agentkernel.mcp._door`), for every
#: loopback address; the SDK's own check (on for three spellings of loopback) stays off.
_NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def tool(
    name: str, description: str, input_schema: dict[str, Any], annotations: dict[str, Any]
) -> Any:
    """Build the SDK's ``Tool`` from its wire form (field names differ between the lines).

    Args:
        name: The tool name.
        description: Its description.
        input_schema: The JSON Schema of its arguments.
        annotations: Wire-named hints (``title``, ``readOnlyHint``, ...); empty for none.
            A ``title`` is also the tool's own title.

    Returns:
        A ``mcp.types.Tool``.
    """
    wire: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": input_schema,
    }
    if annotations:
        wire["annotations"] = annotations
        if isinstance(annotations.get("title"), str):
            wire["title"] = annotations["title"]
    return types.Tool.model_validate(wire)


def tool_result(text: str, is_error: bool) -> Any:
    """Build the SDK's ``CallToolResult`` carrying one text block.

    Args:
        text: The tool's output.
        is_error: Whether it reports a failure.

    Returns:
        A ``mcp.types.CallToolResult``.
    """
    return types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": _encodable_text(text)}], "isError": is_error}
    )


def _encodable_text(text: str) -> str:
    """Text the transport can encode: a lone surrogate would make the answer unsendable."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def low_level_server(
    name: str,
    version: str,
    instructions: str,
    tools: list[Any],
    call: CallHandler,
    *,
    asking: Sequence[Callable[..., Any]] = (),
    check: CheckHandler | None = None,
    observe: ObserveHandler | None = None,
) -> Any:
    """Create the SDK's low-level server answering ``tools/list`` and ``tools/call``.

    Args:
        name: The server name reported at initialization.
        version: The server version reported at initialization.
        instructions: What the server tells the client's model about itself.
        tools: The ``Tool`` objects to list.
        call: Runs a tool by name with the client's arguments; never raises.
        asking: Tools that ask the person through elicitation, written for the installed
            line (see :data:`SDK_LINE`); the SDK runs them, once ``check`` passed.
        check: Checks an asking tool's arguments: the refusal, or ``None`` when valid.
        observe: Told of each asking tool's call once the SDK ran it: the name, the
            arguments, ``time.perf_counter()`` at the start, the answer's text and error flag
            (the audit trail; the other tools are recorded by ``call``).

    Returns:
        A ``mcp.server.lowlevel.Server``.
    """

    async def run_call(tool_name: str, arguments: Mapping[str, Any] | None) -> Any:
        try:
            text, is_error = await call(tool_name, arguments)
        except Exception as exc:  # the last line of defence: a call never ends the server
            logger.exception("MCP tool %s failed outside the tool", tool_name)
            text, is_error = f"Tool {tool_name} failed: {type(exc).__name__}: {exc}", True
        return tool_result(text, is_error)

    if asking:
        return _asking_server(name, version, instructions, tools, run_call, asking, check, observe)
    # typed as Any: the constructor's keywords depend on the installed line
    server_class: Any = Server
    if SDK_LINE >= 2:

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return await run_call(params.name, params.arguments)

        return server_class(
            name,
            version=version,
            instructions=instructions,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )

    server = server_class(name, version=version, instructions=instructions)

    async def list_tools() -> list[Any]:
        return tools

    server.list_tools()(list_tools)
    # Arguments are validated by the caller, with messages naming the tool's parameters.
    server.call_tool(validate_input=False)(run_call)
    return server


def _asking_server(
    name: str,
    version: str,
    instructions: str,
    tools: list[Any],
    run_call: Callable[[str, Mapping[str, Any] | None], Awaitable[Any]],
    asking: Sequence[Callable[..., Any]],
    check: CheckHandler | None,
    observe: ObserveHandler | None = None,
) -> Any:
    """The high-level server's low-level one: the SDK runs ``asking``, ``run_call`` the rest.

    Both lines call the high-level server's own ``list_tools`` and ``call_tool`` from their
    request handlers, so overriding them lists and calls every tool as the low-level server
    does; only the asking tools reach the SDK's machinery (and its elicitation).
    """
    asking_names = {func.__name__ for func in asking}

    class Served(HighLevelServer):  # type: ignore[misc, valid-type]
        async def list_tools(self) -> Any:
            return tools

        async def call_tool(self, tool_name: str, arguments: Any, *args: Any, **kwargs: Any) -> Any:
            if tool_name not in asking_names:
                return await run_call(tool_name, arguments)
            problem = check(tool_name, arguments) if check is not None else None
            if problem is not None:
                return tool_result(problem, True)
            started = time.perf_counter()
            result = await super().call_tool(tool_name, arguments, *args, **kwargs)
            if observe is not None:
                text, failed = _result_text(result)
                observe(tool_name, arguments, started, text, failed)
            return result

    options = {"version": version} if SDK_LINE >= 2 else {}
    server: Any = Served(name, instructions=instructions, **options)
    for func in asking:
        server.add_tool(func, name=func.__name__, structured_output=False)
    return server._lowlevel_server if SDK_LINE >= 2 else server._mcp_server


def _result_text(result: Any) -> tuple[str, bool]:
    """The text and error flag of what the SDK's high-level ``call_tool`` returned."""
    failed = bool(getattr(result, "is_error", getattr(result, "isError", False)))
    blocks = getattr(result, "content", result)
    if isinstance(blocks, list | tuple):
        return "\n".join(str(getattr(b, "text", "")) for b in blocks), failed
    return str(result), failed


def client_can_elicit(capabilities: Any) -> bool:
    """Whether a client's capabilities let the server ask the person through a form.

    Args:
        capabilities: The client's declared capabilities (either line's type), or ``None``.

    Returns:
        True when the client declared form elicitation (or elicitation without modes).
    """
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None


async def run_stdio(server: Any) -> None:
    """Serve one client over this process's stdin and stdout until it disconnects.

    Stray writes to ``sys.stdout`` (a ``print`` in a custom backend) would corrupt the
    protocol stream, so while serving, file descriptor 1 and ``sys.stdout`` point at stderr
    and only the SDK writes to the real stdout. The 2.x SDK does this itself.

    Args:
        server: A server from :func:`low_level_server`.
    """
    lines = IdCheckedLines(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdin = anyio.wrap_file(cast("IO[str]", lines))  # readline and iteration are what is used
    if SDK_LINE >= 2:
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            lines.answer_with(_sender(write_stream))
            await _run_guarded(server, read_stream, write_stream)
        return
    with _stdout_diverted() as protocol_out:
        async with stdio_server(stdin=stdin, stdout=protocol_out) as (read_stream, write_stream):
            lines.answer_with(_sender(write_stream))
            await _run_guarded(server, read_stream, write_stream)


def _sender(write_stream: Any) -> Callable[[dict[str, Any]], Coroutine[Any, Any, None]]:
    async def send(answer: dict[str, Any]) -> None:
        await write_stream.send(SessionMessage(_message(answer)))

    return send


async def _run_guarded(server: Any, read_stream: Any, write_stream: Any) -> None:
    """Run ``server`` on a transport's streams, answering the messages its reader could not read.

    The transport hands over an exception for each line it cannot parse; the SDK drops those
    without a word. Here each one is answered on the write stream instead, and every parsed
    message passes through unchanged.
    """
    send, receive = anyio.create_memory_object_stream[Any](0)

    async def pump() -> None:
        async with send:
            async for item in read_stream:
                if not isinstance(item, Exception):
                    await send.send(item)
                    continue
                try:
                    answer = _answer_exception(item)
                    message = None if answer is None else SessionMessage(_message(answer))
                except Exception:  # answering must never end the server
                    logger.exception("could not answer an unreadable MCP message")
                    continue
                if message is not None:
                    await write_stream.send(message)

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        await server.run(receive, write_stream, server.create_initialization_options())
        group.cancel_scope.cancel()


def _answer_exception(exc: Exception) -> dict[str, Any] | None:
    """The answer to a message the transport's reader refused, from what its error holds."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    for error in errors:
        if error.get("type") == "json_invalid" and isinstance(error.get("input"), str | bytes):
            return answer_unparsed(error["input"])
    for error in errors:  # valid JSON, not JSON-RPC: find the error that carries the message
        location = error.get("loc", ())
        top_level = (error.get("type") == "missing" and len(location) == 2) or (
            error.get("type") == "model_type" and len(location) == 1
        )
        if top_level:
            return answer_invalid(error.get("input"))
    logger.warning("MCP transport could not read a message: %s", exc)
    return answer_invalid(None)


def _message(wire: dict[str, Any]) -> Any:
    """The SDK's ``JSONRPCMessage`` for a wire-form message (the class differs by line)."""
    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:
        return adapter.validate_python(wire, by_name=False)
    message: Any = types.JSONRPCMessage  # the 1.x line's root model
    if wire.get("id") is None and "error" in wire:
        # 1.x types refuse the "id": null that JSON-RPC prescribes for an unparseable
        # request, so the error is built without validation
        error = types.JSONRPCError.model_construct(
            jsonrpc="2.0", id=None, error=types.ErrorData(**wire["error"])
        )
        return message.model_construct(root=error)
    return message.model_validate(wire)


@contextlib.contextmanager
def _stdout_diverted() -> Any:
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    previous = sys.stdout
    sys.stdout = sys.stderr
    wire = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb"), encoding="utf-8")
    try:
        yield anyio.wrap_file(wire)
    finally:
        with contextlib.suppress(OSError, ValueError):
            wire.close()
        sys.stdout = previous
        os.dup2(saved, 1)
        os.close(saved)


def http_app(server: Any, *, host: str, path: str = "/mcp", stateless: bool = False) -> Starlette:
    """Build the ASGI app serving MCP over streamable HTTP at ``path``.

    The ``Host``/``Origin`` check is not made here: :class:`agentkernel.mcp._door.HostGuard`
    makes it in front of every app served on loopback.

    Args:
        server: A server from :func:`low_level_server`.
        host: The host the app is bound to.
        path: The endpoint path.
        stateless: Keep no MCP session between requests (see :func:`session_manager`).

    Returns:
        A Starlette application whose lifespan runs the session manager.
    """
    if SDK_LINE >= 2:
        app: Starlette = server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            transport_security=_NO_SDK_HOST_CHECK,
            stateless_http=stateless,
        )
        app.add_middleware(_AnswerUnreadable, path=path)
        return app
    manager = session_manager(server, stateless=stateless)

    class _Endpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    guarded = Starlette(routes=[Route(path, endpoint=_Endpoint())], lifespan=lifespan)
    guarded.add_middleware(_AnswerUnreadable, path=path)
    return guarded


def session_manager(server: Any, *, stateless: bool = False) -> Any:
    """The SDK's streamable-HTTP session manager for ``server`` (run it with ``.run()``).

    The SDK's ``Host``/``Origin`` check is off: :class:`agentkernel.mcp._door.HostGuard`
    makes it in front of every app served on loopback.

    Args:
        server: A server from :func:`low_level_server`.
        stateless: Keep no session: each POST is served by a fresh transport and no
            ``Mcp-Session-Id`` is issued, so any replica can answer any request (a client's
            ``initialize`` and its next call may land on different processes). The server
            then cannot send a request back to the client mid-call on handshake-era
            protocol versions (elicitation fails closed).

    Returns:
        A ``StreamableHTTPSessionManager``; ``handle_request(scope, receive, send)`` serves.
    """
    return StreamableHTTPSessionManager(
        app=server, security_settings=_NO_SDK_HOST_CHECK, stateless=stateless
    )


def answering_unreadable(app: Any, path: str) -> Any:
    """Wrap an ASGI endpoint so that a POSTed lone surrogate is answered, not dropped.

    Args:
        app: The endpoint.
        path: Its path.

    Returns:
        The wrapped endpoint.
    """
    return _AnswerUnreadable(app, path=path)


def authenticated_user(identity: str) -> Any:
    """The SDK's authenticated user for an identity (its session-ownership checks use it).

    Args:
        identity: Who the request's token names.

    Returns:
        An ``AuthenticatedUser`` holding an ``AccessToken`` for ``identity`` (no token text).
    """
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id=identity, scopes=[]))


# The SDK refuses bodies above this; larger ones are left to it unread.
_MAX_BODY = 4 * 1024 * 1024


class _AnswerUnreadable:
    """ASGI middleware: answers the POSTed messages the SDK would drop or misread.

    A body holding a lone surrogate gets the SDK a parse error about a "hex escape" and no
    id; a request whose id is an object, a list or a number too long would be read as a
    notification and never answered. Both are answered here; every other body passes
    through unchanged (bodies above the SDK's limit are left to it unread).
    """

    def __init__(self, app: Any, path: str) -> None:
        self._app = app
        self._path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        length = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if scope.get("path") != self._path or not length.isdigit() or int(length) > _MAX_BODY:
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            event = await receive()
            if event.get("type") != "http.request":
                break
            chunks.append(event.get("body", b""))
            more = bool(event.get("more_body"))
        body = b"".join(chunks)
        answer = _answer_body(body)
        if answer is None:
            await self._app(scope, replay(body, receive), send)
            return
        await send_json(send, 200 if "result" in answer else 400, answer)


def _answer_body(body: bytes) -> dict[str, Any] | None:
    """The answer this middleware gives a body itself, or ``None`` to leave it to the SDK."""
    if SURROGATE_ESCAPE.search(body):
        answer = answer_unparsed(body)
        # only the surrogate answers are given here; the SDK answers every other failure
        if (
            answer is not None
            and answer.get("error", {}).get("code", INVALID_PARAMS) == INVALID_PARAMS
        ):
            return answer
        return None
    try:
        message = json.loads(body)
    except RecursionError:
        return None
    except ValueError:  # not JSON (the SDK answers), or a number too long to read
        answer = answer_unparsed(body)
        code = (answer or {}).get("error", {}).get("code")
        return answer if code == INVALID_REQUEST else None
    return bad_id(message)
