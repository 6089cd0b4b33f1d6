"""Rules every store shares: validation, fields, notices, the index, the check, the log.

Stores differ in where pages live; what a page may contain and how it is described does not.
Keeping these rules here is what lets the conformance suite hold every store to one behaviour.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from agentkernel.bundle import links
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    BUILT_IN_PAGE_TYPES,
    STATUS_ACTIVE,
    STATUS_RETIRED,
    FieldChanges,
    NewPage,
    PageType,
    is_slug,
    is_type_name,
    linked_ids,
    parse_id,
)
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, oversized

RESERVED_ROOT_SLUGS = frozenset({"index", "log", "overview"})
"""Names a page at the knowledge folder's root cannot take: the store's own files."""

RESERVED_SLUGS = frozenset({"index", "log"})
"""Names no page can take: OKF reads ``index.md`` and ``log.md`` in any folder as listings."""

MAX_SLUG_LENGTH = 160
"""The longest slug: its file name, and the temporary name it is written under, stay well
within the 255 bytes a file name may have."""

LIFECYCLE_FIELDS = frozenset(
    {"status", "superseded_by", "superseded", "superseded_reason", "retired", "retired_reason"}
)
"""Fields only ``supersede`` and ``retire`` set."""

STORE_FIELDS = frozenset({"type", "ingested", "updated"})
"""Fields the store sets itself; a caller's values for them are ignored."""

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_NOTICE = re.compile(r"\A> (?:Superseded|Retired) on [^\n]*\n(?:\n)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_NUMBERED = re.compile(r"^\d+[.)]\s")


def utc_today() -> str:
    """Return today's date in UTC, ``YYYY-MM-DD``."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def utc_stamp() -> str:
    """Return the current instant in UTC, ISO 8601 to the second (``2026-05-22T10:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TypeRegistry:
    """The page types a store holds: the built-ins, overridden or extended by declared ones."""

    def __init__(self, page_types: Sequence[PageType] | None = None) -> None:
        """Merge the declared types into the built-ins and validate them.

        Args:
            page_types: Declared types; one named like a built-in replaces it.

        Raises:
            KnowledgeStoreError: A type has an invalid name or directory, or two types share a
                directory other than the root.
        """
        declared = list(page_types or ())
        names = {t.name for t in declared}
        merged = [t for t in BUILT_IN_PAGE_TYPES if t.name not in names] + declared
        dirs: dict[str, str] = {}
        self._by_name: dict[str, PageType] = {}
        for page_type in merged:
            if not is_type_name(page_type.name):
                raise KnowledgeStoreError(
                    f"Page type name {page_type.name!r} is invalid: lowercase letters, digits and "
                    "hyphens, starting with a letter."
                )
            if page_type.name in self._by_name:
                raise KnowledgeStoreError(f"Page type {page_type.name!r} is declared twice.")
            folder = page_type.dir
            parts = folder.split("/") if folder else []
            if folder.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise KnowledgeStoreError(
                    f"Page type {page_type.name!r} has directory {folder!r}: give a plain relative "
                    "folder such as 'concepts', or '' for the root."
                )
            if folder and folder in dirs:
                raise KnowledgeStoreError(
                    f"Page types {dirs[folder]!r} and {page_type.name!r} share directory "
                    f"{folder!r}."
                )
            dirs[folder] = page_type.name
            self._by_name[page_type.name] = page_type
        self.types: tuple[PageType, ...] = tuple(merged)

    def get(self, name: str) -> PageType | None:
        """Return the type called ``name``, or ``None``."""
        return self._by_name.get(name)

    def names(self) -> list[str]:
        """Return every type's name, in declaration order."""
        return [t.name for t in self.types]

    def require(self, name: str) -> PageType:
        """Return the type called ``name``.

        Args:
            name: A type name.

        Returns:
            The type.

        Raises:
            KnowledgeStoreError: No such type; the message lists the known ones.
        """
        page_type = self._by_name.get(name)
        if page_type is None:
            raise KnowledgeStoreError(
                f"{name!r} isn't a page type here. The types are: {', '.join(self.names())}."
            )
        return page_type

    def require_id(self, page_id: str) -> tuple[PageType, str]:
        """Split and check a page id.

        Args:
            page_id: ``type/slug``.

        Returns:
            ``(page_type, slug)``.

        Raises:
            KnowledgeStoreError: Not an id, or an unknown type.
        """
        parsed = parse_id(page_id)
        if parsed is None or parsed[0] not in self._by_name:
            raise KnowledgeStoreError(
                f"{page_id!r} isn't a page id: ids are <type>/<slug>, with a type among "
                f"{', '.join(self.names())} (e.g. 'concept/spring-tides')."
            )
        return self._by_name[parsed[0]], parsed[1]


def normalize_content(content: str) -> str:
    """Drop leading blank lines and trailing whitespace, as every store keeps a body.

    Args:
        content: A markdown body.

    Returns:
        The body as it will be stored and read back.

    Raises:
        KnowledgeStoreError: ``content`` is not a string.
    """
    if not isinstance(content, str):
        raise KnowledgeStoreError(f"A page's content must be text, got {type(content).__name__}.")
    return re.sub(r"\A(?:[ \t]*\n)+", "", content).rstrip()


def require_title(title: object) -> str:
    """Check a title and return it stripped.

    Args:
        title: The candidate title.

    Returns:
        The title without surrounding whitespace, on one line.

    Raises:
        KnowledgeStoreError: Not a non-empty string.
    """
    if not isinstance(title, str) or not title.strip():
        raise KnowledgeStoreError("A page needs a title: a non-empty line of text.")
    return " ".join(title.split())


def _field_value(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise KnowledgeStoreError(
        f"Field {key!r} must be text (or null to remove it), got {type(value).__name__}."
    )


def apply_field_changes(
    title: str, fields: Mapping[str, str], changes: FieldChanges | None
) -> tuple[str, dict[str, str]]:
    """Apply a caller's field changes and stamp ``updated``.

    ``type``, ``ingested`` and ``updated`` are the store's and are ignored; the lifecycle
    fields (``status``, ``superseded_by``, ...) are refused: ``supersede`` and ``retire`` set them.

    Args:
        title: The page's current title; a ``title`` change replaces it.
        fields: The page's current fields (besides type and title).
        changes: A string sets a field, ``None`` removes it.

    Returns:
        ``(title, fields)`` after the changes.

    Raises:
        KnowledgeStoreError: A field name is invalid, a lifecycle field is given, a value is
            not text, or the title would be removed.
    """
    result = dict(fields)
    if changes is not None and not isinstance(changes, Mapping):
        raise KnowledgeStoreError(
            'Fields are a mapping of name to text (null removes one), e.g. {"aliases": "x, y"}.'
        )
    for key, value in (changes or {}).items():
        if not isinstance(key, str) or not _FIELD_NAME.match(key):
            raise KnowledgeStoreError(
                f"Field name {key!r} is invalid: letters, digits, '_' and '-', starting with "
                "a letter."
            )
        if key in STORE_FIELDS:
            continue
        if key in LIFECYCLE_FIELDS:
            raise KnowledgeStoreError(
                f"Field {key!r} is set by the store: use knowledge_supersede or knowledge_retire."
            )
        if key == "title":
            if value is None:
                raise KnowledgeStoreError("A page's title can be changed but not removed.")
            title = require_title(value)
        elif value is None:
            result.pop(key, None)
        else:
            result[key] = _field_value(key, value)
    result["updated"] = utc_today()
    return title, result


def status_of(fields: Mapping[str, str]) -> str:
    """Return a page's status: ``active`` unless its fields say otherwise."""
    return fields.get("status") or STATUS_ACTIVE


def description_of(fields: Mapping[str, str], content: str) -> str:
    """Describe a page in one line: its ``description`` field, or its first sentence.

    Args:
        fields: The page's fields.
        content: Its body.

    Returns:
        At most 140 characters.
    """
    given = fields.get("description", "").strip()
    if given:
        return " ".join(given.split())
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line[0] in "#>-*<|`+" or _NUMBERED.match(line):
            continue
        sentence = _SENTENCE_END.split(links.strip_links(line), maxsplit=1)[0]
        return sentence if len(sentence) <= 140 else f"{sentence[:139]}…"
    return ""


def with_notice(content: str, notice: str) -> str:
    """Put ``notice`` at the top of a page, as a quote, replacing an earlier notice.

    Args:
        content: The page's body.
        notice: One line.

    Returns:
        The body with the notice.
    """
    return f"> {notice}\n\n{_NOTICE.sub('', content, count=1)}".rstrip()


def superseded_notice(by_id: str, by_title: str, reason: str | None) -> str:
    """Word the notice of a superseded page.

    Args:
        by_id: The replacement's id.
        by_title: The replacement's title.
        reason: Why, if given.

    Returns:
        One line, linking the replacement.
    """
    why = f" ({' '.join(reason.split())})" if reason and reason.strip() else ""
    return f"Superseded on {utc_today()}{why}: see [{links.escape_link_text(by_title)}]({by_id})."


def retired_notice(reason: str) -> str:
    """Word the notice of a retired page.

    Args:
        reason: Why it was retired.

    Returns:
        One line.
    """
    return f"Retired on {utc_today()}: {' '.join(reason.split()).rstrip('.')}. Don't rely on it."


def require_reason(reason: object) -> str:
    """Check the reason given for retiring a page.

    Args:
        reason: The candidate reason.

    Returns:
        The reason on one line.

    Raises:
        KnowledgeStoreError: No reason given.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise KnowledgeStoreError("Say why the page is retired, in one sentence.")
    return " ".join(reason.split())


FileLinks = Callable[[str], Sequence[tuple[str, "str | None"]]]
"""Judges the ``.md`` file links of content about to be written to one page: each link as
written with the id of the page it names, or ``None`` when it leads to no page (see
``_bundle.file_link_pages``)."""


def require_links_resolve(
    content: str,
    exists: Callable[[str], bool],
    *,
    self_id: str | None = None,
    also: Iterable[str] = (),
    file_links: FileLinks | None = None,
) -> None:
    """Refuse content that links to pages that do not exist, by id or by relative file path.

    A relative (or bundle-absolute) ``.md`` link is held to the rule of an id link: it must
    name a page that exists (or itself, or one created in the same call), or an existing
    listing file; exactly the links ``check()`` would not report as broken are accepted.

    Args:
        content: Markdown with links as ids (file links, if any, as written).
        exists: Whether a page id exists in the store.
        self_id: The page's own id (a link to itself is fine).
        also: Ids being created in the same call.
        file_links: The store's judgement of the content's ``.md`` links (every built-in
            store gives one); ``None``: they are not judged.

    Raises:
        KnowledgeStoreError: Naming every missing target and how to fix it.
    """
    pending = set(also)

    def missing(target: str) -> bool:
        return target != self_id and target not in pending and not exists(target)

    ids = [target for target in linked_ids(content) if missing(target)]
    judged = file_links(content) if file_links is not None else ()
    files = [written for written, page in judged if page is None or missing(page)]
    if ids or files:
        raise KnowledgeStoreError(
            f"These links point to pages that don't exist: {', '.join([*ids, *files])}. Create "
            "those pages first (or in the same call), or link existing ones (knowledge_search "
            "finds them)." + (" Link a page by its id: [text](type/slug)." if files else "")
        )


def surely_within_bound(*texts: str) -> bool:
    """Whether a page made of ``texts`` is within the size bound, without rendering it.

    A character takes at most 4 bytes in UTF-8 and at most 10 once escaped in YAML; 4 KiB
    leaves room for the frontmatter's keys and markers. Only a page near the bound is rendered
    to be measured exactly.

    Args:
        texts: The page's title, body, field names and values.

    Returns:
        True when even that worst case stays within :data:`MAX_DOCUMENT_BYTES`.
    """
    return sum(map(len, texts)) * 10 + 4096 <= MAX_DOCUMENT_BYTES


def require_page_size(where: str, size: int) -> None:
    """Refuse a write that would make a page (or the overview) larger than the size bound.

    The bound is the one every store's read holds (:data:`MAX_DOCUMENT_BYTES`): a page
    written larger could not be read back, here or by an OKF reader of the bundle.

    Args:
        where: The page, for the message (``'concept/tides'``, ``The overview``).
        size: The bytes the page would take as a markdown file.

    Raises:
        KnowledgeStoreError: It is over the bound; nothing was written.
    """
    if size > MAX_DOCUMENT_BYTES:
        raise KnowledgeStoreError(
            f"{where} would be {oversized(size, MAX_DOCUMENT_BYTES)}. Nothing was written. "
            "Split it into smaller pages that link to each other, or leave out what an agent "
            "doesn't need to read."
        )


@dataclass(frozen=True)
class ValidPage:
    """A new page that passed validation, ready to be written."""

    page_type: PageType
    id: str
    slug: str
    title: str
    content: str
    fields: dict[str, str]


def validate_new_pages(
    pages: Sequence[NewPage],
    registry: TypeRegistry,
    exists: Callable[[str], bool],
    file_links: Callable[[str, str], Sequence[tuple[str, str | None]]] | None = None,
) -> list[ValidPage]:
    """Check a batch of new pages completely, before anything is written.

    Args:
        pages: The pages to create; their links may point to each other.
        registry: The store's types.
        exists: Whether an id is taken already.
        file_links: Judges a page's ``.md`` links, given its content and id (see
            :data:`FileLinks`); ``None``: they are not judged.

    Returns:
        The pages, normalized, with their fields applied (a summary's ``ingested`` stamped).

    Raises:
        KnowledgeStoreError: The first problem found, naming the page.
    """
    if not pages:
        raise KnowledgeStoreError("Give at least one page to create.")
    batch: list[ValidPage] = []
    ids: list[str] = []
    for position, page in enumerate(pages, start=1):
        if not isinstance(page, NewPage):
            raise KnowledgeStoreError(f"Page {position} isn't a NewPage.")
        where = f"page {position} ({page.type}/{page.slug})" if len(pages) > 1 else "the page"
        page_type = registry.require(page.type)
        if not is_slug(page.slug):
            raise KnowledgeStoreError(
                f"{page.slug!r} isn't a valid slug for {where}: lowercase letters and digits in "
                "words joined by single hyphens, e.g. 'spring-tides'."
            )
        if len(page.slug) > MAX_SLUG_LENGTH:
            raise KnowledgeStoreError(
                f"The slug of {where} has {len(page.slug)} characters; keep it to "
                f"{MAX_SLUG_LENGTH} (a few words joined by hyphens)."
            )
        if page.slug in RESERVED_SLUGS or (
            page_type.dir == "" and page.slug in RESERVED_ROOT_SLUGS
        ):
            raise KnowledgeStoreError(
                f"Slug {page.slug!r} is reserved (OKF reads index.md and log.md as listings); "
                f"pick another for {where}."
            )
        page_id = f"{page_type.name}/{page.slug}"
        if page_id in ids:
            raise KnowledgeStoreError(f"{page_id!r} appears twice in this call.")
        if exists(page_id):
            raise KnowledgeStoreError(
                f"{page_id!r} already exists: edit it (knowledge_edit), or pick another slug."
            )
        ids.append(page_id)
        title, fields = apply_field_changes(require_title(page.title), {}, page.fields)
        if page_type.name == "summary":
            fields["ingested"] = utc_stamp()
        batch.append(
            ValidPage(page_type, page_id, page.slug, title, normalize_content(page.content), fields)
        )
    for valid in batch:
        judge = None if file_links is None else functools.partial(_on_page, file_links, valid.id)
        require_links_resolve(valid.content, exists, self_id=valid.id, also=ids, file_links=judge)
    return batch


def _on_page(
    file_links: Callable[[str, str], Sequence[tuple[str, str | None]]], page_id: str, content: str
) -> Sequence[tuple[str, str | None]]:
    return file_links(content, page_id)


def require_limit(limit: object, *, maximum: int = 1000) -> int:
    """Check a result limit.

    Args:
        limit: The candidate.
        maximum: The largest allowed.

    Returns:
        The limit.

    Raises:
        KnowledgeStoreError: Not a positive integer up to ``maximum``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise KnowledgeStoreError(f"limit must be a whole number from 1 to {maximum}.")
    return limit


def replace_once(page_id: str, current: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of ``old_text`` in a page's content.

    Args:
        page_id: The page, for messages.
        current: Its content, links as ids.
        old_text: The text to replace; it must occur exactly once.
        new_text: The replacement.

    Returns:
        The new content.

    Raises:
        KnowledgeStoreError: ``old_text`` is empty, missing, or found several times.
    """
    if not isinstance(old_text, str) or not old_text:
        raise KnowledgeStoreError(
            "Give the text to replace (old_text), exactly as knowledge_read shows it."
        )
    if not isinstance(new_text, str):
        raise KnowledgeStoreError("new_text must be text.")
    count = current.count(old_text)
    if count == 0:
        raise KnowledgeStoreError(
            f"The text to replace isn't in {page_id!r} (compare with knowledge_read, where links "
            "are ids). Read the page again and copy the text exactly."
        )
    if count > 1:
        raise KnowledgeStoreError(
            f"The text to replace appears {count} times in {page_id!r}: include more of the "
            "surrounding text so it matches once."
        )
    return current.replace(old_text, new_text, 1)


def leading_notice(content: str) -> str | None:
    """Return the superseded or retired notice at the top of ``content``, if any."""
    match = re.match(r"\A> ((?:Superseded|Retired) on [^\n]*)", content)
    return match.group(1) if match else None


def check_supersede(
    page_id: str, fields: Mapping[str, str], by_id: str, by_fields: Mapping[str, str]
) -> None:
    """Refuse superseding a page by itself, a retired page, or by a retired page.

    Args:
        page_id: The outdated page.
        fields: Its fields.
        by_id: The replacement.
        by_fields: The replacement's fields.

    Raises:
        KnowledgeStoreError: Saying which rule was broken.
    """
    if page_id == by_id:
        raise KnowledgeStoreError("A page can't supersede itself.")
    if status_of(fields) == STATUS_RETIRED:
        raise KnowledgeStoreError(f"{page_id!r} is retired; it can't be superseded.")
    if status_of(by_fields) == STATUS_RETIRED:
        raise KnowledgeStoreError(f"{by_id!r} is retired; supersede with a current page.")
