"""Run a serial frame kernel over bands of rows, one band per thread, on a small persistent thread pool.

The frame kernels that take most of a first run's compile time (olkn's bounded frame and bootstrap) are
serial ``nogil`` functions over the rows ``[start, stop)`` of a band: numba compiles a serial loop in a
fraction of the time its parallel-loop (``prange``) passes take. :func:`run_bands` splits the frame's rows
into as many bands as numba's thread count (:func:`numba.get_num_threads`, which ``bgsub bench``
and the CLI's ``--threads`` set), fewer on small frames (:data:`MIN_BAND_PIXELS`), runs the first band in the
calling thread and the others on the pool, and returns when every band is done. The kernels' results do not depend on the split: every pixel
writes only its own state and outputs (row-indexed outputs by row), and its random draws are hashes of
``(seed, frame, pixel)``.

The bands are balanced by time, not by rows: a frame's rows do not cost the same (on a road scene the
rows with traffic sum and step more than the sky's; with equal bands at 1280x720 the first band took
18.7 ms and the second 15.9). Each calling thread keeps, per kernel and frame height, an estimate of
every row's cost (:class:`_Split`), rescales each band's share of it to the band's measured time after
every call, and places the next call's boundaries where the estimated cost is shared equally.

This module imports only the standard library, numpy and numba.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

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


#: How far each call moves a band's cost estimate towards its measured time (an exponential average: the
#: split follows a scene's changes within a few dozen frames and ignores one slow band, a thread descheduled).
SPLIT_SMOOTHING = 0.25
_local = threading.local()


class _Split:
    """The cost estimate of each of ``rows`` rows and the bands it gives for ``n`` threads."""

    def __init__(self, rows: int, n: int) -> None:
        self.rows = rows
        self.n = n
        self.cost = np.ones(rows)
        self.bounds = [rows * k // n for k in range(n + 1)]

    def bands(self) -> list[tuple[int, int]]:
        return [(self.bounds[k], self.bounds[k + 1]) for k in range(self.n)]

    def update(self, seconds: list[float]) -> None:
        """Rescale each band's rows to its measured time, then share the estimate equally (each band keeps at
        least one row)."""
        for k, t in enumerate(seconds):
            a, b = self.bounds[k], self.bounds[k + 1]
            band = self.cost[a:b]
            now = band.sum()
            if now > 0.0 and t > 0.0:
                band *= (1.0 - SPLIT_SMOOTHING) + SPLIT_SMOOTHING * (t / now)
        total = np.cumsum(self.cost)
        cuts = np.searchsorted(total, total[-1] * np.arange(1, self.n) / self.n)
        bounds = [0]
        for k, c in enumerate(cuts.tolist()):
            bounds.append(min(max(int(c), bounds[-1] + 1), self.rows - (self.n - 1 - k)))
        bounds.append(self.rows)
        self.bounds = bounds


def _split(kernel, rows: int, n: int) -> _Split:
    """The calling thread's :class:`_Split` for ``kernel`` on frames of ``rows`` rows (several streams in
    threads of one process each keep their own)."""
    splits = getattr(_local, "splits", None)
    if splits is None:
        splits = _local.splits = {}
    split = splits.get((kernel, rows))
    if split is None or split.n != n:
        split = splits[(kernel, rows)] = _Split(rows, n)
    return split


def _timed(kernel, args, rows, seconds, k):
    start = time.perf_counter()
    kernel(*args, rows)
    seconds[k] = time.perf_counter() - start


#: The fewest pixels a band is given: a frame of fewer than twice as many runs in the calling thread alone.
#: Handing a band to the pool's thread and waiting for it costs 0.2-0.3 ms a call on the 2-core development
#: machine, more than the second thread saves on small frames: olkn's ``apply`` took 1.47x as long with two
#: bands as with one at 80x60, 1.18x at 120x90 and 0.90x at 160x120; norma's 1.79x, 1.36x and 1.10x;
#: olkn's ``fast`` preset (its model 1/16 of the frame) 1.41x at 320x240 (docs/performance.md).
MIN_BAND_PIXELS = 8192


def band_count(rows: int, pixels: int) -> int:
    """How many bands a frame of ``rows`` rows and ``pixels`` pixels runs in: numba's thread count in the
    calling thread, at most one band a row and one band per :data:`MIN_BAND_PIXELS` pixels."""
    return max(1, min(numba.get_num_threads(), rows, pixels // MIN_BAND_PIXELS))


def run_bands(kernel, frame: np.ndarray, *args) -> None:
    """``kernel(frame, *args, (start, stop))`` for bands of the rows of ``frame`` balanced by their measured time
    (see the module docstring), in parallel (:func:`band_count` threads: the calling thread runs the first band);
    returns once all have, re-raising a band's error."""
    rows = frame.shape[0]
    n = band_count(rows, rows * frame.shape[1])
    args = (frame, *args)
    if n == 1:
        kernel(*args, (0, rows))
        return
    split = _split(kernel, rows, n)
    bands = split.bands()
    seconds = [0.0] * n
    pool = _executor(n - 1)
    futures = [pool.submit(_timed, kernel, args, bands[k], seconds, k) for k in range(1, n)]
    try:
        _timed(kernel, args, bands[0], seconds, 0)
    finally:
        for f in futures:
            f.result()
    split.update(seconds)
