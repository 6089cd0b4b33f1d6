"""StarburstManager through the official ``trino`` client.

Real: the ``trino`` client (unmodified), HTTP and HTTPS with basic auth on 127.0.0.1,
DuckDB executing the SQL, sqlglot parsing it, and ``KnowledgeBuilder`` tools. Stand-in: the
Trino coordinator / Starburst Galaxy service, which cannot run here, is replaced by the
Trino HTTP-protocol test server in ``tests/support/trino_server.py`` (``nextUri`` paging, the
``X-Trino-*`` headers, Trino's error JSON, prepared statements).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import pytest

from tests.support import require_extra, require_module
from tests.support.fixtures_trino import TLS_PASSWORD, TLS_USER
from tests.support.hostile_sql import HOSTILE

require_extra("trino", "trino")
require_extra("sqlglot", "trino")

from agentkernel.errors import AKConfigError  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgeCapabilityError, SQLQueryError  # noqa: E402
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.starburst import StarburstManager  # noqa: E402
from agentkernel.knowledgebase.testing import assert_backend_contract  # noqa: E402

ENV = [
    "STARBURST_HOST",
    "STARBURST_PORT",
    "STARBURST_USER",
    "STARBURST_PASSWORD",
    "STARBURST_CATALOG",
    "STARBURST_SCHEMA",
    "STARBURST_HTTP_SCHEME",
]


@pytest.fixture(autouse=True)
def _no_starburst_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def starburst(trino_server: Any) -> Any:
    manager = StarburstManager(
        host="127.0.0.1",
        port=trino_server.port,
        user="analyst",
        catalog="kb",
        schema="crm",
        http_scheme="http",
    ).add_schema({"tables": {"clients": "client_name, status, region, revenue, signed"}})
    yield manager
    manager.close()


def _tools(*backends: Any, semantic_map: dict[str, str] | None = None) -> dict[str, Any]:
    return {t.__name__: t for t in KnowledgeBuilder(backends, semantic_map=semantic_map).build()}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- declaration and contract -------------------------------------------------------------


def test_declares_structured_read_only_sql(starburst: StarburstManager) -> None:
    caps = starburst.capabilities
    assert caps.kinds == ["structured"]
    assert caps.query and caps.query_language == "sql"
    assert not (caps.writable or caps.search or caps.fetch or caps.browse)
    assert starburst.backend_name == "starburst"


def test_keeps_the_backend_contract(starburst: StarburstManager) -> None:
    assert_backend_contract(
        starburst, query_statement="SELECT client_name FROM clients ORDER BY client_name"
    )


def test_the_trino_schema_lives_in_db_schema_and_get_schemas_reports_a_real_schema(
    starburst: StarburstManager,
) -> None:
    assert starburst.db_schema == "crm"
    assert callable(starburst.schema)  # not shadowed by a string any more
    reported = json.loads(_tools(starburst)["get_schemas"]())["starburst"]
    assert "error" not in reported
    assert reported["db_schema"] == "crm" and reported["catalog"] == "kb"
    assert reported["tables"] == {"clients": "client_name, status, region, revenue, signed"}
    assert reported["capabilities"]["query_language"] == "sql"
    assert reported["capabilities"]["writable"] is False


# -- real round trips through the tools ---------------------------------------------------


def test_read_kb_runs_sql_and_renders_rows(starburst: StarburstManager, trino_server: Any) -> None:
    out = _tools(starburst)["read_kb"](
        "starburst", "SELECT client_name, status FROM clients WHERE status = 'active' ORDER BY 1"
    )
    assert _lines(out) == [
        "- client_name: Acme | status: active (source: starburst:kb.crm)",
        "- client_name: Globex | status: active (source: starburst:kb.crm)",
        "- client_name: Stark | status: active (source: starburst:kb.crm)",
    ]
    sent = trino_server.received[-1]
    assert sent["sql"].endswith("ORDER BY 1 LIMIT 3")
    assert (sent["user"], sent["catalog"], sent["schema"]) == ("analyst", "kb", "crm")
    assert sent["source"] == "agentkernel"


def test_records_carry_columns_json_safe_values_and_source(starburst: StarburstManager) -> None:
    rows = starburst.query(
        "SELECT client_name, revenue, signed FROM clients WHERE client_name = 'Acme'"
    )
    assert rows == [
        {
            "text": "client_name: Acme | revenue: 1200.50 | signed: 2024-01-15",
            "metadata": {
                "source": "starburst:kb.crm",
                "columns": ["client_name", "revenue", "signed"],
                "row": {"client_name": "Acme", "revenue": "1200.50", "signed": "2024-01-15"},
                "row_number": 1,
            },
        }
    ]
    json.dumps(rows)


def test_results_spanning_several_pages_are_all_read(
    starburst: StarburstManager, trino_server: Any
) -> None:
    before = trino_server.pages_served
    rows = starburst.query("SELECT client_name FROM clients ORDER BY client_name", limit=7)
    assert [r["metadata"]["row"]["client_name"] for r in rows] == [
        "Acme", "Globex", "Hooli", "Initech", "Stark", "Tyrell", "Umbrella",
    ]  # fmt: skip
    assert trino_server.pages_served - before >= 4  # two rows per page


def test_semantic_map_resolves_the_manuals_table_function_placeholder(
    starburst: StarburstManager, trino_server: Any
) -> None:
    tools = _tools(
        starburst,
        semantic_map={
            "<SHEETS_SOURCE>": "TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
            "<MONGO_SOURCE>": "kb.crm.clients",
        },
    )
    out = tools["read_kb"](
        "starburst", "SELECT product, stock FROM <SHEETS_SOURCE> ORDER BY product"
    )
    assert _lines(out) == [
        "- product: gadget | stock: 0 (source: starburst:kb.crm)",
        "- product: widget | stock: 12 (source: starburst:kb.crm)",
    ]
    assert trino_server.received[-1]["sql"] == (
        "SELECT product, stock FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID')) "
        "ORDER BY product LIMIT 3"
    )
    # the manual's own example: an explicit LIMIT 5 is kept, not replaced by the fallback
    manual = "SELECT client_name, status FROM <MONGO_SOURCE> WHERE status = 'active' LIMIT 5"
    out = tools["read_kb"]("starburst", manual)
    assert len(_lines(out)) == 5
    assert trino_server.received[-1]["sql"] == manual.replace("<MONGO_SOURCE>", "kb.crm.clients")


# -- limits ------------------------------------------------------------------------------


def test_direct_query_defaults_to_the_fallback_limit_of_three(
    starburst: StarburstManager, trino_server: Any
) -> None:
    assert len(starburst.query("SELECT * FROM clients")) == 3
    assert trino_server.received[-1]["sql"] == "SELECT * FROM clients LIMIT 3"


def test_read_kb_limit_becomes_the_appended_limit(
    starburst: StarburstManager, trino_server: Any
) -> None:
    out = _tools(starburst)["read_kb"]("starburst", "SELECT client_name FROM clients", limit=6)
    assert len(_lines(out)) == 6
    assert trino_server.received[-1]["sql"] == "SELECT client_name FROM clients LIMIT 6"


def test_an_own_limit_is_kept_and_a_huge_result_is_capped_and_cancelled(
    trino_server: Any,
) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_server.port, user="analyst", catalog="kb", schema="crm",
        http_scheme="http", max_rows=3,
    )  # fmt: skip
    rows = manager.query("SELECT client_name FROM clients ORDER BY client_name LIMIT 7", limit=2)
    assert len(rows) == 3  # the statement's own LIMIT 7 ran, capped at max_rows
    query_sql = trino_server.received[-1]["sql"]
    assert query_sql.endswith("LIMIT 7")
    assert trino_server.cancelled  # the unread rest of the result was cancelled


def test_statements_without_a_limit_clause_return_at_most_limit_rows(
    starburst: StarburstManager,
) -> None:
    rows = starburst.query("VALUES (1), (2), (3), (4), (5)", limit=2)
    assert [r["text"].split(": ")[1] for r in rows] == ["1", "2"]


def test_show_tables_lists_the_schema(starburst: StarburstManager) -> None:
    out = _tools(starburst)["read_kb"]("starburst", "SHOW TABLES")
    assert "clients" in out


# -- bound parameters --------------------------------------------------------------------


def test_params_are_bound_with_execute_immediate(
    starburst: StarburstManager, trino_server: Any
) -> None:
    rows = starburst.query(
        "SELECT client_name FROM clients WHERE region = ? AND status = ? ORDER BY 1",
        params=["US", "active"],
    )
    assert [r["metadata"]["row"]["client_name"] for r in rows] == ["Globex", "Stark"]
    assert trino_server.received[-1]["sql"].startswith("EXECUTE IMMEDIATE 'SELECT client_name")
    assert trino_server.received[-1]["sql"].endswith("USING 'US','active'")


def test_params_are_bound_with_legacy_prepared_statements(trino_server: Any) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_server.port, user="analyst", catalog="kb", schema="crm",
        http_scheme="http", legacy_prepared_statements=True,
    )  # fmt: skip
    start = len(trino_server.received)
    rows = manager.query(
        "SELECT client_name FROM clients WHERE region = ? ORDER BY 1", params=["EU"]
    )
    assert [r["metadata"]["row"]["client_name"] for r in rows] == ["Acme", "Wayne"]
    sent = trino_server.received[start:]
    assert [s["sql"].split()[0] for s in sent] == ["PREPARE", "EXECUTE", "DEALLOCATE"]
    assert sent[1]["prepared"] and "region+%3D+%3F" in sent[1]["prepared"]


def test_params_must_be_a_list(starburst: StarburstManager) -> None:
    with pytest.raises(SQLQueryError, match="params must be a list"):
        starburst.query("SELECT 1", params="US")


def test_a_timeout_is_sent_as_the_time_limit_session_properties(trino_server: Any) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_server.port, user="analyst", http_scheme="http",
        timeout_seconds=90,
    )  # fmt: skip
    manager.query("SELECT 1")
    assert trino_server.received[-1]["session"] == (
        "query_max_execution_time=90000ms,query_max_run_time=90000ms"
    )


# -- errors ------------------------------------------------------------------------------


def test_a_query_error_is_reported_as_an_error_not_as_no_results(
    starburst: StarburstManager,
) -> None:
    read_kb = _tools(starburst)["read_kb"]
    out = read_kb("starburst", "SELECT * FROM no_such_table")
    assert out.startswith("Error from backend 'starburst' during query: Trino rejected the query:")
    assert "TABLE_NOT_FOUND" in out and "no_such_table" in out
    assert read_kb("starburst", "SELECT * FROM clients WHERE region = 'MARS'") == "No results."


def test_an_unreachable_cluster_is_named(trino_server: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the query: nothing listens there
    manager = StarburstManager(
        host="127.0.0.1", port=port, user="analyst", http_scheme="http", max_attempts=1
    )
    out = _tools(manager)["read_kb"]("starburst", "SELECT 1")
    assert f"Could not reach Trino at http://127.0.0.1:{port}" in out


# -- read-only ---------------------------------------------------------------------------


@pytest.mark.parametrize(("statement", "reason"), HOSTILE)
def test_hostile_statements_are_refused_before_reaching_the_server(
    starburst: StarburstManager, trino_server: Any, statement: str, reason: str
) -> None:
    sent = len(trino_server.received)
    out = _tools(starburst)["read_kb"]("starburst", statement or " ")
    assert "Refused" in out or out == "query must not be empty."
    assert len(trino_server.received) == sent


def test_write_kb_declines_starburst_with_the_manuals_message(starburst: StarburstManager) -> None:
    out = _tools(starburst)["write_kb"]("starburst", text="Acme renewed", query="")
    assert out == "Backend 'starburst' is read-only. Knowledge bases that accept writes: []"


def test_write_raises_a_capability_error_not_not_implemented(starburst: StarburstManager) -> None:
    with pytest.raises(KnowledgeCapabilityError) as caught:
        starburst.write([{"text": "x", "metadata": {}}])
    assert not isinstance(caught.value, NotImplementedError)


# -- HTTPS with basic auth (Starburst Galaxy's shape) --------------------------------------


def test_https_with_basic_auth_reads(trino_tls_server: Any) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_tls_server.port, user=TLS_USER, password=TLS_PASSWORD,
        catalog="kb", schema="crm", verify=trino_tls_server.certfile,
    )  # fmt: skip
    assert manager.http_scheme == "https"
    rows = manager.query("SELECT count(*) AS n FROM clients")
    assert rows[0]["text"] == "n: 8"


def test_an_explicit_ca_bundle_beats_requests_ca_bundle_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, trino_tls_server: Any
) -> None:
    certifi = require_module("certifi")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())  # a bundle without our CA
    monkeypatch.setenv("CURL_CA_BUNDLE", certifi.where())
    manager = StarburstManager(
        host="127.0.0.1", port=trino_tls_server.port, user=TLS_USER, password=TLS_PASSWORD,
        catalog="kb", schema="crm", verify=trino_tls_server.certfile, max_attempts=1,
    )  # fmt: skip
    assert manager.query("SELECT 1 AS one")[0]["text"] == "one: 1"


def test_wrong_credentials_are_reported_clearly(trino_tls_server: Any) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_tls_server.port, user=TLS_USER, password="wrong",
        catalog="kb", schema="crm", verify=trino_tls_server.certfile, max_attempts=1,
    )  # fmt: skip
    out = _tools(manager)["read_kb"]("starburst", "SELECT 1")
    assert "refused the credentials" in out and "HTTP 401" in out
    assert "STARBURST_PASSWORD" in out


def test_an_untrusted_certificate_is_not_accepted(trino_tls_server: Any) -> None:
    manager = StarburstManager(
        host="127.0.0.1", port=trino_tls_server.port, user=TLS_USER, password=TLS_PASSWORD,
        max_attempts=1,
    )  # fmt: skip
    out = _tools(manager)["read_kb"]("starburst", "SELECT 1")
    assert "Could not reach Trino at https://127.0.0.1" in out and "CERTIFICATE" in out.upper()


def test_a_password_is_never_sent_over_plain_http() -> None:
    with pytest.raises(AKConfigError, match="only over HTTPS"):
        StarburstManager(host="127.0.0.1", user="a", password="p", http_scheme="http")


# -- configuration and environment -------------------------------------------------------


def test_settings_fall_back_to_documented_environment_variables(
    monkeypatch: pytest.MonkeyPatch, trino_tls_server: Any
) -> None:
    monkeypatch.setenv("STARBURST_HOST", "127.0.0.1")
    monkeypatch.setenv("STARBURST_PORT", str(trino_tls_server.port))
    monkeypatch.setenv("STARBURST_USER", TLS_USER)
    monkeypatch.setenv("STARBURST_PASSWORD", TLS_PASSWORD)
    monkeypatch.setenv("STARBURST_CATALOG", "kb")
    monkeypatch.setenv("STARBURST_SCHEMA", "crm")
    manager = StarburstManager(verify=trino_tls_server.certfile)
    assert (manager.host, manager.port, manager.http_scheme) == (
        "127.0.0.1", trino_tls_server.port, "https",
    )  # fmt: skip
    assert (manager.catalog, manager.db_schema) == ("kb", "crm")
    assert manager.query("SELECT count(*) AS n FROM clients")[0]["text"] == "n: 8"
    assert trino_tls_server.received[-1]["user"] == TLS_USER


def test_a_host_url_from_the_environment_carries_scheme_and_port(
    monkeypatch: pytest.MonkeyPatch, trino_server: Any
) -> None:
    monkeypatch.setenv("STARBURST_HOST", f"http://127.0.0.1:{trino_server.port}")
    monkeypatch.setenv("STARBURST_USER", "env-user")
    monkeypatch.setenv("STARBURST_SCHEMA", "ignored")
    manager = StarburstManager(catalog="kb", schema="crm")  # explicit arguments win
    assert (manager.http_scheme, manager.port, manager.db_schema) == (
        "http",
        trino_server.port,
        "crm",
    )
    manager.query("SELECT 1")
    assert trino_server.received[-1]["user"] == "env-user"
    assert trino_server.received[-1]["schema"] == "crm"


@pytest.mark.parametrize(
    ("kwargs", "env", "message"),
    [
        ({"user": "a"}, {}, "needs a host: pass host= or set STARBURST_HOST"),
        ({"host": "h"}, {}, "needs a user: pass user= or set STARBURST_USER"),
        ({"host": "h", "user": "a"}, {"STARBURST_PORT": "eighty"}, "port must be 1-65535"),
        ({"host": "h", "user": "a", "http_scheme": "ftp"}, {}, "http_scheme must be"),
    ],
)
def test_configuration_mistakes_fail_at_construction(
    monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(AKConfigError, match=message):
        StarburstManager(**kwargs)


def test_default_ports_follow_the_scheme() -> None:
    assert StarburstManager(host="galaxy.example", user="a").port == 443
    assert StarburstManager(host="localhost", user="a", http_scheme="http").port == 8080


# -- lifecycle ---------------------------------------------------------------------------


def test_close_releases_the_client_and_a_later_query_reconnects(
    starburst: StarburstManager,
) -> None:
    starburst.close()
    starburst.close()  # idempotent
    assert starburst._connection is None
    assert len(starburst.query("SELECT client_name FROM clients")) == 3


def test_context_manager_closes(trino_server: Any) -> None:
    with StarburstManager(
        host="127.0.0.1", port=trino_server.port, user="a", http_scheme="http"
    ) as manager:
        assert manager.query("SELECT 1 AS one")[0]["text"] == "one: 1"
    assert manager._connection is None


def test_importing_the_package_pulls_no_sql_sdk() -> None:
    code = (
        "import sys, agentkernel.knowledgebase as kb; kb.KnowledgeBuilder; "
        "print(sorted(m for m in ('trino', 'sqlglot', 'sqlalchemy', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ["trino", "sqlglot"])
def test_a_missing_sdk_names_the_trino_extra(package: str) -> None:
    # sqlglot is also in the 'sql' extra; a Starburst user is told to install 'trino'.
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "try:\n"
        "    import agentkernel.knowledgebase.starburst\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "MissingExtraError StarburstManager requires the 'trino' extra "
        f"({package} is not installed): pip install 'agentkernel[trino]'"
    )
