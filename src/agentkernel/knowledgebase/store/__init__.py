"""Deprecated alias of :mod:`agentkernel.storage` (document storage), for one release."""

from __future__ import annotations

from agentkernel import _moved
from agentkernel import storage as _new

_moved.alias_package(__name__, "agentkernel.storage", ("base", "local"))


def __getattr__(name: str) -> object:
    return _moved.forward(_new, name)
