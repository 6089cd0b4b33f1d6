"""The C library, where it is glibc: trimming the heap and bounding its arenas.

Standard library only, so a command's entry point (before pyarrow loads) and a serving view
(after a version switch) reach it without importing anything heavy.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any


@functools.cache
def glibc() -> Any:
    """The C library through ``ctypes`` when it is glibc, else ``None`` (musl, macOS)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):  # type: ignore[union-attr]
            return None
        return ctypes.CDLL("libc.so.6")
    except (AttributeError, OSError, ValueError):  # no such name: not glibc
        return None


def release_memory() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``).

    A version switch frees the previous version's view and Arrow buffers, tens of MB in
    many small blocks that glibc keeps mapped; trimming returns them, so a pod's private
    memory stays at its start-up level from switch to switch. A few milliseconds; nothing
    off glibc.
    """
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)
