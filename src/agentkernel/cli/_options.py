"""One way to add a command's options: declared one a row, added by :func:`add_options`."""

from __future__ import annotations

from typing import Any

__all__ = ["Row", "add_options"]

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
