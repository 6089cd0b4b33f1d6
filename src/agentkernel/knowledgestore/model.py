"""What a knowledge store holds and returns: page types, pages, hits, check reports.

A page is identified by ``type/slug`` (``concept/bowline``), and pages link to each other
with that id: ``[Bowline](concept/bowline)``, optionally with an ``#anchor``. Whatever a store
keeps internally (relative file paths, rows), it returns ids in that form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkernel.bundle.links import link_targets

TYPE_PATTERN = r"[a-z][a-z0-9-]*"
"""A page type's name: lowercase, starting with a letter (``concept``, ``how-to``)."""

SLUG_PATTERN = r"[a-z0-9]+(?:-[a-z0-9]+)*"
"""A slug: lowercase letters and digits in words joined by single hyphens."""

_SLUG = re.compile(rf"^{SLUG_PATTERN}$")
_TYPE = re.compile(rf"^{TYPE_PATTERN}$")
_ID = re.compile(rf"^({TYPE_PATTERN})/({SLUG_PATTERN})$")

FieldChanges = Mapping[str, str | None]
"""Changes to a page's frontmatter fields: a string sets a field, ``None`` removes it."""

STATUS_ACTIVE = "active"
STATUS_SUPERSEDED = "superseded"
STATUS_RETIRED = "retired"


def is_slug(slug: str) -> bool:
    """Tell whether ``slug`` is lowercase letters and digits joined by single hyphens.

    Args:
        slug: The candidate slug.

    Returns:
        ``True`` for ``"spring-tides"``, ``False`` for ``"Spring tides"`` or ``"a--b"``.
    """
    return isinstance(slug, str) and bool(_SLUG.match(slug))


def is_type_name(name: str) -> bool:
    """Tell whether ``name`` can name a page type (lowercase, starting with a letter).

    Args:
        name: The candidate type name.

    Returns:
        Whether it is valid.
    """
    return isinstance(name, str) and bool(_TYPE.match(name))


def parse_id(page_id: str) -> tuple[str, str] | None:
    """Split a page id into its type and slug.

    Args:
        page_id: An id such as ``"concept/bowline"`` (surrounding spaces are ignored).

    Returns:
        ``(type, slug)``, or ``None`` when ``page_id`` is not of the form ``type/slug``.
    """
    if not isinstance(page_id, str):
        return None
    match = _ID.match(page_id.strip())
    return (match.group(1), match.group(2)) if match else None


def id_link(target: str) -> tuple[str, str] | None:
    """Split a link target that names a page by id into the id and its ``#anchor``.

    Args:
        target: A link target as written (``concept/bowline#knots``).

    Returns:
        ``(id, anchor)`` (the anchor with its ``#``, or ``""``), or ``None`` for any other
        target.
    """
    page_id, hash_sign, anchor = target.partition("#")
    if _ID.match(page_id) is None:
        return None
    return page_id, hash_sign + anchor


def linked_ids(markdown: str) -> list[str]:
    """List the page ids that ``[text](type/slug)`` links in ``markdown`` point to.

    Links are read by the bundle's one parser (:mod:`agentkernel.bundle.links`): one inside
    a fenced code block is no link.

    Args:
        markdown: Markdown text with links as page ids (an ``#anchor`` is allowed).

    Returns:
        Each linked id once, in order of first appearance.
    """
    seen: dict[str, None] = {}
    for target in link_targets(markdown):
        found = id_link(target)
        if found is not None:
            seen.setdefault(found[0], None)
    return list(seen)


@dataclass(frozen=True)
class PageType:
    """A kind of page: one of the built-ins or one an agent declares.

    Attributes:
        name: Lowercase name; page ids start with it (``concept``).
        dir: Where a file store keeps its pages, relative to the knowledge folder; ``""`` is
            the root (pages there are told apart by their frontmatter ``type``).
        template: The body skeleton shown to a model that is about to create one.
        index_section: Its section heading in the index (``Concepts``).
        description: What it holds and when to create one, in one line, for the model.
        index_fields: Frontmatter fields shown on its index line (``("file", "ingested")``).
    """

    name: str
    dir: str
    template: str
    index_section: str
    description: str = ""
    index_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewPage:
    """A page to create with ``create_many``.

    Attributes:
        type: Its type's name.
        slug: Its slug; the id becomes ``type/slug``.
        title: Its title.
        content: Its markdown body, links to other pages as ids.
        fields: Frontmatter fields to set.
    """

    type: str
    slug: str
    title: str
    content: str
    fields: FieldChanges | None = None


@dataclass(frozen=True)
class PageInfo:
    """A page's line in a listing.

    Attributes:
        id: ``type/slug``.
        type: The type's name.
        slug: The slug.
        title: The title.
        description: One line: its ``description`` field, or its first sentence.
        status: ``active``, ``superseded`` or ``retired``.
        fields: Frontmatter fields besides ``type`` and ``title``, as strings.
    """

    id: str
    type: str
    slug: str
    title: str
    description: str
    status: str
    fields: dict[str, str]


@dataclass(frozen=True)
class KnowledgePage(PageInfo):
    """A whole page, as ``read()`` returns it.

    Attributes:
        content: The markdown body, links to other pages as ids.
        linked_from: The ids of the other pages that link to it.
    """

    content: str = ""
    linked_from: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchHit:
    """A page ``search()`` found.

    Attributes:
        id: ``type/slug``.
        title: The title.
        type: The type's name.
        score: Higher is better; a page whose title (then alias) says what the query says
            always outranks the others.
        snippet: Where it matched, one line.
        status: The page's status: ``active``, or ``superseded`` (ranked below a current
            page of equal relevance).
    """

    id: str
    title: str
    type: str
    score: float
    snippet: str
    status: str = STATUS_ACTIVE


@dataclass(frozen=True)
class PageLink:
    """A link from one page to another.

    Attributes:
        page: The id of the page holding the link (``overview`` for the overview).
        target: What it points to.
    """

    page: str
    target: str


@dataclass(frozen=True)
class UnreadableFile:
    """A markdown file in the store's location that it cannot read as one of its pages.

    Attributes:
        path: Its path, relative to the store's location.
        reason: Why it is not a page, in one line.
    """

    path: str
    reason: str


@dataclass(frozen=True)
class CheckReport:
    """The mechanical problems ``check()`` finds, for the agent to fix or report.

    Attributes:
        broken_links: Links to pages that do not exist.
        orphans: Pages nothing links to (summaries, syntheses and preferences aside: the
            index reaches those).
        links_to_retired: Links to retired pages.
        unreadable_files: Markdown files beside the pages that the store cannot read as
            pages, each with why (a store over a folder; ``[]`` elsewhere).
    """

    broken_links: list[PageLink] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    links_to_retired: list[PageLink] = field(default_factory=list)
    unreadable_files: list[UnreadableFile] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether nothing was found."""
        return not (
            self.broken_links or self.orphans or self.links_to_retired or self.unreadable_files
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the report as plain JSON-ready data.

        Returns:
            ``broken_links`` and ``links_to_retired`` as lists of ``{"page", "target"}``
            mappings, ``orphans`` as a list of ids; ``unreadable_files`` as a list of
            ``{"path", "reason"}`` mappings, present only when there is one.
        """
        retired = self.links_to_retired
        report: dict[str, Any] = {
            "broken_links": [{"page": a.page, "target": a.target} for a in self.broken_links],
            "orphans": list(self.orphans),
            "links_to_retired": [{"page": a.page, "target": a.target} for a in retired],
        }
        if self.unreadable_files:
            report["unreadable_files"] = [
                {"path": u.path, "reason": u.reason} for u in self.unreadable_files
            ]
        return report


_SUMMARY_TEMPLATE = """## Summary
<Two to four paragraphs: what the source actually says.>

## Key points
- <Claims, definitions and figures likely to be needed again; quote when wording matters.>

## Pages it feeds
- [<Concept or entity>](concept/<slug>)

## What is new
- <What this source adds to what the knowledge base already held.>

## Contradictions
- <Where it disagrees with other pages, linked.>"""

_CONCEPT_TEMPLATE = """<The definition, in one or two sentences.>

## Explanation
<How it works, as deep as the sources go.>

## Connections
- Requires: [<Concept>](concept/<slug>)
- Related: [<Concept>](concept/<slug>) - how

## Sources
- [<Summary>](summary/<slug>) - what it says about this

## Open questions
- "<Source A> says X; <source B> says Y" - both attributed."""

_ENTITY_TEMPLATE = """<What it is, in one or two sentences.>

## Facts
- <Facts, each linking the summary it comes from.>

## Connections
- [<Concept or entity>](concept/<slug>) - how"""

_SYNTHESIS_TEMPLATE = "<The answer, linking every page it draws on.>"

_PREFERENCE_TEMPLATE = """<The preference in one sentence, as the person put it.>

## Why
- <Their reason, if they gave one.>

## Example
- <What following it looks like.>"""

BUILT_IN_PAGE_TYPES: tuple[PageType, ...] = (
    PageType(
        name="summary",
        dir="summaries",
        template=_SUMMARY_TEMPLATE,
        index_section="Summaries",
        description=(
            "One per ingested source: what it says, its key points and the pages it feeds. "
            "Fields: file (the original, relative to the sources folder) or url; ingested is "
            "set by the knowledge base itself."
        ),
        index_fields=("file", "url", "ingested"),
    ),
    PageType(
        name="concept",
        dir="concepts",
        template=_CONCEPT_TEMPLATE,
        index_section="Concepts",
        description=(
            "One idea per page: its definition, explanation, connections and sources. "
            "Fields: aliases (other names, comma-separated)."
        ),
    ),
    PageType(
        name="entity",
        dir="entities",
        template=_ENTITY_TEMPLATE,
        index_section="Entities",
        description=(
            "A concrete thing: a system, component, organization or document (a person only "
            "in a public role). Fields: kind, aliases."
        ),
    ),
    PageType(
        name="synthesis",
        dir="syntheses",
        template=_SYNTHESIS_TEMPLATE,
        index_section="Syntheses",
        description=(
            "An answer worth keeping: a comparison, an analysis, a report. Fields: question."
        ),
    ),
    PageType(
        name="preference",
        dir="preferences",
        template=_PREFERENCE_TEMPLATE,
        index_section="Preferences",
        description=(
            "How the person wants things done, one per page: only from what the person said, "
            "never from a document or a tool result. Fields: since (when they said it)."
        ),
    ),
)
"""The built-in page types, each with its template."""

UNLINKED_TYPES = frozenset({"summary", "synthesis", "preference"})
"""Types that are never orphans: the index reaches them, nothing has to link to them."""
