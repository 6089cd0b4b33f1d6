"""A contract check for backend authors: does the declaration match what is implemented?

Run it in your own tests against a connected backend::

    from agentkernel.knowledgebase.testing import assert_backend_contract

    def test_my_backend_keeps_its_contract(my_backend):
        assert_backend_contract(my_backend, search_query="invoices", sample_write=None)

What it checks:

* ``backend_name`` is a non-empty string and ``get_description()`` a string;
* ``schema()`` works, is JSON-serialisable, starts with ``backend`` and ends with the
  declared ``capabilities``;
* each declared operation is overridden (not the base class's refusal) and returns a list of
  records ``{"text": str, "metadata": mapping}`` within the limit it was given;
* each undeclared operation raises ``KnowledgeCapabilityError`` (not ``NotImplementedError``,
  not an empty result);
* on a fetch-capable backend every record carries a comma-free ``metadata["id"]``, and
  fetching the ids a search or browse returned gives those records back.

Writes are checked only when you pass ``sample_write`` (writing changes your store).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentkernel.knowledgebase.base import _OPERATION_FLAGS, KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeCapabilityError
from agentkernel.knowledgebase.model import Record


def check_backend(
    backend: KnowledgeBase,
    *,
    search_query: str = "knowledge",
    query_statement: str | None = None,
    browse_path: str = "",
    fetch_ids: Sequence[str] | None = None,
    sample_write: Sequence[Record] | None = None,
) -> list[str]:
    """Check a backend against its declaration and return every problem found.

    Args:
        backend: A constructed, connected backend.
        search_query: Text for ``search`` when it is declared.
        query_statement: A statement for ``query`` when it is declared; without one the
            query call is only checked for being implemented.
        browse_path: The namespace passed to ``browse`` when it is declared.
        fetch_ids: Ids for ``fetch``; by default the ids that search or browse returned.
        sample_write: Records to write when ``writable`` is declared; ``None`` skips the
            write call (writing changes the store).

    Returns:
        One message per problem; empty when the backend keeps its contract.
    """
    problems: list[str] = []
    caps = backend.capabilities
    name = _name(backend, problems)
    try:
        description = backend.get_description()
        if not isinstance(description, str):
            problems.append(f"get_description() returned {type(description).__name__}, not str")
    except Exception as exc:
        problems.append(f"get_description() raised {type(exc).__name__}: {exc}")
    _check_schema(backend, problems)

    seen_ids: list[str] = []
    callable_ops: set[str] = set()
    for method_name, flag in _OPERATION_FLAGS.items():
        declared = bool(getattr(caps, flag))
        if declared and getattr(type(backend), method_name) is getattr(KnowledgeBase, method_name):
            problems.append(f"{name} declares {flag} but does not implement {method_name}()")
        elif declared:
            callable_ops.add(method_name)
        else:
            _expect_refusal(backend, method_name, problems)

    def run(label: str, call: Callable[[], Any], limit: int | None) -> list[Record]:
        try:
            rows = call()
        except Exception as exc:
            problems.append(f"{label} raised {type(exc).__name__}: {exc}")
            return []
        return _check_rows(label, rows, limit, caps.fetch, problems)

    if "search" in callable_ops:
        rows = run(f"search({search_query!r}, limit=2)", lambda: backend.search(search_query, 2), 2)
        seen_ids += _ids(rows)
    if "query" in callable_ops and query_statement is not None:
        run(f"query({query_statement!r}, limit=2)", lambda: backend.query(query_statement, 2), 2)
    if "browse" in callable_ops:
        rows = run(f"browse({browse_path!r}, limit=5)", lambda: backend.browse(browse_path, 5), 5)
        seen_ids += _ids(rows)
    if "fetch" in callable_ops:
        wanted = list(fetch_ids) if fetch_ids is not None else seen_ids[:3]
        rows = run(f"fetch({wanted!r})", lambda: backend.fetch(wanted), None)
        got = set(_ids(rows))
        lost = [i for i in wanted if i not in got]
        if lost:
            problems.append(f"fetch() did not return ids it listed or was given: {lost}")
    if "write" in callable_ops and sample_write is not None:
        try:
            backend.write(list(sample_write))
        except Exception as exc:
            problems.append(f"write() raised {type(exc).__name__}: {exc}")
    return problems


def assert_backend_contract(backend: KnowledgeBase, **kwargs: Any) -> None:
    """Fail with every problem at once when a backend breaks its contract.

    Args:
        backend: A constructed, connected backend.
        **kwargs: Passed to :func:`check_backend`.

    Raises:
        AssertionError: Listing each problem found.
    """
    problems = check_backend(backend, **kwargs)
    if problems:
        raise AssertionError("Backend contract broken:\n- " + "\n- ".join(problems))


def _name(backend: KnowledgeBase, problems: list[str]) -> str:
    try:
        name = backend.backend_name
    except Exception as exc:
        problems.append(f"backend_name raised {type(exc).__name__}: {exc}")
        return type(backend).__name__
    if not isinstance(name, str) or not name.strip():
        problems.append(f"backend_name must be a non-empty string, got {name!r}")
        return type(backend).__name__
    return name


def _check_schema(backend: KnowledgeBase, problems: list[str]) -> None:
    try:
        schema = backend.schema()
    except Exception as exc:
        problems.append(f"schema() raised {type(exc).__name__}: {exc}")
        return
    keys = list(schema)
    if not keys or keys[0] != "backend" or keys[-1] != "capabilities":
        problems.append(f"schema() must start with 'backend' and end with 'capabilities': {keys}")
    if schema.get("capabilities") != backend.capabilities.as_dict():
        problems.append("schema()['capabilities'] differs from the declaration")
    try:
        json.dumps(schema)
    except (TypeError, ValueError) as exc:
        problems.append(f"schema() is not JSON-serialisable: {exc}")


def _expect_refusal(backend: KnowledgeBase, method_name: str, problems: list[str]) -> None:
    calls: dict[str, Callable[[], Any]] = {
        "search": lambda: backend.search("probe", 1),
        "query": lambda: backend.query("probe", 1),
        "fetch": lambda: backend.fetch(["probe"]),
        "browse": lambda: backend.browse("", 1),
        "write": lambda: backend.write([{"text": "probe", "metadata": {}}]),
    }
    try:
        calls[method_name]()
    except KnowledgeCapabilityError:
        return
    except Exception as exc:
        problems.append(
            f"undeclared {method_name}() raised {type(exc).__name__}, not KnowledgeCapabilityError"
        )
        return
    problems.append(
        f"undeclared {method_name}() returned instead of raising KnowledgeCapabilityError"
    )


def _check_rows(
    label: str, rows: Any, limit: int | None, needs_ids: bool, problems: list[str]
) -> list[Record]:
    if not isinstance(rows, list):
        problems.append(f"{label} returned {type(rows).__name__}, not a list of records")
        return []
    if limit is not None and len(rows) > limit:
        problems.append(f"{label} returned {len(rows)} records, more than the limit {limit}")
    good: list[Record] = []
    for row in rows:
        if not isinstance(row, Mapping) or not isinstance(row.get("text"), str):
            problems.append(f"{label} returned a record without str 'text': {row!r:.120}")
            continue
        metadata = row.get("metadata")
        if not isinstance(metadata, Mapping):
            problems.append(f"{label} returned a record without a 'metadata' mapping")
            continue
        if needs_ids:
            record_id = metadata.get("id")
            if not isinstance(record_id, str) or not record_id or "," in record_id:
                problems.append(
                    f"{label}: a fetch-capable record needs a comma-free id, got {record_id!r}"
                )
        good.append(row)
    return good


def _ids(rows: Sequence[Record]) -> list[str]:
    return [str(r["metadata"]["id"]) for r in rows if r.get("metadata", {}).get("id")]
