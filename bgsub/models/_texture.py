"""Binary texture descriptor of a frame: LBSP (Bilodeau et al. 2013, as in LOBSTER and SuBSENSE), jitted.

Each pixel and channel gets a 16-bit word: bit ``k`` is set when the ``k``-th point of the
16-point pattern of a 5x5 neighbourhood (:data:`LBSP_PATTERN`: the 3x3 ring and the corners
and edge midpoints of the 5x5 square) differs from the centre by more than a threshold
relative to the centre, ``|I(n) - I(c)| > max(t I(c), floor)``. A global gain leaves the
relative test unchanged (up to rounding, clipping at 255 and the floor, which keeps dark,
noisy pixels from setting random bits), so the descriptor of a static textured surface
survives an illumination change that moves its colour; a uniform object in front of a
textured background (or the reverse) changes it. Intra-frame LBSP: the centre is the
frame's own pixel. Borders replicate.

The descriptors of two values are compared by their Hamming distance
(:func:`learners.kernels.hamming_distance`), in a product kernel with the colour
(:func:`learners.kernels.texture_lut_value`).

This module imports only numpy and numba.
"""

import numpy as np
from numba import njit, prange

#: ``(dy, dx)`` of the 16 points, bit 0 first: the 3x3 ring, then the 5x5 square's corners and edge midpoints.
LBSP_PATTERN = np.array([(-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1),
                         (-2, -2), (-2, 0), (-2, 2), (0, 2), (2, 2), (2, 0), (2, -2), (0, -2)], dtype=np.int64)

#: Smallest absolute difference (grey levels) that sets a bit, whatever the relative threshold.
LBSP_FLOOR = 4.0


@njit(cache=True, parallel=True, nogil=True)
def lbsp(img, t, floor, out):
    """Intra-frame LBSP of ``img`` (uint8 (H, W, C)) into ``out`` (uint16 (H, W, C)), relative threshold
    ``t`` and absolute ``floor`` (see the module docstring); borders replicate."""
    H = img.shape[0]
    W = img.shape[1]
    C = img.shape[2]
    for i in prange(H):
        for j in range(W):
            for c in range(C):
                centre = np.float64(img[i, j, c])
                thr = max(t * centre, floor)
                word = 0
                for k in range(16):
                    ii = min(max(i + LBSP_PATTERN[k, 0], 0), H - 1)
                    jj = min(max(j + LBSP_PATTERN[k, 1], 0), W - 1)
                    if abs(np.float64(img[ii, jj, c]) - centre) > thr:
                        word |= 1 << k
                out[i, j, c] = word


@njit(cache=True, parallel=True, nogil=True)
def patterns(img, out):
    """The 16 pattern points of every pixel's 5x5 neighbourhood (:data:`LBSP_PATTERN`), ``out[i, j, c, k]``
    (uint8 (H, W, C, 16)), borders replicated: what the inter-frame descriptor
    (:func:`learners.expansion.expansion_sum_inter_texture`) compares with each sample's centre."""
    H = img.shape[0]
    W = img.shape[1]
    C = img.shape[2]
    for i in prange(H):
        for j in range(W):
            for k in range(16):
                ii = min(max(i + LBSP_PATTERN[k, 0], 0), H - 1)
                jj = min(max(j + LBSP_PATTERN[k, 1], 0), W - 1)
                for c in range(C):
                    out[i, j, c, k] = img[ii, jj, c]


def thresholds(t: float, floor: float = LBSP_FLOOR) -> np.ndarray:
    """``uint8 (256,)``: for each centre value ``v``, the largest integer difference that does *not* set a
    bit, ``floor(max(t v, floor))`` capped at 255; ``|I(n) - v| > thresholds[v]`` is :func:`lbsp`'s test
    for integer intensities, so the inter-frame descriptor of a sample's own neighbourhood is its intra-frame
    descriptor."""
    v = np.arange(256, dtype=np.float64)
    return np.minimum(np.floor(np.maximum(t * v, floor)), 255).astype(np.uint8)
