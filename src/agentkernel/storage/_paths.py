"""Bundle-relative paths and the names a store accepts: cleaning, hiding, naming.

Containment starts here: every path a store accepts, whoever supplied it (an agent tool, a
link in a document, its own walk), goes through :func:`clean_path` first. Also the name a
bundle gets from its location (:func:`bundle_name`), and the names of a store's own records
(:data:`RECORDS_FOLDER`). The names are re-exported by :mod:`agentkernel.storage.base`.
"""

from __future__ import annotations

import posixpath
import re

from agentkernel.errors import KnowledgePathError, echo

_CONTROL = re.compile("[\x00-\x1f\x7f]")
# A path already in canonical form, made of plain ASCII names none of which starts with a dot:
# nothing in it can need cleaning or be refused, so the checks below are skipped (a walk of a
# large bundle meets almost only such paths)
_PLAIN = re.compile(
    r"[A-Za-z0-9_@+=~,-][A-Za-z0-9_.@+=~,-]*(?:/[A-Za-z0-9_@+=~,-][A-Za-z0-9_.@+=~,-]*)*"
)


def clean_path(path: str) -> str:
    """Normalise a bundle-relative path, refusing anything that could leave the root.

    Args:
        path: A path as given by a caller; ``""`` (or ``"."``) is the root.

    Returns:
        The path in POSIX form with no leading ``./``, no duplicate slashes and no trailing
        slash; ``""`` for the root.

    Raises:
        KnowledgePathError: The path is not a string, is absolute, holds ``..``, a NUL byte,
            a backslash, a drive letter, a control character, or a lone surrogate.
    """
    if not isinstance(path, str):
        raise KnowledgePathError(f"A path must be a string, got {type(path).__name__}.")
    if _PLAIN.fullmatch(path):
        return path
    if "\x00" in path:
        raise KnowledgePathError(f"Path {echo(path)} contains a NUL byte.")
    if _CONTROL.search(path):
        raise KnowledgePathError(f"Path {echo(path)} contains a control character.")
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise KnowledgePathError(f"Path {echo(path)} is not valid Unicode text.") from None
    if "\\" in path:
        raise KnowledgePathError(f"Path {echo(path)} contains a backslash; use '/' separators.")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    # judged on the path as given and as cleaned: "./C:/x" must not clean into "C:/x", which
    # this function refuses, so that cleaning twice gives what cleaning once gave
    if path.startswith("/") or _drive(path) or (parts and _drive(parts[0])):
        raise KnowledgePathError(f"Path {echo(path)} is absolute; give it relative to the bundle.")
    if ".." in parts:
        raise KnowledgePathError(f"Path {echo(path)} climbs out of the bundle with '..'.")
    return posixpath.join(*parts) if parts else ""


def _drive(part: str) -> bool:
    """Whether a path (or its first segment) starts like a drive (``C:``) or a scheme."""
    return len(part) >= 2 and part[1] == ":"


def clean_file_path(path: str) -> str:
    """Like :func:`clean_path`, for a path that must name a visible file.

    Hidden entries (any segment starting with ``.``, such as ``.git/config`` or a store's own
    temporary files) are not part of a bundle: walks skip them, and access refuses them, so an
    agent can neither read repository internals nor plant a ``.git/hooks`` script.

    Args:
        path: A path as given by a caller.

    Returns:
        The cleaned path (never ``""``).

    Raises:
        KnowledgePathError: As :func:`clean_path`, or the path names the root or a hidden entry.
    """
    if isinstance(path, str) and _PLAIN.fullmatch(path):
        return path
    cleaned = clean_path(path)
    if not cleaned:
        raise KnowledgePathError(f"Path {echo(path)} names the bundle root, not a file.")
    if any(part.startswith(".") for part in cleaned.split("/")):
        raise KnowledgePathError(
            f"Path {echo(path)} names a hidden entry, which is not in the bundle."
        )
    return cleaned


def bundle_label(location: str) -> str:
    """Name a bundle by its location without disclosing a local directory.

    Args:
        location: A store's location (``/srv/kb``, ``file:///srv/kb``, ``s3://b/p``).

    Returns:
        The last segment of a local path (``kb``), else the location unchanged.
    """
    local = location[len("file://") :] if location.startswith("file://") else location
    if local.startswith(("/", "\\")) or _drive(local):
        name = local.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return name if name and not _drive(name) else "bundle"
    return location


def bundle_name(location: str) -> str:
    """The backend name a bundle gets unless it is named: its folder, or its prefix's last part.

    One rule for every command and helper that names a bundle for agents: ``/srv/kb`` and
    ``file:///srv/kb`` are ``kb``, ``s3://bucket/bundles/kb`` is ``kb`` (``s3://bucket`` is
    ``bucket``), and any other ``scheme://...`` location is named by its last segment.

    Args:
        location: A store's location.

    Returns:
        A short name; ``bundle`` when the location has none to give.
    """
    label = bundle_label(location)
    _, sep, rest = label.partition("://")
    if sep:
        label = rest
    name = label.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name or "bundle"


def is_walkable(path: str) -> bool:
    """Whether a path met during a walk may be listed: clean, canonical and not hidden.

    Args:
        path: A path relative to the store root, as the walk spelled it.

    Returns:
        True when ``clean_file_path(path) == path``, so the listed path reads back the same file.
    """
    try:
        return clean_file_path(path) == path
    except KnowledgePathError:
        return False


RECORDS_FOLDER = ".agentkernel-batches"
"""The hidden folder at a store's root holding its own records (``DocumentStore._records``)."""

MAX_RECORD_BYTES = 1 << 20
"""At most this much of a record is read: a longer one is no record this package wrote."""

_RECORD_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,80}\.json")


def is_record_name(name: str) -> bool:
    """Whether ``name`` is a record's name (see :func:`require_record_name`)."""
    return isinstance(name, str) and _RECORD_NAME.fullmatch(name) is not None


def require_record_name(name: str) -> str:
    """Refuse a record name that is not lowercase letters, digits and hyphens, then ``.json``.

    Args:
        name: The record's name.

    Returns:
        The name.

    Raises:
        KnowledgePathError: It is not such a name.
    """
    if not is_record_name(name):
        raise KnowledgePathError(f"{echo(str(name))} is not a record name.")
    return name
