"""The one array type the jitted functions are compiled for.

numba compiles a function once per combination of argument types, and a read-only, strided or
other-dtype array is another type than a plain one: each such variant costs seconds of compiling,
again in every new cache. The drivers hand their arrays to the jitted functions through
:func:`jit_array` / :func:`jit_arrays`, so that each function is compiled for one type.

This module imports numpy only: :mod:`learners.kernels` imports it, so it is part of the source
stamp of nearly every cached kernel (:mod:`learners._numba_cache`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["jit_array", "jit_arrays"]

#: C-contiguous, writable, a plain ndarray (not a subclass such as a memmap).
_FLAGS = ("C", "W", "E")


def jit_array(a, dtype=np.float64):
    """``a`` as the jitted functions take it: a C-contiguous, writable ndarray of ``dtype``.

    ``a`` itself when it already is one (no copy), else a copy: a read-only array is copied, never
    written through.
    """
    return np.require(a, dtype, _FLAGS)


def jit_arrays(*arrays):
    """:func:`jit_array` of each of a fitted model's arrays, each keeping its dtype: a copy only of one
    that is read-only (a model unpickled onto read-only memory) or strided."""
    return tuple(np.require(a, None, _FLAGS) for a in arrays)
