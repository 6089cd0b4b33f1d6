"""Neo4jManager against a real Bolt + Cypher server.

Real: the official ``neo4j`` driver, the Bolt wire protocol and Cypher execution, served by
FalkorDB 4.18 on 127.0.0.1 (``tests/support/fixtures_neo4j.py``), or by a real Neo4j when
``AK_TEST_NEO4J_URI`` is set. Nothing is mocked. The one stand-in is
``tests/support/bolt_auth_refuser.py``, a Bolt server that refuses every login as Neo4j does
(FalkorDB has no authentication), for the wrong-password message. Tests marked
``neo4j_only`` check behaviour FalkorDB does not share (read access mode, rollback, auth,
syntax error codes) and are skipped against it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import subprocess
import sys
import threading
from urllib.parse import urlsplit

import pytest

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase import KnowledgeBuilder, KnowledgeError
from agentkernel.knowledgebase.testing import assert_backend_contract
from tests.support import require_extra

require_extra("neo4j", "neo4j")

from agentkernel.knowledgebase.neo4j import Neo4jManager, stable_id  # noqa: E402
from tests.support.bolt_auth_refuser import BoltAuthRefuser  # noqa: E402
from tests.support.fixtures_neo4j import BoltServer, _free_port, relay_thread  # noqa: E402

_ENV = ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE")


@pytest.fixture(autouse=True)
def _no_neo4j_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


def _manager(server: BoltServer, **kwargs: object) -> Neo4jManager:
    options: dict[str, object] = {
        "uri": server.uri,
        "user": server.user,
        "password": server.password,
        "connection_timeout": 5.0,
        "max_transaction_retry_time": 1.0,
    }
    options.update(kwargs)
    return Neo4jManager(**options).add_schema({"description": "test graph"})  # type: ignore[arg-type]


@pytest.fixture
def kb(bolt_clean: BoltServer) -> Neo4jManager:
    manager = _manager(bolt_clean, name="Graph")
    yield manager
    manager.close()


def _tools(kb: Neo4jManager) -> dict[str, object]:
    return {tool.__name__: tool for tool in KnowledgeBuilder([kb]).build()}


def _count(kb: Neo4jManager, label: str) -> int:
    rows = kb.query(f"MATCH (n:{label}) RETURN count(n) AS c")
    return int(rows[0]["metadata"]["c"])


def test_declaration_and_tools(kb: Neo4jManager) -> None:
    caps = kb.capabilities
    assert caps.kinds == ["graph", "structured"]
    assert (caps.query, caps.query_language, caps.writable) == (True, "cypher", True)
    assert not (caps.search or caps.fetch or caps.browse)
    assert list(_tools(kb)) == ["get_schemas", "read_kb", "write_kb", "get_all_kb_descriptions"]
    schema = json.loads(_tools(kb)["get_schemas"]())  # type: ignore[operator]
    assert schema["Graph"]["capabilities"]["query_language"] == "cypher"


def test_contract(kb: Neo4jManager) -> None:
    kb.write([{"text": "Contract seed", "metadata": {"source": "test"}}])
    assert_backend_contract(
        kb,
        query_statement="MATCH (k:Knowledge) RETURN k.text AS text, k.source AS source",
        sample_write=[{"text": "Contract probe", "metadata": {"source": "test"}}],
    )
    assert _count(kb, "Knowledge") == 2


def test_write_kb_text_becomes_a_node_read_back_through_read_kb(kb: Neo4jManager) -> None:
    tools = _tools(kb)
    said = tools["write_kb"]("Graph", text="Alice manages the Berlin office.", source="hr")  # type: ignore[operator]
    node_id = stable_id("Alice manages the Berlin office.", "hr")
    assert said == f"Wrote 1 record(s) to 'Graph': ['{node_id}']"
    shown = tools["read_kb"](  # type: ignore[operator]
        "Graph", "MATCH (k:Knowledge) RETURN k.text AS text, k.source AS source"
    )
    assert shown == "- Alice manages the Berlin office. (source: hr)"
    row = kb.query("MATCH (k:Knowledge) RETURN k")[0]["metadata"]["k"]
    assert row["labels"] == ["Knowledge"]
    props = row["properties"]
    assert props["id"] == node_id and props["source"] == "hr"
    assert props["created_at"].endswith("+00:00") and props["updated_at"] >= props["created_at"]


def test_text_node_keeps_metadata_as_properties(kb: Neo4jManager) -> None:
    kb.write(
        [
            {
                "text": "Quarterly numbers are published on the 5th.",
                "metadata": {"id": "q-1", "title": "Numbers", "tags": ["finance", "ops"],
                             "nested": {"a": [1, 2]}, "skip": None},
            }
        ]
    )  # fmt: skip
    props = kb.query("MATCH (k:Knowledge {id: 'q-1'}) RETURN k")[0]["metadata"]["k"]["properties"]
    assert props["title"] == "Numbers" and props["tags"] == ["finance", "ops"]
    assert json.loads(props["nested"]) == {"a": [1, 2]}
    assert "skip" not in props


def test_write_kb_query_with_params_and_graph_values(kb: Neo4jManager) -> None:
    tools = _tools(kb)
    said = tools["write_kb"](  # type: ignore[operator]
        "Graph",
        query="CREATE (:Person {name: $name})-[:WORKS_AT {since: $since}]->(:Office {city: $city})",
        params_json='{"name": "Ada", "since": 2021, "city": "Paris"}',
    )
    assert said == "Wrote 1 record to 'Graph'."
    rows = kb.query("MATCH (p:Person)-[r:WORKS_AT]->(o:Office) RETURN p, r, o")
    assert len(rows) == 1
    row = rows[0]["metadata"]
    assert row["p"]["labels"] == ["Person"] and row["p"]["properties"] == {"name": "Ada"}
    assert row["r"]["type"] == "WORKS_AT" and row["r"]["properties"] == {"since": 2021}
    assert (row["r"]["start"], row["r"]["end"]) == (
        row["p"]["element_id"],
        row["o"]["element_id"],
    )
    assert json.loads(rows[0]["text"]) == row  # the text is the row as JSON
    path = kb.query("MATCH p = (:Person)-[:WORKS_AT]->(:Office) RETURN p")[0]["metadata"]["p"]
    assert [n["labels"] for n in path["nodes"]] == [["Person"], ["Office"]]
    assert [r["type"] for r in path["relationships"]] == ["WORKS_AT"]
    shown = tools["read_kb"]("Graph", "MATCH (o:Office) RETURN o.city AS city")  # type: ignore[operator]
    assert shown == '- {"city": "Paris"}'


def test_statement_sees_text_and_source_as_parameters(kb: Neo4jManager) -> None:
    said = _tools(kb)["write_kb"](  # type: ignore[operator]
        "Graph", text="Bob likes tea", source="chat", query="CREATE (:Note {t: $text, s: $source})"
    )
    assert said == "Wrote 1 record to 'Graph'."
    rows = kb.query("MATCH (n:Note) RETURN n.t AS t, n.s AS s")
    assert rows[0]["metadata"] == {"t": "Bob likes tea", "s": "chat"}


def test_legacy_cypher_keys_still_write_and_generic_keys_win(kb: Neo4jManager) -> None:
    kb.write(
        [
            {"text": "", "metadata": {"cypher_query": "CREATE (:Legacy {v: $v})",
                                      "cypher_params": {"v": 7}}},
            {"text": "", "metadata": {"query": "CREATE (:Generic {v: $v})", "params": {"v": 1},
                                      "cypher_query": "CREATE (:Legacy {v: 99})"}},
        ]
    )  # fmt: skip
    assert [r["metadata"]["v"] for r in kb.query("MATCH (n:Legacy) RETURN n.v AS v")] == [7]
    assert [r["metadata"]["v"] for r in kb.query("MATCH (n:Generic) RETURN n.v AS v")] == [1]


def test_writes_are_idempotent(kb: Neo4jManager) -> None:
    record = {"text": "The VPN rotates keys monthly.", "metadata": {"source": "it"}}
    first = kb.write([record])
    second = kb.write([record, record])
    assert first == [stable_id("The VPN rotates keys monthly.", "it")]
    assert second == first * 2
    assert _count(kb, "Knowledge") == 1
    kb.write([{"text": "Version one", "metadata": {"id": "doc-1"}}])
    kb.write([{"text": "Version two", "metadata": {"id": "doc-1"}}])
    rows = kb.query("MATCH (k:Knowledge {id: 'doc-1'}) RETURN k.text AS text")
    assert [r["text"] for r in rows] == ["Version two"]


def test_limit_is_bound_as_a_parameter_and_caps_the_rows(kb: Neo4jManager) -> None:
    kb.write(
        [{"text": "", "metadata": {"query": "UNWIND range(1, 10) AS i CREATE (:Item {i: i})"}}]
    )
    assert len(kb.query("MATCH (n:Item) RETURN n.i AS i", limit=3)) == 3
    assert len(kb.query("MATCH (n:Item) RETURN n.i AS i")) == 3  # the default limit
    ordered = kb.query("MATCH (n:Item) RETURN n.i AS i ORDER BY i LIMIT $limit", limit=4)
    assert [r["metadata"]["i"] for r in ordered] == [1, 2, 3, 4]
    assert len(kb.query("MATCH (n:Item) RETURN n.i AS i LIMIT 2", limit=5)) == 2
    assert kb.query("RETURN $limit AS l", limit=7)[0]["metadata"] == {"l": 7}
    # the statement is never rewritten: a LIMIT inside a string literal stays text
    assert kb.query("RETURN 'no LIMIT here' AS text")[0]["text"] == "no LIMIT here"
    shown = _tools(kb)["read_kb"]("Graph", "MATCH (n:Item) RETURN n.i AS i", limit=2)  # type: ignore[operator]
    lines = shown.splitlines()
    assert [line.startswith('- {"i": ') for line in lines] == [True, True, False]
    assert lines[2] == (
        "[Cut by the row cap (limit=2): 2 rows shown; the rows after them were not read. "
        "Narrow the query to see others.]"
    )
    with pytest.raises(ValueError, match="limit"):
        kb.query("RETURN 1 AS x", limit=0)


def test_bad_cypher_comes_back_as_a_clear_message(kb: Neo4jManager) -> None:
    shown = _tools(kb)["read_kb"]("Graph", "MATCH (n RETURN n")  # type: ignore[operator]
    assert shown.startswith("Error from backend 'Graph' during query: Neo4j at bolt")
    assert shown.endswith("Statement: MATCH (n RETURN n")
    with pytest.raises(KnowledgeError):
        kb.query("MATCH (n RETURN n")


def test_server_down_is_reported_and_the_password_never_shown(
    bolt_server: BoltServer, caplog: pytest.LogCaptureFixture
) -> None:
    port = _free_port("127.0.0.1")
    down = Neo4jManager(
        name="Down", uri=f"bolt://127.0.0.1:{port}", password="s3cret-pw",
        connection_timeout=2.0, max_transaction_retry_time=0.5,
    ).add_schema({"description": "nothing there"})  # fmt: skip
    tools = _tools(down)
    with caplog.at_level(logging.DEBUG):
        read = tools["read_kb"]("Down", "RETURN 1 AS x")  # type: ignore[operator]
        wrote = tools["write_kb"]("Down", text="lost?")  # type: ignore[operator]
    for shown in (read, wrote):
        assert f"Neo4j at bolt://127.0.0.1:{port} is unavailable" in shown
        assert "Check NEO4J_URI" in shown
    assert "s3cret-pw" not in read + wrote + caplog.text
    with pytest.raises(KnowledgeError, match="unavailable"):
        down.connect()
    down.close()


def test_wrong_password_is_named_without_showing_it() -> None:
    # FalkorDB has no authentication; this Bolt server refuses LOGON the way Neo4j 5 does
    refuser = BoltAuthRefuser()
    wrong = Neo4jManager(
        name="Wrong", uri=refuser.uri, user="alice", password="definitely-wrong",
        connection_timeout=3.0, max_transaction_retry_time=0.5,
    ).add_schema({"description": "refuses every login"})  # fmt: skip
    tools = _tools(wrong)
    read = tools["read_kb"]("Wrong", "RETURN 1 AS x")
    wrote = tools["write_kb"]("Wrong", text="anything")
    expected = f"Neo4j at {refuser.uri} rejected the credentials of user 'alice'"
    for shown in (read, wrote):
        assert expected in shown and "NEO4J_PASSWORD" in shown
        assert "definitely-wrong" not in shown
    with pytest.raises(KnowledgeError, match="rejected the credentials"):
        wrong.connect()
    assert refuser.logons >= 3
    wrong.close()
    refuser.close()


def test_env_vars_are_the_fallback(bolt_clean: BoltServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", bolt_clean.uri)
    if bolt_clean.password:
        monkeypatch.setenv("NEO4J_USERNAME", bolt_clean.user or "neo4j")
        monkeypatch.setenv("NEO4J_PASSWORD", bolt_clean.password)
    from_env = Neo4jManager().add_schema({"description": "env"})
    assert from_env.uri == bolt_clean.uri and from_env.backend_name == "Neo4jDB"
    from_env.connect()
    from_env.write([{"text": "Configured from the environment", "metadata": {}}])
    rows = from_env.query("MATCH (k:Knowledge) RETURN k.text AS text")
    assert [r["text"] for r in rows] == ["Configured from the environment"]
    from_env.close()

    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_USERNAME", "reader")
    monkeypatch.setenv("NEO4J_PASSWORD", "from-env")
    monkeypatch.setenv("NEO4J_DATABASE", "knowledge")
    configured = Neo4jManager(uri=bolt_clean.uri, user="writer")
    assert (configured.uri, configured.user, configured.database) == (
        bolt_clean.uri,
        "writer",
        "knowledge",
    )
    configured.close()


def test_bad_configuration_fails_at_construction() -> None:
    with pytest.raises(AKConfigError, match="cannot use URI"):
        Neo4jManager(uri="ftp://127.0.0.1:7687")
    with pytest.raises(AKConfigError, match="node_label"):
        Neo4jManager(uri="bolt://127.0.0.1:7687", node_label="Bad Label`)")


def test_close_releases_and_later_calls_say_so(kb: Neo4jManager) -> None:
    kb.write([{"text": "before close", "metadata": {}}])
    kb.close()
    kb.close()  # idempotent
    shown = _tools(kb)["read_kb"]("Graph", "MATCH (n) RETURN n")  # type: ignore[operator]
    assert shown == "Error from backend 'Graph' during query: Neo4jManager 'Graph' is closed."
    with pytest.raises(KnowledgeError, match="closed"):
        kb.write([{"text": "after close", "metadata": {}}])


def test_bad_records_write_nothing(kb: Neo4jManager) -> None:
    tools = _tools(kb)
    assert tools["write_kb"]("Graph") == (  # type: ignore[operator]
        "Nothing to write: give text, or a query for a backend with a query language."
    )
    with pytest.raises(KnowledgeError, match="Record 1 has neither text nor a Cypher query"):
        kb.write([{"text": "good one", "metadata": {}}, {"text": " ", "metadata": {}}])
    with pytest.raises(KnowledgeError, match="params must be a JSON object"):
        kb.write([{"text": "", "metadata": {"query": "CREATE (:X)", "params": [1]}}])
    assert _count(kb, "Knowledge") == 0
    assert _count(kb, "X") == 0


def test_a_single_statement_that_fails_midway_writes_nothing(kb: Neo4jManager) -> None:
    # one record runs as one auto-commit statement: the first node is not kept
    with pytest.raises(KnowledgeError, match="failed during write"):
        kb.write(
            [{"text": "", "metadata": {"query": "UNWIND [1, 0] AS x CREATE (:Half {v: 10 / x})"}}]
        )
    assert _count(kb, "Half") == 0
    shown = _tools(kb)["write_kb"]("Graph", query="UNWIND [2, 0] AS x CREATE (:Half {v: 10 / x})")  # type: ignore[operator]
    assert shown.startswith("Error from backend 'Graph' during write:")
    assert _count(kb, "Half") == 0


def test_several_records_are_written_together(kb: Neo4jManager) -> None:
    ids = kb.write(
        [
            {"text": "First of two", "metadata": {"id": "two-1"}},
            {"text": "", "metadata": {"query": "CREATE (:Pair {n: $n})", "params": {"n": 2}}},
            {"text": "Third of three", "metadata": {"id": "two-3"}},
        ]
    )
    assert ids == ["two-1", "two-3"]
    assert _count(kb, "Knowledge") == 2 and _count(kb, "Pair") == 1


def test_reads_run_as_auto_commit_queries_only_on_neo4j(
    kb: Neo4jManager, bolt_clean: BoltServer
) -> None:
    kb.write([{"text": "seen by the read", "metadata": {"id": "mode-1"}}])
    rows = kb.query("MATCH (k:Knowledge {id: 'mode-1'}) RETURN k.text AS text")
    assert [r["text"] for r in rows] == ["seen by the read"]
    # FalkorDB reads another graph in a read-mode auto-commit query: it must get read
    # transactions, and Neo4j the single auto-commit round trip
    assert kb._autocommit_read is bolt_clean.is_neo4j


class _DroppingRelay:
    """A loopback relay to the Bolt server that cuts the first ``drop`` connections.

    Each of those is closed as soon as the driver has sent its first bytes, as a server
    restart or a dropped link would, so the driver fails with ``ServiceUnavailable``;
    later connections pass every byte through.
    """

    def __init__(self, upstream_uri: str, drop: int) -> None:
        parts = urlsplit(upstream_uri)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 7687)
        self._drop = drop
        self.dropped = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"bolt://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.dropped < self._drop:
                self.dropped += 1
                with contextlib.suppress(OSError):
                    client.recv(64)
                client.close()
                continue
            upstream = socket.create_connection(self._upstream, timeout=10)
            upstream.settimeout(None)
            relay_thread(client, upstream)
            relay_thread(upstream, client)

    def close(self) -> None:
        self._listener.close()


@pytest.mark.parametrize("autocommit", [True, False])
def test_a_read_is_retried_after_a_dropped_connection(
    bolt_clean: BoltServer, autocommit: bool
) -> None:
    relay = _DroppingRelay(bolt_clean.uri, drop=2)
    kb = _manager(bolt_clean, name="Flaky", uri=relay.uri, max_transaction_retry_time=5.0)
    # both read paths: auto-commit (Neo4j) and the read transaction (other Bolt servers);
    # RETURN reads no graph, so FalkorDB answers it correctly in either
    kb._autocommit_read = autocommit
    try:
        assert kb.query("RETURN 41 + 1 AS answer")[0]["metadata"] == {"answer": 42}
        assert relay.dropped == 2
    finally:
        kb.close()
        relay.close()


def test_a_single_write_is_not_retried_after_a_dropped_connection(
    kb: Neo4jManager, bolt_clean: BoltServer
) -> None:
    # the outcome of a write on a lost connection is unknown: it is reported, not repeated
    relay = _DroppingRelay(bolt_clean.uri, drop=1)
    flaky = _manager(bolt_clean, name="Flaky", uri=relay.uri)
    try:
        with pytest.raises(KnowledgeError, match="unavailable"):
            flaky.write([{"text": "", "metadata": {"query": "CREATE (:Once)"}}])
        assert relay.dropped == 1
        flaky.write([{"text": "", "metadata": {"query": "CREATE (:Once)"}}])
    finally:
        flaky.close()
        relay.close()
    assert _count(kb, "Once") == 1


@pytest.mark.neo4j_only
def test_read_kb_refuses_writes(kb: Neo4jManager) -> None:
    shown = _tools(kb)["read_kb"]("Graph", "CREATE (:Sneaky) RETURN 1 AS x")  # type: ignore[operator]
    assert "read_kb runs Cypher read-only" in shown and "write_kb" in shown
    assert _count(kb, "Sneaky") == 0
    assert kb._autocommit_read is True  # refused in an auto-commit read, not a transaction
    with pytest.raises(KnowledgeError, match="read_kb runs Cypher read-only"):
        kb.query("CREATE (n) RETURN n")
    assert _count(kb, "Sneaky") == 0 and kb.query("MATCH (n) RETURN count(n) AS c")[0][
        "metadata"
    ] == {"c": 0}


@pytest.mark.neo4j_only
def test_a_failing_batch_is_rolled_back(kb: Neo4jManager) -> None:
    with pytest.raises(KnowledgeError):
        kb.write(
            [
                {"text": "kept?", "metadata": {"id": "first"}},
                {"text": "", "metadata": {"query": "CREATE (:Broken {v: })"}},
            ]
        )
    assert _count(kb, "Knowledge") == 0


@pytest.mark.neo4j_only
def test_syntax_errors_are_named(kb: Neo4jManager) -> None:
    shown = _tools(kb)["read_kb"]("Graph", "MATCH (n RETURN n")  # type: ignore[operator]
    assert "Cypher syntax error" in shown


@pytest.mark.neo4j_only
def test_wrong_password_is_named(bolt_server: BoltServer) -> None:
    wrong = _manager(bolt_server, name="Wrong", password="definitely-wrong")
    shown = _tools(wrong)["read_kb"]("Wrong", "RETURN 1 AS x")  # type: ignore[operator]
    assert "rejected the credentials of user" in shown
    assert "definitely-wrong" not in shown
    wrong.close()


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [("neo4j", "neo4j", "neo4j"), ("chroma", "chromadb", "chromadb")],
)
def test_a_missing_sdk_names_its_extra(module: str, package: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "try:\n"
        f"    import agentkernel.knowledgebase.{module}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc, type(exc.__cause__).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        f"MissingExtraError {'Neo4jManager' if module == 'neo4j' else 'ChromaManager'} "
        f"requires the '{extra}' extra ({package} is not installed): "
        f"pip install 'agentkernel[{extra}]' ModuleNotFoundError"
    )
