"""Confinement: the one function every local path built from outside data goes through.

A bundle on disk, the node cache, the vector cache and the warm-start file all build local
paths from names they did not choose: a caller's document id, a file named in a Lance
manifest or an index listing, a record read back from a shared cache folder. Each such path
is checked here, twice: lexically by :func:`~agentkernel.storage.base.clean_file_path` (no
absolute path, no ``..``, no NUL byte, no backslash, no control character, nothing hidden),
then physically: a symlink met on the way is resolved and the target must still lie inside
the root (and not be hidden there). A symlink planted in a shared folder is therefore never
followed out of it.
"""

from __future__ import annotations

import os
import stat

from agentkernel.errors import KnowledgePathError, echo
from agentkernel.storage.base import clean_file_path

__all__ = ["confined"]


def confined(root: str, path: str, *, label: str, under: str = "") -> str:
    """Map a relative path from outside to a real path inside ``root``, or refuse it.

    Args:
        root: The folder the path must stay in, already resolved (``os.path.realpath``).
        path: A ``/``-separated path relative to ``root``, as the outside gave it.
        label: How messages name ``root`` (never its absolute path: messages reach agents).
        under: A folder below ``root`` the path is relative to (checked the same way, and
            the path must be clean on its own: ``/x`` under ``ns`` is refused, not ``ns/x``).

    Returns:
        The absolute path, inside ``root`` (it need not exist).

    Raises:
        KnowledgePathError: The path is absolute, climbs with ``..``, names a hidden entry,
            is not clean text, or resolves (through a symlink) outside ``root`` or to a
            hidden entry.
    """
    parts = clean_file_path(path).split("/")
    if under:
        parts = [*clean_file_path(under).split("/"), *parts]
    real = os.path.join(root, *parts)
    current = root
    for part in parts:  # as os.path.realpath, but stat only below the (resolved) root
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                real = os.path.realpath(real)
                break
        except OSError:
            break  # nothing exists from here on, so nothing below can be a symlink
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not real.startswith(prefix):
        raise KnowledgePathError(f"Path {echo(path)} resolves outside {label!r}.")
    inside = real[len(prefix) :]
    if any(part.startswith(".") for part in inside.split(os.sep)):
        raise KnowledgePathError(f"Path {echo(path)} resolves to a hidden entry.")
    return real
