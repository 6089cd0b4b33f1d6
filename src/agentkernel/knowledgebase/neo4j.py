"""``Neo4jManager``: a Neo4j graph as a Cypher-queryable, writable knowledge base.

Declares kinds ``["graph", "structured"]``, ``query`` (``cypher``) and ``writable``. Importing
this module imports the official ``neo4j`` driver (the ``neo4j`` extra).

Connection, arguments first, then environment variables read at construction (never at
import): ``uri`` / ``NEO4J_URI`` (default ``neo4j://localhost:7687``), ``user`` /
``NEO4J_USERNAME`` (default ``neo4j``), ``password`` / ``NEO4J_PASSWORD`` (no password means no
authentication is sent), ``database`` / ``NEO4J_DATABASE`` (default: the server's default
database). Constructing creates the driver, which opens no connection; :meth:`connect`
verifies connectivity, and every operation connects on demand.

Reading (``query``, what ``read_kb`` calls):

* The statement runs unchanged in **read** access mode, so Neo4j refuses writes and an
  agent writes through ``write_kb`` only. On Neo4j it runs as one auto-commit query in a
  session opened with ``default_access_mode=READ_ACCESS`` (Neo4j enforces the access mode
  the driver sends with an auto-commit query as it does for a read transaction; one round
  trip instead of BEGIN, RUN and COMMIT), retried up to three times on a retryable failure
  (server unavailable, session expired, retryable transient error), which is safe because
  nothing is written. Whether the server is Neo4j is asked once per manager, on the first
  read (``CALL dbms.components()`` names ``Neo4j Kernel``); any other Bolt server, or one
  that refuses that call, gets a managed read transaction (``execute_read``, retried by the
  driver), because some (FalkorDB) read the wrong graph in read-mode auto-commit queries.
* The limit is applied without touching the statement, so it is never concatenated into the
  Cypher: the statement receives it as the parameter ``$limit`` (write ``... LIMIT $limit`` to
  let the server stop early), and the result stream is pulled in batches of ``limit`` and
  closed after ``limit`` records, so at most ``limit`` records come back whatever the
  statement says.
* Limits (see ``agentkernel.knowledgebase._limits``): the read runs with a transaction
  timeout of ``timeout_seconds`` (default 30 s, ``None`` for the server's setting), which the
  server enforces, ending the transaction (Neo4j does; FalkorDB's Bolt server ignores it, so
  there set FalkorDB's own ``TIMEOUT_MAX``); rows are pulled in batches and reading stops at
  ``limit`` rows or at ``max_result_bytes`` (default 1 MB of record text), with a notice
  saying what was cut.
* Each row becomes a record. A row with a string column named ``text`` becomes
  ``{"text": row["text"], "metadata": <the other columns>}``; any other row becomes
  ``{"text": <the row as JSON>, "metadata": <the row>}``. Values are JSON-serialisable: a node
  is ``{"element_id", "labels", "properties"}``, a relationship
  ``{"element_id", "type", "start", "end", "properties"}``, a path
  ``{"nodes": [...], "relationships": [...]}``, temporal values ISO 8601 strings.

Writing (``write``, what ``write_kb`` calls), all records or none: one record is one
auto-commit statement (atomic by itself; retried only on a retryable transient error, which
the server reports for a transaction it did not commit), several records run in one managed
write transaction (``execute_write``):

* A record whose metadata has ``query`` (or the older ``cypher_query``) runs that statement
  with ``params`` (or ``cypher_params``) as its parameters; ``$text`` and ``$source`` are
  bound to the record's text and source unless the parameters name them.
* A record with text and no statement is stored as a node
  ``(:Knowledge {id, text, source, created_at, updated_at, ...})``, merged on ``id``
  (``metadata["id"]``, else a hash of text and source), so writing it twice keeps one node.
  ``created_at`` and ``updated_at`` are ISO 8601 UTC strings; other scalar metadata become
  properties and nested values are stored as JSON strings. The label is ``node_label=``.

Driver failures (unreachable server, rejected credentials, Cypher errors, a write in a read
session) are raised as :class:`KnowledgeError` with a message naming the cause and never the
password; the tools pass that message to the agent.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.model import KnowledgeCapabilities, Record, stable_id

try:
    import neo4j
    from neo4j import exceptions as neo4j_errors
    from neo4j.graph import Node, Path, Relationship
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise missing_extra("neo4j", "neo4j", feature="Neo4jManager") from exc

logger = logging.getLogger(__name__)

DEFAULT_URI = "neo4j://localhost:7687"
DEFAULT_USER = "neo4j"
DEFAULT_LABEL = "Knowledge"
LIMIT_PARAMETER = "limit"

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTEMPTS = 3  # auto-commit queries: the first try and two retries
_RETRY_DELAY = 0.1  # seconds before the first retry, doubled for the next, +-20% jitter
_NEO4J_PROBE = "CALL dbms.components() YIELD name RETURN name"
_RESERVED_METADATA = {"id", "source", "query", "params", "cypher_query", "cypher_params"}

CAPABILITIES = KnowledgeCapabilities(
    kinds=["graph", "structured"], query=True, query_language="cypher", writable=True
)


class Neo4jManager(KnowledgeBase):
    """Cypher reads and graph writes against Neo4j (or any Bolt server speaking Cypher).

    Example:
        >>> kb = Neo4jManager(name="Neo4jDB", uri="bolt://localhost:7687", password="...")
        >>> kb.write([{"text": "Alice manages the Berlin office.", "metadata": {}}])
        >>> kb.query("MATCH (k:Knowledge) RETURN k.text AS text", limit=1)  # doctest: +SKIP
        [{'text': 'Alice manages the Berlin office.', 'metadata': {}}]
    """

    def __init__(
        self,
        name: str = "Neo4jDB",
        *,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        node_label: str = DEFAULT_LABEL,
        description: str | None = None,
        timeout_seconds: float | None = _limits.DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int | None = _limits.DEFAULT_MAX_RESULT_BYTES,
        **driver_options: Any,
    ) -> None:
        """Configure the manager and create the driver (no connection is opened).

        Args:
            name: The backend name the tools use.
            uri: Bolt or Neo4j URI; else ``NEO4J_URI``, else ``neo4j://localhost:7687``.
            user: User name; else ``NEO4J_USERNAME``, else ``neo4j``.
            password: Password; else ``NEO4J_PASSWORD``; with neither, no auth is sent.
            database: Database to use; else ``NEO4J_DATABASE``, else the server's default.
            node_label: Label of the nodes text records are stored as.
            description: What the graph holds, for ``get_all_kb_descriptions``.
            timeout_seconds: The transaction timeout of a read; ``None`` leaves the server's.
            max_result_bytes: Most bytes of record text a read returns; ``None`` for no cap.
            **driver_options: Passed to ``neo4j.GraphDatabase.driver`` (for example
                ``connection_timeout`` or ``max_transaction_retry_time``).

        Raises:
            AKConfigError: An unusable URI, label, limit or driver option.
        """
        super().__init__(CAPABILITIES, name=name or "Neo4jDB")
        self.timeout_seconds, self.max_result_bytes = _limits.check_limits(
            f"Neo4jManager '{self.name}'", timeout_seconds, max_result_bytes
        )
        self.uri = uri or os.environ.get("NEO4J_URI") or DEFAULT_URI
        self.user = user or os.environ.get("NEO4J_USERNAME") or DEFAULT_USER
        secret = password if password is not None else os.environ.get("NEO4J_PASSWORD")
        self._password = secret or None
        self.database = database or os.environ.get("NEO4J_DATABASE") or None
        if not isinstance(node_label, str) or not _LABEL.fullmatch(node_label):
            raise AKConfigError(
                f"Neo4jManager '{self.name}': node_label must be a plain identifier, "
                f"got {node_label!r}."
            )
        self.node_label = node_label
        self._description = description
        auth = (self.user, self._password) if self._password else None
        try:
            self._driver = neo4j.GraphDatabase.driver(self.uri, auth=auth, **driver_options)
        except (neo4j_errors.ConfigurationError, ValueError, TypeError) as exc:
            raise AKConfigError(
                f"Neo4jManager '{self.name}': cannot use URI {self.uri!r}: {self._scrub(exc)}"
            ) from exc
        self._closed = False
        self._lock = threading.Lock()
        # whether reads may run as read-mode auto-commit queries; None until the server
        # has been asked (see _autocommit_reads)
        self._autocommit_read: bool | None = None

    # -- the contract ----------------------------------------------------------------------

    @property
    def backend_name(self) -> str:
        """The name the tools address this backend by."""
        return self.name

    def get_description(self) -> str:
        """Describe the backend for routing.

        Returns:
            The description given at construction, or a generic one.
        """
        if self._description:
            return self._description
        return (
            "Neo4j graph database: read with Cypher in read_kb (the limit is bound as $limit); "
            f"store notes with write_kb(text=...) as (:{self.node_label}) nodes, or give a "
            "Cypher write statement in write_kb(query=..., params_json=...)."
        )

    def connect(self, **kwargs: Any) -> None:
        """Check now that the server is reachable and accepts the credentials.

        Args:
            **kwargs: Unused; accepted for the ``KnowledgeBase`` signature.

        Raises:
            KnowledgeError: The manager is closed, or the server is unreachable or refuses
                the credentials.
        """
        driver = self._live_driver()
        try:
            driver.verify_connectivity()
        except Exception as exc:
            raise self._translate(exc, "connect") from exc

    def query(self, statement: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Run a Cypher statement read-only and return at most ``limit`` rows as records.

        Args:
            statement: Cypher; ``$limit`` is bound to ``limit`` unless ``params`` has it.
            limit: The most records to return (at least 1).
            **kwargs: ``params=`` a mapping of further statement parameters.

        Returns:
            Up to ``limit`` records (see the module docstring for their shape).

        Raises:
            ValueError: An empty statement, a limit below 1, or ``params`` not a mapping.
            KnowledgeError: The driver failed; the message names why.
        """
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError("statement must be a non-empty Cypher string")
        _limits.check_limit(limit)
        extra = kwargs.get("params") or {}
        if not isinstance(extra, Mapping):
            raise ValueError(f"params must be a mapping, got {type(extra).__name__}")
        parameters = {LIMIT_PARAMETER: limit, **extra}
        driver = self._live_driver()
        try:
            return self._read(driver, statement, parameters, limit)
        except Exception as exc:
            raise self._translate(exc, "query", statement) from exc

    def write(self, records: Iterable[Record], **kwargs: Any) -> list[str]:
        """Write records all or none: statements run, plain text becomes nodes.

        Every record is checked before anything is sent, so one bad record writes none.

        Args:
            records: ``{"text": ..., "metadata": {...}}`` mappings; see the module docstring.
            **kwargs: Unused.

        Returns:
            The ids of the nodes stored from plain-text records (statements have none).

        Raises:
            KnowledgeError: A record has neither text nor a statement, or unusable
                parameters (nothing is written), or the driver failed.
        """
        plans = [self._plan(record, position) for position, record in enumerate(records)]
        if not plans:
            return []

        def work(tx: Any) -> None:
            for statement, parameters, _ in plans:
                tx.run(statement, parameters).consume()

        driver = self._live_driver()
        try:
            if len(plans) == 1:  # one statement: atomic as an auto-commit query
                self._write_one(driver, plans[0][0], plans[0][1])
            else:
                with driver.session(database=self.database) as session:
                    session.execute_write(work)
        except Exception as exc:
            raise self._translate(exc, "write", plans[0][0] if len(plans) == 1 else None) from exc
        return [node_id for _, _, node_id in plans if node_id is not None]

    def close(self) -> None:
        """Close the driver; later operations raise ``KnowledgeError``. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._driver.close()

    # -- internals -------------------------------------------------------------------------

    def _live_driver(self) -> Any:
        if self._closed:
            raise KnowledgeError(f"Neo4jManager '{self.name}' is closed.")
        return self._driver

    def _read(
        self, driver: Any, statement: str, parameters: dict[str, Any], limit: int
    ) -> list[Record]:
        """At most ``limit`` records of ``statement``, run in read access mode."""
        if not self._autocommit_reads(driver):

            @neo4j.unit_of_work(timeout=self.timeout_seconds)
            def work(tx: Any) -> list[Record]:
                return self._take(tx.run(statement, parameters), limit)

            with driver.session(
                database=self.database,
                default_access_mode=neo4j.READ_ACCESS,
                fetch_size=limit + 1,
            ) as session:
                records: list[Record] = session.execute_read(work)  # CutRecords keep notices
                return records
        query = neo4j.Query(statement, timeout=self.timeout_seconds)  # type: ignore[arg-type]
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                with driver.session(
                    database=self.database,
                    default_access_mode=neo4j.READ_ACCESS,
                    fetch_size=limit + 1,
                ) as session:
                    return self._take(session.run(query, parameters), limit)
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if attempt == _ATTEMPTS or not exc.is_retryable() or self._closed:
                    raise
                self._pause_before_retry(attempt, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self, result: Any, limit: int) -> list[Record]:
        """Pull records in batches up to ``limit`` rows and ``max_result_bytes``."""
        return _limits.take_rows(
            result.fetch,
            lambda row, _number: _record(row),
            max_rows=limit,
            max_bytes=self.max_result_bytes,
            row_cap=f"limit={limit}",
        )

    def _write_one(self, driver: Any, statement: str, parameters: dict[str, Any]) -> None:
        """Run one write statement as an auto-commit query.

        Retried only on a retryable transient error: the server reports those for a
        transaction it did not commit. A lost connection leaves the outcome unknown, so it
        is reported, not retried (the statement may not be idempotent).
        """
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                with driver.session(database=self.database) as session:
                    session.run(statement, parameters).consume()
                return
            except neo4j_errors.TransientError as exc:
                if attempt == _ATTEMPTS or not exc.is_retryable() or self._closed:
                    raise
                self._pause_before_retry(attempt, exc)

    def _pause_before_retry(self, attempt: int, exc: Exception) -> None:
        delay = _RETRY_DELAY * 2 ** (attempt - 1) * random.uniform(0.8, 1.2)
        logger.warning("Neo4jManager %r: %s; retrying in %.2fs", self.name, self._scrub(exc), delay)
        time.sleep(delay)

    def _autocommit_reads(self, driver: Any) -> bool:
        """Whether reads may run as read-mode auto-commit queries: only on Neo4j itself.

        Asked once, with ``CALL dbms.components()`` in read mode: Neo4j names its kernel
        there. Another Bolt server refuses the call (FalkorDB) or names something else, and
        its reads use managed read transactions. Refused credentials or an unknown database
        are raised (the read would fail alike); an unreachable server gets a read
        transaction this time (the driver retries it) and the question again next time.
        """
        known = self._autocommit_read
        if known is not None:
            return known
        try:
            with driver.session(
                database=self.database, default_access_mode=neo4j.READ_ACCESS
            ) as session:
                names = [record["name"] for record in session.run(_NEO4J_PROBE)]
        except neo4j_errors.Neo4jError as exc:
            code = exc.code or ""
            if ".Security." in code or "DatabaseNotFound" in code:
                raise  # the read would fail the same way; one failed login, not two
            names = []  # the server answered: not Neo4j's procedure
        except neo4j_errors.DriverError:
            return False  # no answer now (unreachable): a read transaction, which retries
        self._autocommit_read = "Neo4j Kernel" in names
        logger.debug(
            "Neo4jManager %r reads with %s",
            self.name,
            "auto-commit queries" if self._autocommit_read else "read transactions",
        )
        return self._autocommit_read

    def _plan(self, record: Record, position: int) -> tuple[str, dict[str, Any], str | None]:
        if not isinstance(record, Mapping):
            raise KnowledgeError(
                f"Record {position} is a {type(record).__name__}, not a mapping; "
                "nothing was written."
            )
        text = record.get("text") or ""
        metadata = record.get("metadata") or {}
        if not isinstance(text, str) or not isinstance(metadata, Mapping):
            raise KnowledgeError(
                f"Record {position} needs str text and mapping metadata; nothing was written."
            )
        source = metadata.get("source")
        source_text = None if source is None else str(source)
        statement = metadata.get("query") or metadata.get("cypher_query")
        if statement:
            if not isinstance(statement, str):
                raise KnowledgeError(f"Record {position}: the query must be a Cypher string.")
            given = metadata.get("params")
            if given is None:
                given = metadata.get("cypher_params")
            if given is not None and not isinstance(given, Mapping):
                raise KnowledgeError(
                    f"Record {position}: params must be a JSON object, got "
                    f"{type(given).__name__}; nothing was written."
                )
            parameters = dict(given or {})
            parameters.setdefault("text", text)
            parameters.setdefault("source", source_text)
            return statement, parameters, None
        if not text.strip():
            raise KnowledgeError(
                f"Record {position} has neither text nor a Cypher query; nothing was written."
            )
        given_id = metadata.get("id")
        node_id = str(given_id) if given_id not in (None, "") else stable_id(text, source_text)
        properties = {
            str(key): _property(value)
            for key, value in metadata.items()
            if str(key) not in _RESERVED_METADATA and value is not None
        }
        statement = (
            f"MERGE (k:`{self.node_label}` {{id: $id}}) "
            "ON CREATE SET k.created_at = $now "
            "SET k.text = $text, k.source = $source, k.updated_at = $now, k += $properties"
        )
        now = datetime.now(UTC).isoformat(timespec="seconds")
        parameters = {
            "id": node_id,
            "text": text,
            "source": source_text,
            "now": now,
            "properties": properties,
        }
        return statement, parameters, node_id

    def _translate(
        self, exc: Exception, operation: str, statement: str | None = None
    ) -> KnowledgeError:
        where = f"Neo4j at {self.uri}"
        if isinstance(exc, KnowledgeError):
            return exc
        if isinstance(exc, neo4j_errors.AuthError):
            message = (
                f"{where} rejected the credentials of user '{self.user}' "
                "(check NEO4J_USERNAME / NEO4J_PASSWORD or user= / password=)."
            )
        elif isinstance(exc, neo4j_errors.ServiceUnavailable | neo4j_errors.SessionExpired):
            message = (
                f"{where} is unavailable ({self._scrub(exc)}). Check NEO4J_URI and that the "
                "server is running."
            )
        elif isinstance(exc, neo4j_errors.CypherSyntaxError):
            message = f"Cypher syntax error: {_neo4j_message(exc)}"
        elif isinstance(exc, neo4j_errors.Neo4jError):
            code = exc.code or "unknown code"
            detail = _neo4j_message(exc)
            if "TransactionTimedOut" in code:
                message = (
                    f"The query was stopped by its time limit (timeout_seconds="
                    f"{self.timeout_seconds}): {detail}. Ask for less (a narrower MATCH, a LIMIT)."
                )
            elif "AccessMode" in code or isinstance(exc, neo4j_errors.ForbiddenOnReadOnlyDatabase):
                message = (
                    f"read_kb runs Cypher read-only and this statement writes ({detail}). "
                    "Use write_kb with the statement in query= instead."
                )
            else:
                message = f"{where} failed during {operation} ({code}): {detail}"
        elif isinstance(exc, neo4j_errors.DriverError):
            message = f"{where}: the driver failed during {operation}: {self._scrub(exc)}"
        else:
            message = f"{where} failed during {operation}: {type(exc).__name__}: {exc}"
        if statement and not isinstance(exc, neo4j_errors.AuthError | neo4j_errors.DriverError):
            shown = statement if len(statement) <= 300 else statement[:300] + "..."
            message += f" Statement: {shown}"
        return KnowledgeError(self._scrub(message))

    def _scrub(self, value: object) -> str:
        text = str(value)
        if self._password:
            text = text.replace(self._password, "***")
        return text


# -- values out -----------------------------------------------------------------------------


def _neo4j_message(exc: Exception) -> str:
    message = getattr(exc, "message", None)
    return str(message) if message else str(exc)


def _property(value: Any) -> Any:
    """Turn a metadata value into something Neo4j stores as a property."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, list | tuple) and value:
        kinds = {type(item) for item in value}
        if len(kinds) == 1 and kinds <= {str, int, float, bool}:
            return list(value)
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def to_plain(value: Any) -> Any:
    """Convert a value returned by the driver into JSON-serialisable data.

    Args:
        value: Any value a Cypher row can hold.

    Returns:
        Nodes, relationships and paths as dicts (labels/type and properties), temporal
        values as ISO 8601 strings, bytes as base64, non-finite floats as strings.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Node):
        return {
            "element_id": value.element_id,
            "labels": sorted(value.labels),
            "properties": {k: to_plain(v) for k, v in value.items()},
        }
    if isinstance(value, Relationship):
        return {
            "element_id": value.element_id,
            "type": value.type,
            "start": value.start_node.element_id if value.start_node is not None else None,
            "end": value.end_node.element_id if value.end_node is not None else None,
            "properties": {k: to_plain(v) for k, v in value.items()},
        }
    if isinstance(value, Path):
        return {
            "nodes": [to_plain(node) for node in value.nodes],
            "relationships": [to_plain(rel) for rel in value.relationships],
        }
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    iso = getattr(value, "iso_format", None)
    if callable(iso):
        return str(iso())
    return str(value)


def _record(row: Any) -> Record:
    plain = {str(key): to_plain(value) for key, value in row.items()}
    text = plain.get("text")
    if isinstance(text, str):
        return {"text": text, "metadata": {k: v for k, v in plain.items() if k != "text"}}
    return {"text": json.dumps(plain, ensure_ascii=False), "metadata": plain}
