"""Curated stores in the okf block: the roles' tools, the instructions, the refusals.

Real: ``OKFCapability`` over a configuration mapping naming a curated store in a temporary
folder (a ``FileKnowledgeStore``), its tools called as an agent framework calls them. No
server; nothing is mocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentkernel.errors import AKConfigError
from agentkernel.roles import OKFCapability


def _capability(tmp_path: Path, **store: Any) -> OKFCapability:
    entry = {"uri": str(tmp_path / "knowledge"), **store}
    found = OKFCapability.from_config({"okf": {"stores": {"team": entry}}})
    assert found is not None
    return found


def test_each_role_gets_its_tools_and_instructions(tmp_path: Path) -> None:
    okf = _capability(
        tmp_path,
        description="What the team learned",
        consumer=["reader"],
        producer=["writer"],
        curator=["steward"],
    )
    names = {agent: [t.__name__ for t in okf.tools_for(agent)] for agent in okf.agents()}
    assert names["reader"] == ["knowledge_index", "knowledge_search", "knowledge_read"]
    assert names["writer"] == names["reader"] + [
        "knowledge_create",
        "knowledge_edit",
        "knowledge_rewrite",
        "knowledge_supersede",
        "knowledge_log",
    ]
    # retire asks the person: only a server that can ask offers it (serve --config)
    assert names["steward"] == names["writer"] + ["knowledge_check"]
    assert okf.tools_for("nobody") == [] and okf.instructions_for("nobody") == ""
    said = okf.instructions_for("writer")
    assert "'team' (What the team learned): you are its producer." in said

    writer = {t.__name__: t for t in okf.tools_for("writer")}
    assert writer["knowledge_create"]("concept", "tides", "Tides", "Twice a day.") == (
        "Created concept/tides."
    )
    reader = {t.__name__: t for t in okf.tools_for("reader")}
    assert "concept/tides" in reader["knowledge_search"]("twice")
    assert okf.stores.store("team") is okf.stores.store("team")  # one store, shared


@pytest.mark.parametrize(
    ("okf", "says"),
    [
        ({"stores": {"team": {"uri": "./k"}}}, "okf store 'team' names no agent"),
        (
            {"stores": {"team": {"uri": "./k", "producer": ["A"], "curator": ["A"]}}},
            "names ['A'] as both producer and curator",
        ),
        (
            {
                "databases": {"team": {"type": "local", "uri": "./b", "consumer": ["A"]}},
                "stores": {"team": {"uri": "./k", "consumer": ["A"]}},
            },
            "okf store 'team' has the name of a database",
        ),
        (
            {
                "stores": {
                    "one": {"uri": "./k1", "consumer": ["A"]},
                    "two": {"uri": "./k2", "producer": ["A"]},
                }
            },
            "Agent 'A' holds roles in two stores ('one' and 'two')",
        ),
        ({"stores": {"team": {"uri": "  ", "consumer": ["A"]}}}, "okf store 'team', field 'uri'"),
        (
            {"stores": {"team": {"uri": "ftp://x/y", "consumer": ["A"]}}},
            "Unknown store location 'ftp://x/y'",
        ),
    ],
)
def test_a_store_mistake_is_refused_naming_the_store(okf: dict[str, Any], says: str) -> None:
    with pytest.raises(AKConfigError) as raised:
        capability = OKFCapability.from_config({"okf": okf})
        assert capability is not None
        capability.stores.open_all()
    assert says in str(raised.value)
