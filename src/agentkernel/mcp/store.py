"""The ``knowledge`` MCP server: a knowledge store's ``knowledge_*`` tools.

Name the server ``knowledge`` so hosts recognise its tools. It is a
:class:`~agentkernel.mcp.server.KnowledgeServer`, like a builder's: the same titles,
annotations, per-parameter descriptions, argument checks and ``isError`` results (from the
tools' own flag). With ``interactive=True`` it also offers ``knowledge_retire``, which asks
the person through MCP elicitation before retiring anything and refuses when the client
cannot ask or the person does not say yes (it fails closed).

Serve a store over stdio from a shell with ``python -m agentkernel.knowledgestore DIR`` or
``agentkernel-kb store serve DIR``.
"""

# No ``from __future__ import annotations`` here: the 2.x SDK reads the retire tool's
# resolver from its annotations at registration, and the resolver is a closure.

import logging
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field

from agentkernel._tooling.factory import reads_only
from agentkernel._tooling.result import is_error
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.tools import (
    answering,
    create_knowledge_tools,
    page_to_retire,
    retire_answered,
    retire_question,
)
from agentkernel.mcp import _sdk
from agentkernel.mcp._tools import tool_annotations
from agentkernel.mcp.server import KnowledgeServer

logger = logging.getLogger(__name__)

__all__ = ["SERVER_NAME", "create_knowledge_server", "retire_tools", "serve_knowledge_store"]

SERVER_NAME = "knowledge"
_CANNOT_ASK = "cannot-ask"
_INSTRUCTIONS = (
    "A curated knowledge base of typed pages addressed by id (type/slug), linked with "
    "[text](type/slug). Start at knowledge_index or knowledge_search, read only the pages a "
    "task needs, edit rather than rewrite, and log each finished operation with knowledge_log."
)

_READ_ONLY_INSTRUCTIONS = (
    "A curated knowledge base of typed pages addressed by id (type/slug), served read-only. "
    "Start at knowledge_index or knowledge_search and read only the pages a task needs."
)


class RetireApproval(BaseModel):
    """The person's answer to a retire request."""

    retire: bool = Field(description="Retire this page? It stays readable but leaves the index.")


def _retire_with(store: KnowledgeStore) -> Callable[[str, str, Any], Any]:
    """Retire ``page`` given the person's answer, as the SDK's ``CallToolResult``."""
    retire = answering(
        lambda page, reason, approved: _retire(store, page, reason, approved),
        read_only=False,
        destructive=True,
    )

    def answered(page: str, reason: str, approved: Any) -> Any:
        result = retire(page, reason, approved)
        return _sdk.tool_result(result, is_error(result))

    return answered


def _retire(store: KnowledgeStore, page: str, reason: str, approved: bool | None) -> str:
    return retire_answered(store, page_to_retire(store, page), reason, approved)


def _retire_tool_v2(store: KnowledgeStore) -> Callable[..., Any]:
    """``knowledge_retire`` for the 2.x SDK: a resolver asks the person before the body runs."""
    answered = _retire_with(store)

    async def ask_person(
        page: str, reason: str, ctx: _sdk.HighLevelContext
    ) -> _sdk.Elicit[RetireApproval] | str:
        found = store.read(page)
        if found is None or not _sdk.client_can_elicit(ctx.client_capabilities):
            return _CANNOT_ASK
        return _sdk.Elicit(retire_question(found, reason), RetireApproval)

    async def knowledge_retire(
        page: str,
        reason: str,
        approval: Annotated[_sdk.ElicitationResult[RetireApproval], _sdk.Resolve(ask_person)],
    ) -> Any:
        answer: object = approval.data if isinstance(approval, _sdk.AcceptedElicitation) else None
        approved = (
            None if answer == _CANNOT_ASK else isinstance(answer, RetireApproval) and answer.retire
        )
        return answered(page, reason, approved)

    return knowledge_retire


def _retire_tool_v1(store: KnowledgeStore) -> Callable[..., Any]:
    """``knowledge_retire`` for the 1.x SDK: ``ctx.elicit()`` asks the person mid-call."""
    answered = _retire_with(store)

    async def knowledge_retire(page: str, reason: str, ctx: Any) -> Any:
        found = store.read(page)
        params = getattr(ctx.session, "client_params", None)
        approved: bool | None = None
        if found is not None and _sdk.client_can_elicit(getattr(params, "capabilities", None)):
            result = await ctx.elicit(message=retire_question(found, reason), schema=RetireApproval)
            data = getattr(result, "data", None)
            approved = (
                result.action == "accept" and isinstance(data, RetireApproval) and data.retire
            )
        return answered(page, reason, approved)

    knowledge_retire.__annotations__["ctx"] = _sdk.HighLevelContext
    return knowledge_retire


def _never_asked(question: str) -> bool:
    """How the plain ``knowledge_retire`` would ask; it declines, and is never reached.

    The server answers every ``knowledge_retire`` call with the SDK's asking version.
    """
    return False


def retire_tools(store: KnowledgeStore) -> tuple[Callable[..., str], Callable[..., Any]]:
    """``knowledge_retire`` as a server lists it, and the version that asks the person.

    A server lists the first (its description and schema) and answers every call with the
    second (:class:`KnowledgeServer`'s ``asking``), which refuses when the client cannot ask
    or the person does not say yes.

    Args:
        store: The knowledge store.

    Returns:
        ``(listed, asking)``.
    """
    listed = next(
        tool
        for tool in create_knowledge_tools(store, True, confirm=_never_asked)
        if tool.__name__ == "knowledge_retire"
    )
    asking = _retire_tool_v2(store) if _sdk.SDK_LINE >= 2 else _retire_tool_v1(store)
    return listed, asking


def create_knowledge_server(
    store: KnowledgeStore,
    interactive: bool = False,
    *,
    name: str = SERVER_NAME,
    writable: bool = True,
    **options: Any,
) -> KnowledgeServer:
    """Build the ``knowledge`` MCP server over a store.

    Args:
        store: The knowledge store.
        interactive: A person can be asked: adds ``knowledge_retire``, which asks through MCP
            elicitation and refuses when the client cannot ask or the person declines.
        name: The server's name; keep ``knowledge`` so hosts recognise its tools.
        writable: Offer the tools that change pages; when false only the reading tools
            (index, search, read, check) are served (``knowledge_retire`` included: none).
        **options: Passed to :class:`KnowledgeServer` (``identity``, ``audit``,
            ``max_calls``, ``limiter``).

    Returns:
        The server; ``run_stdio()`` serves it over stdio, ``run_http(host, port)`` over
        streamable HTTP.
    """
    interactive = interactive and writable
    tools = create_knowledge_tools(
        store, interactive, confirm=_never_asked if interactive else None
    )
    if not writable:
        tools = [tool for tool in tools if reads_only(tool)]
    asking = [retire_tools(store)[1]] if interactive else []
    return KnowledgeServer(
        tools,
        name=name,
        annotate=tool_annotations,
        instructions=_INSTRUCTIONS if writable else _READ_ONLY_INSTRUCTIONS,
        asking=asking,
        **options,
    )


def serve_knowledge_store(store: KnowledgeStore, interactive: bool = False) -> None:
    """Serve a store's ``knowledge`` MCP server over stdio until the client disconnects.

    Args:
        store: The knowledge store.
        interactive: Offer ``knowledge_retire`` (asks the person through elicitation).
    """
    anyio.run(create_knowledge_server(store, interactive).serve_stdio)
