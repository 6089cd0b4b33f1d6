"""The ``knowledge`` MCP server: the ``knowledge_*`` tools over a store (official ``mcp`` SDK).

Name the server ``knowledge`` so hosts recognise its tools. Refusals come back as tool errors
(``isError``) carrying the store's message. With ``interactive=True`` the server also offers
``knowledge_retire``, which asks the person through MCP elicitation before retiring anything
and refuses when the client cannot ask or the person does not say yes (it fails closed).

Both SDK lines the ``mcp`` extra accepts work: on 2.x the server is an ``MCPServer`` and the
question is asked through a resolver (a standalone request on handshake-era protocol
versions, an ``InputRequiredResult`` round on 2026-07-28 and later); on 1.x it is a
``FastMCP`` and the question is ``ctx.elicit()``.

Serve a store over stdio from a shell with ``python -m agentkernel.knowledgestore DIR``.
Nothing else in the package imports this module (it imports the SDK).
"""

# No ``from __future__ import annotations`` here: the SDK reads the retire tool's resolver
# from its annotations at registration, and the resolver is a closure.

import functools
import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field

from agentkernel.errors import missing_extra
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.tools import DESTRUCTIVE_TOOLS, READING_TOOLS, _operations

try:
    import mcp.types as _types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("mcp", "mcp", feature="The knowledge MCP server") from exc

try:
    from mcp.server.mcpserver import (
        AcceptedElicitation,
        Context,
        Elicit,
        ElicitationResult,
        MCPServer,
        Resolve,
    )
    from mcp.server.mcpserver.exceptions import ToolError

    SDK_LINE = 2
except ImportError:  # the 1.x line (an environment with crewai pins mcp<2)
    _fastmcp: Any = importlib.import_module("mcp.server.fastmcp")
    ToolError = importlib.import_module("mcp.server.fastmcp.exceptions").ToolError  # type: ignore[misc]
    SDK_LINE = 1

logger = logging.getLogger(__name__)

SERVER_NAME = "knowledge"
_CANNOT_ASK = "cannot-ask"
_INSTRUCTIONS = (
    "A curated knowledge base of typed pages addressed by id (type/slug), linked with "
    "[text](type/slug). Start at knowledge_index or knowledge_search, read only the pages a "
    "task needs, edit rather than rewrite, and log each finished operation with knowledge_log."
)
_SAID_NO = "The person said no: the page stays."
_NO_WAY_TO_ASK = (
    "Retiring a page needs the person's approval and this client can't ask them (no "
    "elicitation support): the page stays. Tell the person which page is wrong and why."
)


class RetireApproval(BaseModel):
    """The person's answer to a retire request."""

    retire: bool = Field(description="Retire this page? It stays readable but leaves the index.")


def _raising_tool_errors(operation: Callable[..., str]) -> Callable[..., str]:
    """Wrap a tool so refusals and failures become MCP tool errors (``isError``)."""

    @functools.wraps(operation)
    def tool(*args: Any, **kwargs: Any) -> str:
        try:
            return operation(*args, **kwargs)
        except KnowledgeStoreError as exc:
            raise ToolError(str(exc)) from exc
        except ToolError:
            raise
        except Exception as exc:
            logger.exception("%s failed", operation.__name__)
            raise ToolError(f"The knowledge store failed ({type(exc).__name__}: {exc}).") from exc

    # Resolved annotations: the SDK may evaluate string ones in this module's namespace.
    tool.__signature__ = inspect.signature(operation, eval_str=True)  # type: ignore[attr-defined]
    return tool


def _client_can_elicit(capabilities: Any) -> bool:
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None


def _question(title: str, page_id: str, reason: str) -> str:
    return (
        f"Retire the knowledge page '{title}' ({page_id})?\nReason: {reason}\n"
        "A retired page leaves the index and the search but is kept."
    )


def _retire(store: KnowledgeStore, page_id: str, reason: str) -> str:
    try:
        store.retire(page_id, reason)
    except KnowledgeStoreError as exc:
        raise ToolError(str(exc)) from exc
    return f"Retired {page_id}. Now fix the pages that link to it (knowledge_check)."


def _missing(page: str) -> Exception:
    return ToolError(f"There's no page {page!r}. knowledge_search finds the right one.")


_RETIRE_DOC = """Retire a page whose knowledge is wrong; the person is asked first, not by you.

        Retired, it leaves the index and the search but is kept. Then fix the pages that link
        to it (knowledge_check lists them).

        Args:
            page: The page id.
            reason: Why, in one sentence.
        """


def _retire_tool_v2(store: KnowledgeStore) -> Callable[..., Any]:
    """``knowledge_retire`` for the 2.x SDK: a resolver asks the person before the body runs."""

    async def ask_person(page: str, reason: str, ctx: Context) -> Elicit[RetireApproval] | str:
        found = store.read(page)
        if found is None or not _client_can_elicit(ctx.client_capabilities):
            return _CANNOT_ASK
        return Elicit(_question(found.title, found.id, reason), RetireApproval)

    async def knowledge_retire(
        page: str,
        reason: str,
        approval: Annotated[ElicitationResult[RetireApproval], Resolve(ask_person)],
    ) -> str:
        found = store.read(page)
        if found is None:
            raise _missing(page)
        if not isinstance(approval, AcceptedElicitation):
            return _SAID_NO
        answer: object = approval.data
        if answer == _CANNOT_ASK:
            raise ToolError(_NO_WAY_TO_ASK)
        if not isinstance(answer, RetireApproval) or not answer.retire:
            return _SAID_NO
        return _retire(store, found.id, reason)

    knowledge_retire.__doc__ = _RETIRE_DOC
    return knowledge_retire


def _retire_tool_v1(store: KnowledgeStore) -> Callable[..., Any]:
    """``knowledge_retire`` for the 1.x SDK: ``ctx.elicit()`` asks the person mid-call."""

    async def knowledge_retire(page: str, reason: str, ctx: Any) -> str:
        found = store.read(page)
        if found is None:
            raise _missing(page)
        params = getattr(ctx.session, "client_params", None)
        if not _client_can_elicit(getattr(params, "capabilities", None)):
            raise ToolError(_NO_WAY_TO_ASK)
        result = await ctx.elicit(
            message=_question(found.title, found.id, reason), schema=RetireApproval
        )
        data = getattr(result, "data", None)
        if result.action != "accept" or not isinstance(data, RetireApproval) or not data.retire:
            return _SAID_NO
        return _retire(store, found.id, reason)

    knowledge_retire.__doc__ = _RETIRE_DOC
    knowledge_retire.__annotations__["ctx"] = _fastmcp.Context
    return knowledge_retire


#: The title MCP clients may show for each tool.
TITLES: dict[str, str] = {
    "knowledge_index": "Show the catalog",
    "knowledge_search": "Search pages",
    "knowledge_read": "Read a page",
    "knowledge_create": "Create pages",
    "knowledge_edit": "Edit part of a page",
    "knowledge_rewrite": "Rewrite a page",
    "knowledge_supersede": "Supersede a page",
    "knowledge_retire": "Retire a page (asks the person)",
    "knowledge_log": "Log an operation",
    "knowledge_check": "Check the links",
}


def _retire_parameters(page: str, reason: str) -> str:
    """Stands in for ``knowledge_retire`` where only its parameters and docstring count."""
    raise NotImplementedError  # never called: it only describes the tool


_retire_parameters.__name__ = "knowledge_retire"
_retire_parameters.__doc__ = _RETIRE_DOC


def _definitions(operations: list[Callable[..., str]], interactive: bool) -> dict[str, Any]:
    """Describe the tools as the knowledge-base server describes its own.

    Descriptions come from the docstrings (``Returns:`` included), with a JSON schema giving
    each parameter's description, and the arguments model every call is checked against.
    """
    from agentkernel.mcp._tools import define_tools

    described = [*operations, _retire_parameters] if interactive else operations
    return {d.name: d for d in define_tools(described)}


def _described_server(base: type) -> type:
    """``base`` (``MCPServer`` or ``FastMCP``) listing and checking tools like the KB server.

    Both SDK lines call the server's own ``list_tools`` and ``call_tool`` from their request
    handlers, so overriding them here changes what the client sees on either line: the
    listing carries the per-parameter descriptions, and a missing, unknown or mistyped
    argument is answered ``Invalid arguments for <tool>: page is required`` (an ``isError``
    result), not with the SDK's validation dump.
    """

    class DescribedServer(base):  # type: ignore[misc, valid-type]
        definitions: dict[str, Any] = {}

        async def list_tools(self) -> Any:
            listed = await super().list_tools()
            return [self._described(tool) for tool in listed]

        def _described(self, tool: Any) -> Any:
            definition = self.definitions.get(tool.name)
            if definition is None:
                return tool
            schema_field = (
                "input_schema" if "input_schema" in type(tool).model_fields else ("inputSchema")
            )
            return tool.model_copy(update={schema_field: definition.input_schema})

        async def call_tool(self, name: str, arguments: Any, *args: Any, **kwargs: Any) -> Any:
            from agentkernel.mcp._tools import argument_problem

            definition = self.definitions.get(name)
            problem = None if definition is None else argument_problem(definition, arguments)
            if problem is not None:
                raise ToolError(problem)
            return await super().call_tool(name, arguments, *args, **kwargs)

    return DescribedServer


def _annotations(name: str) -> Any:
    # The hints follow the tools' own metadata: a reading tool writes nothing; a destructive
    # one replaces or marks what a page says (edit, rewrite, supersede, retire).
    read_only = name in READING_TOOLS
    wire = {
        "title": TITLES.get(name, name),
        "readOnlyHint": read_only,
        "destructiveHint": name in DESTRUCTIVE_TOOLS,
        "idempotentHint": read_only,
        "openWorldHint": False,
    }
    return _types.ToolAnnotations.model_validate(wire)


def create_knowledge_server(
    store: KnowledgeStore, interactive: bool = False, *, name: str = SERVER_NAME
) -> Any:
    """Build the ``knowledge`` MCP server over a store.

    Args:
        store: The knowledge store.
        interactive: A person can be asked: adds ``knowledge_retire``, which asks through MCP
            elicitation and refuses when the client cannot ask or the person declines.
        name: The server's name; keep ``knowledge`` so hosts recognise its tools.

    Returns:
        The server (an ``MCPServer`` on the 2.x SDK, a ``FastMCP`` on 1.x); ``server.run()``
        serves it over stdio.
    """
    server: Any
    if SDK_LINE >= 2:
        server = _described_server(MCPServer)(name, instructions=_INSTRUCTIONS, version="1.0.0")
    else:
        server = _described_server(_fastmcp.FastMCP)(name, instructions=_INSTRUCTIONS)
    operations = _operations(store, confirm=None)
    server.definitions = _definitions(operations, interactive)
    tools: list[Callable[..., Any]] = [_raising_tool_errors(op) for op in operations]
    if interactive:
        retire = _retire_tool_v2(store) if SDK_LINE >= 2 else _retire_tool_v1(store)
        tools.insert(-2, retire)
    for tool in tools:
        definition = server.definitions[tool.__name__]
        server.add_tool(
            tool,
            name=tool.__name__,
            title=TITLES.get(tool.__name__),
            description=definition.description,
            annotations=_annotations(tool.__name__),
            structured_output=False,
        )
    return server


def serve_knowledge_store(store: KnowledgeStore, interactive: bool = False) -> None:
    """Serve a store's ``knowledge`` MCP server over stdio until the client disconnects.

    Args:
        store: The knowledge store.
        interactive: Offer ``knowledge_retire`` (asks the person through elicitation).
    """
    # The SDK drops a message it cannot read (a lone surrogate in the arguments) without an
    # answer; the package's guarded stdio loop answers it with an error instead.
    from agentkernel.mcp import _sdk

    server = create_knowledge_server(store, interactive)
    low_level = server._lowlevel_server if SDK_LINE >= 2 else server._mcp_server
    anyio.run(_sdk.run_stdio, low_level)
