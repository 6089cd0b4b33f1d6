"""The ``agentkernel-kb`` command.

Each subcommand lives in a module of its own that exposes ``register(subparsers)``; the module
adds its parser and sets ``handler`` to a function taking the parsed arguments and returning
an exit status. Subcommand modules import what they need when they run, so ``--help`` is fast
and needs no optional SDK.
"""

from agentkernel.cli.command import build_parser, main

__all__ = ["build_parser", "main"]
