"""Errors of the package as a whole.

::

    AKError                      base of every agentkernel error
    ├── AKConfigError            a configuration mistake (config.yaml, a store URI, an unknown
    │                            backend type); the message names what is wrong and where
    └── (knowledge-base errors live in agentkernel.knowledgebase.errors)

Knowledge-base errors (``KnowledgeError`` and its subclasses) are kept apart on purpose:
they are signals an agent can act on, while ``AKConfigError`` is a developer's mistake that
should fail at construction.
"""

from __future__ import annotations


class AKError(Exception):
    """Base class of every error agentkernel raises on purpose."""


class AKConfigError(AKError, ValueError):
    """A configuration mistake: the message names the offending setting and its value."""


class MissingExtraError(AKError, ImportError):
    """An optional SDK is not installed; the message names the extra to install."""


def missing_extra(package: str, extra: str, *, feature: str | None = None) -> MissingExtraError:
    """Word the error for an optional dependency that is not installed.

    Args:
        package: The import name that failed (for example ``"boto3"``).
        extra: The agentkernel extra that installs it (for example ``"aws"``).
        feature: What needed it, for the message; defaults to the package name.

    Returns:
        An error to raise ``from`` the original ``ImportError``.
    """
    what = feature or package
    return MissingExtraError(
        f"{what} requires the '{extra}' extra ({package} is not installed): "
        f"pip install 'agentkernel[{extra}]'"
    )


ECHO_LIMIT = 200
"""The most characters of caller-supplied input a message quotes (see :func:`echo`)."""


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """Quote caller-supplied input in a message, cut to ``limit`` characters.

    Every message that repeats what an agent or user sent (a backend name, a path, an id, an
    argument) quotes it through this function, so a 12 MB name comes back as a short quote
    saying how long the original was, not as 12 MB. The quote is the ``repr`` of the text,
    which also escapes control characters and lone surrogates: the message stays one line of
    encodable text whatever the input held.

    Args:
        value: The input; a non-string is shown by its ``repr``.
        limit: The most characters of the input shown.

    Returns:
        ``'text'``, or ``'first 200 characters…' (12000000 characters)`` when cut.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        shown = repr(value[:limit])
        return f"{shown[:-1]}…{shown[-1]} ({len(value)} characters)"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not break the message
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"
