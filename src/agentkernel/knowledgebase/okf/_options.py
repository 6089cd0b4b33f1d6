"""The ``OKFManager``'s constructor options, checked before anything is opened.

A wrong type or an out-of-range value fails construction with a message naming the option
and the value given, before the store is listed or an index opened.
"""

from __future__ import annotations

from agentkernel.knowledgebase._limits import is_positive

__all__ = ["check_options"]


def check_options(
    refresh_seconds: float | None,
    max_concepts: int,
    write_actor: str | None,
    write_prefix: str,
    description: str | None,
    legacy_dates: bool,
    index_fallback: str | None,
) -> None:
    """Refuse an option of the wrong type or out of range (see ``OKFManager.__init__``).

    Args:
        refresh_seconds: Seconds between refreshes, or ``None``.
        max_concepts: The most concepts served.
        write_actor: ``generated.by`` of authored documents, or ``None``.
        write_prefix: Directory authored documents are written to.
        description: What the agent is told the bundle holds, or ``None``.
        legacy_dates: Whether a bare-date ``stale_after`` is read as midnight UTC.
        index_fallback: ``"walk"`` or ``None``.

    Raises:
        TypeError: An option has the wrong type.
        ValueError: An option is out of range.
    """
    if refresh_seconds is not None and not is_positive(refresh_seconds):
        raise ValueError(
            f"refresh_seconds must be a positive number or None, got {refresh_seconds!r}"
        )
    if not is_positive(max_concepts, whole=True):
        raise ValueError(f"max_concepts must be a positive integer, got {max_concepts!r}")
    if write_actor is not None and (not isinstance(write_actor, str) or not write_actor.strip()):
        raise ValueError(f"write_actor must be a non-empty string or None, got {write_actor!r}")
    if not isinstance(write_prefix, str):
        raise TypeError(f"write_prefix must be a string, got {type(write_prefix).__name__}")
    if description is not None and not isinstance(description, str):
        raise TypeError(f"description must be a string or None, got {type(description).__name__}")
    if not isinstance(legacy_dates, bool):
        raise TypeError(f"legacy_dates must be True or False, got {legacy_dates!r}")
    if index_fallback not in (None, "walk"):
        raise ValueError(f"index_fallback must be 'walk' or None, got {index_fallback!r}")
