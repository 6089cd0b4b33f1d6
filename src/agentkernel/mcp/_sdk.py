"""The one module that knows the ``mcp`` SDK's shape, for both lines the extra accepts.

The ``mcp`` extra pins ``mcp>=1.30,<3``. The 2.x line registers handlers in the low-level
``Server`` constructor (``on_list_tools=``, ``on_call_tool=``) and builds its own
streamable-HTTP app; the 1.x line (the one an environment with ``crewai``, which pins
``mcp<2``, resolves to) registers them with decorators and leaves the HTTP app to the caller.
Everything else (types built from wire names, ``stdio_server``, ``Server.run``) is shared.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

logger = logging.getLogger(__name__)

#: The major version line of the installed SDK (1 or 2), told apart by the server's API.
SDK_LINE = 2 if "on_call_tool" in inspect.signature(Server.__init__).parameters else 1

CallHandler = Callable[[str, Mapping[str, Any] | None], Awaitable[tuple[str, bool]]]

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def tool(
    name: str, description: str, input_schema: dict[str, Any], annotations: dict[str, Any]
) -> Any:
    """Build the SDK's ``Tool`` from its wire form (field names differ between the lines).

    Args:
        name: The tool name.
        description: Its description.
        input_schema: The JSON Schema of its arguments.
        annotations: Wire-named hints (``readOnlyHint``, ...); empty for none.

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
        {"content": [{"type": "text", "text": text}], "isError": is_error}
    )


def low_level_server(
    name: str, version: str, instructions: str, tools: list[Any], call: CallHandler
) -> Any:
    """Create the SDK's low-level server answering ``tools/list`` and ``tools/call``.

    Args:
        name: The server name reported at initialization.
        version: The server version reported at initialization.
        instructions: What the server tells the client's model about itself.
        tools: The ``Tool`` objects to list.
        call: Runs a tool by name with the client's arguments; never raises.

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


async def run_stdio(server: Any) -> None:
    """Serve one client over this process's stdin and stdout until it disconnects.

    Stray writes to ``sys.stdout`` (a ``print`` in a custom backend) would corrupt the
    protocol stream, so while serving, file descriptor 1 and ``sys.stdout`` point at stderr
    and only the SDK writes to the real stdout. The 2.x SDK does this itself.

    Args:
        server: A server from :func:`low_level_server`.
    """
    if SDK_LINE >= 2:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    with _stdout_diverted() as protocol_out:
        async with stdio_server(stdout=protocol_out) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


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


def http_app(server: Any, *, host: str, path: str = "/mcp") -> Starlette:
    """Build the ASGI app serving MCP over streamable HTTP at ``path``.

    On a loopback host, requests whose ``Host``/``Origin`` is not loopback are refused
    (DNS-rebinding protection), as the SDK does by default.

    Args:
        server: A server from :func:`low_level_server`.
        host: The host the app is bound to.
        path: The endpoint path.

    Returns:
        A Starlette application whose lifespan runs the session manager.
    """
    if SDK_LINE >= 2:
        app: Starlette = server.streamable_http_app(streamable_http_path=path, host=host)
        return app
    security = None
    if host in _LOCAL_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)

    class _Endpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route(path, endpoint=_Endpoint())], lifespan=lifespan)
