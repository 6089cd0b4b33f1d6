"""Deprecated alias of :mod:`agentkernel.roles` (OKF roles and configuration), for one release."""

from __future__ import annotations

from agentkernel import _moved
from agentkernel import roles as _new
from agentkernel.roles import ROLES, OKFCapability

_moved.alias_package(__name__, "agentkernel.roles", ("attach", "capability", "prompts"))

__all__ = ["ROLES", "OKFCapability"]


def __getattr__(name: str) -> object:
    return _moved.forward(_new, name)
