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
