"""Attesting a run: the built-in deterministic attester and the operator's (OKF 0.2, 10.5).

The built-in attester (``binding-equality``) checks, with no model and no bundle code:

- **the receipt is intact**: its seal verifies under the runner's key, and its result hashes to
  its ``result_digest``;
- **provenance**: the concept as it stands now, bound with the receipt's parameters, gives
  exactly the statement the receipt says ran (so a swapped or edited computation, a rewritten
  statement, a changed parameter fails);
- **fidelity**: the result shown hashes to the receipt's digest.

A bundle's ``executor.resource`` and ``attester.resource`` name code (a script, a skill) that
this package never reads, imports or runs: a bundle is data from outside, and running code it
names would give whoever can write the bundle the rights of the process serving it. An
operator who trusts such a check installs it as ordinary Python and registers it by name
(``Computations(attesters={...})`` or ``okf.attesters`` in ``config.yaml``); it then runs
after the built-in one, on the same receipt, and every attester must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkernel.knowledgebase.okf.computation._binding import Binding
from agentkernel.knowledgebase.okf.computation._receipt import (
    Receipt,
    canonical,
    result_digest,
    verify_seal,
)
from agentkernel.knowledgebase.okf.computation.contract import Contract

BUILTIN = "binding-equality"

Attester = Callable[[Receipt, Contract], "bool | tuple[bool, str]"]
"""An operator's attester: given the receipt and the contract now, pass or fail (with why)."""


@dataclass(frozen=True)
class Check:
    """One comparison an attester made.

    Attributes:
        name: What was compared (``seal``, ``provenance``, ``fidelity``, or an attester's name).
        ok: Whether it held.
        detail: What was found.
    """

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of attesting one run.

    Attributes:
        ok: Every check held.
        checks: The checks, in the order made.
        attesters: The attesters that ran.
    """

    ok: bool
    checks: Sequence[Check] = field(default_factory=tuple)
    attesters: Sequence[str] = field(default_factory=tuple)

    @property
    def reason(self) -> str:
        """The failed checks in one line (``""`` when attested)."""
        return "; ".join(f"{c.name}: {c.detail}" for c in self.checks if not c.ok)

    def summary(self) -> str:
        """One line: ``ATTESTED by ...`` or ``FAILED (...)``."""
        by = ", ".join(self.attesters)
        if self.ok:
            return f"ATTESTED by {by} (" + "; ".join(c.name for c in self.checks) + " hold)"
        return f"FAILED ({by}): {self.reason}"


def builtin_checks(
    receipt: Receipt,
    key: bytes,
    now_binding: Callable[[], tuple[Binding, str]],
    shown: Mapping[str, Any] | None,
) -> list[Check]:
    """The built-in attester's checks.

    Args:
        receipt: The run's receipt.
        key: The runner's seal key.
        now_binding: Re-derives, from the concept as it stands now and the receipt's
            parameters, the binding and the statement it would execute; raises when it cannot.
        shown: The result as shown (``{"columns": ..., "rows": ...}``), or ``None`` for the
            receipt's own.

    Returns:
        The checks (seal, result digest, provenance, fidelity).
    """
    checks = [
        Check(
            "seal",
            verify_seal(receipt, key),
            "the receipt is as the run sealed it"
            if verify_seal(receipt, key)
            else "the receipt was altered after the run (its seal does not verify)",
        )
    ]
    digest = result_digest(receipt.columns, receipt.rows)
    same = digest == receipt.result_digest
    checks.append(
        Check(
            "result digest",
            same,
            f"the result hashes to {receipt.result_digest[:19]}..."
            if same
            else "the receipt's result does not hash to its result_digest (edited after the run)",
        )
    )
    checks.append(_provenance(receipt, now_binding))
    if shown is not None:
        shown_digest = result_digest(shown.get("columns", []), shown.get("rows", []))
        checks.append(
            Check(
                "fidelity",
                shown_digest == receipt.result_digest,
                "the result shown is the result the run returned"
                if shown_digest == receipt.result_digest
                else "the result shown is not the result the run returned",
            )
        )
    return checks


def operator_checks(
    attesters: Mapping[str, Attester], receipt: Receipt, contract: Contract
) -> list[Check]:
    """Run the operator's registered attesters; an exception is a failed check.

    Args:
        attesters: Name to attester.
        receipt: The run's receipt.
        contract: The contract as it stands now.

    Returns:
        One check per attester.
    """
    checks = []
    for name, attester in attesters.items():
        try:
            outcome = attester(receipt, contract)
        except Exception as exc:  # an attester's failure fails the attestation, never the call
            checks.append(Check(name, False, f"the attester raised {type(exc).__name__}: {exc}"))
            continue
        ok, detail = outcome if isinstance(outcome, tuple) else (bool(outcome), "")
        checks.append(Check(name, bool(ok), detail or ("passed" if ok else "failed")))
    return checks


def _provenance(receipt: Receipt, now_binding: Callable[[], tuple[Binding, str]]) -> Check:
    try:
        binding, statement = now_binding()
    except Exception as exc:  # the concept now cannot be bound as the run was: a failure
        return Check(
            "provenance", False, f"the concept as it stands now cannot re-derive the run: {exc}"
        )
    if statement != receipt.executed_sql:
        return Check(
            "provenance",
            False,
            f"the statement that ran is not the computation of {receipt.concept} as it stands "
            "now (the computation or its file changed, or other SQL ran)",
        )
    if list(binding.order) != list(receipt.bound_order):
        return Check(
            "provenance",
            False,
            "the values were sent to the placeholders in an order the computation as it "
            "stands now does not give",
        )
    if canonical(dict(binding.shown)) != canonical(dict(receipt.parameters)):
        return Check(
            "provenance", False, "the parameters bound are not the ones the receipt claims"
        )
    return Check(
        "provenance",
        True,
        f"the statement that ran is the computation of {receipt.concept} bound with "
        + (", ".join(f"{k}={v!r}" for k, v in receipt.parameters.items()) or "no parameters"),
    )
