"""The receipt of one run: the evidence the attester inspects (OKF 0.2, section 10.5).

A receipt holds what the run can show: the statement executed (the computation as bound, its
``:name`` placeholders in place) and the parameter values bound beside it, the backend, when
the run started and finished (UTC, ISO 8601), the row count, the result and a SHA-256 digest
of the result. ``executor.receipt`` names the fields a run must return; a field this runtime
cannot supply (a BigQuery ``job_id``, a dbt ``run_id``) is listed in ``unavailable`` with the
reason, never invented.

A receipt is sealed with an HMAC key the runner holds (random per runner unless the operator
gives one), over everything it records, so an edit made to it after the run (a result changed,
a digest recomputed to match) is detected by :func:`verify_seal`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

# what this runtime supplies under each name executor.receipt may use
SUPPLIED = (
    "concept",
    "runtime",
    "backend",
    "executed_sql",
    "compiled_sql",
    "parameters",
    "started_at",
    "finished_at",
    "row_count",
    "result",
    "result_digest",
    "computation_digest",
)
_WHY_NOT = {
    "job_id": "the statement ran on a SQL connection, which has no job id; this receipt "
    "and its digest are the run's record",
    "run_id": "a SQL runtime has no run id; this receipt and its digest are the run's record",
    "query_id": "the database connection reports no query id",
}


@dataclass(frozen=True)
class Receipt:
    """What one run of a computation returned.

    Attributes:
        concept: The computation's concept id.
        runtime: The ``runtime`` it names.
        backend: The backend that ran it (``name (engine)``).
        executed_sql: The statement sent to the database, with its placeholders.
        parameters: The values bound beside it, as JSON.
        bound_order: For a driver that binds by position (Trino's ``?``), the parameter
            whose value filled each ``?`` in turn; empty when values are bound by name.
        started_at: When the run started (UTC, ISO 8601).
        finished_at: When it finished.
        row_count: Rows in the result.
        columns: The result's column names.
        rows: The result's rows, JSON values.
        result_digest: SHA-256 of the result (:func:`result_digest`).
        computation_digest: SHA-256 of the concept and its computation file as read.
        requested: The fields ``executor.receipt`` asks for.
        unavailable: Requested fields this runtime cannot supply, with the reason.
        notice: What a limit cut from the result (``""`` when nothing was cut).
        seal: HMAC-SHA256 of everything above under the runner's key.
    """

    concept: str
    runtime: str
    backend: str
    executed_sql: str
    parameters: Mapping[str, Any]
    started_at: str
    finished_at: str
    row_count: int
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    result_digest: str
    computation_digest: str
    requested: Sequence[str] = ()
    unavailable: Mapping[str, str] = field(default_factory=dict)
    notice: str = ""
    bound_order: Sequence[str] = ()
    seal: str = ""

    @property
    def result(self) -> dict[str, Any]:
        """The result as one JSON value: ``{"columns": [...], "rows": [[...], ...]}``."""
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    def fields(self) -> dict[str, Any]:
        """The fields ``executor.receipt`` asked for that this runtime supplies.

        Returns:
            Field name to value (``compiled_sql`` is ``executed_sql``: SQL compiles nothing).
        """
        values = self.to_json()
        values["concept"], values["result"] = self.concept, self.result
        values["compiled_sql"] = self.executed_sql
        return {name: values[name] for name in self.requested if name in SUPPLIED}

    def to_json(self) -> dict[str, Any]:
        """Every field, as JSON values."""
        data = asdict(self)
        data["parameters"] = dict(self.parameters)
        data["unavailable"] = dict(self.unavailable)
        data["columns"], data["rows"] = list(self.columns), [list(r) for r in self.rows]
        data["requested"] = list(self.requested)
        data["bound_order"] = list(self.bound_order)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Receipt:
        """Read a receipt back from :meth:`to_json`'s form.

        Args:
            data: The mapping.

        Returns:
            The receipt (its seal is checked by the attester, not here).
        """
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def canonical(value: Any) -> bytes:
    """The one byte form of a JSON value that digests and seals are computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def result_digest(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """SHA-256 of a result: its columns and rows, in order, in canonical JSON.

    Args:
        columns: Column names.
        rows: Rows of JSON values.

    Returns:
        ``sha256:<hex>``.
    """
    body = canonical({"columns": list(columns), "rows": [list(r) for r in rows]})
    return "sha256:" + hashlib.sha256(body).hexdigest()


def sealed(receipt: Receipt, key: bytes) -> Receipt:
    """The receipt with its seal set under ``key``."""
    return replace(receipt, seal=_seal(receipt, key))


def verify_seal(receipt: Receipt, key: bytes) -> bool:
    """Tell whether the receipt is exactly as the runner holding ``key`` sealed it."""
    return bool(receipt.seal) and hmac.compare_digest(receipt.seal, _seal(receipt, key))


def unavailable_fields(requested: Sequence[str]) -> dict[str, str]:
    """The requested fields this runtime cannot supply, each with the reason.

    Args:
        requested: ``executor.receipt``.

    Returns:
        Field name to reason.
    """
    return {
        name: _WHY_NOT.get(name, f"a SQL runtime produces no {name!r}")
        for name in requested
        if name not in SUPPLIED
    }


def _seal(receipt: Receipt, key: bytes) -> str:
    data = receipt.to_json()
    data.pop("seal", None)
    return "hmac-sha256:" + hmac.new(key, canonical(data), hashlib.sha256).hexdigest()
