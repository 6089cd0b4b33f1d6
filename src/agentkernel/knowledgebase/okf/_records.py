"""Records an ``OKFManager`` returns, and how they read to an agent.

Summaries (search and browse) carry what the manifest knows: id, title, type, description,
tags, trust, staleness and lifecycle status. A fetched record carries the whole document as
written plus its resolved links. Reserved ``index.md`` files and directories are records too,
with ids that ``fetch`` accepts back (``tables/index``, ``tables/``), so every id an agent
sees is usable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf._links import Links
from agentkernel.knowledgebase.okf.computation.contract import is_computation, summary
from agentkernel.knowledgebase.okf.concept import Concept

KIND_INDEX = "index"
KIND_LOG = "log"
KIND_DIRECTORY = "directory"


def summary_record(
    concept: Concept, now: datetime, score: float | None = None, *, legacy_dates: bool = False
) -> Record:
    """Describe a concept from the manifest alone.

    Args:
        concept: The manifest entry.
        now: The instant staleness is judged at.
        score: The search score, when ranked.
        legacy_dates: Read a bare-date ``stale_after`` as midnight UTC.

    Returns:
        A record whose text is the description (the title when there is none).
    """
    metadata: dict[str, Any] = _concept_metadata(concept, now, legacy_dates)
    if score is not None:
        metadata["score"] = round(score, 4)
    return {"text": concept.description or concept.title, "metadata": metadata}


def full_record(
    concept: Concept,
    text: str,
    links: Links,
    now: datetime,
    computations: Sequence[str] = (),
    *,
    legacy_dates: bool = False,
) -> Record:
    """Describe a fetched concept: the whole document and its resolved links.

    Args:
        concept: The concept parsed from the document just read.
        text: The whole document, exactly as stored.
        links: Its bundle links, resolved.
        now: The instant staleness is judged at.
        computations: The linked concepts that are Attested Computations.
        legacy_dates: Read a bare-date ``stale_after`` as midnight UTC.

    Returns:
        The record.
    """
    metadata: dict[str, Any] = _concept_metadata(concept, now, legacy_dates)
    metadata["links"] = list(links.concepts)
    if computations:
        metadata["computations"] = list(computations)
    metadata["linked_directories"] = list(links.directories)
    metadata["linked_files"] = list(links.reserved)
    metadata["broken_links"] = list(links.broken)
    metadata["frontmatter"] = concept.frontmatter
    return {"text": text, "metadata": metadata}


def reserved_record(path: str, text: str) -> Record:
    """Describe an ``index.md`` or ``log.md`` returned verbatim.

    Args:
        path: Its bundle path.
        text: Its whole text.

    Returns:
        The record; its id is the path without ``.md``.
    """
    directory = path.rpartition("/")[0]
    kind = KIND_LOG if path.lower().endswith("log.md") else KIND_INDEX
    where = f"{directory}/" if directory else "the bundle root"
    return {
        "text": text,
        "metadata": {
            "id": path[:-3],
            "title": f"{path.rpartition('/')[2]} of {where}",
            "kind": kind,
            "source": path,
            "verbatim": True,
        },
    }


def directory_record(path: str, concepts: int, description: str = "") -> Record:
    """Describe a subdirectory in a derived listing.

    Args:
        path: The directory's bundle path.
        concepts: How many concepts it holds, at any depth.
        description: A line about it, when one is known.

    Returns:
        The record; its id is the path with a trailing ``/``.
    """
    text = description or f"{concepts} concept{'s' if concepts != 1 else ''}"
    return {
        "text": text,
        "metadata": {
            "id": f"{path}/",
            "title": f"{path}/",
            "kind": KIND_DIRECTORY,
            "concepts": concepts,
            "source": f"{path}/",
        },
    }


def format_records(rows: Sequence[Record]) -> str:
    """Render records with id, title, type, trust and staleness, and a status unless ``stable``.

    Args:
        rows: Records from search, browse or fetch.

    Returns:
        The text the tools return; ``"No results."`` when empty.
    """
    if not rows:
        return "No results."
    return "\n".join(_render(row) for row in rows)


def _render(row: Record) -> str:
    metadata = row.get("metadata") if isinstance(row, Mapping) else None
    if not isinstance(metadata, Mapping):
        return f"- {row}"
    text = str(row.get("text", ""))
    record_id = metadata.get("id", "")
    kind = metadata.get("kind")
    if kind in (KIND_INDEX, KIND_LOG):
        return f"[{record_id}] {metadata.get('title', '')} (verbatim):\n{text.rstrip()}\n"
    if kind == KIND_DIRECTORY:
        return f"- [{record_id}] {metadata.get('title', '')} (directory): {text}"
    stale = "STALE" if metadata.get("stale") else "fresh"
    status = metadata.get("status")
    lifecycle = f"; {status}" if status and status != "stable" else ""
    head = (
        f"[{record_id}] {metadata.get('title', '')} "
        f"({kind}; {metadata.get('trust')}; {stale}{lifecycle})"
    )
    if "links" in metadata:
        lines = [head]
        for label, key in (
            ("links", "links"),
            ("computations", "computations"),
            ("linked directories", "linked_directories"),
            ("linked files", "linked_files"),
            ("broken links", "broken_links"),
        ):
            values = metadata.get(key) or []
            if values:
                lines.append(f"{label}: {', '.join(str(v) for v in values)}")
        lines.append(text.rstrip())
        return "\n".join(lines) + "\n"
    computation = metadata.get("computation")
    if isinstance(computation, Mapping):
        takes = ", ".join(computation.get("parameters") or []) or "no parameters"
        text = f"{text} [runtime {computation.get('runtime')}; parameters: {takes}]"
    return f"- {head}: {text}"


def _concept_metadata(concept: Concept, now: datetime, legacy_dates: bool) -> dict[str, Any]:
    plain = _plain_metadata(concept, now, legacy_dates)
    if is_computation(concept.type):  # discovery: what a run takes (OKF 0.2, section 10.5)
        return {**plain, "computation": summary(concept.frontmatter)}
    return plain


def _plain_metadata(concept: Concept, now: datetime, legacy_dates: bool) -> dict[str, Any]:
    return {
        "id": concept.id,
        "title": concept.title,
        "kind": concept.type,
        "type": concept.type,
        "description": concept.description,
        "tags": list(concept.tags),
        "trust": concept.trust,
        "stale": concept.is_stale(now, legacy_dates=legacy_dates),
        "status": concept.status,
        "source": concept.path,
    }
