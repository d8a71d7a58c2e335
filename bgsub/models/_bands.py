"""Run a serial frame kernel over bands of rows, one band per thread, on persistent helper threads.

The frame kernels that take most of a first run's compile time (olkn's bounded frame and bootstrap) are
serial ``nogil`` functions over the rows ``[start, stop)`` of a band: numba compiles a serial loop in a
fraction of the time its parallel-loop (``prange``) passes take. :func:`run_bands` splits the frame's rows
into as many bands as numba's thread count (:func:`numba.get_num_threads`, which ``bgsub bench``
and the CLI's ``--threads`` set), fewer on small frames (:data:`MIN_BAND_PIXELS`), runs the first band in the
calling thread and the others on that thread's helper threads (:class:`_Helper`), and returns when every band is
done. The kernels' results do not depend on the split: every pixel writes only its own state and outputs
(row-indexed outputs by row), and its random draws are hashes of ``(seed, frame, pixel)``.

The bands are balanced by time, not by rows: a frame's rows do not cost the same (on a road scene the
rows with traffic sum and step more than the sky's; with equal bands at 1280x720 the first band took
18.7 ms and the second 15.9). Each calling thread keeps, per kernel and frame height, an estimate of
every row's cost (:class:`_Split`), rescales each band's share of it to the band's measured time after
every call, and places the next call's boundaries where the estimated cost is shared equally. A band's time
runs from one start for all, and a helper's until the calling thread saw it done, so that the hand-offs
(a sleeping thread takes about 0.1 ms to wake on the 2-core development machine) count: the bands end
together as the calling thread sees them.

This module imports only the standard library, numpy and numba.
"""

from __future__ import annotations

import os
import threading
import time

import numba
import numpy as np
from numba import njit

__all__ = ["run_bands", "band_count"]

#: How far each call moves a band's cost estimate towards its measured time (an exponential average: the
#: split follows a scene's changes within a few dozen frames and ignores one slow band, a thread descheduled).
SPLIT_SMOOTHING = 0.25
#: How often (seconds) an idle helper thread checks whether the thread it serves still runs.
HELPER_IDLE_CHECK = 1.0
_local = threading.local()


@njit(cache=True, nogil=True)
def _rebalance(cost, bounds, seconds, smoothing):
    """:meth:`_Split.update` on arrays: rescale each band's rows of ``cost`` to its time in ``seconds``, then
    move ``bounds`` to where the estimated cost is shared equally (each band keeping at least one row)."""
    n = seconds.shape[0]
    rows = cost.shape[0]
    for k in range(n):
        a, b = bounds[k], bounds[k + 1]
        now = 0.0
        for r in range(a, b):
            now += cost[r]
        t = seconds[k]
        if now > 0.0 and t > 0.0:
            factor = (1.0 - smoothing) + smoothing * (t / now)
            for r in range(a, b):
                cost[r] *= factor
    total = 0.0
    for r in range(rows):
        total += cost[r]
    k = 1
    acc = 0.0
    for r in range(rows):
        acc += cost[r]
        while k < n and acc >= total * k / n:
            # the first row whose running sum reaches the k-th share starts band k (as a search of the sums would
            # place it), kept between its neighbours' at least one row apart
            bounds[k] = min(max(r, bounds[k - 1] + 1), rows - (n - k))
            k += 1
    while k < n:
        bounds[k] = min(max(rows - 1, bounds[k - 1] + 1), rows - (n - k))
        k += 1
    bounds[n] = rows


class _Split:
    """The cost estimate of each of ``rows`` rows and the bands it gives for ``n`` threads."""

    def __init__(self, rows: int, n: int) -> None:
        self.rows = rows
        self.n = n
        self.cost = np.ones(rows)
        self.bounds = np.array([rows * k // n for k in range(n + 1)], np.int64)
        self.seconds = np.zeros(n)

    def bands(self) -> list[tuple[int, int]]:
        b = self.bounds.tolist()
        return [(b[k], b[k + 1]) for k in range(self.n)]

    def update(self, seconds) -> None:
        """Rescale each band's rows to its measured time, then share the estimate equally (each band keeps at
        least one row)."""
        self.seconds[:] = seconds
        _rebalance(self.cost, self.bounds, self.seconds, SPLIT_SMOOTHING)


class _Helper:
    """A thread that runs the bands of one calling thread, handed each through a pair of locks (a thread pool's
    futures cost about 50 us more a call); it ends when that thread has."""

    def __init__(self, owner: threading.Thread) -> None:
        self.owner = owner
        self.pid = os.getpid()
        self.retired = False
        self.job = None
        self.error: BaseException | None = None
        self.end = 0.0
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.thread = threading.Thread(target=self._loop, name="bgsub-band", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            if not self.go.acquire(timeout=HELPER_IDLE_CHECK):
                if self.retired or not self.owner.is_alive():
                    return
                continue
            kernel, args, rows = self.job
            self.job = None
            try:
                kernel(*args, rows)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                self.error = exc
            self.end = time.perf_counter()
            self.done.release()
            if self.retired:
                return

    def start(self, kernel, args, rows) -> None:
        self.error = None
        self.job = (kernel, args, rows)
        self.go.release()


def _helpers(n: int) -> list[_Helper]:
    """The calling thread's ``n`` helper threads (new ones after a fork: the parent's threads are not the
    child's)."""
    helpers = getattr(_local, "helpers", None)
    if helpers is None or len(helpers) < n or helpers[0].pid != os.getpid():
        if helpers is not None and helpers[0].pid == os.getpid():
            _retire_helpers()  # too few (more numba threads now): these end, a new set serves
        owner = threading.current_thread()
        helpers = _local.helpers = [_Helper(owner) for _ in range(n)]
    return helpers[:n]


def _retire_helpers() -> None:
    """Let the calling thread's helpers end (one was left running: a wait for it was interrupted)."""
    for h in getattr(_local, "helpers", None) or []:
        h.retired = True
    _local.helpers = None


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


#: The fewest pixels a band is given: a frame of fewer than twice as many runs in the calling thread alone.
#: Handing a band to a helper thread and waiting for it costs more than the second thread saves on the
#: smallest frames (2-core development machine, ``apply`` with two bands against one): olkn 1.79x as long at
#: 32x24, 1.14x at 80x60, 1.08x at 96x72, 1.02x at 112x84 and 0.85x at 120x90; norma 2.27x, 1.31x, 1.12x,
#: 1.08x and 0.84x (docs/performance.md).
MIN_BAND_PIXELS = 4096


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
    helpers = _helpers(n - 1)
    start = time.perf_counter()
    for k, h in enumerate(helpers, 1):
        h.start(kernel, args, bands[k])
    error = None
    try:
        kernel(*args, bands[0])
    except BaseException as exc:  # noqa: BLE001 - the helpers' bands are waited for first
        error = exc
    end = time.perf_counter()
    # each band's time from the same start, a helper's up to when this thread saw it done if it waited for it (its
    # start's and its end's hand-offs count, so that the split makes the bands end together as seen from here)
    seconds = [end - start]
    for h in helpers:
        try:
            h.done.acquire()
        except BaseException:  # interrupted: the helper may still run; new helpers for the next call
            _retire_helpers()
            raise
        seen = time.perf_counter()
        seconds.append((h.end if h.end <= end else seen) - start)
        if error is None and h.error is not None:
            error = h.error
    if error is not None:
        raise error
    split.update(seconds)
