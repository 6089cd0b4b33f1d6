"""The three-step knowledge run every framework adapter is proven with, offline.

A scripted model (each framework's own model interface, in its test module) plays the agent:
it calls ``get_schemas``, then ``search_kb``, then ``fetch_kb`` on an id it reads out of the
search output, and finally answers with the fact it read out of the fetched document. The
knowledge is the real GA4 OKF bundle in ``shared/data/okf-bundles`` (beside the clone), served
by a real ``OKFManager`` over a read-only ``LocalDocumentStore``.

This module holds what the frameworks share: the bundle, the builder, the script's
arguments, and the parsing a model would do of tool outputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from agentkernel.knowledgebase.okf.manager import OKFManager
from agentkernel.storage.local import LocalDocumentStore
from tests.support import okf_bundle

BACKEND = "ga4"
QUESTION = "Who counts as a purchaser in the GA4 audience metrics?"
SEARCH_QUERY = "purchasers audience"
EXPECTED_ID = "references/metrics/purchasers"
#: A sentence only the body of the fetched document holds (search output shows only the
#: frontmatter description).
EXPECTED_FACT = "users who have logged either `in_app_purchase` or `purchase`"

_ID = re.compile(r"^- \[([^\]]+)\]", re.MULTILINE)


def ga4_bundle() -> Path:
    """The GA4 bundle directory (a missing ``shared/`` follows ``tests.support.missing``)."""
    return okf_bundle("ga4").resolve()


def ga4_builder() -> KnowledgeBuilder:
    """A KnowledgeBuilder over the read-only GA4 bundle, backend name ``ga4``."""
    store = LocalDocumentStore(ga4_bundle(), writable=False)
    return KnowledgeBuilder([OKFManager(store, name=BACKEND, refresh_seconds=None)])


def ga4_tools() -> list[Callable[..., str]]:
    """The tool callables the builder emits for the bundle (no ``write_kb``: read-only)."""
    return ga4_builder().build(writable=False)


def first_id(search_output: str) -> str:
    """The first ``[id]`` a search output lists, as a model would read it."""
    match = _ID.search(search_output)
    if match is None:
        raise AssertionError(f"no [id] in the search output:\n{search_output}")
    return match.group(1)


def fact_from(fetch_output: str) -> str:
    """The first body line of a fetched document (after its frontmatter)."""
    parts = fetch_output.split("\n---\n", 2)
    body = parts[2] if len(parts) == 3 else fetch_output
    for line in body.splitlines():
        if line.strip():
            return line.strip()
    raise AssertionError(f"the fetched document has no body:\n{fetch_output}")


def schemas_backend(schemas_output: str) -> str:
    """The backend a model would pick from ``get_schemas``: the one declaring search."""
    schemas: dict[str, Any] = json.loads(schemas_output)
    for name, schema in schemas.items():
        if schema.get("capabilities", {}).get("search"):
            return name
    raise AssertionError(f"no searchable backend in get_schemas:\n{schemas_output}")


def answer(fact: str) -> str:
    """The final answer the scripted model gives."""
    return f"According to the knowledge base: {fact}"
