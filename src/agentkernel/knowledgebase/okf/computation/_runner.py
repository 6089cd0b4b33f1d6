"""``Computations``: run a bundle's Attested Computations on bound SQL backends, attest, gate.

The operator binds each ``runtime`` a bundle's computations name to a SQL backend
(``SQLManager`` over SQLite, DuckDB or PostgreSQL; ``StarburstManager`` over Trino), which
keeps its statement guard and limits::

    runner = Computations(okf_kb, runtimes={"sql": SQLManager("sqlite:///warehouse.sqlite")})
    receipt = runner.run("computations/revenue", {"year": 2024})
    runner.attest(receipt).ok     # True: the sanctioned computation ran, bound with year=2024
    print(runner.answer("computations/revenue", {"year": 2024}))   # what the tool answers

Each run follows OKF 0.2, section 10.5: load the contract as it stands now
(:mod:`.contract`), bind the agent's values (:mod:`.binding`), execute through the backend,
return a sealed receipt (:mod:`.receipt`), attest it (:mod:`.attest`) and gate the answer: a
failed attestation is answered as a failure with its reason and no value; ``now >=
stale_after`` warns (``on_stale="warn"``, the default) or refuses before anything runs
(``"refuse"``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from agentkernel._tooling.budget import cut_lines
from agentkernel._tooling.result import ToolResult
from agentkernel.errors import AKConfigError, AKError, echo
from agentkernel.knowledgebase._sql.records import cell_text
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.okf.computation._binding import (
    Binding,
    BindingError,
    bind,
    positional,
)
from agentkernel.knowledgebase.okf.computation._receipt import (
    Receipt,
    result_digest,
    sealed,
    unavailable_fields,
)
from agentkernel.knowledgebase.okf.computation.attest import (
    BUILTIN,
    Attester,
    Verdict,
    builtin_checks,
    operator_checks,
)
from agentkernel.knowledgebase.okf.computation.contract import (
    Contract,
    ContractError,
    is_computation,
    load_contract,
    summary,
)

if TYPE_CHECKING:
    from agentkernel.knowledgebase._sql.backend import SQLBackend
    from agentkernel.knowledgebase.okf.manager import OKFManager

OnStale = Literal["warn", "refuse"]


class ComputationError(AKError):
    """A computation cannot be run here: unknown, or its runtime is bound to no backend."""


@dataclass(frozen=True)
class Outcome:
    """What one gated run came to.

    Attributes:
        concept: The concept id asked for.
        error: Why nothing was run, or why no value may be shown; ``""`` when attested.
        contract: The contract as read (``None`` when it could not be).
        receipt: The run's receipt (``None`` when nothing ran).
        verdict: The attestation's verdict (``None`` when nothing ran).
        stale: ``now >= stale_after``.
    """

    concept: str
    error: str = ""
    contract: Contract | None = None
    receipt: Receipt | None = None
    verdict: Verdict | None = None
    stale: bool = False

    @property
    def attested(self) -> bool:
        """A run whose every attester passed: its value may be shown."""
        return not self.error and self.verdict is not None and self.verdict.ok

    def render(self, budget: int | None = None) -> str:
        """The answer an agent reads: trust, lifecycle, verdict, receipt, then the value.

        Args:
            budget: The most characters (``None``: no budget).

        Returns:
            The text, or the error when the run is not attested.
        """
        if not self.attested or self.contract is None or self.receipt is None:
            return self.error
        assert self.verdict is not None
        return _render(self.contract, self.receipt, self.verdict, self.stale, budget)

    def as_json(self) -> dict[str, Any]:
        """The outcome for machines; the result only when attested (no value otherwise).

        Returns:
            ``attested``, ``error``, ``concept``, ``trust``, ``stale_after``, ``stale``, the
            verdict's checks and the receipt.
        """
        contract, receipt, verdict = self.contract, self.receipt, self.verdict
        data: dict[str, Any] = {"attested": self.attested, "error": self.error or None}
        data["concept"] = contract.concept_id if contract else self.concept
        if contract is not None:
            data.update(
                trust=contract.trust,
                verified=dict(contract.verified) if contract.verified else None,
                stale_after=contract.stale_after,
                stale=self.stale,
            )
        if verdict is not None:
            data["verdict"] = {
                "attested": verdict.ok,
                "attesters": list(verdict.attesters),
                "checks": [asdict(check) for check in verdict.checks],
            }
        if receipt is not None:
            shown = receipt.to_json()
            if not self.attested:
                shown.pop("rows"), shown.pop("columns")
            data["receipt"] = shown
        return data


class Computations:
    """The Attested Computations of one OKF bundle, runnable on the backends bound to them."""

    def __init__(
        self,
        bundle: OKFManager | Callable[[], OKFManager],
        runtimes: Mapping[str, KnowledgeBase | Callable[[], KnowledgeBase]],
        *,
        name: str | None = None,
        on_stale: OnStale = "warn",
        attesters: Mapping[str, Attester] | None = None,
        key: bytes | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """Bind runtimes to SQL backends.

        Args:
            bundle: The bundle's ``OKFManager``, or a callable returning it (opened on use).
            runtimes: ``runtime`` value to the SQL backend that runs it (an ``SQLManager``
                or a ``StarburstManager``), or to a callable returning it on first use.
            name: The bundle's backend name, as tools name it (default: the manager's).
            on_stale: ``warn`` (default) or ``refuse`` a computation past its ``stale_after``.
            attesters: Operator attesters by name, run after the built-in one.
            key: The key receipts are sealed with (default: random, per runner).
            clock: The current instant (for tests); default: the system clock, UTC.

        Raises:
            AKConfigError: ``on_stale`` is neither ``warn`` nor ``refuse``, a runtime is bound
                to something that is not a SQL backend, or no name can be found. (A runtime
                given as a callable is checked when it is first opened.)
        """
        if on_stale not in ("warn", "refuse"):
            raise AKConfigError(f"on_stale must be 'warn' or 'refuse', got {on_stale!r}")
        for runtime, backend in runtimes.items():
            if isinstance(backend, KnowledgeBase) or not callable(backend):
                _sql_backend(runtime, backend)
        self._bundle = bundle
        self._runtimes = dict(runtimes)
        self._opened: dict[str, SQLBackend] = {}
        self._opening = threading.Lock()
        self.on_stale: OnStale = on_stale
        self._attesters = dict(attesters or {})
        self._key = key or os.urandom(32)
        self._clock = clock or (lambda: datetime.now(UTC))
        resolved = name or getattr(bundle, "backend_name", None)
        if not isinstance(resolved, str) or not resolved:
            raise AKConfigError("Computations over a lazily opened bundle needs name=")
        self.name: str = resolved

    @property
    def runtimes(self) -> list[str]:
        """The runtimes bound to a backend."""
        return list(self._runtimes)

    def manager(self) -> OKFManager:
        """The bundle's manager (opened now when it was given as a callable)."""
        bundle = self._bundle
        return bundle if hasattr(bundle, "backend_name") else bundle()  # type: ignore[operator,return-value]

    def listed(self) -> list[dict[str, Any]]:
        """The bundle's Attested Computations, from its frontmatter alone.

        Returns:
            One entry per computation: ``id``, ``title``, ``runtime``, ``parameters`` and
            ``runnable`` (its runtime is bound here), in id order.
        """
        found = []
        for concept in self.manager().served_concepts():
            if is_computation(concept.type):
                entry = {"id": concept.id, "title": concept.title, **summary(concept.frontmatter)}
                entry["runnable"] = entry["runtime"] in self._runtimes
                found.append(entry)
        return sorted(found, key=lambda e: e["id"])

    def available(self) -> bool:
        """Whether the bundle holds a computation whose runtime is bound here.

        A bundle given as a callable (opened on first use, as configuration does) is not
        opened to answer: a bound runtime is the operator's word that it holds computations.
        """
        if not hasattr(self._bundle, "backend_name"):
            return bool(self._runtimes)
        return any(entry["runnable"] for entry in self.listed())

    def contract(self, concept: str) -> Contract:
        """Read a computation's contract as it stands now.

        Args:
            concept: Its concept id.

        Returns:
            The contract.

        Raises:
            ComputationError: No such concept in the bundle.
            ContractError: It is not a usable Attested Computation.
        """
        kb = self.manager()
        wanted = concept.strip().removesuffix(".md") if isinstance(concept, str) else None
        rows = kb.browse(wanted, limit=1) if wanted else []
        # browse of a folder answers its first concept: only the concept asked for will do
        found = rows[0]["metadata"] if rows and rows[0]["metadata"].get("id") == wanted else {}
        path = found.get("source")
        if not path or not str(path).endswith(".md"):
            known = [e["id"] for e in self.listed()]
            raise ComputationError(
                f"No computation {echo(concept)} in bundle '{self.name}'. Computations: {known}"
            )
        return load_contract(kb.store, str(path), legacy_dates=kb.legacy_dates)

    def run(self, concept: str, parameters: Any) -> Receipt:
        """Bind the values, run the computation on its runtime's backend, return the receipt.

        Args:
            concept: The computation's concept id.
            parameters: Values for its declared parameters (a mapping).

        Returns:
            The sealed receipt.

        Raises:
            ComputationError: Unknown computation, or its runtime is bound to no backend.
            ContractError: The concept is not a usable Attested Computation.
            BindingError: The values cannot be bound (unknown, missing, mistyped).
            KnowledgeError: The backend refused or failed the statement.
        """
        return self._run(self.contract(concept), parameters)

    def attest(self, receipt: Receipt, shown: Mapping[str, Any] | None = None) -> Verdict:
        """Attest a run against the concept as it stands now.

        Args:
            receipt: The run's receipt.
            shown: The result as displayed (``{"columns": [...], "rows": [...]}``); ``None``
                compares the receipt's own result.

        Returns:
            The verdict of the built-in attester and every registered one.
        """
        contract: Contract | None = None
        try:
            contract = self.contract(receipt.concept)
        except (ComputationError, ContractError) as exc:
            failure = str(exc)

        def now_binding() -> tuple[Binding, str]:
            if contract is None:
                raise ContractError(failure)
            return self._bound(contract, receipt.parameters)

        checks = builtin_checks(receipt, self._key, now_binding, shown)
        names = [BUILTIN]
        if contract is not None and self._attesters:
            checks += operator_checks(self._attesters, receipt, contract)
            names += list(self._attesters)
        return Verdict(all(c.ok for c in checks), tuple(checks), tuple(names))

    def gate(self, concept: str, parameters: Any) -> Outcome:
        """Run, attest and gate (OKF 0.2, section 10.5): the outcome, not yet words.

        Args:
            concept: The computation's concept id.
            parameters: Values for its declared parameters.

        Returns:
            The outcome: attested, with its receipt and verdict; or an ``error`` saying why
            nothing was run (unknown, unbindable, stale and refused, failed in its backend)
            or why no value may be shown (the verdict failed).
        """
        try:
            contract = self.contract(concept)
            stale = contract.is_stale(self._clock())
            if stale and self.on_stale == "refuse":
                return Outcome(
                    concept,
                    f"Computation {contract.concept_id} is stale: now >= stale_after "
                    f"({contract.stale_after}), and stale computations are refused here. "
                    "Nothing was run; ask a curator to re-verify it.",
                    contract,
                    stale=True,
                )
            receipt = self._run(contract, parameters)
        except (BindingError, ContractError, ComputationError) as exc:
            return Outcome(concept, f"Computation {echo(concept)} was not run: {exc}")
        except KnowledgeError as exc:
            return Outcome(concept, f"Computation {echo(concept)} failed in its backend: {exc}")
        verdict = self.attest(receipt, receipt.result)
        error = (
            ""
            if verdict.ok
            else f"Computation {contract.concept_id} was NOT attested: {verdict.reason}. "
            "No value is shown."
        )
        return Outcome(concept, error, contract, receipt, verdict, stale)

    def answer(self, concept: str, parameters: Any, answer_chars: int | None = None) -> ToolResult:
        """Run, attest and gate: what the ``run_computation`` tool answers.

        Args:
            concept: The computation's concept id.
            parameters: Values for its declared parameters.
            answer_chars: The most characters of the answer (``None``: no budget).

        Returns:
            The attested value with trust, lifecycle, verdict and receipt; or an error
            naming why nothing, or no value, is shown.
        """
        outcome = self.gate(concept, parameters)
        if outcome.error:
            return ToolResult.error(outcome.error)
        return ToolResult(outcome.render(answer_chars))

    # -- internals ----------------------------------------------------------------------

    def _backend(self, contract: Contract) -> SQLBackend:
        runtime = contract.runtime
        opened = self._opened.get(runtime)
        if opened is not None:
            return opened
        given = self._runtimes.get(runtime)
        if given is None:
            raise ComputationError(
                f"{contract.concept_id} runs on runtime {runtime!r}, which is bound to "
                f"no backend here (bound: {self.runtimes})"
            )
        with self._opening:
            if runtime not in self._opened:
                try:
                    made = given if isinstance(given, KnowledgeBase) else given()
                    self._opened[runtime] = _sql_backend(runtime, made)
                except AKConfigError as exc:
                    raise ComputationError(f"runtime {runtime!r} cannot be opened: {exc}") from exc
            return self._opened[runtime]

    def _bound(self, contract: Contract, parameters: Any) -> tuple[Binding, str]:
        """The binding and the statement the backend's guard makes of it (what executes)."""
        from agentkernel.knowledgebase._sql.guard import guard_statement

        backend = self._backend(contract)
        binding = bind(contract, parameters, backend.dialect)
        if backend.paramstyle == "qmark":
            binding = positional(binding, backend.dialect)
        guarded = guard_statement(
            binding.statement,
            dialect=backend.dialect,
            limit=backend.max_rows,
            allowed_functions=backend.allowed_functions,
        )
        return binding, guarded.sql

    def _run(self, contract: Contract, parameters: Any) -> Receipt:
        backend = self._backend(contract)
        binding, statement = self._bound(contract, parameters)
        started = _instant(self._clock())
        engine = str(getattr(backend, "backend", None) or backend.dialect)
        records = backend.query(
            binding.statement, limit=backend.max_rows, params=binding.for_driver(engine)
        )
        finished = _instant(self._clock())
        columns = list(records[0]["metadata"]["columns"]) if records else []
        rows = [[r["metadata"]["row"][c] for c in columns] for r in records]
        notice = getattr(records, "notice", "") or ""
        if any(r["metadata"].get("values_cut") for r in records):
            notice = (notice + " Long values were cut by max_result_bytes.").strip()
        receipt = Receipt(
            concept=contract.concept_id,
            runtime=contract.runtime,
            backend=f"{backend.name} ({engine})",
            executed_sql=statement,
            parameters=dict(binding.shown),
            started_at=started,
            finished_at=finished,
            row_count=len(rows),
            columns=columns,
            rows=rows,
            result_digest=result_digest(columns, rows),
            computation_digest=contract.digest,
            requested=tuple(contract.receipt_fields),
            unavailable=unavailable_fields(contract.receipt_fields),
            notice=notice,
            bound_order=binding.order,
        )
        return sealed(receipt, self._key)


def _sql_backend(runtime: str, backend: Any) -> SQLBackend:
    """The backend a runtime is bound to, if it runs SQL with a guard; else a config error."""
    from agentkernel.knowledgebase._sql.backend import SQLBackend

    if not isinstance(backend, SQLBackend):
        raise AKConfigError(
            f"runtime {runtime!r} must be bound to a SQL backend (SQLManager over SQLite, "
            f"DuckDB or PostgreSQL; StarburstManager over Trino), got {type(backend).__name__}"
        )
    return backend


def _instant(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _render(
    contract: Contract, receipt: Receipt, verdict: Verdict, stale: bool, budget: int | None
) -> str:
    verified = contract.verified
    lines = [
        f"Computation [{contract.concept_id}] {contract.title} "
        f"(runtime {contract.runtime}, backend {receipt.backend})",
        f"Trust: {contract.trust}"
        + (
            f"; last verified by {verified['by']} at {verified['at']}"
            if verified
            else "; never verified"
        ),
    ]
    if stale:
        lines.append(
            f"WARNING: stale: now >= stale_after ({contract.stale_after}); the definition may "
            "no longer match policy, although this run attests."
        )
    elif contract.stale_after and contract.stale_at is None:
        lines.append(
            f"Lifecycle: stale_after {contract.stale_after!r} has no UTC offset; ignored "
            "(OKF 0.2 reads only ISO 8601 datetimes with an offset)."
        )
    else:
        lines.append(f"Lifecycle: fresh (stale_after {contract.stale_after or 'not set'})")
    lines.append(f"Verdict: {verdict.summary()}")
    lines.append(
        "Receipt: "
        + json.dumps(
            {
                "executed_sql": receipt.executed_sql,
                "parameters": dict(receipt.parameters),
                **({"bound_order": list(receipt.bound_order)} if receipt.bound_order else {}),
                "started_at": receipt.started_at,
                "finished_at": receipt.finished_at,
                "row_count": receipt.row_count,
                "result_digest": receipt.result_digest,
            },
            ensure_ascii=False,
            default=str,
        )
    )
    for field_name, why in receipt.unavailable.items():
        lines.append(f"Not available: {field_name}: {why}")
    if receipt.notice:
        lines.append(f"Note: {receipt.notice}")
    head = "\n".join(lines)
    body = (
        "\n".join(
            "- "
            + " | ".join(f"{c}: {cell_text(v)}" for c, v in zip(receipt.columns, row, strict=False))
            for row in receipt.rows
        )
        or "(no rows)"
    )
    if budget is not None:
        room = max(budget - len(head) - 200, 200)
        body, left = cut_lines(body, room)
        if left:
            body += (
                f"\n[cut] {left} more rows are in the receipt but beyond this answer's budget; "
                "narrow the parameters to see them."
            )
    return f"{head}\nResult ({receipt.row_count} rows):\n{body}"
