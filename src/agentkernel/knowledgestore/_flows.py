"""The change flows every store shares: finding a page, edit, rewrite, supersede and retire.

Each flow takes a page as its backend keeps it (a
:class:`~agentkernel.knowledgestore.pagebackend.PageRecord`: content with links as ids) and returns
the values to store, raising :class:`KnowledgeStoreError` on the first problem, before the
store writes anything. Stores keep only how pages are read and written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from agentkernel.knowledgestore import _pages
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import STATUS_RETIRED, STATUS_SUPERSEDED, FieldChanges
from agentkernel.knowledgestore.pagebackend import PageRecord

_T = TypeVar("_T")


@dataclass(frozen=True)
class Changed:
    """A page's values after a change, content with links as ids."""

    title: str
    fields: dict[str, str]
    content: str


def require_page(
    registry: _pages.TypeRegistry, page_id: str, lookup: Callable[[str], _T | None]
) -> _T:
    """Return the page ``page_id`` names, or refuse.

    Args:
        registry: The store's page types (an id of an unknown type is refused).
        page_id: ``type/slug``.
        lookup: The store's page for a stripped id, ``None`` when there is none.

    Returns:
        What ``lookup`` found.

    Raises:
        KnowledgeStoreError: Not an id, an unknown type, or no such page.
    """
    registry.require_id(page_id)
    page = lookup(page_id.strip())
    if page is None:
        raise KnowledgeStoreError(
            f"There's no page {page_id!r}. knowledge_search or knowledge_index finds the right one."
        )
    return page


def edited(
    page: PageRecord,
    old_text: str,
    new_text: str,
    changes: FieldChanges | None,
    exists: Callable[[str], bool],
    file_links: _pages.FileLinks | None = None,
) -> Changed:
    """Replace the one occurrence of ``old_text`` in a page's content.

    Args:
        page: The page.
        old_text: Text to replace; must occur exactly once.
        new_text: Its replacement; its links must resolve.
        changes: Field changes.
        exists: Whether a page id exists in the store.
        file_links: The store's judgement of ``.md`` links written to this page.

    Returns:
        The page's new values.

    Raises:
        KnowledgeStoreError: Zero or several matches, a link to nowhere, or a bad field.
    """
    content = _pages.replace_once(page.id, page.content, old_text, new_text)
    _pages.require_links_resolve(new_text, exists, self_id=page.id, file_links=file_links)
    title, changed = _pages.apply_field_changes(page.title, page.fields, changes)
    return Changed(title, changed, _pages.normalize_content(content))


def rewritten(
    page: PageRecord,
    content: str,
    changes: FieldChanges | None,
    exists: Callable[[str], bool],
    file_links: _pages.FileLinks | None = None,
) -> Changed:
    """Replace a page's whole content, keeping its notice; a summary's ``ingested`` is reset.

    Args:
        page: The page.
        content: The new body; its links must resolve.
        changes: Field changes.
        exists: Whether a page id exists in the store.
        file_links: The store's judgement of ``.md`` links written to this page.

    Returns:
        The page's new values.

    Raises:
        KnowledgeStoreError: A link to nowhere, or a bad field.
    """
    content = _pages.normalize_content(content)
    _pages.require_links_resolve(content, exists, self_id=page.id, file_links=file_links)
    notice = _pages.leading_notice(page.content)
    if notice and not content.startswith("> "):
        content = _pages.with_notice(content, notice)
    title, changed = _pages.apply_field_changes(page.title, page.fields, changes)
    if page.type == "summary":
        changed["ingested"] = _pages.utc_stamp()
    return Changed(title, changed, content)


def superseded(page: PageRecord, by: PageRecord, reason: str | None) -> Changed:
    """Mark a page superseded by another, with a notice at its top.

    Args:
        page: The outdated page.
        by: The page that replaces it.
        reason: Why, optionally.

    Returns:
        The page's new values.

    Raises:
        KnowledgeStoreError: The same page, or a retired page on either side.
    """
    _pages.check_supersede(page.id, page.fields, by.id, by.fields)
    notice = _pages.superseded_notice(by.id, by.title, reason)
    _, changed = _pages.apply_field_changes(page.title, page.fields, None)
    changed.update(status=STATUS_SUPERSEDED, superseded_by=by.id)
    changed["superseded"] = _pages.utc_today()
    if reason and reason.strip():
        changed["superseded_reason"] = " ".join(reason.split())
    return Changed(page.title, changed, _pages.with_notice(page.content, notice))


def retired(page: PageRecord, why: str) -> Changed:
    """Retire a page, with a notice at its top.

    Args:
        page: The page.
        why: The reason, as :func:`_pages.require_reason` returned it.

    Returns:
        The page's new values.

    Raises:
        KnowledgeStoreError: The page is retired already.
    """
    if _pages.status_of(page.fields) == STATUS_RETIRED:
        raise KnowledgeStoreError(f"{page.id!r} is retired already.")
    _, changed = _pages.apply_field_changes(page.title, page.fields, None)
    changed.update(status=STATUS_RETIRED, retired=_pages.utc_today(), retired_reason=why)
    notice = _pages.retired_notice(why)
    return Changed(page.title, changed, _pages.with_notice(page.content, notice))
