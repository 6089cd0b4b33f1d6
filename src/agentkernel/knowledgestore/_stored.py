"""The files of the bundle layout, read and written (for the bundle page backend).

:class:`~agentkernel.knowledgestore._bundle_backend.BundlePageBackend` (a local folder, any
``DocumentStore``, S3 included) keeps a store's records as these files: a page is YAML
frontmatter (``type``, ``title``, its fields) and a body whose links are relative file paths;
``index.md`` starts with OKF's ``okf_version``; ``log.md`` entries are ``* **op**: what —
pages: ...``. This module is the one place those files are parsed and rendered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkernel.bundle import logfile
from agentkernel.knowledgestore import _bundle, _pages
from agentkernel.knowledgestore.model import PageType, linked_ids
from agentkernel.knowledgestore.pagebackend import LogEntry
from agentkernel.storage import frontmatter

OKF_VERSION = "0.2"
"""The OKF version ``index.md`` declares."""


@dataclass(frozen=True)
class Stored:
    """A page as read from its file: its body keeps links as relative file paths.

    ``raw`` holds the frontmatter values as read, so a field an edit leaves alone is written
    back as it was (a nested OKF ``generated: {by, at}`` stays a mapping, a number a number),
    not as the text ``fields`` shows for it.
    """

    id: str
    page_type: PageType
    slug: str
    rel: str
    title: str
    fields: dict[str, str]
    body: str
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def as_text(value: Any) -> str:
    """Render a frontmatter value as the text a page field holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(as_text(v) for v in value)
    if isinstance(value, dict):
        return frontmatter.dump_yaml(value).strip()
    return "" if value is None else str(value)


def parse_page(page_type: PageType, slug: str, rel: str, text: str) -> Stored | str:
    """Read a page file as a page of ``page_type``, or say why it is none.

    Args:
        page_type: The type its folder (or, at the root, its frontmatter) gives it.
        slug: Its file name without ``.md``.
        rel: Its bundle-relative path.
        text: Its content.

    Returns:
        The page, or one line saying why the file is not one.
    """
    try:
        meta, body = frontmatter.parse(text)
    except frontmatter.FrontmatterError as exc:
        return f"its frontmatter can't be read ({exc})"
    if not page_type.dir and meta.get("type") != page_type.name:
        return "at the root without the type of a root page in its frontmatter"
    title = as_text(meta.get("title")).strip()
    if not title:
        heading = re.search(r"^#\s+(.+)$", body, flags=re.MULTILINE)
        title = heading.group(1).strip() if heading else slug
    fields = {str(k): as_text(v) for k, v in meta.items() if k not in ("type", "title")}
    body = _pages.normalize_content(body)
    return Stored(f"{page_type.name}/{slug}", page_type, slug, rel, title, fields, body, meta)


def parse_as_any(candidates: Iterable[PageType], slug: str, rel: str, text: str) -> Stored | str:
    """Read a page file as the first of ``candidates`` it is a page of, or say why none.

    Args:
        candidates: The types its place allows (one for a type folder, the root's types).
        slug: Its file name without ``.md``.
        rel: Its bundle-relative path.
        text: Its content.

    Returns:
        The page, or why the file is none (the last candidate's reason).
    """
    why = "not read as a page"
    for page_type in candidates:
        parsed = parse_page(page_type, slug, rel, text)
        if isinstance(parsed, Stored):
            return parsed
        why = parsed
    return why


def render_page(page: Stored) -> str:
    """Render a page's file: frontmatter (type, title, fields), then its body."""
    raw = page.raw
    fields = {
        key: raw[key] if key in raw and as_text(raw[key]) == text else text
        for key, text in page.fields.items()
    }
    meta: dict[str, Any] = {"type": page.page_type.name, "title": page.title, **fields}
    return frontmatter.render(meta, f"\n{page.body}\n")


def index_head() -> bytes:
    """Return the first bytes of ``index.md``: the frontmatter declaring the OKF version."""
    return frontmatter.render({"okf_version": OKF_VERSION}, "").encode("utf-8")


def overview_body(text: str) -> str:
    """Return the body of ``overview.md`` (its frontmatter dropped), normalised."""
    parts = frontmatter.split(text)
    return _pages.normalize_content(parts[1] if parts is not None else text)


def render_overview(body_on_disk: str) -> str:
    """Render ``overview.md`` around a body whose links are already file paths."""
    meta = {"type": "overview", "title": "Overview", "updated": _pages.utc_today()}
    return frontmatter.render(meta, f"\n{body_on_disk}\n")


def log_entry_line(
    links: _bundle.LinkMap, rel_of_id: dict[str, str], op: str, text: str, ids: list[str]
) -> str:
    """Render one ``log.md`` line: ``* **op**: what — pages: [id](file), ...``.

    Args:
        links: The store's link converter.
        rel_of_id: The file of each page that exists (a page that doesn't is named bare).
        op: The operation.
        text: What was done, links as ids.
        ids: The pages it touched.

    Returns:
        The line.
    """
    listed = [f"[{i}]({rel_of_id[i]})" if i in rel_of_id else i for i in ids]
    return logfile.entry(op, links.to_disk(text, "log.md"), listed)


def log_entry(links: _bundle.LinkMap, date: str, line: str) -> LogEntry:
    """Read one ``log.md`` line back as a log entry (links as ids).

    Args:
        links: The store's link converter.
        date: The date heading the line sits under.
        line: The line.

    Returns:
        The entry; a line that is not ``* **op**: what`` is kept whole as ``what``, with no
        operation.
    """
    parts = logfile.split_line(line)
    if parts is None:
        return LogEntry(date, "", links.from_disk(line[2:], "log.md"))
    op, what, items = parts
    ids: list[str] = []
    for item in items:
        converted = links.from_disk(item, "log.md")
        ids.extend(linked_ids(converted) or [item])
    return LogEntry(date, op, links.from_disk(what, "log.md"), tuple(ids))
