"""BLAS on the calling thread while the default embedder runs its matrix products.

A query's products (~10 tokens by 384 by up to 1,536) are too small to split: waking
OpenBLAS's threads costs more than the product, and on a busy CPU a woken thread can wait
milliseconds for a core, while the others spin. A batch is split by the embedder's own thread
pool instead (numpy frees the GIL), and a query into each layer's halves on a helper thread
(:mod:`agentkernel.retrieval._split`); a BLAS pool under either would put two pools on the
same cores. So :func:`one_blas_thread` holds BLAS to one thread for the duration of an embedding
call, through ``threadpoolctl`` (the ``embeddings`` extra).

BLAS's thread count is per process. Concurrent embedding calls share one switch: the first
sets one thread, the last restores the count it found, so nothing outlives the calls. While
one runs, another thread's numpy products in the same process run on one BLAS thread too,
with the same results. Without ``threadpoolctl`` the setting is never touched: products are
cut into column blocks small enough that OpenBLAS runs them on the calling thread
(:func:`split_matmul`, slower by about 2x in CPU time for a query).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

Matmul = Callable[[np.ndarray, np.ndarray], np.ndarray]

_SERIAL_GEMM = 262_144
"""OpenBLAS runs a product of ``m * n * k`` at most this on the calling thread alone (its
``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD``)."""

_MAX_BLOCKS = 48

_lock = threading.Lock()
_users = 0
_limiter: Any = None
_controller: Any = None
_looked = False


def _get_controller() -> Any:
    """The loaded BLAS libraries as threadpoolctl sees them, built once (None: not installed)."""
    global _controller, _looked
    if not _looked:
        _looked = True
        try:
            from threadpoolctl import (  # type: ignore[import-not-found,unused-ignore]
                ThreadpoolController,
            )

            _controller = ThreadpoolController()
        except Exception as exc:  # missing, or a library it cannot read: leave BLAS alone
            logger.debug("BLAS threads left alone: %s: %s", type(exc).__name__, exc)
            _controller = None
    return _controller


@contextmanager
def one_blas_thread() -> Iterator[Matmul]:
    """Hold BLAS to one thread while the block runs; yield the product function to use.

    Yields:
        ``numpy.matmul`` while BLAS is held to one thread, else :func:`split_matmul`.
    """
    global _users, _limiter
    with _lock:
        controller = _get_controller()
        if controller is not None:
            if _users == 0:
                _limiter = controller.limit(limits=1, user_api="blas")
            _users += 1
    if controller is None:
        yield split_matmul
        return
    try:
        yield np.matmul
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _limiter.restore_original_limits()
                _limiter = None


def split_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w``; for a few rows, in column blocks BLAS runs on this thread (see _SERIAL_GEMM).

    Args:
        x: The left operand, ``(rows, inner)``.
        w: The right operand, ``(inner, columns)``.

    Returns:
        The product.
    """
    rows, inner = x.shape
    width = (_SERIAL_GEMM // max(1, rows * inner)) // 16 * 16
    columns = w.shape[1]
    if rows * inner * columns <= _SERIAL_GEMM or width < 16 or columns > width * _MAX_BLOCKS:
        product: np.ndarray = x @ w
        return product
    out = np.empty((rows, columns), dtype=w.dtype)
    for start in range(0, columns, width):
        np.matmul(x, w[:, start : start + width], out=out[:, start : start + width])
    return out
