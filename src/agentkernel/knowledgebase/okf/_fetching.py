"""A fetched concept as a record: the document exactly as stored, its links resolved.

``OKFManager.fetch`` reads the whole document through its view; this parses it again (it may
have changed since the walk), resolves its links against what is served now, and marks the
linked concepts that are computations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf._links import resolve_links
from agentkernel.knowledgebase.okf._records import full_record
from agentkernel.knowledgebase.okf.computation.contract import is_computation
from agentkernel.knowledgebase.okf.concept import Concept, ConceptError, parse_concept
from agentkernel.knowledgebase.okf.manifest import BundleContents

__all__ = ["fetched_record"]

logger = logging.getLogger(__name__)


def fetched_record(
    concept: Concept,
    data: bytes,
    lock: threading.RLock,
    served: Callable[[], BundleContents],
    now: Callable[[], datetime],
    legacy_dates: bool,
) -> Record | None:
    """The record of a concept's whole document, or ``None`` when it became unreadable.

    Args:
        concept: The concept as served.
        data: Its document, as read now.
        lock: The manager's lock, held while the links are resolved.
        served: What the manager serves now (read under ``lock``).
        now: The manager's clock, for staleness.
        legacy_dates: Whether a bare-date ``stale_after`` is read as midnight UTC.

    Returns:
        The record; ``None`` (with a WARNING) when the document no longer decodes or parses.
    """
    try:
        text = data.decode("utf-8")
        fresh = parse_concept(concept.path, concept.token, len(data), data, complete=True)
    except (UnicodeDecodeError, ConceptError) as exc:
        logger.warning("%s changed into something unreadable: %s", concept.path, exc)
        return None
    with lock:
        contents = served()
        has, linked = (lambda cid: cid in contents.concepts), contents.concepts
        links = resolve_links(concept.path, fresh.body_head, has, contents.has_directory)
        computing = [c for c in links.concepts if is_computation(linked[c].type)]
    return full_record(fresh, text, links, now(), computing, legacy_dates=legacy_dates)
