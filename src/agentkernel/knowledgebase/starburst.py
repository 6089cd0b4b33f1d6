"""``StarburstManager``: read-only SQL over Starburst Galaxy or any Trino cluster.

Requires the ``trino`` extra (the official ``trino`` client and ``sqlglot``)::

    from agentkernel.knowledgebase.starburst import StarburstManager

    kb = StarburstManager(catalog="kb_mongo", schema="crm").add_schema(
        {"tables": {"clients": "client_name, status, region"}}
    )
    kb.query("SELECT client_name FROM clients WHERE status = 'active'")  # LIMIT 3 appended

Settings come from the constructor first, then from these environment variables (read when
the manager is constructed, never at import):

=========================  ======================================================  =========
variable                   meaning                                                 default
=========================  ======================================================  =========
``STARBURST_HOST``         cluster host name, or a URL such as ``http://127.0.0.1``  required
``STARBURST_PORT``         port                                                    443 / 8080
``STARBURST_USER``         user (Galaxy: the login e-mail with its role suffix)     required
``STARBURST_PASSWORD``     password or token, sent with HTTP basic auth            none
``STARBURST_CATALOG``      default catalog                                         none
``STARBURST_SCHEMA``       default schema inside the catalog                       none
``STARBURST_HTTP_SCHEME``  ``https`` (Galaxy) or ``http`` (a local Trino)            https
=========================  ======================================================  =========

HTTPS with basic auth is what Starburst Galaxy speaks. Plain HTTP is allowed for a local
Trino, without a password: credentials are never sent in clear text (a password with
``http`` is a configuration error). The port defaults to 443 for HTTPS and 8080 for HTTP.

The manager is read-only: it declares ``query`` (SQL) and not ``writable``, so ``write_kb``
declines it and ``write()`` raises ``KnowledgeCapabilityError``. Every statement passes the
shared guard first (see ``agentkernel.knowledgebase._sql.guard``): one read-only statement
(SELECT, WITH ... SELECT, VALUES, SHOW, DESCRIBE, EXPLAIN), decided by parsing the Trino
dialect, never a prefix check, calling only Trino built-ins without side effects, the
connectors' ``system.sheet`` and pass-through ``system.query`` (whose query must pass the
guard too), or functions in ``allowed_functions``. A SELECT without its own LIMIT gets
``LIMIT <limit>`` appended; one with a LIMIT keeps it (rows are still capped at ``max_rows``);
statements that take no LIMIT (SHOW, DESCRIBE, ...) return at most ``limit`` rows. Refusals
and query errors raise ``KnowledgeError`` subclasses, which the tools turn into messages: an
error is never reported as "no results".

Limits (see ``agentkernel.knowledgebase._limits``): ``timeout_seconds`` (default 30 s,
``None`` for none) is sent as the session properties ``query_max_execution_time`` and
``query_max_run_time``, so the cluster stops the query, and the client cancels it at the same
deadline should the cluster not have. Rows are read page by page as the client pages them,
and reading stops at the row cap or at ``max_result_bytes`` (default 1 MB of record text);
the rest of the query is cancelled and a notice says what was cut.

Least privilege: Trino has no superuser a connection could be checked against; what a user
may read is decided by the cluster's access control (Starburst Galaxy roles and privileges,
or a Trino ``file``-based catalog and table rules). Give the user this manager connects as a
role that can only ``SELECT`` the catalogs and schemas the agent should see.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase._limits import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    at_deadline,
    take_rows,
)
from agentkernel.knowledgebase._sql.records import row_to_record
from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError
from agentkernel.knowledgebase.model import Record

# Both SDKs of the 'trino' extra are checked here, before the guard module would name the
# 'sql' extra for a missing sqlglot: a Starburst user installs 'trino'.
try:
    import requests
    import sqlglot  # noqa: F401
    import trino
    import trino.auth
    import trino.dbapi
    import trino.exceptions
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra(exc.name or "trino", "trino", feature="StarburstManager") from exc

from agentkernel.knowledgebase._sql.backend import SQLBackend
from agentkernel.knowledgebase._sql.guard import ACCEPTED, GuardedStatement

__all__ = ["SQLQueryError", "SQLRefusedError", "StarburstManager"]

logger = logging.getLogger(__name__)

ENV_HOST = "STARBURST_HOST"
ENV_PORT = "STARBURST_PORT"
ENV_USER = "STARBURST_USER"
ENV_PASSWORD = "STARBURST_PASSWORD"
ENV_CATALOG = "STARBURST_CATALOG"
ENV_SCHEMA = "STARBURST_SCHEMA"
ENV_HTTP_SCHEME = "STARBURST_HTTP_SCHEME"

_DEFAULT_PORTS = {"https": 443, "http": 8080}


class StarburstManager(SQLBackend):
    """Read-only SQL over Starburst Galaxy (or any Trino) through the official client.

    The Trino schema is ``db_schema`` (the ``schema=`` keyword), so the inherited
    ``schema()`` method keeps working and ``get_schemas()`` reports this backend.
    """

    dialect = "trino"
    paramstyle = "qmark"
    _server_time_limit = "the cluster's time limit"

    def __init__(
        self,
        host: str | None = None,
        port: int | None = None,
        user: str | None = None,
        password: str | None = None,
        catalog: str | None = None,
        schema: str | None = None,
        table_name: str = "",
        name: str = "starburst",
        description: str | None = None,
        *,
        http_scheme: str | None = None,
        verify: bool | str = True,
        request_timeout: float = 60.0,
        max_attempts: int = 3,
        max_rows: int = 1000,
        timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES,
        legacy_prepared_statements: bool | None = None,
        allowed_functions: Iterable[str] = (),
        source: str = "agentkernel",
    ) -> None:
        """Configure the backend and create its client (no network call happens here).

        Args:
            host: Cluster host, or a URL carrying the scheme and port; else ``STARBURST_HOST``.
            port: Port; else ``STARBURST_PORT``, else 443 for HTTPS and 8080 for HTTP.
            user: Trino user; else ``STARBURST_USER``.
            password: Password or token for basic auth; else ``STARBURST_PASSWORD``.
            catalog: Default catalog; else ``STARBURST_CATALOG``.
            schema: Default Trino schema, stored as ``db_schema``; else ``STARBURST_SCHEMA``.
            table_name: A primary table, named in the description and schema for the agent.
            name: The backend name the tools use.
            description: What the agent reads to choose this backend.
            http_scheme: ``"https"`` or ``"http"``; else ``STARBURST_HTTP_SCHEME``, else the
                host URL's scheme, else ``"https"``.
            verify: TLS verification: ``True``, ``False`` or a CA bundle path. A bundle given
                here is used even where ``REQUESTS_CA_BUNDLE`` is set (requests would
                otherwise let the environment win silently).
            request_timeout: Seconds per HTTP request.
            max_attempts: HTTP attempts per request before an unreachable cluster is reported.
            max_rows: Most rows returned for a statement carrying its own LIMIT.
            timeout_seconds: Sent as the ``query_max_execution_time`` and
                ``query_max_run_time`` session properties, so the cluster stops a longer
                query, which the client also cancels then; ``None`` turns the limit off.
            max_result_bytes: Most bytes of record text a result carries; the rest is not
                read, and a notice says so. ``None`` turns the cap off.
            legacy_prepared_statements: How the client binds ``params``: ``True`` uses
                PREPARE/EXECUTE, ``False`` EXECUTE IMMEDIATE, ``None`` probes the server.
            allowed_functions: Functions the statement guard accepts besides Trino's built-ins
                without side effects (``agentkernel.knowledgebase._sql.functions``): ``"fn"``
                for an unqualified call, ``"catalog.schema.fn"`` for a connector's table
                function. List only functions that change nothing and read no files.
            source: The ``X-Trino-Source`` the cluster sees.

        Raises:
            AKConfigError: No host or user, a bad port or scheme, a password over HTTP, or
                a limit that is not a positive number.
        """
        super().__init__(name, max_rows, timeout_seconds, max_result_bytes, allowed_functions)
        env_host = host or os.environ.get(ENV_HOST, "")
        parsed = urlsplit(env_host) if "://" in env_host else None
        self.host = (parsed.hostname or "") if parsed else env_host.strip()
        self.http_scheme = (
            http_scheme
            or os.environ.get(ENV_HTTP_SCHEME)
            or (parsed.scheme if parsed else "")
            or "https"
        ).lower()
        self.port = _port(port, os.environ.get(ENV_PORT), parsed.port if parsed else None)
        self.user = user or os.environ.get(ENV_USER, "")
        self._password = password if password is not None else os.environ.get(ENV_PASSWORD)
        self.catalog = catalog or os.environ.get(ENV_CATALOG) or None
        self.db_schema = schema or os.environ.get(ENV_SCHEMA) or None
        self.table_name = table_name
        self.description = description
        self.verify = verify
        self.request_timeout = request_timeout
        self.max_attempts = max_attempts
        self.legacy_prepared_statements = legacy_prepared_statements
        self.source = source
        self._connection: Any = None
        self.connect()

    @property
    def backend_name(self) -> str:
        """The backend name used by the tools."""
        return self.name or "starburst"

    @property
    def target(self) -> str:
        """Where statements go, for messages: ``scheme://host:port``."""
        return f"{self.http_scheme}://{self.host}:{self.port}"

    def connect(self, **kwargs: Any) -> None:
        """Validate the settings and create the Trino client; the client connects lazily.

        Args:
            **kwargs: Unused; accepted for the interface.

        Raises:
            AKConfigError: A setting is missing or inconsistent; the message names it.
        """
        if not self.host:
            raise AKConfigError(
                f"StarburstManager '{self.backend_name}' needs a host: "
                f"pass host= or set {ENV_HOST}."
            )
        if not self.user:
            raise AKConfigError(
                f"StarburstManager '{self.backend_name}' needs a user: "
                f"pass user= or set {ENV_USER}."
            )
        if self.http_scheme not in _DEFAULT_PORTS:
            raise AKConfigError(
                f"StarburstManager '{self.backend_name}': http_scheme must be 'https' or 'http', "
                f"got {self.http_scheme!r} (argument or {ENV_HTTP_SCHEME})."
            )
        if self.port is None:
            self.port = _DEFAULT_PORTS[self.http_scheme]
        if self._password and self.http_scheme != "https":
            raise AKConfigError(
                f"StarburstManager '{self.backend_name}': a password is sent only over HTTPS; "
                f"use http_scheme='https' (Starburst Galaxy) or no password for a local Trino."
            )
        self.close()
        auth = trino.auth.BasicAuthentication(self.user, self._password) if self._password else None
        self._connection = trino.dbapi.connect(  # type: ignore[no-untyped-call]
            http_session=_session(self.verify),
            host=self.host,
            port=self.port,
            http_scheme=self.http_scheme,
            user=self.user,
            auth=auth,
            catalog=self.catalog,
            schema=self.db_schema,
            session_properties=_time_limits(self.timeout_seconds),
            request_timeout=self.request_timeout,
            max_attempts=self.max_attempts,
            legacy_prepared_statements=self.legacy_prepared_statements,
            source=self.source,
        )
        logger.debug("StarburstManager %r targets %s", self.backend_name, self.target)

    def get_description(self) -> str:
        """Say what this backend holds and that it is read-only SQL.

        Returns:
            The configured description, or one naming the catalog, schema and table.
        """
        if self.description:
            return self.description
        where = ".".join(p for p in (self.catalog, self.db_schema, self.table_name) if p)
        return (
            "Starburst/Trino structured data, read-only SQL"
            + (f" over {where}" if where else "")
            + f" ({ACCEPTED})."
        )

    def _derived_schema(self) -> dict[str, Any]:
        derived: dict[str, Any] = {"engine": "trino", "read_only": True}
        for key, value in (
            ("catalog", self.catalog),
            ("db_schema", self.db_schema),
            ("table", self.table_name),
        ):
            if value:
                derived[key] = value
        derived["statements"] = ACCEPTED
        return derived

    def close(self) -> None:
        """Close the client's HTTP session; the next query opens a new one."""
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # closing must never fail the caller
                logger.debug("closing the Trino connection failed", exc_info=True)

    # -- internals -----------------------------------------------------------------------

    def _parameters(self, params: Any) -> list[Any] | None:
        if params is not None and (
            isinstance(params, str | bytes) or not isinstance(params, Sequence)
        ):
            raise SQLQueryError("params must be a list of values for the '?' placeholders.")
        return list(params) if params else None

    def _execute(
        self, guarded: GuardedStatement, params: list[Any] | None, cap: int, row_cap: str
    ) -> list[Record]:
        if self._connection is None:
            self.connect()
        cursor = self._connection.cursor()
        expired = threading.Event()
        stop_timer = None
        if self.timeout_seconds:
            # the cluster enforces the session property; this stops the client waiting on one
            # that does not, and cancels the query there
            stop_timer = at_deadline(self.timeout_seconds, lambda: _cancel(cursor, expired))
        try:
            cursor.execute(guarded.sql, params)
            names = [str(d[0]) for d in (cursor.description or [])]
            source = self._source_label()
            records = take_rows(
                cursor.fetchmany,
                lambda row, number: row_to_record(names, row, number, source),
                max_rows=cap,
                max_bytes=self.max_result_bytes,
                row_cap=row_cap,
            )
            if expired.is_set():  # a cancelled query ends its rows early: never a silent cut
                raise SQLQueryError(self._timeout_message())
        except trino.exceptions.TrinoQueryError as exc:
            if expired.is_set() or exc.error_name == "EXCEEDED_TIME_LIMIT":
                raise SQLQueryError(f"{self._timeout_message()} ({exc.message})") from exc
            raise SQLQueryError(
                f"Trino rejected the query: {exc.error_name or exc.error_type}: {exc.message}"
            ) from exc
        except trino.exceptions.HttpError as exc:
            raise SQLQueryError(_http_message(str(exc), self.target, self.user)) from exc
        except (trino.exceptions.OperationalError, requests.RequestException) as exc:
            raise SQLQueryError(f"Could not reach Trino at {self.target}: {exc}") from exc
        finally:
            if stop_timer is not None:
                stop_timer()
            try:
                cursor.close()  # cancels the rest of a result that was not read
            except Exception:
                logger.debug("cancelling the rest of a Trino result failed", exc_info=True)
        return records

    def _source_label(self) -> str:
        where = ".".join(p for p in (self.catalog, self.db_schema, self.table_name) if p)
        return f"{self.backend_name}:{where}" if where else self.backend_name


class _ExplicitVerifySession(requests.Session):  # type: ignore[misc]
    """A session whose own ``verify`` (a CA bundle, or ``False``) beats the environment.

    requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` override a session's
    ``verify`` whenever a request does not pass one, and the trino client never does; so
    without this an explicit CA bundle would be silently replaced by the system one.
    """

    def merge_environment_settings(
        self,
        url: Any,
        proxies: Any,
        stream: Any,
        verify: Any,
        cert: Any,
    ) -> dict[str, Any]:
        settings: dict[str, Any] = super().merge_environment_settings(
            url, proxies, stream, verify, cert
        )
        if verify is None and self.verify is not True:
            settings["verify"] = self.verify
        return settings


def _time_limits(seconds: float | None) -> dict[str, str] | None:
    """The session properties that make the cluster stop a query after ``seconds``."""
    if not seconds:
        return None
    duration = f"{max(1, round(seconds * 1000))}ms"
    return {"query_max_execution_time": duration, "query_max_run_time": duration}


def _cancel(cursor: Any, expired: threading.Event) -> None:
    """Cancel a query past its deadline (timer thread); the reading thread then stops."""
    expired.set()
    try:
        cursor.cancel()
    except Exception:  # the query may have ended meanwhile
        logger.debug("cancelling a Trino query past its deadline failed", exc_info=True)


def _session(verify: bool | str) -> requests.Session:
    session = _ExplicitVerifySession()
    session.verify = verify
    return session


def _port(explicit: int | None, from_env: str | None, from_url: int | None) -> int | None:
    if explicit is not None:
        value: Any = explicit
    elif from_env:
        value = from_env
    else:
        return from_url
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 0 < port < 65536:
        raise AKConfigError(
            f"The Starburst port must be 1-65535 (argument or {ENV_PORT}), got {value!r}."
        )
    return port


def _http_message(detail: str, target: str, user: str) -> str:
    if "401" in detail.split(":", 1)[0]:
        return (
            f"Trino at {target} refused the credentials of user '{user}' (HTTP 401); "
            f"check {ENV_USER} and {ENV_PASSWORD}."
        )
    return f"Trino at {target} answered with an HTTP error: {detail}"
