"""The ``run_computation`` tool: an OKF bundle's Attested Computations, run and attested.

Built by ``KnowledgeBuilder.build()`` only when a :class:`~agentkernel.knowledgebase.okf.
computation.Computations` was registered whose bundle holds a computation with a bound
runtime (a bundle opened lazily, from configuration, counts once a runtime is bound), so the
manual's seven tools keep their names, signatures and gating everywhere else. Running a
computation is a read: the statement passes the SQL backend's guard and read-only session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentkernel._tooling.errors import ToolRefusal
from agentkernel.errors import echo

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.computation import Computations


def run_computation_tool(
    computations: Mapping[str, Computations], answer_chars: int | None
) -> Callable[..., Any]:
    """Make the tool's body (``make_tool`` wraps it).

    Args:
        computations: The runners, by the bundle's backend name.
        answer_chars: The answer budget.

    Returns:
        The ``run_computation`` function.
    """

    def run_computation(backend: str, computation: str, params_json: str = "{}") -> str:
        """Run one of a bundle's Attested Computations and show its attested value.

        Only the values of the computation's declared parameters are given: the SQL is the
        bundle's, never yours. get_schemas lists each bundle's computations with their
        parameters; browse_kb shows them too. The answer states the trust tier, whether the
        definition is stale, the attestation verdict and the run's receipt; a run that
        fails attestation shows no value.

        Args:
            backend: The OKF bundle's backend name.
            computation: The computation's concept id, e.g. "computations/revenue".
            params_json: The parameter values as a JSON object, e.g. '{"year": 2024}'.

        Returns:
            The attested result with its verdict, or a message saying why nothing is shown.
        """
        runner = computations.get(backend) if isinstance(backend, str) else None
        if runner is None:
            raise ToolRefusal(
                f"No computations in backend {echo(backend)}. "
                f"Backends with computations: {list(computations)}"
            )
        if not isinstance(computation, str) or not computation.strip():
            raise ToolRefusal("computation must be a concept id, such as 'computations/revenue'.")
        if not isinstance(params_json, str):
            raise ToolRefusal(f"params_json must be a string, got {type(params_json).__name__}.")
        try:
            values = json.loads(params_json or "{}")
        except json.JSONDecodeError as exc:
            raise ToolRefusal(
                f'params_json is not valid JSON ({exc}); give an object such as {{"year": 2024}}.'
            ) from exc
        return runner.answer(computation.strip(), values, answer_chars)

    return run_computation
