"""The allocator settings the ``agentkernel-kb`` process takes, unless its environment names them.

Applied by :func:`~agentkernel.cli.command.main` before anything imports pyarrow; a program
that imports the library keeps its own process settings (``docs/index.md``, "A pod's memory").
"""

from __future__ import annotations

import os
import sys

POD_ENVIRONMENT = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}
"""The allocator settings of a serving process.

pyarrow's default pool (jemalloc) keeps about 12 MB it has freed, and glibc gives each thread
an arena of its own; with both set a 100,000-concept pod holds 15-30 MB less private memory
(``bench/RESULTS.md``, issue 24). Set either variable to choose otherwise.
"""

_M_ARENA_MAX = -8  # glibc's mallopt parameter behind MALLOC_ARENA_MAX


def tune_process() -> None:
    """Apply :data:`POD_ENVIRONMENT` to this process where its environment is silent.

    Arrow reads its variable when its default pool is first used, so the pool is set only
    while ``pyarrow`` is not imported yet; glibc reads ``MALLOC_ARENA_MAX`` at start, so the
    same bound is applied with ``mallopt``. Does nothing to the arenas off glibc.
    """
    from agentkernel._libc import glibc

    pool = "ARROW_DEFAULT_MEMORY_POOL"
    if pool not in os.environ and "pyarrow" not in sys.modules:
        os.environ[pool] = POD_ENVIRONMENT[pool]
    if "MALLOC_ARENA_MAX" not in os.environ:
        libc = glibc()
        if libc is not None:
            libc.mallopt(_M_ARENA_MAX, int(POD_ENVIRONMENT["MALLOC_ARENA_MAX"]))
