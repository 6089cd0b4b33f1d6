"""``ChromaManager``: a Chroma collection as a semantic, writable knowledge base.

Declares kinds ``["vector"]``, ``search`` (semantic) and ``writable``; there is no ``query``,
``fetch`` or ``browse``. Importing this module imports ``chromadb`` (the ``chromadb`` extra).

Where the collection lives, first match wins (arguments before environment variables, which
are read when the manager is constructed, never at import):

1. ``client=``: a chromadb client you built yourself (it is not closed by :meth:`close`).
2. ``host=`` (and ``port=``, ``ssl=``, ``headers=``): a Chroma server through ``HttpClient``.
3. ``path=``: an embedded ``PersistentClient`` on that directory.
4. ``CHROMA_HOST`` (with ``CHROMA_PORT``, default 8000, and ``CHROMA_SSL``): a server.
5. ``CHROMA_PATH``, else ``./.chroma``: an embedded ``PersistentClient``.

The collection is ``collection=``, else ``CHROMA_COLLECTION``, else ``"agentkernel"``.
Constructing opens nothing; :meth:`connect` (called on first use) opens the client and the
collection, so a wrong host fails at the first operation with a :class:`KnowledgeError`.
Chroma's anonymous telemetry is switched off for every client this module creates.

Embedding function: ``embedding_function=`` is passed on every collection open. Without one,
chromadb embeds with the function recorded in the collection's configuration, or, for a new
collection, with its default ONNX all-MiniLM-L6-v2 model, which it downloads (about 80 MB) to
``~/.cache/chroma`` on first use. That fallback is never silent: construction logs a WARNING
saying so. Pass chromadb's ``DefaultEmbeddingFunction()`` explicitly to choose it knowingly.

Limits (see ``agentkernel.knowledgebase._limits``): a search returns at most ``limit``
records and at most ``max_result_bytes`` (default 1 MB) of record text, with a notice saying
what was cut. On a Chroma server every HTTP request gives up after ``timeout_seconds``
(default 30 s; ``None`` for none: chromadb's own client never gives up); an embedded
collection has no server to wait for.

Records written: the id is ``metadata["id"]`` when given, else a hash of text and source, so
writing the same record twice is one upsert, not a duplicate; a record rewritten under an id
carries exactly its new metadata (Chroma's upsert would merge the old keys in, so the write
reads the stored keys first and deletes the ones no longer given). Metadata is sanitised to what
Chroma stores: ``None`` values and the ``id`` key are dropped, scalars are kept, and anything
nested (dicts, lists, ...) is JSON-encoded and decoded again on the way out, so metadata such as
``write_kb``'s ``params`` never makes a write fail. Records read carry ``metadata["id"]``,
``metadata["source"]`` (``None`` when never given) and ``metadata["distance"]``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.model import KnowledgeCapabilities, Record, stable_id

try:
    import chromadb
    from chromadb.config import Settings
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise missing_extra("chromadb", "chromadb", feature="ChromaManager") from exc

DEFAULT_PATH = "./.chroma"
DEFAULT_COLLECTION = "agentkernel"
DEFAULT_PORT = 8000

_JSON_KEYS = "_ak_json"  # metadata key listing the keys whose values were JSON-encoded
_INT64 = (-(2**63), 2**63 - 1)
_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,510})[a-zA-Z0-9]")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}

logger = logging.getLogger(__name__)

CAPABILITIES = KnowledgeCapabilities(
    kinds=["vector"], search=True, search_mode="semantic", writable=True
)


class ChromaManager(KnowledgeBase):
    """Semantic recall over one Chroma collection, embedded or on a Chroma server.

    Example:
        >>> kb = ChromaManager(name="ChromaDB", path="./.chroma", embedding_function=ef)
        >>> kb.write([{"text": "Invoices are due in 30 days.", "metadata": {"source": "ops"}}])
        >>> kb.search("payment terms", limit=1)[0]["metadata"]["source"]  # doctest: +SKIP
        'ops'
    """

    def __init__(
        self,
        name: str = "ChromaDB",
        *,
        collection: str | None = None,
        description: str | None = None,
        path: str | os.PathLike[str] | None = None,
        host: str | None = None,
        port: int | None = None,
        ssl: bool | None = None,
        headers: Mapping[str, str] | None = None,
        client: Any = None,
        embedding_function: Any = None,
        embedder: Any = None,
        timeout_seconds: float | None = _limits.DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int | None = _limits.DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        """Configure the manager; nothing is opened until the first operation.

        Args:
            name: The backend name the tools use.
            collection: Collection name; else ``CHROMA_COLLECTION``, else ``"agentkernel"``.
            description: What the collection holds, for ``get_all_kb_descriptions``.
            path: Directory of an embedded ``PersistentClient``.
            host: Host of a Chroma server (``HttpClient``); excludes ``path``.
            port: Port of the server; else ``CHROMA_PORT``, else 8000.
            ssl: Use HTTPS to the server; else ``CHROMA_SSL``, else false.
            headers: Extra HTTP headers for the server (for example an auth token).
            client: A chromadb client to use as is; excludes ``path`` and ``host``.
            embedding_function: A chromadb ``EmbeddingFunction`` passed on every collection
                open. Without one a WARNING is logged (see the module docstring).
            embedder: An agentkernel :class:`~agentkernel.retrieval.Embedder` (or a name,
                model folder or endpoint URL) used as the embedding function, so the same
                object configures OKF bundles, curated stores and this collection. Excludes
                ``embedding_function``.
            timeout_seconds: Seconds an HTTP request to a Chroma server may take; ``None``
                for no limit.
            max_result_bytes: Most bytes of record text a search returns; ``None`` for no cap.

        Raises:
            AKConfigError: Conflicting connection arguments, or an unusable port, collection
                name or limit.
        """
        super().__init__(CAPABILITIES, name=name or "ChromaDB")
        self.timeout_seconds, self.max_result_bytes = _limits.check_limits(
            f"ChromaManager '{self.name}'", timeout_seconds, max_result_bytes
        )
        chosen = (("client", client), ("host", host), ("path", path))
        given = [label for label, value in chosen if value is not None and value != ""]
        if len(given) > 1:
            raise AKConfigError(
                f"ChromaManager '{self.name}': give only one of client=, host= or path= "
                f"(got {', '.join(given)})."
            )
        self.collection_name = (
            collection or os.environ.get("CHROMA_COLLECTION") or DEFAULT_COLLECTION
        )
        if not isinstance(self.collection_name, str) or not _NAME.fullmatch(self.collection_name):
            raise AKConfigError(
                f"ChromaManager '{self.name}': collection name {self.collection_name!r} is not "
                "valid for Chroma: use 3-512 characters from [a-zA-Z0-9._-], starting and "
                "ending with a letter or digit."
            )
        self.host: str | None = None
        self.port: int | None = None
        self.ssl = False
        self.path: str | None = None
        if client is None:
            env_host = os.environ.get("CHROMA_HOST") if path is None else None
            if host or env_host:
                self.host = host or env_host
                self.port = _port(port, os.environ.get("CHROMA_PORT"), self.name)
                self.ssl = _flag(ssl, os.environ.get("CHROMA_SSL"), "CHROMA_SSL", self.name)
            else:
                self.path = os.fspath(path or os.environ.get("CHROMA_PATH") or DEFAULT_PATH)
        self._headers = dict(headers or {})
        self._given_client = client
        if embedder is not None:
            if embedding_function is not None:
                raise ValueError(
                    f"ChromaManager {name!r}: give embedder or embedding_function, not both"
                )
            from agentkernel.knowledgebase.chroma_embedding import EmbedderFunction
            from agentkernel.retrieval.embedders import load_embedder

            embedding_function = EmbedderFunction(load_embedder(embedder))
        self._embedding_function = embedding_function
        self._description = description
        self._client: Any = None
        self._collection_obj: Any = None
        self._closed = False
        self._lock = threading.Lock()
        if embedding_function is None:
            logger.warning(
                "ChromaManager %r: no embedding_function given. chromadb will embed with the "
                "function stored in collection %r's configuration or, for a new collection, "
                "its default ONNX all-MiniLM-L6-v2 model, which it downloads (~80 MB) to "
                "~/.cache/chroma on first use. Pass embedding_function=... to choose one.",
                self.name,
                self.collection_name,
            )

    # -- the contract ----------------------------------------------------------------------

    @property
    def backend_name(self) -> str:
        """The name the tools address this backend by."""
        return self.name

    @property
    def location(self) -> str:
        """Where the collection lives, for messages (never includes headers)."""
        if self._given_client is not None:
            return f"a provided {type(self._given_client).__name__}"
        if self.host:
            scheme = "https" if self.ssl else "http"
            return f"{scheme}://{self.host}:{self.port}"
        return f"embedded at {Path(self.path or DEFAULT_PATH)}"

    def get_description(self) -> str:
        """Describe the backend for routing.

        Returns:
            The description given at construction, or one naming the collection.
        """
        if self._description:
            return self._description
        return (
            f"Chroma vector store (collection '{self.collection_name}'): semantic search over "
            "stored text; write notes with write_kb(text=...)."
        )

    def connect(self, **kwargs: Any) -> None:
        """Open the client and the collection now rather than on first use.

        Args:
            **kwargs: Unused; accepted for the ``KnowledgeBase`` signature.

        Raises:
            KnowledgeError: The manager is closed, the server is unreachable, or the
                collection cannot be opened with this embedding function.
        """
        self._collection()

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Return the stored records nearest in meaning to ``query``, nearest first.

        Args:
            query: Natural-language text.
            limit: The most records to return (at least 1).
            **kwargs: ``where=`` a Chroma metadata filter, passed through.

        Returns:
            Up to ``limit`` records with ``metadata["id"]``, ``["source"]`` and
            ``["distance"]``; an empty list for an empty collection.

        Raises:
            ValueError: ``query`` is not a string or ``limit`` is below 1.
            KnowledgeError: Chroma failed (unreachable server, embedding failure, ...).
        """
        if not isinstance(query, str):
            raise ValueError(f"query must be a string, got {type(query).__name__}")
        _limits.check_limit(limit)
        collection = self._collection()
        options: dict[str, Any] = {}
        if kwargs.get("where"):
            options["where"] = kwargs["where"]
        try:
            result = collection.query(
                query_texts=[query],
                n_results=limit,
                include=["documents", "metadatas", "distances"],
                **options,
            )
        except Exception as exc:
            raise self._failure("search", exc) from exc
        remaining = iter(_records(result))
        return _limits.take_rows(
            lambda n: list(itertools.islice(remaining, n)),
            lambda record, _number: record,
            max_rows=limit,
            max_bytes=self.max_result_bytes,
            row_cap=f"limit={limit}",
        )

    def write(self, records: Iterable[Record], **kwargs: Any) -> list[str]:
        """Upsert records; the same record written twice is stored once.

        Every record is checked before anything is written, so one bad record writes none.

        Args:
            records: ``{"text": str, "metadata": {...}}`` mappings with non-empty text.
            **kwargs: Unused.

        Returns:
            The ids written, in order, without repeats.

        Raises:
            KnowledgeError: A record has no text or an unusable id (nothing is written),
                or Chroma failed.
        """
        batch: dict[str, tuple[str, dict[str, Any] | None]] = {}
        for position, record in enumerate(records):
            record_id, text, metadata = _prepare(record, position)
            batch.pop(record_id, None)  # the last occurrence of an id wins, in its place
            batch[record_id] = (text, metadata)
        if not batch:
            return []
        collection = self._collection()
        ids = list(batch)
        try:
            step = max(1, int(self._client.get_max_batch_size()))
        except Exception:
            step = 1000
        try:
            for start in range(0, len(ids), step):
                chunk = ids[start : start + step]
                metadatas = _replacing(collection, chunk, [batch[i][1] for i in chunk])
                collection.upsert(
                    ids=chunk, documents=[batch[i][0] for i in chunk], metadatas=metadatas
                )
        except Exception as exc:
            raise self._failure("write", exc) from exc
        return ids

    def close(self) -> None:
        """Release the client this manager opened; later operations raise ``KnowledgeError``.

        A client passed as ``client=`` belongs to the caller and is left open.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            client, self._client, self._collection_obj = self._client, None, None
        if client is not None and self._given_client is None:
            closer = getattr(client, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:
                    logger.debug("closing the Chroma client failed", exc_info=True)

    # -- internals -------------------------------------------------------------------------

    def _collection(self) -> Any:
        with self._lock:
            if self._closed:
                raise KnowledgeError(f"ChromaManager '{self.name}' is closed.")
            if self._collection_obj is not None:
                return self._collection_obj
            if self._client is None:
                self._client = self._open_client()
            options: dict[str, Any] = {}
            if self._embedding_function is not None:
                options["embedding_function"] = self._embedding_function
            else:  # registers agentkernel's function, which a collection may have stored
                import agentkernel.knowledgebase.chroma_embedding  # noqa: F401
            try:
                self._collection_obj = self._client.get_or_create_collection(
                    self.collection_name, **options
                )
            except Exception as exc:
                raise self._failure("open collection", exc) from exc
            return self._collection_obj

    def _open_client(self) -> Any:
        if self._given_client is not None:
            return self._given_client
        settings = Settings(anonymized_telemetry=False)
        try:
            if self.host:
                client = chromadb.HttpClient(
                    host=self.host,
                    port=self.port or DEFAULT_PORT,
                    ssl=self.ssl,
                    headers=self._headers or None,
                    settings=settings,
                )
                _limit_requests(client, self.timeout_seconds)
                return client
            Path(self.path or DEFAULT_PATH).mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=self.path or DEFAULT_PATH, settings=settings)
        except Exception as exc:
            raise KnowledgeError(
                f"Cannot open Chroma ({self.location}) for backend '{self.name}': "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _failure(self, operation: str, exc: Exception) -> KnowledgeError:
        return KnowledgeError(
            f"Chroma {operation} failed on collection '{self.collection_name}' "
            f"({self.location}): {type(exc).__name__}: {exc}"
        )


def _limit_requests(client: Any, seconds: float | None) -> None:
    """Give the HTTP client's requests a timeout: chromadb creates its httpx client without."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if seconds is None or session is None or not hasattr(session, "timeout"):
        return
    import httpx  # chromadb's own HTTP client library

    session.timeout = httpx.Timeout(seconds)


# -- records in and out ------------------------------------------------------------------


def _prepare(record: Record, position: int) -> tuple[str, str, dict[str, Any] | None]:
    if not isinstance(record, Mapping):
        raise KnowledgeError(
            f"Record {position} is a {type(record).__name__}, not a mapping "
            '{"text": ..., "metadata": {...}}; nothing was written.'
        )
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise KnowledgeError(
            f"Record {position} has no text: Chroma stores text to search by meaning "
            "(a query-language write belongs to a backend with a query language); "
            "nothing was written."
        )
    raw = record.get("metadata") or {}
    if not isinstance(raw, Mapping):
        raise KnowledgeError(
            f"Record {position} has metadata of type {type(raw).__name__}, not a mapping; "
            "nothing was written."
        )
    source = raw.get("source")
    source_text = None if source is None else str(source)
    given_id = raw.get("id")
    if given_id is None or given_id == "":
        record_id = stable_id(text, source_text)
    elif isinstance(given_id, str | int) and not isinstance(given_id, bool):
        record_id = str(given_id)
    else:
        raise KnowledgeError(
            f"Record {position} has an id of type {type(given_id).__name__}; give a string. "
            "Nothing was written."
        )
    return record_id, text, sanitise_metadata(raw)


def sanitise_metadata(metadata: Mapping[Any, Any]) -> dict[str, Any] | None:
    """Turn arbitrary metadata into what Chroma accepts, losing nothing but ``None`` values.

    Args:
        metadata: Record metadata as given.

    Returns:
        A flat mapping of str keys to str, int, float or bool; nested values JSON-encoded
        and their keys listed under ``_ak_json``. ``None`` when nothing remains (Chroma
        refuses an empty mapping). The ``id`` key is dropped: it is the record's Chroma id.
    """
    out: dict[str, Any] = {}
    encoded: list[str] = []
    for raw_key, value in metadata.items():
        key = str(raw_key)
        if key in ("id", _JSON_KEYS) or value is None:
            continue
        if key.startswith(("#", "$")) or key == "chroma:document":
            key = f"_{key}"  # Chroma reserves these names
        if _chroma_scalar(value):
            out[key] = value
        else:
            out[key] = json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
            encoded.append(key)
    if encoded:
        out[_JSON_KEYS] = json.dumps(encoded)
    return out or None


def _chroma_scalar(value: Any) -> bool:
    if isinstance(value, bool | str):
        return True
    if isinstance(value, int):
        return _INT64[0] <= value <= _INT64[1]
    return isinstance(value, float) and math.isfinite(value)


def _replacing(
    collection: Any, ids: list[str], metadatas: list[dict[str, Any] | None]
) -> list[dict[str, Any] | None]:
    """Make an upsert replace metadata rather than merge it into what is stored.

    Chroma's upsert keeps keys the new metadata does not name; a key set to ``None`` is
    deleted, so every stored key missing from the new metadata is sent as ``None``.
    """
    stored = collection.get(ids=ids, include=["metadatas"])
    previous = dict(zip(stored.get("ids") or [], stored.get("metadatas") or [], strict=False))
    merged: list[dict[str, Any] | None] = []
    for record_id, metadata in zip(ids, metadatas, strict=True):
        stale = [k for k in previous.get(record_id) or {} if k not in (metadata or {})]
        if stale:
            metadata = {**dict.fromkeys(stale), **(metadata or {})}
        merged.append(metadata)
    return merged


def _restore(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    metadata = dict(stored or {})
    listing = metadata.pop(_JSON_KEYS, None)
    try:
        keys = json.loads(listing) if isinstance(listing, str) else []
    except json.JSONDecodeError:
        keys = []
    for key in keys if isinstance(keys, list) else []:
        value = metadata.get(key)
        if isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                metadata[key] = json.loads(value)
    return metadata


def _records(result: Mapping[str, Any]) -> list[Record]:
    def first(field: str) -> Sequence[Any]:
        column = result.get(field) or [[]]
        return column[0] if column else []

    ids, documents = first("ids"), first("documents")
    metadatas, distances = first("metadatas"), first("distances")
    rows: list[Record] = []
    for index, record_id in enumerate(ids):
        metadata = _restore(metadatas[index] if index < len(metadatas) else None)
        metadata["id"] = str(record_id)
        metadata.setdefault("source", None)
        distance = distances[index] if index < len(distances) else None
        metadata["distance"] = None if distance is None else float(distance)
        text = documents[index] if index < len(documents) else ""
        rows.append({"text": text or "", "metadata": metadata})
    return rows


def _port(given: int | None, env: str | None, name: str) -> int:
    value: Any = given if given is not None else (env or DEFAULT_PORT)
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = -1
    if isinstance(value, bool) or not 0 < port < 65536:
        raise AKConfigError(
            f"ChromaManager '{name}': port must be 1-65535 (port= or CHROMA_PORT), got {value!r}."
        )
    return port


def _flag(given: bool | None, env: str | None, label: str, name: str) -> bool:
    if given is not None:
        return bool(given)
    text = (env or "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise AKConfigError(f"ChromaManager '{name}': {label} must be true or false, got {env!r}.")
