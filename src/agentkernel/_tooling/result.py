"""What a tool callable returns: text that knows whether it reports a failure.

The tools never raise into an agent framework; a refusal or a failure comes back as text the
model can act on. :class:`ToolResult` is that text (a ``str``, so every framework shows it
as it is) carrying an :attr:`~ToolResult.is_error` flag set where the result is made, so the
MCP servers set ``isError`` from the flag and never from the wording.

Example:
    >>> refused = ToolResult.error("Unknown backend 'x'.")
    >>> refused == "Unknown backend 'x'.", refused.is_error, ToolResult("Wrote 1 record.").is_error
    (True, True, False)
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ToolResult", "is_error", "pathless"]


class ToolResult(str):
    """A tool's output text, and whether it reports a failure.

    Equal to, hashed like and printed as its text; only :attr:`is_error` is added.
    """

    __slots__ = ()

    #: Whether the text reports a refusal or a failure rather than a result.
    is_error: bool = False

    @staticmethod
    def error(text: str) -> ToolResult:
        """The result of a call that was refused or failed.

        Args:
            text: What went wrong, worded for the model.

        Returns:
            The text, flagged as an error.
        """
        return _ErrorResult(text)


class _ErrorResult(ToolResult):
    __slots__ = ()
    is_error = True


def is_error(result: Any) -> bool:
    """Whether a tool's return value reports a failure (only a flagged result does).

    Args:
        result: What the tool returned.

    Returns:
        True for a :meth:`ToolResult.error` result; false for anything else.
    """
    return isinstance(result, ToolResult) and result.is_error


_ABSOLUTE = re.compile(r"(?<![\w.:/~-])(?:[A-Za-z]:\\|/)(?:[^\s'\"/\\]+[/\\])+([^\s'\"/\\]*)")


def pathless(text: str) -> str:
    r"""A failure's text with every absolute path cut to its last segment.

    An ``OSError`` from deep in a store names the server's own directories
    (``[Errno 36] File name too long: '/srv/kb/x.md'``); an agent gets ``'.../x.md'``, and
    learns nothing of the server's file system.

    Args:
        text: The text, typically ``str(exc)``.

    Returns:
        The text with each absolute path (POSIX, or Windows ``C:\\...``) replaced.

    Example:
        >>> pathless("[Errno 2] No such file: '/srv/kb/a.md'")
        "[Errno 2] No such file: '.../a.md'"
    """
    return _ABSOLUTE.sub(lambda m: f".../{m.group(1)}", text)
