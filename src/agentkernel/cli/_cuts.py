"""A cut answer on the command line: said on stderr, and read on with a command, not a tool call.

The tools cut an answer at the agents' answer budget and end it with a ``[cut]`` line naming
the tool call that reads on (``fetch_kb(backend="kb", ids="a#offset=19400")``): what an agent
needs. A person at a terminal needs the command instead, so every command that prints a tool's
answer rewrites those calls (:func:`as_commands`) and says on stderr that the answer was cut
and that ``--full`` prints it whole (:func:`say_cut`).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

CUT_LINE = "[cut] "

_FETCH_CALL = re.compile(r'fetch_kb\(backend=("(?:[^"\\]|\\.)*"), ids=("(?:[^"\\]|\\.)*")\)')


def fetch_command(location: str, *, index: str | None = None, options: Sequence[str] = ()) -> str:
    """The start of the ``fetch`` command that reads a bundle's concepts (ids follow it).

    Args:
        location: The bundle, as the command line names it.
        index: ``--index``, when the answer came from a bundle index.
        options: ``--index-option`` values.

    Returns:
        For example ``agentkernel-kb fetch /srv/kb``.
    """
    words = ["agentkernel-kb", "fetch", location]
    if index:
        words += ["--index", index]
        for option in options:
            words += ["--index-option", option]
    return shlex.join(words)


def fetch_commands(backends: Mapping[str, Any]) -> dict[str, str]:
    """The ``fetch`` command of every backend that is a bundle (has a document store).

    Args:
        backends: Backend name to knowledge base.

    Returns:
        Backend name to :func:`fetch_command`; backends without a store are left out.
    """
    found = {}
    for name, kb in backends.items():
        store = getattr(kb, "store", None)
        location = getattr(store, "location", None)
        if isinstance(location, str) and kb.capabilities.fetch:
            found[name] = fetch_command(location)
    return found


def as_commands(text: str, commands: Mapping[str, str]) -> str:
    """Rewrite the ``fetch_kb(...)`` calls of ``[cut]`` lines into the commands that read on.

    Args:
        text: A tool's answer.
        commands: Backend name to the start of its ``fetch`` command; a backend not named
            keeps its tool call.

    Returns:
        The answer, its ``[cut]`` lines naming commands.
    """
    if CUT_LINE not in text:
        return text

    def swap(match: re.Match[str]) -> str:
        backend, ids = json.loads(match[1]), json.loads(match[2])
        start = commands.get(backend)
        return match[0] if start is None else f"{start} {shlex.quote(ids)}"

    lines = text.split("\n")
    return "\n".join(
        _FETCH_CALL.sub(swap, line) if line.startswith(CUT_LINE) else line for line in lines
    )


def say_cut(text: str, command: str) -> None:
    """Say on stderr that an answer was cut and how to print it whole; nothing when it was not.

    Args:
        text: What the command printed.
        command: The command's name, for the line (``search``, ``ask``).
    """
    from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS

    if "\n" + CUT_LINE in text or text.startswith(CUT_LINE):
        print(
            f"agentkernel-kb {command}: the answer is cut at the agents' answer budget "
            f"({DEFAULT_ANSWER_CHARS:,} characters); the [cut] line says how to read on, "
            "--full prints the whole text",
            file=sys.stderr,
        )
