"""Global illumination compensation: the gain between a frame and the model's background.

A light switched on, the sun behind a cloud, a camera's automatic exposure: the
whole frame gets brighter or darker by one factor, and a per-pixel model sees every
pixel change at once. Unless each pixel relearns (which takes frames, during which
the mask floods), the detector is blind until then.

``illumination="gain"`` divides each frame by its global gain against the model
before the model sees it. The gain is the median, over a grid of about
:data:`GRID_POINTS` pixels that the previous frame classified background, of the
ratio between the pixel's value and its background estimate (the
coefficient-weighted mean of its samples), summed over the channels. Pixels too
dark or too close to saturation to carry a ratio are left out (:data:`DARK`,
:data:`BRIGHT`). The median ignores foreground that the previous mask missed, as
long as it covers less than half of the grid's background pixels.

An estimate counts only when the frame agrees on it (:func:`agreed_median`): at
least 35 % of the ratios lie within 8 % of the median (a global change moves the
background's pixels together, up to the sensor noise, while leaves all over the
frame split the ratios into two groups with the median between them), and, the
frame cut into 3 x 3 blocks, at least two thirds of the blocks with enough ratios
have their own median within 5 % of the frame's (a global change is global, while
an object close to the camera that the previous mask could not see moves the
blocks it covers and not the others). A frame without an estimate that counts
keeps the last one, moved a fifth of the way back to 1 (:data:`bgsub.pipeline.stages.RELEASE`), so that
a wrong estimate does not stay.

The model learns the compensated frames, so the gain is always the current
frame's illumination relative to what the model has learnt: nothing integrates,
and a biased estimate is not carried over to the next frame.

This module imports only numpy, numba and the frame loops' helpers.
"""

import numpy as np
from numba import njit

from bgsub.models._prefetch import prefetch_state
from bgsub.models._frame_kernels import _weighted_sample_sum

#: About this many grid pixels are compared per frame, whatever the frame size.
GRID_POINTS = 1024
#: Fewer usable grid pixels than this: no estimate (the frame is left as it is).
MIN_POINTS = 50
#: A channel of the background estimate at or below this, or of the frame at or below ``DARK_INPUT``,
#: makes a ratio too noisy to use.
DARK = 20.0
DARK_INPUT = 5.0
#: A channel of the frame at or above this may be saturated: its ratio understates the gain.
BRIGHT = 250.0
#: The gain is clipped to ``[MIN_GAIN, MAX_GAIN]``.
MIN_GAIN = 0.5
MAX_GAIN = 2.0
#: An estimate counts only when at least ``CLUSTER`` of the ratios lie within ``CLUSTER_WIDTH`` (relative) of their
#: median: a global change moves the background's pixels together (up to the sensor noise), while leaves all over
#: the frame split the ratios into two groups with the median between them ...
CLUSTER = 0.35
CLUSTER_WIDTH = 0.08
#: ... and, the frame cut into ``BLOCKS x BLOCKS`` blocks, when the median ratio of at least ``QUORUM`` of the
#: blocks with ``MIN_BLOCK_POINTS`` ratios or more lies within ``AGREEMENT`` (relative) of the frame's median: a
#: global change is global, while an object the previous mask did not see (a person close to the camera) moves the
#: blocks it covers and not the others.
BLOCKS = 3
MIN_BLOCK_POINTS = 10
AGREEMENT = 0.05
QUORUM = 2.0 / 3.0


def grid_step(H: int, W: int) -> int:
    """Spacing of the comparison grid on an ``H x W`` frame (about :data:`GRID_POINTS` pixels)."""
    return max(1, int(np.sqrt(H * W / GRID_POINTS)))


def grid_size(H: int, W: int) -> int:
    """Number of grid pixels (the scratch size :func:`grid_ratios` needs)."""
    s = grid_step(H, W)
    return len(range(s // 2, H, s)) * len(range(s // 2, W, s))


@njit(cache=True, nogil=True)
def grid_ratios(frame, samples, coef, ring, mask, step, out, block):
    """Frame-to-background ratios of the grid pixels that ``mask`` classified background.

    Grid pixel ``(i, j)``, ``i = step // 2 + a * step``, ``j`` likewise, contributes
    ``sum_c frame[i, j, c] / sum_c bg[c]`` with ``bg`` its coefficient-weighted mean sample, when
    ``mask[i, j] == 0``, it has samples, every ``bg[c] > DARK`` and every
    ``DARK_INPUT < frame[i, j, c] < BRIGHT``. Writes them to ``out[:n]``, the block of each
    (``(BLOCKS * i // H) * BLOCKS + BLOCKS * j // W``) to ``block[:n]``, and returns ``n``.
    """
    H = frame.shape[0]
    W = frame.shape[1]
    C = frame.shape[2]
    B = samples.shape[2]
    sb, cb, rb = samples.ctypes.data, coef.ctypes.data, ring.ctypes.data
    acc = np.zeros(C, dtype=np.float64)
    n = 0
    for i in range(step // 2, H, step):
        # the grid pixels' state is far apart and cold: ask for a row's lines at once, then read them
        for j in range(step // 2, W, step):
            if mask[i, j] == 0:
                prefetch_state(sb, cb, rb, i * W + j, B, C)
        for j in range(step // 2, W, step):
            if mask[i, j] != 0:
                continue
            wsum = _weighted_sample_sum(samples, coef, ring, i, j, acc)
            if wsum <= 0.0:
                continue
            xs = 0.0
            bs = 0.0
            usable = True
            for c in range(C):
                x = np.float64(frame[i, j, c])
                b = acc[c] / wsum
                if b <= DARK or x <= DARK_INPUT or x >= BRIGHT:
                    usable = False
                    break
                xs += x
                bs += b
            if usable:
                out[n] = xs / bs
                block[n] = (BLOCKS * i // H) * BLOCKS + BLOCKS * j // W
                n += 1
    return n


@njit(cache=True, nogil=True)
def agreed_median(ratios, blocks, n, tmp):
    """The median ``g`` of ``ratios[:n]`` when the frame agrees on it, else -1.

    It agrees when at least :data:`CLUSTER` of the ratios lie within ``CLUSTER_WIDTH * g`` of ``g``, and
    the median of at least :data:`QUORUM` of the blocks (``blocks[:n]``, :func:`grid_ratios`) with
    :data:`MIN_BLOCK_POINTS` ratios or more lies within ``AGREEMENT * g`` of it. ``tmp``: scratch of at least
    ``n`` values."""
    g = np.median(ratios[:n])
    near = 0
    for k in range(n):
        if abs(ratios[k] - g) <= CLUSTER_WIDTH * g:
            near += 1
    if near < CLUSTER * n:
        return -1.0
    counted = 0
    agreeing = 0
    for b in range(BLOCKS * BLOCKS):
        m = 0
        for k in range(n):
            if blocks[k] == b:
                tmp[m] = ratios[k]
                m += 1
        if m >= MIN_BLOCK_POINTS:
            counted += 1
            if abs(np.median(tmp[:m]) - g) <= AGREEMENT * g:
                agreeing += 1
    if agreeing < QUORUM * counted:
        return -1.0
    return g


def estimate_gain(frame: np.ndarray, samples: np.ndarray, coef: np.ndarray, ring: np.ndarray, mask: np.ndarray,
                  scratch: np.ndarray) -> float | None:
    """The frame's global gain against the model, or None when the grid cannot tell.

    None: fewer than :data:`MIN_POINTS` usable pixels, or a frame that does not agree on the median
    (:func:`agreed_median`).

    Parameters
    ----------
    frame : uint8 (H, W, C)
        The frame, in the model's coordinates (after the stabiliser).
    samples, coef, ring : the model's per-pixel expansions (see :class:`PixelKernelSubtractor`).
    mask : uint8 (H, W)
        The previous frame's raw mask (non-zero: foreground).
    scratch : (float64 (n,), int64 (n,), float64 (n,))
        Ratios, their blocks and room to sort, at least :func:`grid_size` ``(H, W)`` values each.
    """
    H, W = frame.shape[:2]
    ratios, blocks, tmp = scratch
    n = grid_ratios(frame, samples, coef, ring, mask, grid_step(H, W), ratios, blocks)
    if n < MIN_POINTS:
        return None
    g = agreed_median(ratios, blocks, n, tmp)
    if g < 0.0:
        return None
    return min(MAX_GAIN, max(MIN_GAIN, g))
