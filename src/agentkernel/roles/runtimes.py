"""What an operator names in ``config.yaml`` or on the command line: runtimes and attesters.

A runtime is bound to a SQL database by URL. A SQLAlchemy URL (``sqlite:///warehouse.sqlite``,
``duckdb:///warehouse.duckdb``, ``postgresql+psycopg://reader@db/warehouse``) opens an
``SQLManager``; ``trino://USER@HOST:PORT/CATALOG/SCHEMA`` opens a ``StarburstManager``
(HTTPS unless ``?http_scheme=http`` or ``STARBURST_HTTP_SCHEME`` says otherwise; the password
only from ``STARBURST_PASSWORD``, never from the URL). A relative SQLite or DuckDB file
resolves against the configuration file's directory.

An attester is named ``python:package.module:callable``: the operator's own code, installed
as ordinary Python and trusted as the configuration is. A bundle never names code that runs:
``executor.resource`` and ``attester.resource`` are never read (see :mod:`.attest`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from agentkernel.config import ATTESTER_SPEC, check_attester_spec
from agentkernel.errors import AKConfigError

if TYPE_CHECKING:
    from agentkernel.knowledgebase._sql.backend import SQLBackend
    from agentkernel.knowledgebase.okf.computation.attest import Attester

_TRINO = ("trino",)
_FILE_ENGINES = ("sqlite", "duckdb")


def load_attester(spec: str) -> Attester:
    """Import the attester a ``python:package.module:callable`` spec names.

    Args:
        spec: The spec.

    Returns:
        The callable: ``attester(receipt, contract)`` returning ``bool`` or ``(bool, reason)``.

    Raises:
        AKConfigError: The spec is malformed, the module cannot be imported, or the name is
            not a callable in it.
    """
    try:
        module_name, attribute = ATTESTER_SPEC.fullmatch(check_attester_spec(spec)).groups()  # type: ignore[union-attr]
    except ValueError as exc:
        raise AKConfigError(str(exc)) from exc
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise AKConfigError(f"attester {spec!r}: cannot import {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise AKConfigError(f"attester {spec!r}: {module_name} has no callable {attribute!r}")
    attester: Attester = found
    return attester


def lazy_attester(spec: str) -> Attester:
    """An attester imported on its first call (configuration loading stays free of imports).

    A spec that cannot be imported then raises, which fails the attestation with the reason:
    a misconfigured check never lets a value through.

    Args:
        spec: ``python:package.module:callable``.

    Returns:
        The attester.
    """
    loaded: list[Attester] = []

    def attester(receipt: Any, contract: Any) -> bool | tuple[bool, str]:
        if not loaded:
            loaded.append(load_attester(spec))
        return loaded[0](receipt, contract)

    return attester


def is_url(value: str) -> bool:
    """Whether a runtime's binding is a URL (else it names a configured SQL database)."""
    return "://" in value


def open_runtime(
    url: str,
    *,
    name: str = "sql",
    base_dir: Path | None = None,
    settings: Mapping[str, Any] | None = None,
) -> SQLBackend:
    """Open the SQL backend a URL names (creating its client; no connection yet).

    Args:
        url: A SQLAlchemy URL, or ``trino://USER@HOST:PORT/CATALOG/SCHEMA``.
        name: The backend's name, shown in receipts.
        base_dir: The directory a relative SQLite or DuckDB file resolves against.
        settings: The backend's limits (``max_rows``, ``timeout_seconds``,
            ``max_result_bytes``, ``allowed_functions``), as the manager's keywords.

    Returns:
        An ``SQLManager`` or a ``StarburstManager``.

    Raises:
        AKConfigError: The URL is not one of these, carries a Trino password, or the
            backend refuses its settings; a missing extra says which to install.
    """
    options = dict(settings or {})
    scheme = url.partition("://")[0].lower()
    if scheme in _TRINO:
        return _trino(url, name, options)
    from agentkernel.knowledgebase.sql import SQLManager

    return SQLManager(_anchored(url, base_dir), name=name, **options)


def _anchored(url: str, base_dir: Path | None) -> str:
    """A SQLite or DuckDB URL whose relative file is made absolute under ``base_dir``."""
    if base_dir is None:
        return url
    scheme, _, rest = url.partition("://")
    engine = scheme.partition("+")[0].lower()
    if engine not in _FILE_ENGINES or not rest.startswith("/"):
        return url
    path, query = rest[1:].partition("?")[::2]
    if not path or path.startswith("/") or path == ":memory:" or os.path.isabs(path):
        return url
    anchored = f"{scheme}:///{(base_dir / path).resolve()}"
    return f"{anchored}?{query}" if query else anchored


def _trino(url: str, name: str, options: dict[str, Any]) -> SQLBackend:
    parts = urlsplit(url)
    if parts.password:
        raise AKConfigError(
            f"runtime URL {parts.scheme}://{parts.username}:***@{parts.hostname}: a Trino "
            "password is read from STARBURST_PASSWORD, never from the URL"
        )
    path = [p for p in parts.path.split("/") if p]
    if not parts.hostname or not parts.username or len(path) > 2:
        raise AKConfigError(
            f"a Trino runtime is trino://USER@HOST:PORT/CATALOG/SCHEMA, got {url!r}"
        )
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - {"http_scheme"})
    if unknown:
        raise AKConfigError(f"runtime URL {url!r}: unknown option(s) {unknown}")
    from agentkernel.knowledgebase.starburst import StarburstManager

    return StarburstManager(
        host=parts.hostname,
        port=parts.port,
        user=parts.username,
        catalog=path[0] if path else None,
        schema=path[1] if len(path) > 1 else None,
        name=name,
        http_scheme=query.get("http_scheme"),
        **options,
    )
