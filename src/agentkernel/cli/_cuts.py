"""A cut answer on the command line: said on stderr, and read on with a command, not a tool call.

The tools cut an answer at the agents' answer budget and end it with a ``[cut]`` line naming
the tool call that reads on (``fetch_kb(backend="kb", ids="a#offset=19400")``): what an agent
needs. A person at a terminal needs the command instead, so every command that prints a tool's
answer rewrites those calls (:func:`as_commands`) and says on stderr that the answer was cut
and that ``--full`` prints it whole (:func:`say_cut`).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agentkernel._tooling.result import ToolResult


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


def as_commands(result: str, commands: Mapping[str, str]) -> str:
    """Name the command that reads on in a cut answer's ``[cut]`` note, not the tool call.

    The call is the one the answer carries (:attr:`ToolResult.read_on
    <agentkernel._tooling.result.ToolResult.read_on>`), never read back from its text.

    Args:
        result: A tool's answer.
        commands: Backend name to the start of its ``fetch`` command; a backend not named
            keeps its tool call.

    Returns:
        The answer, its note naming the command (the answer itself when there is none).
    """
    if not isinstance(result, ToolResult):
        return result
    read_on = result.read_on
    if read_on is None or read_on.tool != "fetch_kb" or not read_on.call:
        return result
    start = commands.get(str(read_on.arguments.get("backend")))
    if start is None:
        return result
    command = f"{start} {shlex.quote(str(read_on.arguments.get('ids', '')))}"
    note = read_on.note.replace(read_on.call, command, 1)
    return result.reading_on(replace(read_on, note=note, call=command))


def say_cut(results: Iterable[str], command: str) -> None:
    """Say on stderr that an answer was cut and how to print it whole; nothing when it was not.

    Args:
        results: The tool answers the command printed.
        command: The command's name, for the line (``search``, ``ask``).
    """
    from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS

    if any(isinstance(r, ToolResult) and r.read_on is not None for r in results):
        print(
            f"agentkernel-kb {command}: the answer is cut at the agents' answer budget "
            f"({DEFAULT_ANSWER_CHARS:,} characters); the [cut] line says how to read on, "
            "--full prints the whole text",
            file=sys.stderr,
        )
