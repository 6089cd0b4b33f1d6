"""``KnowledgeBuilder``: a set of backends in, capability-gated agent tools out.

The tools are plain Python callables with Google-style docstrings (frameworks turn those
into tool descriptions), made by :func:`agentkernel._tooling.factory.make_tool` as the curated
store's are. They never raise: every failure, from an unknown backend name to an
exception inside an SDK, comes back as a string the agent can act on. Each string is a
:class:`~agentkernel._tooling.result.ToolResult` that knows whether it reports a failure
(``is_error``) and carries the records it shows (``records``, ``ids``); a framework sees only
the text, an MCP server sets ``isError`` from the flag, and code calling a tool reads the
records. A refusal is raised where it is decided
(:class:`~agentkernel._tooling.errors.ToolRefusal`) and answered by the tool factory.

Gating reads the declarations only (:class:`KnowledgeCapabilities`), never manager classes:
``get_schemas``, ``read_kb``, ``write_kb`` and ``get_all_kb_descriptions`` are always built
(``write_kb`` is dropped with ``build(writable=False)``); ``search_kb``, ``fetch_kb`` and
``browse_kb`` are added only when some registered backend declares search, fetch or browse.

Every answer fits a budget (``answer_chars``, 20,000 characters by default): a cut answer
ends with a ``[cut]`` line naming the call that reads the rest, through the same tools (a
long record by ``fetch_kb(backend, "id#offset=N")``; see :mod:`agentkernel._tooling.budget`).
One ``fetch_kb`` call reads each id once, at most 50 of them, and stops reading once its
budget is spent or :data:`FETCH_SECONDS` have passed, naming the ids left for further calls;
so no call holds a server's worker for long.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS, checked_answer_chars
from agentkernel._tooling.errors import ToolRefusal
from agentkernel._tooling.factory import make_tool
from agentkernel._tooling.result import ToolResult, pathless
from agentkernel.errors import echo
from agentkernel.knowledgebase import _answers
from agentkernel.knowledgebase._answers import printable
from agentkernel.knowledgebase._computing import run_computation_tool
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeCapabilityError, KnowledgeError
from agentkernel.knowledgebase.model import Record

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.computation import Computations

logger = logging.getLogger(__name__)

Tool = Callable[..., str]

MAX_LIMIT = 1000
"""The most records one search or browse call returns (the command line's ``-n`` too)."""

FETCH_SECONDS = _answers.FETCH_SECONDS
"""How long one ``fetch_kb`` call goes on reading further ids (one batch always completes)."""


class KnowledgeBuilder:
    """Compose knowledge bases and build the agent's knowledge tools.

    Example:
        >>> tools = KnowledgeBuilder([okf_manager], semantic_map={"<KB>": "tables"}).build()
        >>> [tool.__name__ for tool in tools]  # doctest: +SKIP
        ['get_schemas', 'read_kb', 'write_kb', 'get_all_kb_descriptions',
         'search_kb', 'fetch_kb', 'browse_kb']
    """

    def __init__(
        self,
        backends: Iterable[KnowledgeBase],
        semantic_map: Mapping[str, str] | None = None,
        *,
        answer_chars: int | None = DEFAULT_ANSWER_CHARS,
        computations: Iterable[Computations] = (),
    ) -> None:
        """Register backends.

        Args:
            backends: The knowledge bases to expose; their ``backend_name`` values must be
                non-empty and unique.
            semantic_map: Placeholder tokens (``"<MONGO_SOURCE>"``) mapped to the physical
                names they stand for; resolved in queries, paths and ids at call time.
            answer_chars: The most characters of one tool answer (at least 2,000; default
                20,000); a cut answer says how to read the rest. ``None`` for no budget.
            computations: OKF Attested Computations with their runtimes bound
                (:class:`~agentkernel.knowledgebase.okf.computation.Computations`); adds
                ``run_computation`` when one of them can run something.

        Raises:
            TypeError: A backend is not a ``KnowledgeBase``, or ``semantic_map`` is not a
                mapping of strings to strings.
            ValueError: No backends, an empty or duplicate backend name, or a budget below
                2,000 characters.
        """
        self._answer_chars = checked_answer_chars(answer_chars)
        self._renderings = _answers.Renderings()
        registered: dict[str, KnowledgeBase] = {}
        for backend in backends:
            if not isinstance(backend, KnowledgeBase):
                raise TypeError(
                    f"KnowledgeBuilder takes KnowledgeBase instances, got {type(backend).__name__}"
                )
            name = backend.backend_name
            if not isinstance(name, str) or not name.strip():
                raise ValueError(
                    f"A {type(backend).__name__} has an empty backend_name; give it a name."
                )
            if name in registered:
                raise ValueError(f"Duplicate backend name {name!r}: backend names must be unique.")
            registered[name] = backend
        if not registered:
            raise ValueError("KnowledgeBuilder needs at least one backend.")
        mapping = dict(semantic_map or {})
        for key, value in mapping.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key:
                raise TypeError(
                    f"semantic_map maps placeholder strings to strings; got {key!r}: {value!r}"
                )
        self._backends = registered
        self._computations = {runner.name: runner for runner in computations}
        # longest token first, so "<SRC_V2>" is not eaten by "<SRC>"
        self._semantic_map = dict(sorted(mapping.items(), key=lambda kv: -len(kv[0])))

    @property
    def backends(self) -> dict[str, KnowledgeBase]:
        """The registered backends by name, in registration order."""
        return dict(self._backends)

    @property
    def answer_chars(self) -> int | None:
        """The most characters of one tool answer; ``None`` when answers are not cut."""
        return self._answer_chars

    @property
    def semantic_map(self) -> dict[str, str]:
        """The placeholder map used at call time."""
        return dict(self._semantic_map)

    def resolve(self, text: str) -> str:
        """Replace every ``semantic_map`` placeholder in ``text`` with its target.

        Args:
            text: A query, path or id as the agent wrote it.

        Returns:
            The text the backend receives.
        """
        if not self._semantic_map:  # most builders have none; this runs on every call
            return text
        for token, target in self._semantic_map.items():
            text = text.replace(token, target)
        return text

    def declares(self, operation: str) -> list[str]:
        """Name the backends declaring a capability.

        Args:
            operation: ``search``, ``query``, ``fetch``, ``browse`` or ``writable``.

        Returns:
            Their names, in registration order.
        """
        return [n for n, b in self._backends.items() if getattr(b.capabilities, operation)]

    def build(self, writable: bool = True) -> list[Tool]:
        """Build the tool callables.

        Args:
            writable: When false, ``write_kb`` is left out.

        Returns:
            ``get_schemas``, ``read_kb``, ``write_kb``, ``get_all_kb_descriptions``, then
            ``search_kb``, ``fetch_kb`` and ``browse_kb``, each only when some registered
            backend declares its capability, then ``run_computation`` when a registered
            bundle holds a computation whose runtime is bound.
        """
        bodies = [self._get_schemas_tool(), self._read_kb_tool()]
        if writable:
            bodies.append(self._write_kb_tool())
        bodies.append(self._descriptions_tool())
        if self.declares("search"):
            bodies.append(self._search_kb_tool())
        if self.declares("fetch"):
            bodies.append(self._fetch_kb_tool())
        if self.declares("browse"):
            bodies.append(self._browse_kb_tool())
        if any(runner.available() for runner in self._computations.values()):
            bodies.append(run_computation_tool(self._computations, self._answer_chars))
        # a backend's failure is worded by _run, naming the backend; make_tool answers every
        # refusal and failure, so no tool raises into the agent framework. A text write only
        # adds a record; a write statement (Cypher, SQL) may update or delete.
        destructive = bool(set(self.declares("writable")) & set(self.declares("query")))
        return [
            make_tool(body, read_only=False, destructive=destructive)
            if body.__name__ == "write_kb"
            else make_tool(body, read_only=True)
            for body in bodies
        ]

    # -- shared plumbing ----------------------------------------------------------------

    def _serving(self, name: Any, operation: str | None = None) -> KnowledgeBase:
        """The backend a tool call names.

        Args:
            name: The ``backend`` argument as the agent gave it.
            operation: The capability the tool needs (``search``, ``fetch``, ``browse``),
                or ``None`` when every backend serves the tool.

        Returns:
            The backend.

        Raises:
            ToolRefusal: No such backend, or it does not declare ``operation``.
        """
        backend = self._backends.get(name) if isinstance(name, str) else None
        if backend is None:
            shown = echo(name if isinstance(name, str) else str(name))
            raise ToolRefusal(f"Unknown backend {shown}. Available: {list(self._backends)}")
        if operation is not None and not getattr(backend.capabilities, operation):
            raise self._capability_refusal(backend.backend_name, operation)
        return backend

    def _run(self, backend: KnowledgeBase, operation: str, call: Callable[[], Any]) -> Any:
        """Run a backend call; any failure is raised as the refusal the agent sees.

        Raises:
            ToolRefusal: The backend failed, worded with its name and the operation.
        """
        try:
            return call()
        except KnowledgeCapabilityError as exc:
            raise self._capability_refusal(backend.backend_name, exc.operation, str(exc)) from exc
        except KnowledgeError as exc:
            detail = printable(str(exc))
            raise ToolRefusal(
                f"Error from backend '{backend.backend_name}' during {operation}: {detail}"
            ) from exc
        except Exception as exc:
            logger.warning(
                "backend %r failed during %s", backend.backend_name, operation, exc_info=True
            )
            raise ToolRefusal(
                f"Error from backend '{backend.backend_name}' during {operation}: "
                f"{type(exc).__name__}: {printable(pathless(str(exc)))}"
            ) from exc

    def _capability_refusal(self, name: str, operation: str, detail: str = "") -> ToolRefusal:
        flag = {"write": "writable"}.get(operation, operation)
        able = (
            self.declares(flag)
            if flag in ("search", "query", "fetch", "browse", "writable")
            else []
        )
        detail = detail or f"Backend '{name}' does not support {operation}."
        return ToolRefusal(f"{detail} Backends that support {operation}: {able}")

    def _rows(self, backend: KnowledgeBase, operation: str, call: Callable[[], Any]) -> list[Any]:
        """The records a backend call returns (a cap's notice kept), or its refusal raised."""
        result = self._run(backend, operation, call)
        return result if isinstance(result, list) else list(result or [])

    def _formatted(self, backend: KnowledgeBase, rows: list[Any], *, narrower: str) -> ToolResult:
        """The backend's rendering of records within the budget, then notices.

        A cap's notice follows the records, then the ``[cut]`` note when the budget cut
        them. The result carries the records it shows.

        Args:
            backend: The backend the rows came from.
            rows: Its records.
            narrower: How to narrow the call, for the note of a cut answer.

        Raises:
            ToolRefusal: The backend could not render them.
        """
        notice = getattr(rows, "notice", "")  # a cap cut the result (_limits.CutRecords)
        try:
            if self._answer_chars is None or not rows:
                text, cut, shown = backend.format_results(rows), None, len(rows)
            else:
                text, cut, shown = _answers.cut_rows(
                    backend.format_results,
                    rows,
                    self._answer_chars - len(notice),
                    backend=backend.backend_name,
                    fetchable=backend.capabilities.fetch,
                    narrower=narrower,
                )
        except Exception as exc:
            name = backend.backend_name
            raise ToolRefusal(
                f"Error formatting results from '{name}': {printable(str(exc))}"
            ) from exc
        answer = "\n".join(part for part in (text, notice, cut and cut.note) if part)
        return ToolResult(answer, records=rows[:shown], read_on=cut)

    # -- the tools ----------------------------------------------------------------------

    def _get_schemas_tool(self) -> Tool:
        builder = self

        def get_schemas() -> str:
            """Describe every knowledge base: its schema and the operations it declares.

            Call this first. Each entry's "capabilities" says which tools serve it
            (search, query with its query_language, fetch, browse, writable).

            Returns:
                JSON mapping each backend name to its schema.
            """
            schemas: dict[str, Any] = {}
            for name, backend in builder._backends.items():
                try:
                    schemas[name] = backend.schema()
                except Exception as exc:
                    schemas[name] = {"error": f"{type(exc).__name__}: {exc}"}
            text = json.dumps(schemas, indent=2, default=str, ensure_ascii=False)
            return ToolResult(pathless(text))  # a local index or a refresh error names a path

        return get_schemas

    def _descriptions_tool(self) -> Tool:
        builder = self

        def get_all_kb_descriptions() -> str:
            """List every knowledge base with a short description, to choose where to look.

            Returns:
                One line per backend: its name and what it holds.
            """
            lines = []
            for name, backend in builder._backends.items():
                try:
                    description = backend.get_description()
                except Exception as exc:
                    description = f"(description unavailable: {type(exc).__name__}: {exc})"
                lines.append(f"- {name}: {description}")
            return ToolResult(pathless("\n".join(lines)))

        return get_all_kb_descriptions

    def _read_kb_tool(self) -> Tool:
        builder = self

        def read_kb(backend: str, query: str, limit: int = 3) -> str:
            """Retrieve knowledge from one backend, whatever kind it is.

            Backends with a query language (see get_schemas) run the query as a statement
            in that language; every other backend treats it as a search.

            Args:
                backend: The backend name, as listed by get_schemas.
                query: A statement in the backend's query_language, or search text.
                limit: The most records to return (default 3).

            Returns:
                The matching records, one per line, or a message saying what went wrong.
            """
            kb = builder._serving(backend)
            _check_query(query, limit)
            statement = builder.resolve(query)
            if kb.capabilities.query:
                rows = builder._rows(kb, "query", lambda: kb.query(statement, limit=limit))
                narrower = "a lower limit, fewer columns or a narrower statement"
                return builder._formatted(kb, rows, narrower=narrower)
            rows = builder._rows(kb, "search", lambda: kb.search(statement, limit=limit))
            return builder._formatted(kb, rows, narrower="a lower limit")

        return read_kb

    def _search_kb_tool(self) -> Tool:
        builder = self

        def search_kb(backend: str, query: str, limit: int = 3) -> str:
            """Rank a backend's records by relevance to the query, best first.

            Only backends declaring search serve this; use read_kb for the others.

            Args:
                backend: The backend name, as listed by get_schemas.
                query: What to look for, in natural language or keywords.
                limit: The most records to return (default 3).

            Returns:
                The best matches, one per line; ids in [brackets] can be passed to fetch_kb.
            """
            kb = builder._serving(backend, "search")
            _check_query(query, limit)
            rows = builder._rows(
                kb, "search", lambda: kb.search(builder.resolve(query), limit=limit)
            )
            return builder._formatted(kb, rows, narrower="a lower limit, or more precise words")

        return search_kb

    def _fetch_kb_tool(self) -> Tool:
        builder = self

        def fetch_kb(backend: str, ids: str) -> str:
            """Fetch whole records by identity, for example ids shown in [brackets].

            A long answer is cut, and its last line says how to read on (an id followed by
            "#offset=N" reads that record from character N).

            Args:
                backend: The backend name, as listed by get_schemas.
                ids: One id, or several separated by commas (at most 50 per call).

            Returns:
                The full records, or a message saying what went wrong.
            """
            kb = builder._serving(backend, "fetch")
            _check_text("ids", ids)
            return _answers.fetch_answer(
                kb,
                ids,
                resolve=builder.resolve,
                run=builder._run,
                budget=builder._answer_chars,
                renderings=builder._renderings,
            )

        return fetch_kb

    def _browse_kb_tool(self) -> Tool:
        builder = self

        def browse_kb(backend: str, path: str = "", limit: int = 50) -> str:
            """List what a namespace of a backend holds, starting from its root.

            Args:
                backend: The backend name, as listed by get_schemas.
                path: The namespace to list; empty for the root.
                limit: The most entries to return (default 50).

            Returns:
                The entries under the path, or a message saying what went wrong.
            """
            kb = builder._serving(backend, "browse")
            _check_text("path", path, allow_empty=True)
            _check_limit(limit)
            where = builder.resolve(path)
            rows = builder._rows(kb, "browse", lambda: kb.browse(where, limit=limit))
            if not rows and not getattr(rows, "notice", ""):
                shown = f"directory or concept {echo(path)}" if path.strip() else "the root"
                raise ToolRefusal(
                    f"Nothing at {shown} in '{kb.backend_name}'. browse_kb with an empty path "
                    "lists the root; search_kb finds records by words."
                )
            return builder._formatted(kb, rows, narrower="a lower limit, or a subdirectory as path")

        return browse_kb

    def _write_kb_tool(self) -> Tool:
        builder = self

        def write_kb(
            backend: str,
            text: str = "",
            source: str = "agent",
            query: str = "",
            params_json: str = "{}",
        ) -> str:
            """Persist knowledge to a writable backend.

            Give text to store a note or document; for a backend with a query language,
            give a write statement in query (with its parameters in params_json).

            Args:
                backend: The backend name; get_schemas shows which are writable.
                text: The knowledge to store. For documents, the first line is the title;
                    an OKF concept (text opening with '---' frontmatter holding a type) is
                    stored as written.
                source: Who or what the knowledge came from (default "agent").
                query: A write statement in the backend's query_language, if it has one.
                params_json: The statement's parameters as a JSON object (default "{}").

            Returns:
                What was written, or a message saying why nothing was.
            """
            kb = builder._serving(backend)
            if not kb.capabilities.writable:
                raise ToolRefusal(
                    f"Backend '{kb.backend_name}' is read-only. "
                    f"Knowledge bases that accept writes: {builder.declares('writable')}"
                )
            for label, value in (("text", text), ("source", source), ("query", query)):
                _check_text(label, value, allow_empty=True)
            if not text.strip() and not query.strip():
                raise ToolRefusal(
                    "Nothing to write: give text, or a query for a backend with a query language."
                )
            try:
                # "{}" is the default of every call that writes text: no parser for it
                params = {} if not params_json or params_json == "{}" else json.loads(params_json)
            except (TypeError, json.JSONDecodeError) as exc:
                raise ToolRefusal(
                    f'params_json is not valid JSON ({exc}); give an object such as {{"id": 1}}.'
                ) from exc
            if not isinstance(params, dict):
                raise ToolRefusal(
                    f"params_json must be a JSON object, got {type(params).__name__}."
                )
            metadata: dict[str, Any] = {"source": source}
            if query.strip():
                metadata["query"] = builder.resolve(query)
                metadata["params"] = params
            record: Record = {"text": text, "metadata": metadata}
            result = builder._run(kb, "write", lambda: kb.write([record]))
            written = [str(i) for i in result] if isinstance(result, Sequence) else []
            if written:
                stored = [{"text": text, "metadata": {**metadata, "id": i}} for i in written]
                return ToolResult(
                    f"Wrote {len(written)} record(s) to '{kb.backend_name}': {written}",
                    records=stored,
                )
            return ToolResult(f"Wrote 1 record to '{kb.backend_name}'.", records=[record])

        return write_kb


def _check_query(query: Any, limit: Any) -> None:
    """``_check_text("query", ...)`` then ``_check_limit``: the common case in one test."""
    if type(query) is str and type(limit) is int and 1 <= limit <= MAX_LIMIT and query.strip():
        return
    _check_text("query", query)
    _check_limit(limit)


def _check_text(label: str, value: Any, *, allow_empty: bool = False) -> None:
    """Refuse an argument that is not text, or empty text where some is needed.

    Raises:
        ToolRefusal: Saying what is wrong with it.
    """
    if not isinstance(value, str):
        raise ToolRefusal(f"{label} must be a string, got {type(value).__name__}.")
    if not allow_empty and not value.strip():
        raise ToolRefusal(f"{label} must not be empty.")


def _check_limit(limit: Any) -> None:
    """Refuse a limit that is not a whole number from 1 to 1,000.

    Raises:
        ToolRefusal: Saying what is wrong with it.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ToolRefusal(f"limit must be a whole number, got {echo(limit)}.")
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolRefusal(f"limit must be between 1 and {MAX_LIMIT}, got {limit}.")
