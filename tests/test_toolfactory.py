"""The one tool factory (``agentkernel._tooling.factory.make_tool``) behind both tool surfaces.

Real components: a ``KnowledgeBuilder`` over an ``OKFManager`` on a local bundle in a temporary
folder, and a ``FileKnowledgeStore`` in a temporary folder; nothing is mocked.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

import pytest

from agentkernel._tooling.errors import ToolRefusal
from agentkernel._tooling.factory import make_tool, reads_only, tool_effects
from agentkernel._tooling.result import is_error
from agentkernel._tooling.spec import tool_spec
from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.knowledgestore import FileKnowledgeStore, create_knowledge_tools
from agentkernel.mcp._tools import tool_annotations
from agentkernel.storage import LocalDocumentStore


class Refused(Exception):
    pass


def _tide(place: str, days: int = 1) -> str:
    """Tell the tide.

    Args:
        place: Where.
        days: How many days ahead.

    Returns:
        The tide.
    """
    if place == "nowhere":
        raise Refused("There is no sea at /srv/data/nowhere.")
    if place == "broken":
        raise RuntimeError("disk failed under /srv/data/tides")
    return f"{place}: high at noon for {days} day(s)"


def test_a_made_tool_keeps_name_signature_and_docstring() -> None:
    tool = make_tool(_tide, read_only=True)
    assert tool.__name__ == "_tide"
    assert inspect.signature(tool) == inspect.signature(_tide)
    spec = tool_spec(tool)
    assert spec.description == "Tell the tide."
    assert [p.name for p in spec.parameters] == ["place", "days"]
    assert spec.parameters[0].description == "Where."
    assert tool("Brest", days=2) == "Brest: high at noon for 2 day(s)"
    assert not is_error(tool("Brest"))


def test_a_made_tool_answers_refusals_and_failures_instead_of_raising(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tool = make_tool(_tide, read_only=True, refusals=(Refused,))
    refused = tool("nowhere")
    assert is_error(refused) and refused == "There is no sea at .../nowhere."
    with caplog.at_level(logging.ERROR, logger="agentkernel._tooling.factory"):
        failed = tool("broken")
    assert is_error(failed)
    assert failed == "Tool _tide failed: RuntimeError: disk failed under .../tides"
    assert "_tide" in caplog.text  # logged with its traceback, for the operator
    custom = make_tool(_tide, read_only=True, failure=lambda exc: f"Try later ({exc})")
    assert custom("nowhere") == "Try later (There is no sea at .../nowhere.)"


def test_a_made_tool_refuses_coroutines() -> None:
    async def later() -> str:
        return ""

    with pytest.raises(TypeError, match="synchronous"):
        make_tool(later, read_only=True)


def _bundle(root: Path) -> Path:
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "tides.md").write_text(
        "---\ntitle: Tides\n---\n# Tides\nSpring tides follow the full moon.\n", encoding="utf-8"
    )
    return root


def test_both_surfaces_make_every_tool_with_the_factory_and_mcp_hints_agree(
    tmp_path: Path,
) -> None:
    okf = OKFManager(LocalDocumentStore(_bundle(tmp_path / "bundle")), name="OKF")
    builder = KnowledgeBuilder([okf])
    store = FileKnowledgeStore(tmp_path / "store")
    surfaces = [
        (builder.build(), tool_annotations),
        (
            create_knowledge_tools(store, interactive=True, confirm=lambda q: False),
            tool_annotations,
        ),
    ]
    reading = {"get_schemas", "get_all_kb_descriptions", "read_kb", "search_kb", "fetch_kb"}
    reading |= {"browse_kb", "knowledge_index", "knowledge_search", "knowledge_read"}
    reading |= {"knowledge_check"}
    for tools, hints in surfaces:
        for tool in tools:
            # stated once, by make_tool(read_only=...): the MCP hint is read from the tool
            assert reads_only(tool) is hints(tool)["readOnlyHint"], tool.__name__
            assert reads_only(tool) is (tool.__name__ in reading), tool.__name__
    tools = {t.__name__: t for t in builder.build()}
    assert "OKF" in tools["get_all_kb_descriptions"]()
    assert is_error(tools["read_kb"]("nope", "x"))


def test_a_refusal_raised_in_a_tool_is_its_answer_word_for_word() -> None:
    def lookup(place: str) -> str:
        """Look a place up.

        Args:
            place: Where.
        """
        raise ToolRefusal(f"Unknown place {place!r} under /srv/data. Places: ['Brest']")

    answer = make_tool(lookup, read_only=True)("/srv/data/x")
    assert is_error(answer)
    # the refusal is worded where it is decided: no path is cut, nothing is added
    assert answer == "Unknown place '/srv/data/x' under /srv/data. Places: ['Brest']"


def test_effects_are_stated_where_the_tool_is_made() -> None:
    tool = make_tool(_tide, read_only=False, destructive=True)
    effects = tool_effects(tool)
    assert effects is not None and not effects.read_only and effects.destructive
    assert tool_effects(_tide) is None and reads_only(_tide) is None
    with pytest.raises(ValueError, match="read-only tool cannot be destructive"):
        make_tool(_tide, read_only=True, destructive=True)


def test_store_tools_say_which_ones_are_destructive(tmp_path: Path) -> None:
    store = FileKnowledgeStore(tmp_path / "store")
    tools = create_knowledge_tools(store, interactive=True, confirm=lambda q: False)
    destructive = {t.__name__ for t in tools if (e := tool_effects(t)) and e.destructive}
    assert destructive == {
        "knowledge_edit",
        "knowledge_rewrite",
        "knowledge_supersede",
        "knowledge_retire",
    }
