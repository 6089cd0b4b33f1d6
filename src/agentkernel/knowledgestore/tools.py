"""The ``knowledge_*`` tools: plain callables over a :class:`KnowledgeStore`.

They work on pages by id (``concept/bowline``), never on files, so the store can change
underneath without touching the tools or the prompt. Each returns a string and never raises:
a refusal comes back as the store's message, which says what to do instead (a
:class:`~agentkernel._tooling.result.ToolResult` flagged ``is_error``). Bind them with a
framework adapter, or serve them over MCP with
:func:`agentkernel.mcp.store.create_knowledge_server`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import NotRequired

from typing_extensions import TypedDict

from agentkernel._tooling.budget import (
    DEFAULT_ANSWER_CHARS,
    checked_answer_chars,
    cut_lines,
    split_offset,
    text_part,
)
from agentkernel._tooling.factory import make_tool
from agentkernel._tooling.result import ReadOn, ToolResult
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    STATUS_ACTIVE,
    STATUS_SUPERSEDED,
    FieldChanges,
    KnowledgePage,
    NewPage,
    SearchHit,
)

OVERVIEW = "overview"
"""The page name ``knowledge_read`` and ``knowledge_rewrite`` use for the overview."""

LOG = "log"
"""The page name ``knowledge_read`` uses for the operation log."""

INDEX = "index"
"""The page name ``knowledge_read`` uses for the catalog (to read on from a cut index)."""

Confirm = Callable[[str], bool]
"""Asks the person a yes/no question; ``True`` only on an explicit yes."""

_IGNORED_SHOWN = 5


class NewPageSpec(TypedDict):
    """One more page for ``knowledge_create``'s ``also``."""

    type: str
    slug: str
    title: str
    content: str
    fields: NotRequired[dict[str, str | None] | None]


def unescaped_text(text: str) -> str:
    r"""Give a body back its line breaks when a model sent them escaped.

    A model sometimes double-escapes a long markdown argument: it arrives with literal ``\n``
    sequences and no real line break, and would be stored as one line.

    Args:
        text: The argument as received.

    Returns:
        The text with ``\n`` (and ``\t``) turned into real characters when it held no real
        line break; otherwise unchanged.
    """
    if not isinstance(text, str) or "\n" in text or "\\n" not in text:
        return text
    return text.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")


def field_changes(fields: object) -> FieldChanges | None:
    """Accept field changes as a mapping, a JSON object string, or ``[{name, value}]`` pairs.

    Args:
        fields: What the model passed.

    Returns:
        The changes, or ``None``.

    Raises:
        KnowledgeStoreError: Any other shape.
    """
    if fields is None or fields == "":
        return None
    if isinstance(fields, str):
        try:
            fields = json.loads(fields)
        except json.JSONDecodeError as exc:
            raise KnowledgeStoreError(
                'fields must be an object of name to text, e.g. {"aliases": "tide range"}.'
            ) from exc
    if isinstance(fields, list) and all(isinstance(p, Mapping) and "name" in p for p in fields):
        fields = {p["name"]: p.get("value") for p in fields}
    if not isinstance(fields, Mapping):
        raise KnowledgeStoreError(
            'fields must be an object of name to text (null removes one), e.g. {"aliases": "x"}.'
        )
    return dict(fields)


def _hit_line(store: KnowledgeStore, hit: SearchHit) -> str:
    """One search result: id, title, its status when it is not current, and the snippet."""
    note = ""
    if hit.status != STATUS_ACTIVE:
        page = store.read(hit.id) if hit.status == STATUS_SUPERSEDED else None
        by = page.fields.get("superseded_by") if page is not None else None
        note = f" ({hit.status} by {by})" if by else f" ({hit.status})"
    return f"- {hit.id} — {hit.title}{note}: {hit.snippet}"


def _format_page(store: KnowledgeStore, page: str) -> str:
    if page == OVERVIEW:
        text = store.overview()
        return text or "There's no overview yet: write it with knowledge_rewrite (page 'overview')."
    if page == LOG:
        try:
            entries = store.recent_log(10)
        except NotImplementedError:
            return "This knowledge base's store can't show its log."
        return "\n\n".join(entries) if entries else "The log is empty: nothing was logged yet."
    found = store.read(page)
    if found is None:
        raise KnowledgeStoreError(
            f"There's no page {page!r}. knowledge_search or knowledge_index finds the right one."
        )
    lines = [f"id: {found.id}", f"title: {found.title}", f"status: {found.status}"]
    lines += [f"{key}: {value}" for key, value in found.fields.items() if key != "status"]
    lines.append(f"linked from: {', '.join(found.linked_from) or '(nothing)'}")
    return "\n".join([*lines, "", found.content])


def _listing_cut(text: str, budget: int | None, how: str) -> str:
    """A line-per-item answer cut to whole lines within the budget, saying what to do."""
    if budget is None or len(text) <= budget:
        return text
    kept, left = cut_lines(text, budget - 400)
    note = f"[cut] {left} more line(s) did not fit the {budget:,}-character answer budget: {how}."
    return ToolResult(f"{kept}\n{note}", read_on=ReadOn(note))


def _operations(
    store: KnowledgeStore,
    *,
    confirm: Confirm | None = None,
    answer_chars: int | None = DEFAULT_ANSWER_CHARS,
) -> list[Callable[..., str]]:
    """Build the tools: written in their raising form, made by :func:`answering` never to raise.

    Each says where it is made whether it only reads and whether it is destructive.

    Args:
        store: The store.
        confirm: When given, ``knowledge_retire`` is included and asks through it.
        answer_chars: The most characters of one answer; ``None`` for no budget.

    Returns:
        The tool callables, in the order they are offered.
    """
    types = store.types()
    type_list = "; ".join(f"{t.name} ({t.description})" if t.description else t.name for t in types)

    def catalog_text() -> str:
        catalog = store.index()
        ignored = store.ignored_files()
        if not ignored:
            return catalog or "The knowledge base is empty."
        shown = ", ".join(ignored[:_IGNORED_SHOWN]) + (
            ", ..." if len(ignored) > _IGNORED_SHOWN else ""
        )
        note = (
            f"Not served here: {len(ignored)} markdown file(s) beside the knowledge base are "
            f"not its pages ({shown}). They are left untouched; an OKF bundle is read with "
            "agentkernel-kb serve or the *_kb tools."
        )
        return f"{catalog}\n{note}" if catalog else f"The knowledge base has no pages. {note}"

    def knowledge_index() -> str:
        """Show the knowledge base's catalog: every page, one line each, by section.

        Each line gives the title, the id and what the page is. Start here, then read only
        the pages the task needs. A long catalog is cut; its last line says how to read on.
        """
        return text_part(INDEX, catalog_text(), 0, answer_chars, _READ_ON)

    def knowledge_search(query: str, limit: int = 10) -> str:
        """Find pages by words in their titles, aliases and content, best first.

        Search before creating a page, so as not to duplicate one under another name. A
        superseded page is still found, marked as such, below current pages that match as well.

        Args:
            query: Words or a question (case, accents and word endings don't matter).
            limit: How many pages at most (1 to 50).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
            raise KnowledgeStoreError("limit must be a whole number from 1 to 50.")
        if isinstance(query, str) and not query.strip():
            raise KnowledgeStoreError("Give some words to search for, e.g. 'spring tides'.")
        hits = store.search(query, limit)
        if not hits:
            return "No page matches."
        found = "\n".join(_hit_line(store, hit) for hit in hits)
        return _listing_cut(
            found, answer_chars, "ask for fewer (a lower limit) or more precise words"
        )

    def knowledge_read(page: str) -> str:
        """Read a page: its fields, its content (links to other pages as ids) and what links to it.

        A long page is cut; its last line says how to read on (a page id followed by
        "#offset=N" reads it from character N).

        Args:
            page: A page id such as "concept/bowline"; or "overview" (the living synthesis of the
                whole knowledge base); or "log" (the latest log entries, newest first).
        """
        if not isinstance(page, str):
            return _format_page(store, page)
        name, offset = split_offset(page.strip())
        text = catalog_text() if name == INDEX else _format_page(store, name)
        return text_part(name, text, offset, answer_chars, _READ_ON)

    def knowledge_create(
        type: str,
        slug: str,
        title: str,
        content: str = "",
        fields: dict[str, str | None] | None = None,
        also: list[NewPageSpec] | None = None,
    ) -> str:
        page_type = next((t for t in types if t.name == type), None)
        if page_type is None:
            names = ", ".join(t.name for t in types)
            raise KnowledgeStoreError(f"{type!r} isn't a page type here. The types are: {names}.")
        if not content:
            return (
                f"Template for a {page_type.name} page ({page_type.description}):\n\n"
                f"{page_type.template}\n\nFill it in and call knowledge_create again with content."
            )
        pages = [NewPage(type, slug, title, unescaped_text(content), field_changes(fields))]
        for extra in also or []:
            if not isinstance(extra, Mapping):
                raise KnowledgeStoreError("Each page in 'also' is an object: type, slug, title...")
            pages.append(
                NewPage(
                    str(extra.get("type", "")),
                    str(extra.get("slug", "")),
                    str(extra.get("title", "")),
                    unescaped_text(str(extra.get("content", ""))),
                    field_changes(extra.get("fields")),
                )
            )
        return f"Created {', '.join(store.create_many(pages))}."

    knowledge_create.__doc__ = f"""Create a page, or several linking to each other (all or none).

        Types: {type_list}.
        Without content, returns the type's template: fill it and call again. Links to other
        pages are ids, [Bowline](concept/bowline), and must exist or be created in the same
        call (also). The index is kept for you.

        Args:
            type: The page type: {", ".join(t.name for t in types)}.
            slug: Lowercase words joined by hyphens, e.g. "spring-tides".
            title: The page's title.
            content: The page's markdown body, following the type's template.
            fields: Frontmatter fields to set (null removes one), e.g. {{"aliases": "tide range"}};
                a summary's "ingested" is set for you.
            also: More pages to create in the same call (type, slug, title, content, fields),
                which may link to each other and to this one.
        """

    def knowledge_edit(
        page: str, old_text: str, new_text: str, fields: dict[str, str | None] | None = None
    ) -> str:
        """Change one fragment of a page: old_text becomes new_text. Prefer it to a rewrite.

        Args:
            page: The page id.
            old_text: Text exactly as knowledge_read returned it, found once in the page.
            new_text: Its replacement (links as ids, to pages that exist).
            fields: Frontmatter fields to set (null removes one).
        """
        store.edit(page, unescaped_text(old_text), unescaped_text(new_text), field_changes(fields))
        return f"Edited {page}."

    def knowledge_rewrite(
        page: str, content: str, fields: dict[str, str | None] | None = None
    ) -> str:
        """Replace a page's whole content, keeping its id and the links to it.

        For a page redone from a better source, or the overview. For small changes use
        knowledge_edit.

        Args:
            page: The page id, or "overview".
            content: The new markdown body (links as ids, to pages that exist).
            fields: Frontmatter fields to set (null removes one); not for the overview.
        """
        if page == OVERVIEW:
            store.write_overview(unescaped_text(content))
            return "Rewrote the overview."
        store.rewrite(page, unescaped_text(content), field_changes(fields))
        return f"Rewrote {page}."

    def knowledge_supersede(page: str, by: str, reason: str | None = None) -> str:
        """Mark a page superseded by another; it stays, with a notice pointing to the new one.

        Pages are never deleted or renamed.

        Args:
            page: The outdated page's id.
            by: The id of the page that replaces it.
            reason: Why, in one sentence.
        """
        store.supersede(page, by, reason)
        return (
            f"{page} is now superseded by {by}. Repoint the links that should go to the new page."
        )

    def knowledge_retire(page: str, reason: str) -> str:
        """Retire a page whose knowledge is wrong; the person is asked first, not by you.

        Retired, it leaves the index and the search but is kept. Then fix the pages that link
        to it (knowledge_check lists them).

        Args:
            page: The page id.
            reason: Why, in one sentence.
        """
        found = page_to_retire(store, page)
        assert confirm is not None
        return retire_answered(store, found, reason, confirm(retire_question(found, reason)))

    def knowledge_log(operation: str, what: str, pages: list[str] | None = None) -> str:
        """Add an entry to the knowledge base's log, dated today, once an operation is done.

        Args:
            operation: "ingest", "query", "lint" or "update".
            what: What was done, in one line.
            pages: The ids of the pages created or changed.
        """
        store.log(operation, what, pages or [])
        return "Logged."

    def knowledge_check() -> str:
        """List the mechanical problems: broken links, orphans and links to retired pages.

        Fix what is mechanical; report what needs the person.
        """
        report = json.dumps(store.check().to_dict(), indent=2)
        return _listing_cut(report, answer_chars, "fix the problems shown, then check again")

    # each tool says what it may do where it is made: the reading ones change nothing, however
    # often they are called; edit, rewrite, supersede and retire replace or mark what a page
    # says; create and log only add
    tools = [
        answering(knowledge_index, read_only=True),
        answering(knowledge_search, read_only=True),
        answering(knowledge_read, read_only=True),
        answering(knowledge_create, read_only=False),
        answering(knowledge_edit, read_only=False, destructive=True),
        answering(knowledge_rewrite, read_only=False, destructive=True),
        answering(knowledge_supersede, read_only=False, destructive=True),
    ]
    if confirm is not None:
        tools.append(answering(knowledge_retire, read_only=False, destructive=True))
    tools += [answering(knowledge_log, read_only=False), answering(knowledge_check, read_only=True)]
    return tools


def page_to_retire(store: KnowledgeStore, page: str) -> KnowledgePage:
    """The page ``knowledge_retire`` names.

    Args:
        store: The store.
        page: The page id as the model gave it.

    Returns:
        The page.

    Raises:
        KnowledgeStoreError: There is no such page.
    """
    found = store.read(page)
    if found is None:
        raise KnowledgeStoreError(
            f"There's no page {page!r}. knowledge_search finds the right one."
        )
    return found


def retire_question(page: KnowledgePage, reason: str) -> str:
    """What ``knowledge_retire`` asks the person.

    Args:
        page: The page to retire.
        reason: The model's reason.

    Returns:
        A yes/no question.
    """
    return f"Retire the page '{page.title}' ({page.id})? Reason: {reason}"


def retire_answered(
    store: KnowledgeStore, page: KnowledgePage, reason: str, approved: bool | None
) -> str:
    """Retire a page once the person answered; refuse when they could not be asked.

    Args:
        store: The store.
        page: The page.
        reason: Why, in one sentence.
        approved: True on the person's explicit yes, false on anything else, ``None`` when
            there was no way to ask them.

    Returns:
        What happened.

    Raises:
        KnowledgeStoreError: There was no way to ask (the page stays), or the store refused.
    """
    if approved is None:
        raise KnowledgeStoreError(_NO_WAY_TO_ASK)
    if not approved:
        return "The person said no: the page stays."
    store.retire(page.id, reason)
    return f"Retired {page.id}. Now fix the pages that link to it (knowledge_check)."


_READ_ON = 'knowledge_read(page="{ref}")'

_NO_WAY_TO_ASK = (
    "Retiring a page needs the person's approval and this client can't ask them (no "
    "elicitation support): the page stays. Tell the person which page is wrong and why."
)


def _store_failure(exc: Exception) -> str:
    return f"The knowledge store failed ({type(exc).__name__}: {exc}). Try again later."


def answering(
    operation: Callable[..., str], *, read_only: bool, destructive: bool = False
) -> Callable[..., str]:
    """Make a tool that never raises: a refusal or a failure comes back as an error result.

    Args:
        operation: A tool in its raising form (refusals raise ``KnowledgeStoreError``).
        read_only: The tool changes nothing (:func:`~agentkernel._tooling.factory.reads_only`
            tells it, and MCP's ``readOnlyHint`` follows it).
        destructive: The tool replaces or marks what a page says (MCP's ``destructiveHint``).

    Returns:
        The tool (:func:`agentkernel._tooling.factory.make_tool`), returning a
        :class:`~agentkernel._tooling.result.ToolResult` whose ``is_error`` says whether the
        call was refused or failed.
    """
    return make_tool(
        operation,
        read_only=read_only,
        destructive=destructive,
        refusals=(KnowledgeStoreError,),
        failure=_store_failure,
    )


def create_knowledge_tools(
    store: KnowledgeStore,
    interactive: bool = False,
    *,
    confirm: Confirm | None = None,
    answer_chars: int | None = DEFAULT_ANSWER_CHARS,
) -> list[Callable[..., str]]:
    """Build the ``knowledge_*`` tools over a store, as plain callables that never raise.

    Args:
        store: The knowledge store.
        interactive: A person can be asked: adds ``knowledge_retire``, which asks first.
        confirm: How to ask the person (a yes/no question, ``True`` only on a clear yes);
            required when ``interactive`` is true.
        answer_chars: The most characters of one answer (at least 2,000; default 20,000): a
            long page, catalog or listing is cut with a note saying how to read on. ``None``
            for no budget.

    Returns:
        ``knowledge_index``, ``knowledge_search``, ``knowledge_read``, ``knowledge_create``,
        ``knowledge_edit``, ``knowledge_rewrite``, ``knowledge_supersede``, then
        ``knowledge_retire`` when interactive, then ``knowledge_log`` and ``knowledge_check``.

    Raises:
        ValueError: ``interactive`` without ``confirm``: there would be nobody to ask, or a
            budget below 2,000 characters.
    """
    budget = checked_answer_chars(answer_chars)
    if interactive and confirm is None:
        raise ValueError(
            "interactive=True needs confirm=, a callable that asks the person a yes/no question"
        )
    asking = confirm if interactive else None
    return _operations(store, confirm=asking, answer_chars=budget)
