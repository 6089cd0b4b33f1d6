"""The allocator settings the ``agentkernel-kb`` process takes, unless its environment names them.

Applied by :func:`~agentkernel.cli.command.main` before anything imports pyarrow; a program
that imports the library keeps its own process settings (``docs/index.md``, "A pod's memory").
"""

from __future__ import annotations

import os
import sys

POD_ENVIRONMENT = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}
"""The allocator settings of a serving process.

pyarrow's default pool (jemalloc) keeps about 12 MB it has freed, and glibc gives each thread
an arena of its own; with both set a 100,000-concept pod holds 15-30 MB less private memory.
A fixed mmap threshold (glibc's initial 128 KiB, which it otherwise raises to the largest
block freed so far, up to 32 MiB) keeps every large block (Lance's posting lists and pages,
Arrow's buffers) in a mapping of its own, returned when freed, instead of in the heap, where
a pod refreshing to new versions left 20 MB of freed pages resident (``bench/RESULTS.md``,
issue 24). Set any variable to choose otherwise.
"""

_M_ARENA_MAX = -8  # glibc's mallopt parameters behind MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_
_M_MMAP_THRESHOLD = -3
_MALLOPT = {"MALLOC_ARENA_MAX": _M_ARENA_MAX, "MALLOC_MMAP_THRESHOLD_": _M_MMAP_THRESHOLD}


def tune_process() -> None:
    """Apply :data:`POD_ENVIRONMENT` to this process where its environment is silent.

    Arrow reads its variable when its default pool is first used, so the pool is set only
    while ``pyarrow`` is not imported yet; glibc reads its ``MALLOC_*`` variables at start,
    so the same settings are applied with ``mallopt``. Does nothing to glibc's settings off
    glibc.
    """
    from agentkernel._libc import glibc

    pool = "ARROW_DEFAULT_MEMORY_POOL"
    if pool not in os.environ and "pyarrow" not in sys.modules:
        os.environ[pool] = POD_ENVIRONMENT[pool]
    libc = glibc()
    if libc is None:
        return
    for variable, parameter in _MALLOPT.items():
        if variable not in os.environ:
            libc.mallopt(parameter, int(POD_ENVIRONMENT[variable]))
