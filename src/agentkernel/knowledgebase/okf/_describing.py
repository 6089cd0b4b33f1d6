"""What an OKF bundle says about itself: the description agents route by, and its schema.

``OKFManager.get_description`` and ``get_schemas`` answer from these two functions, given
what the manager serves now (its view's tree and concept types, its diagnostics); neither
reads the store.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentkernel.knowledgebase.okf import _browse as navigation
from agentkernel.knowledgebase.okf.manifest import BundleContents

__all__ = ["OKF_VERSION", "SCHEMA_USAGE", "bundle_schema", "describe_bundle"]

OKF_VERSION = "0.2"

_TYPES_SHOWN = 20  # concept types named in a description

SCHEMA_USAGE = (
    "browse_kb with path '' shows the root (an index.md verbatim when the bundle has "
    "one); search_kb ranks concepts by title, description, tags, type, id and body; "
    "fetch_kb takes the [ids] shown (comma-separated) and returns whole documents "
    "with their links. Every record states its trust tier (unverified, "
    "machine-confirmed, human-reviewed) and whether it is stale; weigh both."
)
"""How an agent uses the bundle's tools, as the schema says it."""


def describe_bundle(
    label: str,
    concepts: int,
    types: Counter[str],
    namespaces: list[str],
    diagnostics: list[str],
    *,
    description: str | None,
    semantic: bool,
) -> str:
    """Describe the bundle for routing, with its diagnostics surfaced.

    Args:
        label: The store's label (never an absolute local path).
        concepts: How many concepts are served.
        types: Concepts per type.
        namespaces: The root's directories.
        diagnostics: Every current problem.
        description: The description the manager was given, if any.
        semantic: Whether search is hybrid (by meaning and words).

    Returns:
        The given description, or one derived from the manifest, followed by a count
        and the first few diagnostics when there are any.
    """
    if description:
        text = description
    else:
        kinds = ", ".join(t for t, _ in types.most_common(_TYPES_SHOWN)) or "none"
        if len(types) > _TYPES_SHOWN:
            kinds += f" and {len(types) - _TYPES_SHOWN} more"
        where = f" in {', '.join(namespaces[:8])}" if namespaces else ""
        text = (
            f"An OKF bundle ({label!r}) of {concepts} concepts "
            f"(types: {kinds}){where}. Browse it from the root, search it "
            f"{'by meaning and words' if semantic else 'lexically'}, "
            "fetch whole documents by id."
        )
    if diagnostics:
        shown = "; ".join(diagnostics[:3])
        more = f" (and {len(diagnostics) - 3} more)" if len(diagnostics) > 3 else ""
        text += f" {len(diagnostics)} diagnostic(s): {shown}{more}."
    return text


def bundle_schema(
    label: str, served: BundleContents, types: Counter[str], diagnostics: int, max_concepts: int
) -> dict[str, Any]:
    """The bundle's part of the schema: format, version, counts, types, reserved files.

    Args:
        label: The store's label.
        served: What the manager serves now.
        types: Concepts per type.
        diagnostics: How many current problems there are.
        max_concepts: The most concepts served.

    Returns:
        The schema's entries (the view's, computations, ``write_prefix`` and ``usage`` are
        added by the manager).
    """
    root_index = navigation.index_path(served, "")
    root_text = served.reserved[root_index].text if root_index else None
    reserved = sorted(served.reserved)
    return {
        "format": "Open Knowledge Format",
        "okf_version": navigation.declared_version(root_text) or OKF_VERSION,
        "location": label,
        "concepts": len(served.concepts),
        "types": dict(types.most_common()),
        "namespaces": served.children("").directories,
        "reserved_files": reserved[:200],
        "reserved_file_count": len(reserved),
        "diagnostics": diagnostics,
        "truncated": served.truncated,
        "max_concepts": max_concepts,
    }
