"""The C heap's thresholds for a process that subtracts large frames (glibc on Linux only).

glibc gives the free top of its heap back to the system once it exceeds a threshold, and serves blocks
above another threshold with fresh mappings that it unmaps when they are freed. Both start small (128 KiB)
and only grow as large blocks are freed. A frame's temporary arrays (the grey frame, the median's
means, the returned mask; the decoded frames of a video) are freed every frame, so the heap gave its top
back every frame and took it again at the next, a page fault for every 4 KiB: about 630 faults and 2.5 ms
of system time a 1920x1080 olkn frame on the development machine, none with these thresholds
(docs/performance.md). :func:`keep_heap` sets them to the ceilings glibc's own rule reaches on a 64-bit
system (32 MiB for mappings, twice that for the top), so the heap keeps what a frame frees for the next.

It leaves the heap alone where the environment already tunes it (``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_``, or ``glibc.malloc`` in ``GLIBC_TUNABLES``) or where the
C library is not glibc.
"""

from __future__ import annotations

import ctypes
import os

#: ``mallopt`` parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks from this size up are mapped on their own (glibc's ceiling for its dynamic threshold on 64-bit
#: systems, ``DEFAULT_MMAP_THRESHOLD_MAX``).
MMAP_THRESHOLD = 32 << 20
#: The heap's free top is given back beyond this (twice the mapping threshold, as glibc's own rule sets it).
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: Environment variables through which a user tunes glibc's heap; any of them set leaves it alone.
ENVIRONMENT = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")


def tuned_by_environment(environ: dict[str, str] | os._Environ = os.environ) -> bool:
    """Whether the environment tunes glibc's heap thresholds itself."""
    return any(name in environ for name in ENVIRONMENT) or "glibc.malloc" in environ.get("GLIBC_TUNABLES", "")


def glibc() -> bool:
    """Whether the C library is glibc."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return False
    return bool(version) and version.startswith("glibc")


def keep_heap() -> bool:
    """Set glibc's trim and mapping thresholds to :data:`TRIM_THRESHOLD` and :data:`MMAP_THRESHOLD` (module
    docstring); True if they were set, False where the C library is not glibc or the environment tunes them."""
    if not glibc() or tuned_by_environment():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # setting either turns glibc's dynamic thresholds off, so both are set
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
