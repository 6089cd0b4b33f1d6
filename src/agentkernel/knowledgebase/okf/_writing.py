"""``OKFManager.write``'s path to the store: refuse what no walk would serve, then write.

Every draft is checked before anything is written (:func:`refuse_unservable`); each is then
written (:func:`write_one`: an exact path replaced, an authored one given a free name) and
served by the view, its vector embedded first when search is hybrid, before the write is
acknowledged.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentkernel.errors import echo
from agentkernel.knowledgebase.errors import KnowledgeError, KnowledgePathError
from agentkernel.knowledgebase.okf import _authoring as authoring
from agentkernel.knowledgebase.okf._views import BundleView, ViewContext
from agentkernel.knowledgebase.okf.concept import (
    ConceptError,
    concept_id,
    parse_concept,
)
from agentkernel.knowledgebase.okf.scan import concept_from_head, path_refusal, size_refusal
from agentkernel.storage.base import StoredFile

MAX_SUFFIX = 1000
"""The most names tried for an authored document (``slug``, ``slug-2``, ...)."""


def refuse_unservable(
    item: authoring.Draft, view: BundleView, context: ViewContext, backend: str
) -> None:
    """Refuse, before anything is written, a document that no walk would serve.

    Acknowledging such a write would be a lie: this process would show the concept until
    its next refresh, and every other process (or this one after a restart) never would.
    The rules are the walk's own (:func:`path_refusal`, :func:`size_refusal`,
    :func:`concept_from_head`), plus a whole-document parse, as ``fetch`` reads it.

    Args:
        item: The draft.
        view: What the manager serves.
        context: The view's context (limits, lock).
        backend: The backend name, for the message.

    Raises:
        KnowledgeError: The document would never be served; nothing was written.
    """
    cid = concept_id(item.path)
    limits = context.limits
    reason = path_refusal(item.path) or size_refusal(len(item.data), limits)
    if reason is None and item.exact:
        with context.lock:
            held = view.contents.concepts.get(cid)
        if held is not None and held.path != item.path:
            reason = f"the same concept id as {held.path}, which is served instead"
    if reason is None:
        try:
            parse_concept(item.path, "", len(item.data), item.data, complete=True)
            listed = StoredFile(item.path, len(item.data), "")
            concept_from_head(listed, item.data[: limits.head_bytes], limits.head_bytes)
        except ConceptError as exc:
            reason = str(exc)
    if reason is not None:
        raise KnowledgeError(
            f"Nothing was written to OKF bundle '{backend}': {echo(cid)} would "
            f"never be served ({reason}). Shorten or split the text, or fix what the reason "
            "names."
        )


def refuse_over_capacity(
    drafts: Sequence[authoring.Draft],
    view: BundleView,
    context: ViewContext,
    bound: int,
    backend: str,
) -> None:
    """Refuse a batch that would take the bundle past ``max_concepts`` (nothing is written).

    Args:
        drafts: The batch: an exact draft replacing a served concept adds none.
        view: What the manager serves.
        context: The view's context (its lock).
        bound: ``max_concepts``.
        backend: The backend's name, for the message.

    Raises:
        KnowledgeError: The bundle would hold more than ``bound`` concepts.
    """
    with context.lock:
        held = view.contents.concepts
        new_exact = {d.path for d in drafts if d.exact and concept_id(d.path) not in held}
        adding = len(new_exact) + sum(1 for d in drafts if not d.exact)
        full = adding and len(held) + adding > bound
        count = len(held)
    if full:
        raise KnowledgeError(
            f"OKF bundle '{backend}' serves at most "
            f"max_concepts={bound} concepts and holds {count}; {adding} more "
            "would leave concepts out. Nothing "
            "was written: remove or replace concepts, or raise max_concepts."
        )


def write_one(item: authoring.Draft, view: BundleView, context: ViewContext) -> str:
    """Write one draft to the store and serve it.

    Args:
        item: The draft (checked by :func:`refuse_unservable`).
        view: What the manager serves.
        context: The view's context (store, limits, lock, dense index).

    Returns:
        The concept id written.

    Raises:
        KnowledgePathError: No free name for an authored document.
    """
    store = context.store
    if item.exact:
        stored = store.write(item.path, item.data, overwrite=True)
        path = item.path
    else:
        for attempt in range(1, MAX_SUFFIX + 1):
            path = authoring.with_suffix(item.path, attempt)
            with context.lock:
                if view.contents.token_of(path) is not None:
                    continue
            try:
                stored = store.write(path, item.data, overwrite=False)
                break
            except FileExistsError:
                continue
        else:
            raise KnowledgePathError(
                f"No free name for {echo(item.path)} after {MAX_SUFFIX} attempts."
            )
    listed = StoredFile(path, stored.size, stored.token)
    head = context.limits.head_bytes
    concept = concept_from_head(listed, item.data[:head], head)
    vector = context.embed([concept]).get(concept.id)  # before the write is acknowledged
    view.put_concept(concept, vector)
    return concept.id
