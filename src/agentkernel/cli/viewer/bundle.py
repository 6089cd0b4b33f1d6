"""Read an OKF bundle into the data the viewer page shows.

Everything goes through the library: the store's listing names the documents, and
``OKFManager.fetch`` returns each concept's whole text, its trust and staleness and its
resolved links (what the manager serves is what the page shows: a document the manager
skipped appears among the diagnostics, not as a node). Bodies are rendered to safe HTML
here, once, with every bundle link resolved the way the manager resolves it.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agentkernel.bundle.links import resolve_target
from agentkernel.cli.viewer._markdown import Link, Resolver, external_only, render
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf.concept import concept_id, is_document, is_reserved
from agentkernel.knowledgebase.okf.manager import OKFManager
from agentkernel.storage import frontmatter
from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

_CHUNK = 64  # ids per fetch call
_WORKERS = 8  # concurrent fetch calls (a remote store reads in parallel)
_FACT_KEYS = ("resource", "status", "stale_after")


@dataclass
class ViewerPage:
    """What the page shows.

    Attributes:
        title: The page title.
        location: Where the bundle lives.
        concepts: One mapping per concept, sorted by id (see :func:`collect`).
        directories: Directory path to the rendered HTML of its ``index.md`` (``""`` is
            the root); directories without one map to ``None``.
        diagnostics: The manager's diagnostics (skipped documents and why).
    """

    title: str
    location: str
    concepts: list[dict[str, Any]] = field(default_factory=list)
    directories: dict[str, str | None] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Return the page's data, ready for ``json.dumps``.

        Returns:
            A mapping of plain values; links are indexes into ``concepts``.
        """
        return {
            "title": self.title,
            "location": self.location,
            "concepts": self.concepts,
            "directories": self.directories,
            "diagnostics": self.diagnostics,
        }


def collect(manager: OKFManager, store: DocumentStore, title: str | None = None) -> ViewerPage:
    """Fetch every concept the manager serves and render it for the page.

    Args:
        manager: The bundle, already walked.
        store: The store the manager reads (listed once more to name the documents).
        title: The page title; derived from the location when omitted.

    Returns:
        The page data.
    """
    documents: list[str] = []
    index_files: list[str] = []
    for stored in store.walk(""):
        if not is_document(stored.path):
            continue
        if posixpath.basename(stored.path).lower() == "index.md":
            index_files.append(stored.path)
        elif not is_reserved(stored.path):
            documents.append(concept_id(stored.path))
    records = [r for r in _fetch_all(manager, sorted(documents)) if "type" in r["metadata"]]
    ids = {str(r["metadata"]["id"]) for r in records}
    directories = _directories(ids, index_files)
    position = {cid: n for n, cid in enumerate(sorted(ids))}
    records.sort(key=lambda r: position[str(r["metadata"]["id"])])
    view = ViewerPage(
        title=title or _default_title(store.location),
        location=store.location,
        diagnostics=list(manager.diagnostics),
    )
    for record in records:
        view.concepts.append(_concept(record, position, ids, directories))
    indexes = {r["metadata"]["id"]: r for r in _fetch_all(manager, [p[:-3] for p in index_files])}
    for directory in sorted(directories):
        index = indexes.get(f"{directory}/index" if directory else "index")
        html = None
        if index is not None:
            source = f"{directory}/index.md" if directory else "index.md"
            body = _body(str(index["text"]))
            html = render(body, _resolver(source, ids, directories))
        view.directories[directory] = html
    return view


def _fetch_all(manager: OKFManager, ids: Sequence[str]) -> list[Record]:
    chunks = [list(ids[n : n + _CHUNK]) for n in range(0, len(ids), _CHUNK)]
    if len(chunks) <= 1:
        return manager.fetch(chunks[0]) if chunks else []
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        return [record for rows in pool.map(manager.fetch, chunks) for record in rows]


def _directories(ids: set[str], index_files: list[str]) -> set[str]:
    found = {""}
    for cid in ids:
        found.update(_ancestors(posixpath.dirname(cid)))
    for path in index_files:
        found.update(_ancestors(posixpath.dirname(path)))
    return found


def _ancestors(directory: str) -> Iterator[str]:
    while directory:
        yield directory
        directory = posixpath.dirname(directory)


def _default_title(location: str) -> str:
    name = location.rstrip("/").rsplit("/", 1)[-1] or location
    return f"OKF bundle: {name}"


def _body(text: str) -> str:
    parts = frontmatter.split(text)
    return text if parts is None else parts[1]


def _resolver(source: str, ids: set[str], directories: set[str]) -> Resolver:
    def exists(path: str) -> bool:
        bare = path.rstrip("/")
        if is_document(bare):
            return is_reserved(bare) or concept_id(bare) in ids
        return bare in directories

    def resolve(target: str) -> Link:
        path = resolve_target(source, target, exists)
        if path is None:
            return external_only(target)
        bare = path.rstrip("/")
        if is_document(bare):
            if posixpath.basename(bare).lower() == "index.md":
                return Link("directory", posixpath.dirname(bare))
            if is_reserved(bare):
                return Link("text")
            cid = concept_id(bare)
            return Link("concept", cid) if cid in ids else Link("broken", cid)
        return Link("directory", bare) if bare in directories else Link("broken", bare)

    return resolve


def _concept(
    record: Record, position: dict[str, int], ids: set[str], directories: set[str]
) -> dict[str, Any]:
    metadata = record["metadata"]
    cid = str(metadata["id"])
    source = str(metadata.get("source") or f"{cid}.md")
    meta = metadata.get("frontmatter") or {}
    facts = [[key, _plain(meta[key])] for key in _FACT_KEYS if meta.get(key) not in (None, "")]
    generated = meta.get("generated")
    if isinstance(generated, dict) and generated.get("by"):
        when = f" at {generated['at']}" if generated.get("at") else ""
        facts.append(["generated", f"{generated['by']}{when}"])
    verified = meta.get("verified")
    for event in verified if isinstance(verified, list) else [verified]:
        if isinstance(event, dict) and event.get("by"):
            when = f" at {event['at']}" if event.get("at") else ""
            facts.append(["verified", f"{event['by']}{when}"])
    try:
        raw_frontmatter = frontmatter.dump_yaml(meta) if meta else ""
    except Exception:  # an exotic value the dumper refuses: show the mapping as text
        raw_frontmatter = repr(meta)
    return {
        "id": cid,
        "title": str(metadata.get("title") or cid),
        "type": str(metadata.get("type") or ""),
        "description": str(metadata.get("description") or ""),
        "tags": [str(tag) for tag in metadata.get("tags") or []],
        "trust": str(metadata.get("trust") or "unverified"),
        "stale": bool(metadata.get("stale")),
        "status": _plain(meta.get("status") or "stable"),
        "dir": posixpath.dirname(cid),
        "links": [position[t] for t in metadata.get("links", []) if t in position],
        "broken": [str(t) for t in metadata.get("broken_links", [])],
        "facts": facts,
        "frontmatter": raw_frontmatter,
        "html": render(_body(str(record["text"])), _resolver(source, ids, directories)),
    }


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    return str(value)
