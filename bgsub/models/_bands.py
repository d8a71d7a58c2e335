"""Run a serial frame kernel over bands of rows, one band per thread, on a small persistent thread pool.

The frame kernels that take most of a first run's compile time (olkn's bounded frame and bootstrap) are
serial ``nogil`` functions over the rows ``[start, stop)`` of a band: numba compiles a serial loop in a
fraction of the time its parallel-loop (``prange``) passes take. :func:`run_bands` splits the frame's rows
into as many equal bands as numba's thread count (:func:`numba.get_num_threads`, which ``bgsub bench``
and the CLI's ``--threads`` set), runs the first band in the calling thread and the others on the pool,
and returns when every band is done. The kernels' results do not depend on the split: every pixel
writes only its own state and outputs (row-indexed outputs by row), and its random draws are hashes of
``(seed, frame, pixel)``.

This module imports only the standard library and numba.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

__all__ = ["run_bands", "band_count"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_pid = 0


def _executor(workers: int) -> ThreadPoolExecutor:
    """The pool, with at least ``workers`` threads (a new one after a fork: the parent's threads are not the
    child's)."""
    global _pool, _pool_size, _pool_pid
    with _lock:
        if _pool is None or _pool_size < workers or _pool_pid != os.getpid():
            old = _pool if _pool_pid == os.getpid() else None
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bgsub-band")
            _pool_size = workers
            _pool_pid = os.getpid()
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def band_count(rows: int) -> int:
    """How many bands a frame of ``rows`` rows runs in: numba's thread count in the calling thread (at most one
    band a row)."""
    return max(1, min(numba.get_num_threads(), rows))


def run_bands(kernel, rows: int, *args) -> None:
    """``kernel(*args, (start, stop))`` for equal bands of ``range(rows)``, in parallel (:func:`band_count`
    threads: the calling thread runs the first band); returns once all have, re-raising a band's error."""
    n = band_count(rows)
    if n == 1:
        kernel(*args, (0, rows))
        return
    pool = _executor(n - 1)
    futures = [pool.submit(kernel, *args, (rows * k // n, rows * (k + 1) // n)) for k in range(1, n)]
    try:
        kernel(*args, (0, rows // n))
    finally:
        for f in futures:
            f.result()
