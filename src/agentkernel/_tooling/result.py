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

from typing import Any

__all__ = ["ToolResult", "is_error"]


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
