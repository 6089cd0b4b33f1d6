"""What a tool callable returns: text for the agent, and for code the records it shows.

The tools never raise into an agent framework; a refusal or a failure comes back as text the
model can act on. :class:`ToolResult` is that text (a ``str``, so every framework shows it
as it is) carrying an :attr:`~ToolResult.is_error` flag set where the result is made, so the
MCP servers set ``isError`` from the flag and never from the wording, and the
:attr:`~ToolResult.records` the text renders, so code that calls a tool (``agentkernel-kb
ask``, the scripted walkthrough) reads ids and metadata from them and never parses the text.

Example:
    >>> refused = ToolResult.error("Unknown backend 'x'.")
    >>> refused == "Unknown backend 'x'.", refused.is_error, ToolResult("Wrote 1 record.").is_error
    (True, True, False)
    >>> found = ToolResult("- [a] A", records=[{"text": "A", "metadata": {"id": "a"}}])
    >>> found, found.ids
    ('- [a] A', ('a',))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReadOn", "ToolResult", "is_error", "pathless"]


@dataclass(frozen=True)
class ReadOn:
    """The ``[cut]`` note a cut answer ends with, and the call it names to read on.

    Attributes:
        note: The note, the answer's last line.
        call: The call as the note words it (a part of ``note``); empty when the note names
            none, only how to narrow the call.
        tool: The tool ``call`` calls, when the call was made from it and ``arguments``.
        arguments: The call's arguments, likewise.
    """

    note: str
    call: str = ""
    tool: str = ""
    arguments: Mapping[str, str] = field(default_factory=dict)


class ToolResult(str):
    """A tool's output text, whether it reports a failure, and the records it shows.

    Equal to, hashed like and printed as its text; the rest is for code. The records are the
    ones the text shows, in its order, as the backend returned them:
    ``{"text": ..., "metadata": {"id": ..., ...}}``. An answer that leaves something out ends
    with :attr:`missing_note` (what was asked and not found, and why) and then
    :attr:`read_on` (how to read what the budget cut), each on lines of its own, so code
    takes the parts apart without reading the text.
    """

    #: Whether the text reports a refusal or a failure rather than a result.
    is_error: bool = False

    #: The records the text renders, in the order shown (empty for an answer with none).
    records: tuple[Mapping[str, Any], ...] = ()

    #: The ids asked for and not found, in the order asked.
    missing: tuple[str, ...] = ()

    #: The text's last lines before :attr:`read_on` that report :attr:`missing` (empty when
    #: nothing is missing).
    missing_note: str = ""

    #: When the answer budget cut the text: its last line, the ``[cut]`` note, and the call it
    #: names (``None`` for a whole answer).
    read_on: ReadOn | None = None

    def __new__(
        cls,
        text: str = "",
        records: Iterable[Mapping[str, Any]] = (),
        *,
        missing: Iterable[str] = (),
        missing_note: str = "",
        read_on: ReadOn | None = None,
    ) -> ToolResult:
        """Make a result.

        Args:
            text: The answer, worded for the model.
            records: The records the text shows, in its order.
            missing: The ids asked for and not found.
            missing_note: The lines of ``text`` reporting them, just before ``read_on``.
            read_on: The ``[cut]`` note ``text`` ends with, if the budget cut it.
        """
        result = super().__new__(cls, text)
        shown = tuple(records)
        if shown:
            result.records = shown
        if missing:
            result.missing = tuple(missing)
            result.missing_note = missing_note
        if read_on is not None:
            result.read_on = read_on
        return result

    def reading_on(self, read_on: ReadOn) -> ToolResult:
        """The same result, its ``[cut]`` note replaced (say, to name a command, not a call).

        Args:
            read_on: The new note, with the call it names.

        Returns:
            A result of the same kind (an error stays one), whose text ends with the new note.

        Raises:
            ValueError: This result was not cut.
        """
        if self.read_on is None:
            raise ValueError("Only a cut answer has a note to replace.")
        text = self[: len(self) - len(self.read_on.note)] + read_on.note
        return type(self)(
            text,
            self.records,
            missing=self.missing,
            missing_note=self.missing_note,
            read_on=read_on,
        )

    @property
    def ids(self) -> tuple[str, ...]:
        """The ``metadata["id"]`` of each record that has one, as text, in the order shown."""
        found = []
        for record in self.records:
            metadata = record.get("metadata") if isinstance(record, Mapping) else None
            if isinstance(metadata, Mapping) and metadata.get("id") is not None:
                found.append(str(metadata["id"]))
        return tuple(found)

    @staticmethod
    def error(text: str, *, missing: Iterable[str] = (), missing_note: str = "") -> ToolResult:
        """The result of a call that was refused or failed.

        Args:
            text: What went wrong, worded for the model.
            missing: The ids asked for and not found, when that is what went wrong.
            missing_note: The lines ``text`` ends with that report them.

        Returns:
            The text, flagged as an error.
        """
        return _ErrorResult(text, missing=missing, missing_note=missing_note)


class _ErrorResult(ToolResult):
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
