"""Browsing an OKF manifest: a directory's ``index.md`` verbatim, else a derived listing.

A listing a human wrote beats one derived from the filesystem (OKF 0.2, section 8), so a
directory holding an ``index.md`` is answered with that file. Otherwise the listing is built
from the manifest: subdirectories first (with their concept counts), then the concepts with
their titles and descriptions.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import datetime

from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf._records import directory_record, summary_record
from agentkernel.knowledgebase.okf.concept import concept_id, is_document, is_reserved
from agentkernel.knowledgebase.okf.manifest import BundleContents
from agentkernel.storage import frontmatter
from agentkernel.storage.base import clean_path


@dataclass(frozen=True)
class Target:
    """What a browse path or a fetch id names.

    Attributes:
        kind: ``"concept"``, ``"reserved"``, ``"directory"`` or ``"unknown"``.
        path: The concept id, the reserved file's path, or the directory path.
    """

    kind: str
    path: str


def normalise(raw: str) -> str:
    """Clean a browse path or an id as an agent may write it.

    Leading ``/`` reads as bundle-absolute (as in OKF links); surrounding whitespace and a
    ``.md`` suffix are tolerated. A trailing ``/`` is kept, marking a directory.

    Args:
        raw: The path or id.

    Returns:
        A clean bundle-relative path, with its trailing ``/`` when it had one.

    Raises:
        KnowledgePathError: The path climbs out of the bundle or is otherwise unsafe.
    """
    text = raw.strip()
    directory = text.endswith("/") and text.strip("/") != ""
    cleaned = clean_path(text.lstrip("/"))
    return f"{cleaned}/" if directory and cleaned else cleaned


def resolve(manifest: BundleContents, raw: str) -> Target:
    """Decide what a browse path or a fetch id names.

    Args:
        manifest: The manifest (or bundle index view) to look in.
        raw: The path or id as given.

    Returns:
        The target; ``kind == "unknown"`` when the manifest knows nothing by that name.

    Raises:
        KnowledgePathError: The path is unsafe.
    """
    cleaned = normalise(raw)
    if cleaned.endswith("/"):
        directory = cleaned.rstrip("/")
        return Target("directory" if manifest.has_directory(directory) else "unknown", directory)
    as_document = cleaned if is_document(cleaned) else f"{cleaned}.md"
    if cleaned and is_reserved(as_document):
        for candidate in (as_document, *_case_variants(as_document)):
            if candidate in manifest.reserved:
                return Target("reserved", candidate)
        return Target("unknown", as_document)
    cid = concept_id(as_document) if cleaned else ""
    if cid and cid in manifest.concepts:
        return Target("concept", cid)
    bare = cleaned[:-3] if is_document(cleaned) else cleaned
    if manifest.has_directory(bare):
        return Target("directory", bare)
    return Target("unknown", cleaned)


def index_path(manifest: BundleContents, directory: str) -> str | None:
    """Return the path of a directory's ``index.md`` when it has one.

    Args:
        manifest: The manifest.
        directory: The directory (``""`` is the root).

    Returns:
        The reserved file's path, or ``None``.
    """
    path = posixpath.join(directory, "index.md") if directory else "index.md"
    for candidate in (path, *_case_variants(path)):
        if candidate in manifest.reserved:
            return candidate
    return None


def derived_listing(
    manifest: BundleContents,
    directory: str,
    limit: int,
    now: datetime,
    *,
    legacy_dates: bool = False,
) -> list[Record]:
    """List a directory from the manifest: subdirectories, then concepts.

    Args:
        manifest: The manifest.
        directory: The directory (``""`` is the root).
        limit: The most entries.
        now: The instant staleness is judged at.
        legacy_dates: Read a bare-date ``stale_after`` as midnight UTC.

    Returns:
        Up to ``limit`` records.
    """
    children = manifest.children(directory)
    rows = [
        directory_record(sub, manifest.concepts_under(sub)) for sub in children.directories[:limit]
    ]
    for cid in children.concepts[: limit - len(rows)]:
        rows.append(summary_record(manifest.concepts[cid], now, legacy_dates=legacy_dates))
    return rows


def _case_variants(path: str) -> tuple[str, ...]:
    directory, _, name = path.rpartition("/")
    prefix = f"{directory}/" if directory else ""
    return tuple(prefix + n for n in (name.lower(), name.upper(), name.capitalize()) if n != name)


def declared_version(root_index: str | None) -> str | None:
    """The ``okf_version`` a root ``index.md`` declares in its frontmatter, if any.

    Args:
        root_index: The root index's text, or ``None``.

    Returns:
        The declared version, or ``None``.
    """
    if not root_index:
        return None
    try:
        meta, _ = frontmatter.parse(root_index)
    except frontmatter.FrontmatterError:
        return None
    version = meta.get("okf_version")
    return str(version) if version is not None else None
