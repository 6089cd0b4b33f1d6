"""``OKFCapability``: the okf block of config.yaml turned into per-agent tools and prompts.

Deciding an agent's tools and composing its instructions read configuration only. The
``OKFManager`` of a database is created (and its bundle walked) the first time any agent's
tool touches it, then shared by every agent holding a role in that database. A database whose
``runtimes`` bind its Attested Computations to SQL databases gives every agent with a role in
it ``run_computation`` (running one is a read); the SQL backends open on the first run.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agentkernel._tooling.result import ToolResult
from agentkernel.config import AKConfig, OKFConfig, OKFDatabaseConfig, load_config
from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from agentkernel.roles import _prompts as prompts
from agentkernel.roles._lazy import LazyBundle
from agentkernel.roles._stores import Stores, check_roles

if TYPE_CHECKING:
    from agentkernel.knowledgebase._sql.backend import SQLBackend
    from agentkernel.knowledgebase.okf.computation import Computations
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

ROLES = ("consumer", "producer", "curator")
_WRITING_ROLES = ("producer", "curator")
_Entry = TypeVar("_Entry")


class OKFCapability:
    """Per-agent OKF tools and instructions from an ``okf`` configuration block."""

    def __init__(self, okf: OKFConfig, base_dir: Path | None = None) -> None:
        """Validate the block; opens no store.

        Args:
            okf: The validated ``okf`` block.
            base_dir: Directory that relative local URIs resolve against (the config file's);
                the working directory when ``None``.

        Raises:
            AKConfigError: A database names no agent, an agent is both producer and curator
                of one database, a ``type`` disagrees with its ``uri``, a runtime names a
                SQL database ``sql_databases`` does not define, or an attester is not
                registered under ``attesters``.
        """
        for database, entry in okf.databases.items():
            _validate_database(database, entry)
            _validate_computations(database, entry, okf)
        self._stores = Stores(okf.stores, okf.databases, base_dir)
        self._okf = okf
        self._base_dir = base_dir
        self._managers: dict[str, OKFManager] = {}
        self._sql: dict[str, SQLBackend] = {}
        self._runners: dict[str, Computations] = {}
        self._lock = threading.Lock()
        self.background = False
        """Open bundles loading on a thread (a server: it listens at once; see OKFManager)."""

    @classmethod
    def from_config(
        cls, config_or_path: AKConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None
    ) -> OKFCapability | None:
        """Build the capability from configuration.

        Args:
            config_or_path: A loaded ``AKConfig``, a mapping, a path to ``config.yaml``, or
                ``None`` for the default location (see :func:`agentkernel.config.load_config`).

        Returns:
            The capability, or ``None`` when the configuration has no ``okf`` block.

        Raises:
            AKConfigError: The configuration is invalid.
        """
        config = (
            config_or_path if isinstance(config_or_path, AKConfig) else load_config(config_or_path)
        )
        if config.okf is None:
            return None
        return cls(config.okf, config.base_dir)

    # -- configuration only ---------------------------------------------------------------

    def databases(self) -> list[str]:
        """Every configured database name, in configuration order."""
        return list(self._okf.databases)

    @property
    def stores(self) -> Stores:
        """The block's curated stores (``okf.stores``): their roles, tools and instructions."""
        return self._stores

    def agents(self) -> list[str]:
        """Every agent named in any database or store, in first-mention order."""
        seen: dict[str, None] = {}
        for entry in self._okf.databases.values():
            for role in ROLES:
                seen.update(dict.fromkeys(getattr(entry, role)))
        seen.update(dict.fromkeys(self._stores.agents()))
        return list(seen)

    def roles_of(self, agent: str) -> dict[str, str]:
        """Map each database the agent holds a role in to that role.

        Args:
            agent: The agent's name.

        Returns:
            Database name to ``consumer``, ``producer`` or ``curator``, in configuration order.
        """
        found: dict[str, str] = {}
        for database, entry in self._okf.databases.items():
            for role in (*_WRITING_ROLES, "consumer"):
                if agent in getattr(entry, role):
                    found[database] = role
                    break
        return found

    def writable_for(self, agent: str) -> list[str]:
        """Name the databases the agent may write to.

        Args:
            agent: The agent's name.

        Returns:
            Database names where the agent is a producer or curator.
        """
        return [db for db, role in self.roles_of(agent).items() if role in _WRITING_ROLES]

    def instructions_for(self, agent: str) -> str:
        """Compose the text appended to the agent's instructions.

        Args:
            agent: The agent's name.

        Returns:
            The navigation protocol with one sentence per role; ``""`` for an agent with no role.
        """
        descriptions = {db: e.description for db, e in self._okf.databases.items()}
        parts = [prompts.compose(self.roles_of(agent), descriptions)]
        parts.append(self._stores.instructions_for(agent))
        return "\n\n".join(part for part in parts if part)

    def tools_for(self, agent: str) -> list[Callable[..., str]]:
        """Build the agent's tools: plain callables in the ``KnowledgeBuilder`` order.

        Args:
            agent: The agent's name.

        Returns:
            No tools for an agent with no role; a consumer's six tools; ``write_kb`` as well
            when the agent is a producer or curator somewhere; ``run_computation`` when one
            of its databases binds a runtime; then the ``knowledge_*`` tools its role in a
            store gives (see :mod:`agentkernel.roles._stores`). Building opens no bundle and
            no database; a store is opened (its page types are read).
        """
        roles = self.roles_of(agent)
        if not roles:
            return list(self._stores.tools_for(agent))
        bundles = [
            LazyBundle(db, role in _WRITING_ROLES, functools.partial(self.manager, db))
            for db, role in roles.items()
        ]
        runners = [runner for db in roles if (runner := self.computations(db)) is not None]
        writable = self.writable_for(agent)
        tools = KnowledgeBuilder(bundles, computations=runners).build(writable=bool(writable))
        guarded = [_guard_writes(tool, agent, list(roles), writable) for tool in tools]
        return guarded + self._stores.tools_for(agent)

    def computations(self, database: str) -> Computations | None:
        """The database's Attested Computations runner, shared by every agent; opens nothing.

        Args:
            database: A database name from the okf block.

        Returns:
            The runner, or ``None`` when the database binds no runtime.

        Raises:
            AKConfigError: The database is not configured.
        """
        entry = self.database_config(database)
        if not entry.runtimes:
            return None
        with self._lock:
            if database not in self._runners:
                self._runners[database] = self._runner(database, entry)
            return self._runners[database]

    def _runner(self, database: str, entry: OKFDatabaseConfig) -> Computations:
        from agentkernel.knowledgebase.okf.computation import Computations
        from agentkernel.roles.runtimes import lazy_attester

        runtimes = {
            runtime: functools.partial(self.sql_database, database, runtime)
            for runtime in entry.runtimes
        }
        attesters = {name: lazy_attester(self.attester_spec(name)) for name in entry.attesters}
        return Computations(
            functools.partial(self.manager, database),
            runtimes,  # type: ignore[arg-type]  # callables opening SQL backends
            name=database,
            on_stale=entry.on_stale,
            attesters=attesters,
        )

    def sql_database(self, database: str, runtime: str) -> SQLBackend:
        """The SQL backend a database's runtime is bound to, opened on first use and shared.

        Args:
            database: A database name from the okf block.
            runtime: A runtime its ``runtimes`` binds.

        Returns:
            The backend (``SQLManager`` or ``StarburstManager``).

        Raises:
            AKConfigError: Not configured, or the backend cannot be created.
        """
        from agentkernel.roles.runtimes import is_url, open_runtime

        target = self.database_config(database).runtimes.get(runtime)
        if target is None:
            raise AKConfigError(f"okf database {database!r} binds no runtime {runtime!r}")
        key = f"{database}:{runtime}" if is_url(target) else target
        with self._lock:
            if key not in self._sql:
                named = self._okf.sql_databases.get(target)
                self._sql[key] = open_runtime(
                    named.url if named else target,
                    name=target if named else runtime,
                    base_dir=self._base_dir,
                    settings=named.settings() if named else None,
                )
            return self._sql[key]

    def attester_spec(self, name: str) -> str:
        """The ``python:package.module:callable`` an attester name is registered as.

        Args:
            name: A name from ``okf.attesters``.

        Returns:
            The spec.

        Raises:
            AKConfigError: No attester is registered under that name.
        """
        attesters = self._okf.attesters
        return _configured(
            attesters, name, f"No attester {name!r} in okf.attesters: {sorted(attesters)}"
        )

    def database_config(self, database: str) -> OKFDatabaseConfig:
        """A database's configuration.

        Args:
            database: A database name from the okf block.

        Returns:
            Its validated entry.

        Raises:
            AKConfigError: The database is not configured.
        """
        databases = self._okf.databases
        return _configured(
            databases,
            database,
            f"No okf database named {database!r}. Configured: {list(databases)}",
        )

    # -- first touch ---------------------------------------------------------------------

    def manager(self, database: str) -> OKFManager:
        """Return the database's shared manager, creating it (and walking it) on first use.

        Args:
            database: A database name from the okf block.

        Returns:
            The one ``OKFManager`` every agent with a role in the database shares.

        Raises:
            AKConfigError: The database is not configured, or its store cannot be built.
        """
        existing = self._managers.get(database)
        if existing is not None:
            return existing
        with self._lock:
            if database not in self._managers:
                self._managers[database] = self._open(database)
            return self._managers[database]

    def _open(self, database: str) -> OKFManager:
        from agentkernel.knowledgebase.okf.manager import OKFManager

        entry = self.database_config(database)
        store = self._store(database, entry)
        writers = [a for role in _WRITING_ROLES for a in getattr(entry, role)]
        if writers and not store.writable:
            logger.warning(
                "okf database %r is read-only (%s) but names writers %s: their writes will be "
                "declined",
                database,
                store.location,
                writers,
            )
        return OKFManager(
            store,
            name=database,
            description=entry.description,
            refresh_seconds=entry.refresh_seconds,
            index=_resolved_index(entry.index, self._base_dir),
            index_options=entry.index_options,
            index_fallback=entry.index_fallback,
            embedder=self._relative(_embedder(entry), model=True),
            cache_dir=self._relative(entry.vector_cache),
            legacy_dates=entry.legacy_dates,
            background=self.background,
        )

    def _relative(self, value: str | None, model: bool = False) -> str | None:
        """A configured folder, relative to the config file (names and URLs as given)."""
        from agentkernel.retrieval.embedders import DEFAULT_NAMES

        if value is None or self._base_dir is None or "://" in value:
            return value
        if model and value.casefold() in DEFAULT_NAMES:
            return value
        return str((self._base_dir / value).expanduser())

    def _store(self, database: str, entry: OKFDatabaseConfig) -> DocumentStore:
        from agentkernel.storage.base import DocumentStore, load_store_class

        if entry.type in ("local", "s3"):
            uri = entry.uri
            if entry.type == "local" and self._base_dir is not None and "://" not in uri:
                uri = str((self._base_dir / uri).resolve())
            return DocumentStore.from_uri(uri)
        store_class = load_store_class(entry.type, f"okf database {database!r}")
        # A custom store is constructed from its location, as configured in `uri`.
        factory = cast("Callable[[str], DocumentStore]", store_class)
        return factory(entry.uri)


def _configured(table: Mapping[str, _Entry], name: str, missing: str) -> _Entry:
    """Return the entry ``name`` of a table of the okf block.

    Args:
        table: The table (``okf.databases``, ``okf.attesters``).
        name: The entry's name.
        missing: The error's message when there is no such entry.

    Returns:
        The entry.

    Raises:
        AKConfigError: No entry is named ``name``.
    """
    entry = table.get(name)
    if entry is None:
        raise AKConfigError(missing)
    return entry


def _resolved_index(index: str | None, base_dir: Path | None) -> str | None:
    """A relative local index path resolves against the configuration file's directory."""
    if index is None or base_dir is None or "://" in index or Path(index).is_absolute():
        return index
    return str((base_dir / index).resolve())


def _validate_database(database: str, entry: OKFDatabaseConfig) -> None:
    check_roles("database", database, entry)
    is_s3 = entry.uri.lower().startswith("s3://")
    kind = entry.type
    if (kind == "local" and is_s3) or (kind == "s3" and not is_s3):
        raise AKConfigError(
            f"okf database {database!r}: type {kind!r} disagrees with uri {entry.uri!r} "
            "(type local takes a path or file:// URI, type s3 an s3://bucket/prefix URI)."
        )
    if kind not in ("local", "s3") and "." not in kind:
        raise AKConfigError(
            f"okf database {database!r}: unknown type {kind!r}; use 'local', 's3' or a dotted "
            "path to a DocumentStore subclass."
        )


def _validate_computations(database: str, entry: OKFDatabaseConfig, okf: OKFConfig) -> None:
    if not entry.runtimes and not entry.attesters:
        return
    from agentkernel.roles.runtimes import is_url

    for runtime, target in entry.runtimes.items():
        if not is_url(target) and target not in okf.sql_databases:
            raise AKConfigError(
                f"okf database {database!r}: runtime {runtime!r} is bound to {target!r}, "
                f"which is neither a URL nor a SQL database of okf.sql_databases "
                f"(defined: {sorted(okf.sql_databases)})."
            )
    for name in entry.attesters:
        if name not in okf.attesters:
            raise AKConfigError(
                f"okf database {database!r}: attester {name!r} is not registered under "
                f"okf.attesters (registered: {sorted(okf.attesters)}); register it as "
                "python:package.module:callable."
            )


def _guard_writes(
    tool: Callable[..., str], agent: str, databases: list[str], writable: list[str]
) -> Callable[..., str]:
    """Refuse ``write_kb`` on a database where the agent is only a consumer, naming both.

    The refusal is an error result (MCP ``isError: true``), like every other refusal.
    """
    if tool.__name__ != "write_kb":
        return tool

    @functools.wraps(tool)
    def write_kb(backend: str, *args: Any, **kwargs: Any) -> str:
        if backend in databases and backend not in writable:
            return ToolResult.error(
                f"Agent '{agent}' has read-only access to '{backend}'. "
                f"Knowledge bases it may write to: {writable}."
            )
        return tool(backend, *args, **kwargs)

    return write_kb


def _embedder(entry: OKFDatabaseConfig) -> str | None:
    """The embedder a database's ``embedder:`` names (``auto``: hybrid when installed)."""
    from agentkernel.retrieval.embedders import AUTO, chosen_embedder

    spec = entry.embedder
    if spec is not None and spec.strip().casefold() == AUTO and entry.index:
        return None  # an index's vectors are chosen when it is built (index --embedder)
    return chosen_embedder(spec)
