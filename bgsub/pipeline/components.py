"""The component filters (``min_area``, ``fill_holes``) of 0/255 masks, on runs.

A mask's row is a few runs of foreground between runs of background, so the filters label runs
instead of pixels: each row's runs are found eight bytes at a time where nothing changes, runs of
neighbouring rows that touch are joined in a union-find, each component's area is the sum of its
runs' lengths, and only the runs of the components chosen are written. A 1280x720 mask of the
highway sequence took 1.5 ms (``min_area``) and 3.2 ms (``fill_holes``) through OpenCV's
``connectedComponents`` and a pass over its labels; on runs it takes a small fraction of that
(docs/performance.md).

Foreground components are 8-connected (runs in neighbouring rows touch when they overlap or meet at
a corner); background components, the holes, are 4-connected (the runs must overlap), as OpenCV
counts them with those connectivities.

This module imports only numpy, numba and llvmlite.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: Eight bytes of 255.
_ALL_SET = np.uint64(0xFFFFFFFFFFFFFFFF)


@intrinsic
def _load_u64(typingctx, address):
    """The eight bytes at ``address`` as a uint64 (an unaligned load)."""
    sig = types.uint64(types.intp)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.PointerType(ir.IntType(64)))
        return builder.load(ptr, align=1)

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _row_runs(row, address, W, starts, ends, n):
    """Append the runs of non-zero values of ``row`` (uint8 (W,), at ``address``) to ``starts``/``ends``
    (end exclusive) from index ``n``; returns the new count. Eight bytes that all continue the current
    run or gap are skipped in one step."""
    on = False
    j = 0
    while j < W:
        if j + 8 <= W:
            word = _load_u64(address + j)
            if (word == 0 and not on) or (word == _ALL_SET and on):
                j += 8
                continue
        v = row[j] != 0
        if v != on:
            if v:
                starts[n] = j
            else:
                ends[n] = j
                n += 1
            on = v
        j += 1
    if on:
        ends[n] = W
        n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _find(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(cache=True, nogil=True, inline="always")
def _join(parent, a, b):
    a = _find(parent, a)
    b = _find(parent, b)
    if a < b:
        parent[b] = a
    elif b < a:
        parent[a] = b


@njit(cache=True, nogil=True)
def _runs(mask, background):
    """The runs of ``mask``'s foreground (``background`` False) or background, row by row:
    ``(starts, ends, first)`` with row ``i``'s runs at ``first[i]:first[i + 1]``."""
    H, W = mask.shape
    cap = H * (W // 2 + 2)
    starts = np.empty(cap, np.int32)
    ends = np.empty(cap, np.int32)
    first = np.empty(H + 1, np.int64)
    base = mask.ctypes.data
    n = 0
    for i in range(H):
        first[i] = n
        if not background:
            n = _row_runs(mask[i], base + i * W, W, starts, ends, n)
            continue
        # the gaps between the row's foreground runs
        m = _row_runs(mask[i], base + i * W, W, starts, ends, n)
        prev = 0
        k = n
        for r in range(n, m):
            s = starts[r]
            e = ends[r]
            if s > prev:
                starts[k] = prev  # k <= r: the foreground run r is read before it can be overwritten
                ends[k] = s
                k += 1
            prev = e
        if prev < W:
            starts[k] = prev
            ends[k] = W
            k += 1
        n = k
    first[H] = n
    return starts, ends, first


@njit(cache=True, nogil=True)
def small_runs(mask, background, area):
    """Which runs belong to a component of fewer than ``area`` pixels: the foreground's 8-connected
    components (``background`` False) or the background's 4-connected ones.

    Returns ``(starts, ends, first, small, count)``: the runs as :func:`_runs`, ``small`` (bool, one per
    run) and the number of runs chosen."""
    starts, ends, first = _runs(mask, background)
    parent = _joined(starts, ends, first, background)
    n = parent.shape[0]
    size = np.zeros(n, np.int64)
    for r in range(n):
        size[_find(parent, r)] += ends[r] - starts[r]
    small = np.empty(n, np.bool_)
    count = 0
    for r in range(n):
        small[r] = size[_find(parent, r)] < area
        count += small[r]
    return starts, ends, first, small, count


@njit(cache=True, nogil=True)
def count_components(mask):
    """The number of the foreground's 8-connected components (``cv2.connectedComponents`` minus one)."""
    starts, ends, first = _runs(mask, False)
    parent = _joined(starts, ends, first, False)
    count = 0
    for r in range(parent.shape[0]):
        count += _find(parent, r) == r
    return count


@njit(cache=True, nogil=True)
def _joined(starts, ends, first, background):
    """The union-find forest of the runs (as :func:`_runs`) whose components are the foreground's 8-connected
    ones (``background`` False) or the background's 4-connected ones."""
    H = first.shape[0] - 1
    n = first[H]
    reach = 0 if background else 1  # runs touch across rows when they overlap by this much less than one
    parent = np.arange(n)
    for i in range(1, H):
        p = first[i - 1]
        p_end = first[i]
        c = first[i]
        c_end = first[i + 1]
        while p < p_end and c < c_end:
            if starts[p] < ends[c] + reach and starts[c] < ends[p] + reach:
                _join(parent, p, c)
            if ends[p] <= ends[c]:
                p += 1
            else:
                c += 1
    return parent


@njit(cache=True, nogil=True)
def set_runs(mask, starts, ends, first, chosen, value):
    """``mask[i, starts[r]:ends[r]] = value`` for every chosen run ``r`` of row ``i``."""
    for i in range(mask.shape[0]):
        for r in range(first[i], first[i + 1]):
            if chosen[r]:
                for j in range(starts[r], ends[r]):
                    mask[i, j] = value
