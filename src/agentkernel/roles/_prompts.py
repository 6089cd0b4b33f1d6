"""The navigation protocol the configuration path appends to an agent's instructions.

The protocol text ships with the package (``navigation.md``, ``writing.md``) so it is
maintained in one place instead of being copied into each application's prompts. It is read
when an agent's instructions are composed, never at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources

ROLE_SENTENCES: Mapping[str, str] = {
    "consumer": "Navigate the bundle and answer from it.",
    "producer": "Add new knowledge to the bundle as you learn it.",
    "curator": "Review, correct, update and maintain the knowledge already in the bundle.",
}


@cache
def _text(name: str) -> str:
    return resources.files("agentkernel.roles").joinpath(name).read_text(encoding="utf-8").strip()


def compose(roles: Mapping[str, str], descriptions: Mapping[str, str | None]) -> str:
    """Compose an agent's OKF instructions from its roles.

    Args:
        roles: Database name to the agent's role in it (``consumer``, ``producer``,
            ``curator``), in configuration order.
        descriptions: Database name to its configured description.

    Returns:
        One line per database with the role's sentence, then the navigation protocol, and
        the writing guidance when the agent may write somewhere; ``""`` without roles.
    """
    if not roles:
        return ""
    lines = ["## Your knowledge bundles"]
    for database, role in roles.items():
        about = f" ({descriptions[database]})" if descriptions.get(database) else ""
        lines.append(f"- '{database}'{about}: you are its {role}. {ROLE_SENTENCES[role]}")
    parts = ["\n".join(lines), _text("navigation.md")]
    if any(role != "consumer" for role in roles.values()):
        parts.append(_text("writing.md"))
    return "\n\n".join(parts)
