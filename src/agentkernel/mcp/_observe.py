"""What a platform probes and scrapes: ``/healthz``, ``/readyz`` and ``/metrics``.

Every HTTP server (``serve --http``, ``store serve --http``) answers, beside its MCP endpoint:

- ``GET /healthz``: ``200 ok`` while the process serves (liveness);
- ``GET /readyz``: ``200`` once every database answers (lexically at least), else ``503``;
  the body names each database and its state (``ready``, or what is still warming and how
  far, from :meth:`KnowledgeBase.readiness`);
- ``GET /metrics``: Prometheus' text format (``prometheus-client``, the ``mcp`` extra), with
  authentication when the server has it (any valid token: the names of tools and databases
  are for the operator, not for anyone who can reach the port):

  ==============================================  ==========================================
  ``agentkernel_tool_calls_total{tool,outcome}``  calls by outcome: ``ok``, ``error``,
                                                  ``refused`` (a tool the caller lacks),
                                                  ``limit`` (too many at once)
  ``agentkernel_tool_call_seconds{tool}``         call latency (histogram)
  ``agentkernel_auth_failures_total{reason}``     refused authentications by reason
  ``agentkernel_answers_cut_total{database}``     answers cut at the answer budget
  ``agentkernel_database_ready{database}``        1 once it answers (lexically at least)
  ``agentkernel_database_vectors{database}``      concepts holding a vector now
  ``agentkernel_database_vectors_total{database}``  concepts that want one
  ``agentkernel_database_vectors_ready{database}``  1 once search is as complete as configured
  ``agentkernel_database_index_version{database}``  the bundle index version served
  ``agentkernel_database_index_age_seconds{database}``  seconds since that version's commit
  ==============================================  ==========================================

Nothing in a metric names an identity, a token, a query or a page. A scrape reads counters
kept as calls end and asks each database's ``readiness()`` (a few attribute reads), so it
costs the same at ten concepts as at ten thousand.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from agentkernel._tooling.result import ToolResult
from agentkernel.mcp._door import send_json

logger = logging.getLogger(__name__)

__all__ = ["METRICS", "PROBE_PATHS", "Observer", "Probes", "answer_probe", "readiness"]

HEALTH, READY, METRICS = "/healthz", "/readyz", "/metrics"
#: The paths answered beside the MCP endpoint.
PROBE_PATHS = frozenset({HEALTH, READY, METRICS})
#: Latency buckets (seconds): tool calls run from a millisecond (a fetch) to minutes (SQL).
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _Databases(Collector):
    """Per-database gauges, read from each database's ``readiness()`` at scrape time."""

    def __init__(self, databases: Mapping[str, Any]) -> None:
        self._databases = databases

    def collect(self) -> Any:
        ready = GaugeMetricFamily(
            "agentkernel_database_ready",
            "1 once the database answers every operation (lexically at least)",
            labels=["database"],
        )
        vectors = GaugeMetricFamily(
            "agentkernel_database_vectors", "Concepts holding a vector now", labels=["database"]
        )
        wanted = GaugeMetricFamily(
            "agentkernel_database_vectors_total",
            "Concepts served that want a vector",
            labels=["database"],
        )
        complete = GaugeMetricFamily(
            "agentkernel_database_vectors_ready",
            "1 once search is as complete as configured (hybrid, or lexical by configuration)",
            labels=["database"],
        )
        version = GaugeMetricFamily(
            "agentkernel_database_index_version",
            "The version of the bundle index served (databases served from an index)",
            labels=["database"],
        )
        age = GaugeMetricFamily(
            "agentkernel_database_index_age_seconds",
            "Seconds since the served index version was committed by the indexer",
            labels=["database"],
        )
        for name, state in readiness(self._databases).items():
            ready.add_metric([name], 1.0 if state.ready else 0.0)
            vectors.add_metric([name], float(state.vectors))
            wanted.add_metric([name], float(state.vectors_total))
            complete.add_metric([name], 1.0 if state.vectors_ready else 0.0)
            served = _served_index(name, self._databases[name])
            if served is not None:
                version.add_metric([name], served[0])
                if served[1] is not None:
                    age.add_metric([name], max(0.0, time.time() - served[1]))
        yield from (ready, vectors, wanted, complete, version, age)


def _served_index(name: str, database: Any) -> tuple[float, float | None] | None:
    """The served index's version and commit time (epoch seconds), for an index-served base."""
    probe = getattr(database, "served_index", None)
    if not callable(probe):
        return None
    try:
        index = probe()
    except Exception as exc:  # a scrape never takes the server down
        logger.warning("the served index of %r cannot be read: %s", name, exc)
        return None
    if not isinstance(index, Mapping) or not isinstance(index.get("version"), int):
        return None
    committed: float | None = None
    stamp = index.get("indexed_at")
    if isinstance(stamp, str):
        with contextlib.suppress(ValueError):
            committed = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return float(index["version"]), committed


def readiness(databases: Mapping[str, Any]) -> dict[str, Any]:
    """Each database's loading state; one without ``readiness()`` (a store) is ready.

    Args:
        databases: The served databases by name.

    Returns:
        Name to :class:`~agentkernel.knowledgebase.model.Readiness`.
    """
    from agentkernel.knowledgebase.model import READY

    states: dict[str, Any] = {}
    for name, database in databases.items():
        probe = getattr(database, "readiness", None)
        try:
            states[name] = probe() if callable(probe) else READY
        except Exception as exc:  # a probe never takes the server down
            logger.warning("readiness of %r failed: %s", name, exc)
            from agentkernel.knowledgebase.model import Readiness

            states[name] = Readiness(error=f"{type(exc).__name__}: {exc}")
    return states


class Observer:
    """The metrics of one server process, and the databases its probes report on."""

    def __init__(self, databases: Mapping[str, Any] | None = None) -> None:
        """Create the process's registry (its own: nothing global is touched).

        Args:
            databases: The served databases by name (bundles, SQL, stores).
        """
        self.databases: Mapping[str, Any] = dict(databases or {})
        self.registry = CollectorRegistry(auto_describe=False)
        self._calls = Counter(
            "agentkernel_tool_calls",
            "Tool calls by tool and outcome (ok, error, refused, limit)",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "agentkernel_tool_call_seconds",
            "Tool call latency",
            ["tool"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self._auth = Counter(
            "agentkernel_auth_failures",
            "Refused authentications by reason",
            ["reason"],
            registry=self.registry,
        )
        self._cut = Counter(
            "agentkernel_answers_cut",
            "Answers cut at the answer budget, by database",
            ["database"],
            registry=self.registry,
        )
        self.registry.register(_Databases(self.databases))

    def call(self, tool: str, backend: object, outcome: str, seconds: float, text: str) -> None:
        """Count one finished tool call.

        Args:
            tool: The tool's name (an unknown name counts as ``unknown``: clients choose it).
            backend: The ``backend`` argument, when the call named a served database.
            outcome: ``ok``, ``error``, ``refused`` or ``limit``.
            seconds: How long it took.
            text: The answer (only whether it was cut is read, from the
                :class:`~agentkernel._tooling.result.ToolResult` the tool made).
        """
        self._calls.labels(tool, outcome).inc()
        self._latency.labels(tool).observe(seconds)
        if isinstance(text, ToolResult) and text.read_on is not None:
            database = backend if isinstance(backend, str) and backend in self.databases else ""
            self._cut.labels(database).inc()

    def auth_failed(self, reason: str) -> None:
        """Count one refused authentication.

        Args:
            reason: Why (``missing``, ``malformed``, ``unknown token``, ``expired``, ...).
        """
        self._auth.labels(reason).inc()

    def metrics(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)

    def ready(self) -> tuple[bool, dict[str, str]]:
        """Whether every database answers, and each one's state in words."""
        states = readiness(self.databases)
        return all(s.ready for s in states.values()), {n: s.describe() for n, s in states.items()}


async def answer_probe(path: str, scope: Any, send: Any, observer: Observer) -> None:
    """Answer ``/healthz``, ``/readyz`` or ``/metrics`` (``GET`` or ``HEAD``).

    Args:
        path: One of :data:`PROBE_PATHS`.
        scope: The ASGI scope.
        send: The ASGI send callable.
        observer: The process's observer.
    """
    if scope.get("method") not in ("GET", "HEAD"):
        await send_json(send, 405, {"error": "method_not_allowed"})
        return
    if path == HEALTH:
        await _plain(send, 200, b"ok\n", b"text/plain; charset=utf-8")
    elif path == READY:
        ok, states = observer.ready()
        body = json.dumps({"ready": ok, "databases": states}, ensure_ascii=False)
        await _plain(send, 200 if ok else 503, body.encode() + b"\n", b"application/json")
    else:
        await _plain(send, 200, observer.metrics(), CONTENT_TYPE_LATEST.encode())


async def _plain(send: Any, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Probes:
    """ASGI middleware of a server without authentication: the probes, then the app."""

    def __init__(self, app: Callable[[Any, Any, Any], Awaitable[None]], observer: Observer) -> None:
        """Wrap ``app``.

        Args:
            app: The MCP app.
            observer: The process's observer.
        """
        self._app = app
        self._observer = observer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer a probe path; hand anything else to the app."""
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path in PROBE_PATHS:
            await answer_probe(path, scope, send, self._observer)
            return
        await self._app(scope, receive, send)
