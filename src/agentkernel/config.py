"""``config.yaml``: typed configuration of an agentkernel application.

Where it comes from, in order: an explicit path or mapping passed to :func:`load_config`;
the ``AK_CONFIG_PATH_OVERRIDE`` environment variable; ``./config.yaml``. Unknown top-level
blocks are kept (another part of an application may own them); known blocks are validated
strictly, and every mistake raises :class:`~agentkernel.errors.AKConfigError` naming the
offending setting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from agentkernel.errors import AKConfigError
from agentkernel.storage.yamltext import YAMLLimitError, load_bounded

CONFIG_ENV_VAR = "AK_CONFIG_PATH_OVERRIDE"
DEFAULT_CONFIG_PATH = "config.yaml"

#: The largest configuration file read, in bytes; a real one is a few kilobytes.
MAX_CONFIG_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists accepted.
MAX_CONFIG_DEPTH = 64
#: The most values a configuration may stand for once its aliases are expanded.
MAX_CONFIG_NODES = 200_000

#: An operator's attester: ``python:package.module:callable`` (the module's import name, then
#: the callable's name in it).
ATTESTER_SPEC = re.compile(r"python:([A-Za-z_][\w.]*):([A-Za-z_][\w.]*)")


class OKFDatabaseConfig(BaseModel):
    """One OKF bundle and the agents that may reach it.

    Attributes:
        type: ``local``, ``s3``, or a dotted path to a ``DocumentStore`` subclass.
        uri: A path, ``file://`` URI, ``s3://bucket/prefix``, or the custom store's location.
        description: What the bundle holds, shown to agents.
        refresh_seconds: Seconds between refreshes; ``None`` disables automatic refresh.
        index: A shared bundle index (``s3://bucket/kb.lance`` or a path) served instead of
            walking the bundle; built by ``agentkernel-kb index`` (the ``lancedb`` extra).
        index_options: Object-store options for the index, as Lance names them.
        index_fallback: ``walk`` to walk the bundle when the index cannot be opened.
        embedder: Makes search hybrid: ``default`` (the packaged all-MiniLM-L6-v2, the
            ``embeddings`` extra), a sentence-transformers model folder (relative to the
            config file), or ``http(s)://host/v1#model`` (an OpenAI-compatible endpoint, key
            from ``AGENTKERNEL_EMBEDDINGS_API_KEY``). ``lexical`` or ``null``: lexical
            search. Left out (``auto``): hybrid with ``default`` when the ``embeddings``
            extra and the model package are installed, else lexical; with ``index:``, the
            index decides (its vectors come from ``agentkernel-kb index --embedder``).
        vector_cache: The vector cache folder (relative to the config file); ``None`` for
            ``$XDG_CACHE_HOME/agentkernel/vectors``. Pods share it as a volume.
        legacy_dates: Read a bare-date ``stale_after`` as midnight UTC (bundles written
            before OKF 0.2 required a datetime with an offset); off: such a value is ignored.
        runtimes: The bundle's Attested Computations: each ``runtime`` they name, bound to a
            SQL database of ``okf.sql_databases`` by name, or by URL. Agents with a role get
            ``run_computation`` (a read).
        on_stale: A computation past its ``stale_after``: ``warn`` (run, and say so) or
            ``refuse`` (run nothing).
        attesters: Names from ``okf.attesters`` run after the built-in attester; all must
            pass.
        consumer: Agents that read the bundle.
        producer: Agents that read it and add knowledge to it.
        curator: Agents that read it and maintain it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    uri: str
    description: str | None = None
    refresh_seconds: float | None = 300.0
    index: str | None = None
    index_options: dict[str, str] = Field(default_factory=dict)
    index_fallback: Literal["walk"] | None = None
    embedder: str | None = "auto"
    vector_cache: str | None = None
    legacy_dates: bool = False
    runtimes: dict[str, str] = Field(default_factory=dict)
    on_stale: Literal["warn", "refuse"] = "warn"
    attesters: list[str] = Field(default_factory=list)
    consumer: list[str] = Field(default_factory=list)
    producer: list[str] = Field(default_factory=list)
    curator: list[str] = Field(default_factory=list)

    @field_validator("embedder", "vector_cache")
    @classmethod
    def _not_blank_or_null(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty (write lexical for lexical search)")
        return value.strip() if value is not None else None

    @field_validator("type", "uri")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("refresh_seconds")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be a positive number of seconds, or null to disable refresh")
        return value

    @field_validator("runtimes")
    @classmethod
    def _runtimes_named(cls, value: dict[str, str]) -> dict[str, str]:
        for runtime, target in value.items():
            if not runtime.strip() or not target.strip():
                raise ValueError("a runtime and its SQL database must not be empty")
        return {runtime.strip(): target.strip() for runtime, target in value.items()}


class SQLDatabaseConfig(BaseModel):
    """A SQL database computations run on (``okf.sql_databases``), opened on first use.

    Attributes:
        url: A SQLAlchemy URL (a relative SQLite or DuckDB file resolves against the config
            file's directory), or ``trino://USER@HOST:PORT/CATALOG/SCHEMA``.
        max_rows: The most rows a run returns (the backend's default when left out).
        timeout_seconds: Seconds a statement may run; ``null``: no limit.
        max_result_bytes: Bytes of result a run may carry; ``null``: no cap.
        allowed_functions: Functions the statement guard accepts besides the built-ins.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    max_rows: int | None = Field(default=None, gt=0)
    timeout_seconds: float | None = None
    max_result_bytes: int | None = None
    allowed_functions: list[str] = Field(default_factory=list)

    @field_validator("url")
    @classmethod
    def _a_url(cls, value: str) -> str:
        if "://" not in value:
            raise ValueError("must be a URL such as sqlite:///warehouse.sqlite")
        return value.strip()

    def settings(self) -> dict[str, Any]:
        """The limits given, as the backend's keywords (the rest keep its defaults)."""
        given = self.model_fields_set - {"url"}
        return {name: getattr(self, name) for name in sorted(given)}


class StoreConfig(BaseModel):
    """A curated knowledge store (typed pages, validated links) and the agents that reach it.

    Attributes:
        uri: Where its pages live, by the URIs bundles take: a folder path (relative to the
            config file) or ``file:///path``, ``s3://bucket/prefix``, or
            ``sqlite:///path/pages.sqlite``.
        description: What the store holds, shown to agents.
        consumer: Agents that read it (``knowledge_index``, ``knowledge_search``,
            ``knowledge_read``).
        producer: Agents that also write it (``knowledge_create``, ``knowledge_edit``,
            ``knowledge_rewrite``, ``knowledge_supersede``, ``knowledge_log``).
        curator: Agents that also retire pages (asking the person) and check the links
            (``knowledge_retire``, ``knowledge_check``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str
    description: str | None = None
    consumer: list[str] = Field(default_factory=list)
    producer: list[str] = Field(default_factory=list)
    curator: list[str] = Field(default_factory=list)

    @field_validator("uri")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()


class OKFConfig(BaseModel):
    """The ``okf`` block: its presence enables configuration-driven OKF.

    Attributes:
        databases: Bundles by name.
        stores: Curated knowledge stores by name (names distinct from the bundles').
        sql_databases: SQL databases the bundles' computations run on, by name.
        attesters: The operator's attesters by name: ``python:package.module:callable``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    databases: dict[str, OKFDatabaseConfig] = Field(default_factory=dict)
    stores: dict[str, StoreConfig] = Field(default_factory=dict)
    sql_databases: dict[str, SQLDatabaseConfig] = Field(default_factory=dict)
    attesters: dict[str, str] = Field(default_factory=dict)

    @field_validator("attesters")
    @classmethod
    def _attesters_named(cls, value: dict[str, str]) -> dict[str, str]:
        return {name: check_attester_spec(spec) for name, spec in value.items()}


def check_attester_spec(spec: str) -> str:
    """Check the shape of an attester's name, importing nothing.

    Args:
        spec: ``python:package.module:callable``.

    Returns:
        The spec, stripped.

    Raises:
        ValueError: It has another shape.
    """
    if not isinstance(spec, str) or not ATTESTER_SPEC.fullmatch(spec.strip()):
        raise ValueError(
            f"an attester is named python:package.module:callable, got {spec!r} "
            "(the operator's installed code; a bundle's resources never run)"
        )
    return spec.strip()


class AKConfig(BaseModel):
    """The whole ``config.yaml``; blocks other than the known ones are kept as given.

    Attributes:
        okf: The ``okf`` block, or ``None`` when the file has none.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    okf: OKFConfig | None = None
    _base_dir: Path | None = PrivateAttr(default=None)

    @property
    def base_dir(self) -> Path | None:
        """The directory of the file this came from; relative local URIs resolve against it."""
        return self._base_dir

    @property
    def extra_blocks(self) -> dict[str, Any]:
        """Top-level blocks this package does not interpret, as they were given."""
        return dict(self.model_extra or {})


def load_config(source: str | os.PathLike[str] | Mapping[str, Any] | None = None) -> AKConfig:
    """Load and validate the application configuration.

    Args:
        source: A path to a YAML file, an already-parsed mapping, or ``None`` for
            ``$AK_CONFIG_PATH_OVERRIDE`` or else ``./config.yaml``.

    Returns:
        The validated configuration; an absent default file yields an empty configuration.

    Raises:
        AKConfigError: The file is missing (when named explicitly), unreadable, not YAML,
            not a mapping, or a known block is invalid; the message names the setting.
    """
    if isinstance(source, Mapping):
        return _validate(dict(source), "the configuration mapping")
    if source is None:
        override = os.environ.get(CONFIG_ENV_VAR)
        if override:
            return _load_file(Path(override), f"${CONFIG_ENV_VAR}")
        default = Path(DEFAULT_CONFIG_PATH)
        return _load_file(default, "default") if default.exists() else AKConfig()
    if isinstance(source, str | os.PathLike):
        return _load_file(Path(source), "given")
    raise AKConfigError(f"Configuration must be a path or a mapping, got {type(source).__name__}.")


def _load_file(path: Path, how: str) -> AKConfig:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        text = raw.decode("utf-8")
    except FileNotFoundError as exc:
        raise AKConfigError(f"Configuration file {str(path)!r} ({how}) does not exist.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise AKConfigError(f"Cannot read configuration file {str(path)!r}: {exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise AKConfigError(
            f"Configuration file {str(path)!r} is larger than {MAX_CONFIG_BYTES} bytes; a "
            "configuration is a few kilobytes. Nothing was loaded."
        )
    where = str(path)
    try:
        data = load_bounded(
            text, max_values=MAX_CONFIG_NODES, max_depth=MAX_CONFIG_DEPTH, timestamps=True
        )
    except yaml.YAMLError as exc:
        raise AKConfigError(f"Configuration file {where!r} is not valid YAML: {exc}") from exc
    except YAMLLimitError as exc:
        subject = f"Configuration file {where!r}"
        raise AKConfigError(f"{exc.says(subject)}. Nothing was loaded.") from None
    if data is None:
        return AKConfig()
    if not isinstance(data, dict):
        raise AKConfigError(f"Configuration file {str(path)!r} must hold a mapping at the top.")
    config = _validate(data, repr(str(path)))
    config._base_dir = path.resolve().parent
    return config


def _validate(data: dict[str, Any], where: str) -> AKConfig:
    try:
        return AKConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors())
        raise AKConfigError(f"Invalid configuration in {where}: {problems}") from exc


def _describe(error: Mapping[str, Any]) -> str:
    location = [str(part) for part in error.get("loc", ())]
    if len(location) >= 3 and location[:2] in (["okf", "databases"], ["okf", "stores"]):
        field = ".".join(location[3:]) or "(the entry itself)"
        kind = "database" if location[1] == "databases" else "store"
        place = f"okf {kind} '{location[2]}', field '{field}'"
    else:
        place = "field '" + ".".join(location) + "'"
    return f"{place}: {error.get('msg', 'invalid')}"
