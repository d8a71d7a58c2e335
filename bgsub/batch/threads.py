"""How many workers a batch starts and how many threads each one uses."""

from __future__ import annotations

import os

__all__ = ["available_cores", "WORKERS_PER_CORE", "MEMORY_PER_WORKER", "max_workers", "default_threads",
           "current_threads", "limit_threads"]


def available_cores() -> int:
    """Cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


#: A batch starts at most this many worker processes per core (``--workers``, ``--scheduler local:N``) ...
WORKERS_PER_CORE = 4
#: ... and at most one per this much of the machine's memory (a worker takes 100-300 MiB).
MEMORY_PER_WORKER = 256 * 2**20


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None


def max_workers() -> int:
    """The most worker processes a batch starts on this machine: :data:`WORKERS_PER_CORE` per core, and no more
    than the memory holds (one per :data:`MEMORY_PER_WORKER`). Many more workers than cores only slow the batch
    down; more than the memory holds run the machine out of it."""
    cap = WORKERS_PER_CORE * available_cores()
    memory = _physical_memory()
    if memory:
        cap = min(cap, memory // MEMORY_PER_WORKER)
    return max(1, cap)


def default_threads(workers: int) -> int:
    """Threads per worker so that ``workers x threads`` fills the cores without oversubscribing them."""
    return max(1, available_cores() // max(1, workers))


def current_threads() -> int:
    """Threads numba's parallel loops use in this thread."""
    import numba

    return int(numba.get_num_threads())


def limit_threads(n: int) -> int:
    """Let this process use ``n`` threads for numba's parallel loops and for OpenCV; returns what was set."""
    import cv2
    import numba

    n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    cv2.setNumThreads(n)
    return n
