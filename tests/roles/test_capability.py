"""OKFCapability from configuration alone: validation, roles, tools, prompts, permission.

Everything here reads configuration only; no bundle is opened (the bundle paths do not even
exist), which is itself the laziness guarantee for deciding tools and prompts.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agentkernel._tooling.result import is_error
from agentkernel.errors import AKConfigError
from agentkernel.roles import OKFCapability


def capability(**databases: dict[str, Any]) -> OKFCapability:
    cap = OKFCapability.from_config({"okf": {"databases": databases}})
    assert cap is not None
    return cap


def db(uri: str = "./nowhere", type: str = "local", **roles: list[str]) -> dict[str, Any]:
    return {"type": type, "uri": uri, **roles}


READ_TOOLS = [
    "get_schemas",
    "read_kb",
    "get_all_kb_descriptions",
    "search_kb",
    "fetch_kb",
    "browse_kb",
]
WRITE_TOOLS = [
    "get_schemas",
    "read_kb",
    "write_kb",
    "get_all_kb_descriptions",
    "search_kb",
    "fetch_kb",
    "browse_kb",
]


def test_no_okf_block_means_no_capability() -> None:
    assert OKFCapability.from_config({"schedule": {}}) is None


def test_tools_follow_roles() -> None:
    cap = capability(
        warehouse=db(consumer=["Support"], producer=["Ingest"], curator=["Steward"]),
    )
    assert cap.agents() == ["Support", "Ingest", "Steward"]
    assert [t.__name__ for t in cap.tools_for("Support")] == READ_TOOLS
    assert [t.__name__ for t in cap.tools_for("Ingest")] == WRITE_TOOLS
    assert [t.__name__ for t in cap.tools_for("Steward")] == WRITE_TOOLS
    assert cap.tools_for("Stranger") == []
    assert cap.instructions_for("Stranger") == ""


def test_producer_and_curator_differ_only_in_their_sentence() -> None:
    cap = capability(w=db(description="Warehouse", producer=["P"], curator=["C"], consumer=["R"]))
    producer, curator, reader = (cap.instructions_for(a) for a in ("P", "C", "R"))
    assert "'w' (Warehouse): you are its producer. Add new knowledge" in producer
    assert "'w' (Warehouse): you are its curator. Review, correct, update and maintain" in curator
    assert producer.replace(producer.splitlines()[1], "") == curator.replace(
        curator.splitlines()[1], ""
    )
    for text in (producer, curator, reader):
        assert (
            "get_schemas()" in text and "index.md" in text and "trust" in text and "stale" in text
        )
    assert "write_kb" in producer and "write_kb" not in reader


def test_permission_is_per_agent_and_database() -> None:
    cap = capability(
        warehouse=db("./warehouse", producer=["Ingest_Agent"]),
        policies=db("./policies", consumer=["Ingest_Agent"]),
        secrets=db("./secrets", consumer=["Other"]),
    )
    tools = {t.__name__: t for t in cap.tools_for("Ingest_Agent")}
    refused = tools["write_kb"]("policies", text="x")
    assert refused == (
        "Agent 'Ingest_Agent' has read-only access to 'policies'. "
        "Knowledge bases it may write to: ['warehouse']."
    )
    assert is_error(refused)  # an error result, like every refusal (MCP isError: true)
    assert tools["read_kb"]("secrets", "x") == (
        "Unknown backend 'secrets'. Available: ['warehouse', 'policies']"
    )
    assert tools["write_kb"]("secrets", text="x") == (
        "Unknown backend 'secrets'. Available: ['warehouse', 'policies']"
    )


def test_write_guard_keeps_the_tool_signature_and_docstring() -> None:
    cap = capability(w=db(producer=["P"]))
    write_kb = next(t for t in cap.tools_for("P") if t.__name__ == "write_kb")
    assert list(inspect.signature(write_kb).parameters) == [
        "backend",
        "text",
        "source",
        "query",
        "params_json",
    ]
    assert "Args:" in (write_kb.__doc__ or "")


def test_same_agent_as_producer_and_curator_of_one_database_is_an_error() -> None:
    with pytest.raises(AKConfigError, match=r"'w' names \['A'\] as both producer and curator"):
        capability(w=db(producer=["A"], curator=["A"]))
    # across databases it is legitimate
    capability(w=db(producer=["A"]), v=db(curator=["A"]))


def test_database_naming_no_agent_is_an_error() -> None:
    with pytest.raises(AKConfigError, match="'lonely' names no agent"):
        capability(ok=db(consumer=["A"]), lonely=db())


@pytest.mark.parametrize(
    ("kind", "uri"),
    [("local", "s3://bucket/prefix"), ("s3", "./bundle"), ("s3", "file:///srv/kb")],
)
def test_type_disagreeing_with_uri_names_database_type_and_uri(kind: str, uri: str) -> None:
    with pytest.raises(AKConfigError) as info:
        capability(w=db(uri, type=kind, consumer=["A"]))
    message = str(info.value)
    assert "'w'" in message and repr(kind) in message and repr(uri) in message


def test_unknown_type_is_an_error() -> None:
    with pytest.raises(AKConfigError, match="unknown type 'ftp'"):
        capability(w=db(type="ftp", consumer=["A"]))
