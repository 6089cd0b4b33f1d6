"""A Trino HTTP-protocol test server over DuckDB.

It stands in for the hosted Starburst Galaxy service (and for a Trino coordinator), neither
of which can run here. It speaks the real client protocol, so the official ``trino`` client
talks to it unmodified:

* ``POST /v1/statement`` with the SQL as the body answers ``QUEUED`` with a ``nextUri``;
  ``GET`` on that URI runs the statement and pages the rows, ``page_size`` rows per response,
  each page but the last carrying the next ``nextUri``; ``DELETE`` cancels (204).
* ``X-Trino-User`` is required; ``X-Trino-Catalog`` / ``X-Trino-Schema`` pick the DuckDB
  catalog and schema the statement runs in (``USE catalog.schema``).
* Errors come back as Trino's error JSON (``message``, ``errorCode``, ``errorName``,
  ``errorType``, ``errorLocation``, ``failureInfo``) with the query state ``FAILED``.
* Bound parameters as the client sends them: ``EXECUTE IMMEDIATE '...' USING ...``, and the
  legacy ``PREPARE`` (answered with ``X-Trino-Added-Prepare``) / ``EXECUTE name USING ...``
  (the statement read back from the ``X-Trino-Prepared-Statement`` request header) /
  ``DEALLOCATE PREPARE`` (``X-Trino-Deallocated-Prepare``).
* The session property ``query_max_execution_time`` (``X-Trino-Session``) is honoured as
  Trino does: a statement running longer is interrupted and fails with
  ``EXCEEDED_TIME_LIMIT``. As on a coordinator, a time limit costs no thread per query: one
  watchdog thread, shared by the servers of a process, interrupts the statements past theirs.
* HTTP basic auth is checked when ``users`` is given (401 otherwise), over TLS when a
  certificate is given, as Starburst Galaxy requires.

SQL is translated from the Trino dialect to DuckDB with ``sqlglot``; a table function in
``FROM TABLE(catalog.schema.fn(arg => 'x'))`` becomes a call of a DuckDB table macro of the
same name. Every statement received is recorded in ``received`` so tests can prove what did
(and did not) reach the wire.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import ssl
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from agentkernel.knowledgebase._limits import Watchdog

_EXECUTE_IMMEDIATE = re.compile(
    r"^\s*EXECUTE\s+IMMEDIATE\s+'((?:[^']|'')*)'\s*(?:USING\s+(.*))?$", re.I | re.S
)
_EXECUTE = re.compile(r"^\s*EXECUTE\s+(\w+)\s*(?:USING\s+(.*))?$", re.I | re.S)
_PREPARE = re.compile(r"^\s*PREPARE\s+(\w+)\s+FROM\s+(.*)$", re.I | re.S)
_DEALLOCATE = re.compile(r"^\s*DEALLOCATE\s+PREPARE\s+(\w+)\s*$", re.I)
_DURATION = re.compile(r"^\s*([\d.]+)\s*(ms|s|m|h|d)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PATH = re.compile(r"^/v1/statement/(?:queued|executing)/([\w-]+)/(\d+)$")

# The time limits of every server in the process, on one thread of their own: a coordinator
# starts no thread per query, and the client's watchdog (agentkernel's ``at_deadline``) may
# be blocked in a cancel that waits for this server to interrupt the very query it cancels.
_DEADLINES = Watchdog(name="trino-test-server-deadlines")


class TrinoError(Exception):
    """A failure reported to the client in Trino's error JSON."""

    def __init__(
        self,
        message: str,
        name: str = "GENERIC_USER_ERROR",
        code: int = 0,
        kind: str = "USER_ERROR",
    ) -> None:
        super().__init__(message)
        self.message, self.name, self.code, self.kind = message, name, code, kind

    def as_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "errorCode": self.code,
            "errorName": self.name,
            "errorType": self.kind,
            "errorLocation": {"lineNumber": 1, "columnNumber": 1},
            "failureInfo": {
                "type": "io.trino.spi.TrinoException",
                "message": self.message,
                "suppressed": [],
                "stack": [],
            },
        }


@dataclass
class _Query:
    id: str
    sql: str
    headers: dict[str, str]
    done: bool = False
    columns: list[dict[str, Any]] | None = None
    rows: list[list[Any]] = field(default_factory=list)
    error: TrinoError | None = None
    update_type: str | None = None
    response_headers: dict[str, str] = field(default_factory=dict)


class TrinoTestServer:
    """The server; ``start()`` binds 127.0.0.1 on a free port and serves from a thread."""

    def __init__(
        self,
        database: duckdb.DuckDBPyConnection,
        *,
        page_size: int = 2,
        users: dict[str, str] | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
    ) -> None:
        self.database = database
        self.page_size = page_size
        self.users = users
        self.certfile, self.keyfile = certfile, keyfile
        self.received: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.pages_served = 0
        self._queries: dict[str, _Query] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> TrinoTestServer:
        server = self

        class Handler(_Handler):
            trino = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if self.certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.certfile, self.keyfile)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="trino-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def statements(self) -> list[str]:
        """The SQL bodies received, in order."""
        return [r["sql"] for r in self.received]

    # -- protocol ----------------------------------------------------------------------

    def submit(self, sql: str, headers: dict[str, str]) -> _Query:
        query_id = f"20260101_000000_{next(self._ids):05d}_akt00"
        query = _Query(query_id, sql, headers)
        with self._lock:
            self._queries[query_id] = query
            self.received.append(
                {
                    "sql": sql,
                    "user": headers.get("x-trino-user"),
                    "catalog": headers.get("x-trino-catalog"),
                    "schema": headers.get("x-trino-schema"),
                    "source": headers.get("x-trino-source"),
                    "prepared": headers.get("x-trino-prepared-statement"),
                    "session": headers.get("x-trino-session"),
                }
            )
        return query

    def page(self, query_id: str, token: int) -> tuple[dict[str, Any], dict[str, str]] | None:
        with self._lock:
            query = self._queries.get(query_id)
        if query is None:
            return None
        if not query.done:
            self._run(query)
        self.pages_served += 1
        body = self._envelope(query)
        if query.error is not None:
            body["stats"]["state"] = "FAILED"
            body["error"] = query.error.as_json()
            return body, {}
        if query.columns is not None:
            body["columns"] = query.columns
        start = (token - 1) * self.page_size
        chunk = query.rows[start : start + self.page_size]
        if chunk:
            body["data"] = chunk
        if start + self.page_size < len(query.rows):
            body["nextUri"] = f"{self.base_url}/v1/statement/executing/{query.id}/{token + 1}"
            body["stats"]["state"] = "RUNNING"
        else:
            body["stats"]["state"] = "FINISHED"
            if query.update_type:
                body["updateType"] = query.update_type
        return body, query.response_headers

    def queued(self, query: _Query) -> dict[str, Any]:
        body = self._envelope(query)
        body["nextUri"] = f"{self.base_url}/v1/statement/queued/{query.id}/1"
        return body

    def cancel(self, query_id: str) -> bool:
        with self._lock:
            found = self._queries.pop(query_id, None)
            if found is not None:
                self.cancelled.append(query_id)
        return found is not None

    def _envelope(self, query: _Query) -> dict[str, Any]:
        return {
            "id": query.id,
            "infoUri": f"{self.base_url}/ui/query.html?{query.id}",
            "stats": {
                "state": "QUEUED",
                "queued": False,
                "scheduled": True,
                "nodes": 1,
                "totalSplits": 0,
                "queuedSplits": 0,
                "runningSplits": 0,
                "completedSplits": 0,
                "cpuTimeMillis": 0,
                "wallTimeMillis": 0,
                "queuedTimeMillis": 0,
                "elapsedTimeMillis": 0,
                "processedRows": 0,
                "processedBytes": 0,
                "peakMemoryBytes": 0,
                "spilledBytes": 0,
            },
            "warnings": [],
        }

    def _run(self, query: _Query) -> None:
        try:
            self._execute(query)
        except TrinoError as error:
            query.error = error
        except duckdb.Error as error:
            query.error = _duckdb_error(error)
        query.done = True

    def _execute(self, query: _Query) -> None:
        sql = query.sql.strip().rstrip(";")
        if match := _PREPARE.match(sql):
            name, statement = match.groups()
            quoted = urllib.parse.quote_plus(statement.strip())
            query.response_headers["X-Trino-Added-Prepare"] = f"{name}={quoted}"
            query.update_type = "PREPARE"
            return
        if match := _DEALLOCATE.match(sql):
            query.response_headers["X-Trino-Deallocated-Prepare"] = match.group(1)
            query.update_type = "DEALLOCATE"
            return
        params: list[Any] = []
        if match := _EXECUTE_IMMEDIATE.match(sql):
            sql, using = match.group(1).replace("''", "'"), match.group(2)
            params = self._values(using)
        elif match := _EXECUTE.match(sql):
            name, using = match.groups()
            prepared = _prepared(query.headers.get("x-trino-prepared-statement", ""))
            if name not in prepared:
                raise TrinoError(f"Prepared statement not found: {name}", "NOT_FOUND", 29)
            sql, params = prepared[name], self._values(using)
        duck_sql = _translate(sql, expected_params=len(params))
        with self._lock:
            cursor = self.database.cursor()
            try:
                catalog = query.headers.get("x-trino-catalog")
                schema = query.headers.get("x-trino-schema")
                if catalog:
                    target = f'"{catalog}"' + (f'."{schema}"' if schema else "")
                    try:
                        cursor.execute(f"USE {target}")
                    except duckdb.Error as error:
                        raise TrinoError(
                            f"Catalog or schema '{catalog}.{schema}' does not exist",
                            "SCHEMA_NOT_FOUND",
                            47,
                        ) from error
                limit = _time_limit(query.headers.get("x-trino-session", ""))
                stop_timer = _DEADLINES.schedule(limit, cursor.interrupt) if limit else None
                try:
                    cursor.execute(duck_sql, params or None)
                    description = cursor.description or []
                    rows = cursor.fetchall() if description else []
                except duckdb.InterruptException as error:
                    raise TrinoError(
                        f"Query exceeded maximum time limit of {limit:.2f}s",
                        "EXCEEDED_TIME_LIMIT",
                        131075,
                        "INSUFFICIENT_RESOURCES",
                    ) from error
                finally:
                    if stop_timer is not None:
                        stop_timer()
            finally:
                cursor.close()
        query.columns = [_column(name, str(kind)) for name, kind, *_ in description]
        query.rows = [[_value(v) for v in row] for row in rows]

    def _values(self, using: str | None) -> list[Any]:
        if not using:
            return []
        select = sqlglot.transpile(f"SELECT {using}", read="trino", write="duckdb")[0]
        with self._lock:
            row = self.database.execute(select).fetchone()
        return list(row or [])


def _translate(sql: str, *, expected_params: int) -> str:
    try:
        tree = sqlglot.parse_one(sql, read="trino")
    except sqlglot.errors.ParseError as error:
        raise TrinoError(
            f"line 1:1: mismatched input: {str(error).splitlines()[0]}", "SYNTAX_ERROR", 1
        ) from error
    if isinstance(tree, exp.Command):
        return sql  # SHOW / DESCRIBE / EXPLAIN ...: DuckDB reads these as written
    placeholders = len(list(tree.find_all(exp.Placeholder)))
    if placeholders != expected_params:
        raise TrinoError(
            f"Incorrect number of parameters: expected {placeholders} but found {expected_params}",
            "INVALID_PARAMETER_USAGE",
            87,
        )
    for table in tree.find_all(exp.Table):
        inner = table.this
        if (
            isinstance(inner, exp.Anonymous)
            and str(inner.this).upper() == "TABLE"
            and len(inner.expressions) == 1
        ):
            table.set("this", inner.expressions[0])
    return tree.sql("duckdb")


def _prepared(header: str) -> dict[str, str]:
    statements = {}
    for item in filter(None, (part.strip() for part in header.split(","))):
        name, _, value = item.partition("=")
        statements[name.strip()] = urllib.parse.unquote_plus(value)
    return statements


def _time_limit(session: str) -> float | None:
    """Seconds of ``query_max_execution_time`` in an ``X-Trino-Session`` header, if set."""
    for item in session.split(","):
        name, _, value = item.partition("=")
        match = _DURATION.match(urllib.parse.unquote_plus(value))
        if name.strip() == "query_max_execution_time" and match:
            return float(match.group(1)) * _UNITS[match.group(2)]
    return None


def _duckdb_error(error: duckdb.Error) -> TrinoError:
    message = str(error).splitlines()[0]
    if isinstance(error, duckdb.ParserException):
        return TrinoError(f"line 1:1: {message}", "SYNTAX_ERROR", 1)
    if isinstance(error, duckdb.CatalogException):
        return TrinoError(f"line 1:1: {message}", "TABLE_NOT_FOUND", 46)
    if isinstance(error, duckdb.BinderException):
        return TrinoError(f"line 1:1: {message}", "COLUMN_NOT_FOUND", 47)
    return TrinoError(message, "GENERIC_USER_ERROR", 0)


def _signature(raw: str, *args: int) -> dict[str, Any]:
    return {"rawType": raw, "arguments": [{"kind": "LONG", "value": a} for a in args]}


def _column(name: str, duck_type: str) -> dict[str, Any]:
    t = duck_type.upper()
    simple = {
        "INTEGER": "integer",
        "BIGINT": "bigint",
        "SMALLINT": "smallint",
        "TINYINT": "tinyint",
        "DOUBLE": "double",
        "FLOAT": "real",
        "BOOLEAN": "boolean",
        "DATE": "date",
        "UUID": "uuid",
        "BLOB": "varbinary",
    }
    if t in simple:
        return {"name": name, "type": simple[t], "typeSignature": _signature(simple[t])}
    if m := re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", t):
        p, s = int(m.group(1)), int(m.group(2))
        return {
            "name": name,
            "type": f"decimal({p},{s})",
            "typeSignature": _signature("decimal", p, s),
        }
    if t.startswith("TIMESTAMP"):
        return {"name": name, "type": "timestamp(3)", "typeSignature": _signature("timestamp", 3)}
    if t.endswith("[]"):
        inner = _column(name, t[:-2])
        return {
            "name": name,
            "type": f"array({inner['type']})",
            "typeSignature": {
                "rawType": "array",
                "arguments": [{"kind": "TYPE", "value": inner["typeSignature"]}],
            },
        }
    return {"name": name, "type": "varchar", "typeSignature": _signature("varchar", 2147483647)}


def _value(value: Any) -> Any:
    import datetime as dt
    import decimal

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return str(value)


class _Handler(BaseHTTPRequestHandler):
    trino: TrinoTestServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send(200, json.dumps(body).encode(), headers)

    def _authorised(self) -> bool:
        users = self.trino.users
        if users is None:
            return True
        value = self.headers.get("Authorization", "")
        if value.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(value[6:]).decode().partition(":")
            except ValueError:
                user, password = "", ""
            if users.get(user) == password and password:
                return True
        self._send(
            401,
            b"Unauthorized",
            {"WWW-Authenticate": 'Basic realm="Trino"'},
            content_type="text/plain",
        )
        return False

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        sql = self.rfile.read(length).decode("utf-8")
        if self.path != "/v1/statement":
            self._send(404, b"Not Found", content_type="text/plain")
            return
        if not self._authorised():
            return
        headers = self._headers()
        if not headers.get("x-trino-user"):
            self._send(400, b"User must be set", content_type="text/plain")
            return
        query = self.trino.submit(sql, headers)
        self._json(self.trino.queued(query))

    def do_GET(self) -> None:
        match = _PATH.match(self.path)
        if not match:
            self._send(404, b"Not Found", content_type="text/plain")
            return
        if not self._authorised():
            return
        result = self.trino.page(match.group(1), int(match.group(2)))
        if result is None:
            self._send(410, b"Query not found", content_type="text/plain")
            return
        self._json(*result)

    def do_DELETE(self) -> None:
        match = _PATH.match(self.path)
        if match and self.trino.cancel(match.group(1)):
            self._send(204)
        else:
            self._send(404, b"Not Found", content_type="text/plain")
