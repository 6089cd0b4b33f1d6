"""The ``mcp`` extra's guard: importing :mod:`agentkernel.mcp` without the SDK names the extra."""

from __future__ import annotations

from agentkernel.errors import missing_extra

try:
    import mcp  # noqa: F401
except ImportError as exc:
    raise missing_extra("mcp", "mcp", feature="agentkernel.mcp") from exc
