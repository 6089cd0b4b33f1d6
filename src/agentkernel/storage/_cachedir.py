"""Where a per-user cache lives when none is configured: one rule for every cache.

``$<VARIABLE>`` when it is set, else ``$XDG_CACHE_HOME/agentkernel/<leaf>`` (``~/.cache`` when
``XDG_CACHE_HOME`` is unset). The vector cache and the node cache follow it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root(variable: str, leaf: str) -> Path:
    """The root of one cache (not created here).

    Args:
        variable: The environment variable that names the root outright.
        leaf: The folder under ``$XDG_CACHE_HOME/agentkernel`` otherwise.

    Returns:
        The folder, ``~`` expanded.
    """
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "agentkernel" / leaf
