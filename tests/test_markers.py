"""Server markers are derived from what a test's code reaches (``tests/support/markers.py``).

Reads the real test modules' syntax trees; nothing is run or started.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.markers import reached

TESTS = Path(__file__).parent


def test_a_test_starting_children_is_marked() -> None:
    # through a module helper (spawn -> subprocess.Popen)
    path = TESTS / "knowledgestore/test_concurrency.py"
    assert "subprocess" in reached(
        path, ["test_two_processes_creating_200_pages_each_lose_nothing"]
    )
    # subprocess.run in the test itself
    path = TESTS / "retrieval/test_index.py"
    assert reached(path, ["test_two_processes_rank_alike_whatever_their_hash_seed"]) == {
        "subprocess"
    }


def test_an_mcp_server_over_stdio_is_marked() -> None:
    path = TESTS / "knowledgestore/test_server.py"
    assert "mcp_process" in reached(path, ["test_tools_listed_with_annotations"])


def test_a_fixture_of_the_module_carries_its_marker() -> None:
    path = TESTS / "security/test_sql_guard_attacks.py"
    assert reached(path, ["trino"]) == {"trino"}  # the fixture starts the Trino test server


def test_a_helper_imported_from_another_test_module_is_followed() -> None:
    # test_view_graph runs run_view, imported from tests.cli.test_view
    path = TESTS / "cli/test_view_graph.py"
    names = [n for n in path.read_text().split() if n.startswith("test_")]
    assert any("subprocess" in reached(path, [n.split("(")[0]]) for n in names)


def test_pure_tests_are_not_marked() -> None:
    path = TESTS / "retrieval/test_ranking.py"
    assert reached(path, ["test_a_higher_tier_ranks_first_whatever_the_scores"]) == set()


def test_a_helper_of_a_module_imported_under_an_alias_is_followed() -> None:
    # test_auth_roles starts its servers through ``a.<helper>``: ``from tests.mcp import
    # auth_support as a``; no hand-written marker is needed
    path = TESTS / "mcp/test_auth_roles.py"
    assert "subprocess" in reached(path, ["test_each_identity_sees_and_does_what_its_role_allows"])
    assert "pytestmark" not in path.read_text(encoding="utf-8")
