"""What the curated store does when its storage fails: retry what is transient, say the rest.

A store over files meets two kinds of trouble that are not its pages' content. Some pass by
themselves (a connection reset, an endpoint restarting, a timeout): a read that meets one is
retried a few times and, if it still fails, the file is read again at the next call; it is
never taken for a file the store can't read. Others stay until someone acts (a full disk, a
read-only file system, a bucket that is gone): the call fails with a
:class:`~agentkernel.knowledgestore.errors.StoreAccessError` naming the store, the page and
the cause, and without an absolute local path (messages reach agents).
"""

from __future__ import annotations

import errno
import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

from agentkernel.knowledgestore.errors import StoreAccessError

logger = logging.getLogger(__name__)

T = TypeVar("T")

READ_ATTEMPTS = 3
"""How many times a read that failed on the network is made before the call gives up."""

_PAUSES = (0.05, 0.25)  # before the second and the third attempt

# an absolute POSIX path that is not part of a URL (``s3://b/p``, ``http://host/x`` stay)
_ABSOLUTE = re.compile(r"(?<![\w:/.~-])/(?:[^\s'\"/]+/)*([^\s'\"/]*)")


def is_transient(exc: OSError) -> bool:
    """Whether a failed read may succeed when made again (the network, not the file).

    A connection failure or a timeout is; so is any failure a remote store words without an
    ``errno`` (an S3 server error after the client's own retries). A missing file, a denied
    read and every error a local file system reports (it carries an ``errno``) are not.

    Args:
        exc: The error a read raised.

    Returns:
        True when the read is worth making again.
    """
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return exc.errno is None and not isinstance(exc, FileNotFoundError | PermissionError)


def read_retrying(read: Callable[[], T], what: str, where: str) -> T:
    """Make a read, again after a short pause while it fails transiently (a bounded number).

    Args:
        read: The read.
        what: The file read, for the log.
        where: The store's name, for the log.

    Returns:
        What the read returned.

    Raises:
        OSError: The read's last error (or its first one that is not transient).
    """
    for attempt in range(READ_ATTEMPTS):
        try:
            return read()
        except OSError as exc:
            if attempt + 1 == READ_ATTEMPTS or not is_transient(exc):
                raise
            logger.info("reading %s in %s failed (%s); trying again", what, where, exc)
            time.sleep(_PAUSES[min(attempt, len(_PAUSES) - 1)])
    raise AssertionError("unreachable")  # pragma: no cover


def cause_of(exc: OSError) -> str:
    """Say in a few words why storage failed, without an absolute local path.

    Args:
        exc: The error.

    Returns:
        The cause, such as ``"the disk is full (No space left on device)"``.
    """
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full ({exc.strerror}); free some space"
    if code == errno.EROFS:
        return f"its file system is read-only ({exc.strerror})"
    if code is not None and exc.strerror:
        return exc.strerror if code not in (errno.EACCES, errno.EPERM) else "permission denied"
    detail = scrub(str(exc)).rstrip(".") or type(exc).__name__
    if isinstance(exc, ConnectionError | TimeoutError):
        return f"its storage can't be reached right now ({detail})"
    return detail


def scrub(text: str) -> str:
    """Replace every absolute local path in ``text`` by its last part.

    Args:
        text: A message.

    Returns:
        The message, ``/srv/kb/concepts/a.md`` shortened to ``a.md``; URLs are left alone.
    """
    return _ABSOLUTE.sub(lambda found: found.group(1) or "/", text)


def access_error(
    store: str, page: str | None, exc: OSError, *, writing: bool, kept: str = ""
) -> StoreAccessError:
    """The :class:`StoreAccessError` for a failed read or write of ``page`` in ``store``.

    Args:
        store: The store's name.
        page: The page id or store file concerned; ``None``: the store's files.
        exc: The storage error.
        writing: A write failed (else a read).
        kept: What of the change stayed, when something did.

    Returns:
        The error (the caller raises it from ``exc``).
    """
    return StoreAccessError(store, page, cause_of(exc), writing=writing, kept=kept)
