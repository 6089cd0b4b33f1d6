"""Markdown links of an OKF concept, resolved to concept ids (OKF 0.2, section 6).

Parsing and resolving a link to a bundle path is the bundle core's
(:mod:`agentkernel.bundle.links`, code-fence aware); this module sorts what the links of one
document reach: concepts, directories, ``log.md`` files, and documents that do not exist.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from agentkernel.bundle.links import link_targets, resolve_target
from agentkernel.knowledgebase.okf.concept import concept_id, is_document, is_reserved


@dataclass
class Links:
    """The bundle links of one document.

    Attributes:
        concepts: Ids of linked concepts that exist, in order of first appearance.
        directories: Linked directories (``tables/``, or a link to ``tables/index.md``), as
            browse paths.
        reserved: Ids of linked ``log.md`` files (``runbooks/log``), which ``fetch`` serves.
        broken: Ids of linked documents that do not exist (tolerated per spec).
    """

    concepts: list[str] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    reserved: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def resolve_links(
    source_path: str,
    body: str,
    has_concept: Callable[[str], bool],
    has_directory: Callable[[str], bool],
) -> Links:
    """Resolve every bundle link in a document body.

    Args:
        source_path: Bundle path of the document.
        body: Its markdown body.
        has_concept: Tells whether a concept id exists.
        has_directory: Tells whether a directory (``""`` is the root) exists.

    Returns:
        The links, deduplicated, self-links left out.
    """

    def exists(path: str) -> bool:
        stripped = path.rstrip("/")
        if is_document(stripped):
            return is_reserved(stripped) or has_concept(concept_id(stripped))
        return has_directory(stripped)

    found = Links()
    seen: set[str] = set()
    own_id = concept_id(source_path)
    for raw in link_targets(body):
        path = resolve_target(source_path, raw, exists)
        if path is None or path in seen:
            continue
        seen.add(path)
        bare = path.rstrip("/")
        if is_document(bare) and is_reserved(bare):
            if bare.lower().endswith("index.md"):
                directory = posixpath.dirname(bare)
                if directory not in found.directories:
                    found.directories.append(directory)
            else:
                found.reserved.append(concept_id(bare))
        elif is_document(bare):
            target_id = concept_id(bare)
            if target_id == own_id:
                continue
            (found.concepts if has_concept(target_id) else found.broken).append(target_id)
        elif path.endswith("/") or has_directory(bare):
            found.directories.append(bare)
    return found
