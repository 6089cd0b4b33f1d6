"""One way to add a command and its options: :func:`subcommand`, and :func:`add_options` rows."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["Row", "add_options", "subcommand"]

Row = tuple[str, str | None, str] | tuple[str, str | None, str, dict[str, Any]]
"""``(flag, metavar, help)`` or ``(flag, metavar, help, keywords)``: one option.

A ``None`` metavar makes a switch (``action="store_true"``); ``keywords`` are passed on to
``add_argument`` as they are (``type``, ``default``, ``nargs``, ...).
"""


def add_options(target: Any, *rows: Row) -> None:
    """Add options to a parser or an argument group, in the order given.

    Args:
        target: An ``argparse`` parser, argument group or mutually exclusive group.
        *rows: The options, one :data:`Row` each.
    """
    for flag, metavar, help_text, *more in rows:
        keywords: dict[str, Any] = dict(more[0]) if more else {}
        if metavar is None:
            keywords.setdefault("action", "store_true")
        else:
            keywords["metavar"] = metavar
        target.add_argument(flag, help=help_text, **keywords)


def subcommand(
    name: str,
    run: Callable[[argparse.Namespace], int],
    arguments: Callable[[argparse.ArgumentParser], None],
    *,
    help: str,
    description: str | None = None,
) -> Callable[[Any], None]:
    """The ``register`` of a command module that adds one subcommand.

    :func:`agentkernel.cli.command.build_parser` calls every command module's
    ``register(subparsers)``; a module with one subcommand declares it with this.

    Args:
        name: The subcommand's name.
        run: Runs it: parsed arguments in, exit status out.
        arguments: Adds its arguments to its parser.
        help: Its line in ``agentkernel-kb --help``.
        description: The text atop its own ``--help``.

    Returns:
        ``register(subparsers)``: adds the subcommand, its arguments and its handler.
    """

    def register(subparsers: Any) -> None:
        parser = subparsers.add_parser(name, help=help, description=description)
        arguments(parser)
        parser.set_defaults(handler=run)

    return register
