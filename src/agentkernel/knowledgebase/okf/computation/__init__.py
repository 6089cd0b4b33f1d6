"""Attested Computations (OKF 0.2, section 10): discover, load, bind, execute, attest, gate.

:class:`Computations` runs a bundle's ``type: Attested Computation`` concepts on the SQL
backends an operator binds to their ``runtime``; see :mod:`.runner`. The pieces: the contract
(:mod:`.contract`), binding values (:mod:`.binding`), the receipt (:mod:`.receipt`) and the
attesters (:mod:`.attest`). No code a bundle names is ever run.
"""

from agentkernel.knowledgebase.okf.computation._binding import BindingError
from agentkernel.knowledgebase.okf.computation._receipt import Receipt
from agentkernel.knowledgebase.okf.computation._runner import (
    ComputationError,
    Computations,
    Outcome,
)
from agentkernel.knowledgebase.okf.computation.attest import Check, Verdict
from agentkernel.knowledgebase.okf.computation.contract import (
    COMPUTATION_TYPE,
    Contract,
    ContractError,
    Parameter,
)

__all__ = [
    "COMPUTATION_TYPE",
    "BindingError",
    "Check",
    "ComputationError",
    "Computations",
    "Contract",
    "ContractError",
    "Outcome",
    "Parameter",
    "Receipt",
    "Verdict",
]
