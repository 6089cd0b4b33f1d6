"""What the framework attachments share: which agents to touch, and hand-bound collisions.

Each framework module (``OpenAIModule``, ``LangGraphModule``, ``CrewAIModule``,
``ADKModule``) asks :func:`plan` for an agent's OKF tools and instructions, binds the tools
with its own builder and appends the text where its framework keeps instructions. Planning
reads configuration only: no store is opened.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentkernel.config import AKConfig
from agentkernel.roles.capability import OKFCapability

logger = logging.getLogger(__name__)

#: Config accepted by the framework modules: a loaded config, a mapping, a path, or ``None``
#: for the default location (``AK_CONFIG_PATH_OVERRIDE``, else ``./config.yaml``).
ConfigSource = AKConfig | Mapping[str, Any] | str | os.PathLike[str] | None


@dataclass(frozen=True)
class Attachment:
    """An agent's OKF share: plain tool callables and the text to append to its prompt."""

    agent: str
    tools: list[Callable[..., str]]
    instructions: str


def load_capability(config: ConfigSource | OKFCapability) -> OKFCapability | None:
    """Build the capability once per module; ``None`` when there is no ``okf`` block.

    Args:
        config: An ``OKFCapability``, an ``AKConfig``, a mapping, a path, or ``None``.

    Returns:
        The capability, or ``None`` when the configuration has no ``okf`` block.

    Raises:
        AKConfigError: The okf block is invalid.
    """
    if isinstance(config, OKFCapability):
        return config
    return OKFCapability.from_config(config)


def plan(
    capability: OKFCapability | None, agent: str, bound_tool_names: Iterable[str] = ()
) -> Attachment | None:
    """Decide what to attach to one agent, warning about hand-bound knowledge-base tools.

    Args:
        capability: The capability, or ``None`` (no okf block: nothing is attached).
        agent: The agent's identity as named in the okf block.
        bound_tool_names: Names of the tools the agent already carries.

    Returns:
        The attachment, or ``None`` for an agent named in no database.
    """
    if capability is None or not capability.roles_of(agent):
        return None
    tools = capability.tools_for(agent)
    collisions = sorted({t.__name__ for t in tools} & set(bound_tool_names))
    if collisions:
        logger.warning(
            "Agent %r is named in the okf block and already has knowledge-base tools bound by "
            "hand: %s. Attaching the okf tools anyway; the agent now carries duplicate tool "
            "names (use the okf block or the programmatic path, not both).",
            agent,
            collisions,
        )
    return Attachment(agent, tools, capability.instructions_for(agent))


def append_text(existing: str | None, extra: str) -> str:
    """Append the OKF instructions to an agent's own text, separated by a blank line.

    Args:
        existing: The agent's current instructions (``None`` or empty for none).
        extra: The OKF instructions.

    Returns:
        The combined text.
    """
    if not existing:
        return extra
    return f"{existing.rstrip()}\n\n{extra}"


def tool_name(tool: Any) -> str:
    """A framework tool's name (``.name``), or a plain function's ``__name__``.

    Args:
        tool: A framework tool object or a callable.

    Returns:
        The name, or ``""`` when it has none.
    """
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else str(getattr(tool, "__name__", ""))
