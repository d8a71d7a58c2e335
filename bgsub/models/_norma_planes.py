"""nu-NORMA's score pass over row planes: every pixel's full sum, vectorised across the pixels of a row.

nu-NORMA sums every pixel's expansion in full every frame (its offset tracks a quantile of its own sum, so no
bound settles its decisions: :mod:`bgsub.models._norma_frame`). Over the per-pixel state (samples
``(H, W, B, C)``, coefficients ``(H, W, B)``) each sum reads the Gaussian from its table, and the table's reads
are gathers. Here the same samples and coefficients are kept a second time as *row planes*, each row's state
as planes across its pixels (samples ``(H, B, C, W)``, coefficients ``(H, B, W)``), and each row's sums run slot
by slot across the row's pixels with the Gaussian computed in float32 (:func:`learners.kernels.gaussian_f32`):
loads of consecutive bytes and arithmetic, no gathers. ``docs/performance.md`` has the measurements: at
1920x1080 the pass takes about 0.6x the table's time, and nu-NORMA's ``apply`` about 0.8x.

The planes are a copy the subtractor derives from its state (:class:`bgsub.models.norma.NORMASubtractor`):
:func:`build_planes` writes them from the per-pixel arrays (after an allocation, the bootstrap, a checkpoint's
load, a renormalisation, a fused frame, a move from the GPU engine), and the update pass copies each slot a step writes into them
(:func:`mirror_slot`, :func:`bgsub.models._norma_frame.norma_update`). The per-pixel arrays stay the state:
the update pass, the bootstrap, checkpoints, the background image and the GPU engine read them. Each pixel's
sum is :func:`learners.expansion.expansion_sum_f32`'s, which the GPU engine's norma score pass calls, up to
float32's rounding.

The first frame's offsets are summed the same way (:func:`norma_quantile_offsets`). The sums differ from the
table's in their last digits (the Gaussian within 2e-5, float32 sums): norma's dev mean F 0.4740 against 0.4737,
every sequence within 0.0032 (``docs/performance.md``).

This module imports only numpy, numba, the learners' rules, the bands' thread pool and the frame kernels'
reference-free views.
"""

import numpy as np
from numba import njit, prange

from bgsub.models._bands import run_bands
from bgsub.models._frame_kernels import _unref
from learners.kernels import gaussian_f32
from learners.steps import blink_accumulate, feedback_level

__all__ = ["build_planes", "decide_row", "mirror_slot", "planes_of", "quantile_offsets", "score"]


@njit(cache=True, parallel=True, nogil=True)
def build_planes(samples, coef, ring, planes):
    """Write the row planes ``planes = (samples (H, B, C, W) uint8, coef (H, B, W) float32)`` from the per-pixel
    ``samples (H, W, B, C)``, ``coef (H, W, B)`` and ``ring (H, W, 2)``; a slot the ring does not hold gets the
    coefficient 0, so that a sum over every slot is the sum over the live ones."""
    ps, pc = planes
    H, W, B, C = samples.shape
    for i in prange(H):
        for b in range(B):
            for c in range(C):
                for j in range(W):
                    ps[i, b, c, j] = samples[i, j, b, c]
            for j in range(W):
                age = b - ring[i, j, 0]  # the slot's place after the ring's start
                live = (age if age >= 0 else age + B) < ring[i, j, 1]
                pc[i, b, j] = coef[i, j, b] if live else np.float32(0.0)


def planes_of(samples, coef, ring, planes=None):
    """The row planes of the per-pixel state (:func:`build_planes`), written into ``planes`` where their shape fits,
    else into new arrays."""
    H, W, B, C = samples.shape
    if planes is None or planes[0].shape != (H, B, C, W):
        planes = (np.empty((H, B, C, W), np.uint8), np.empty((H, B, W), np.float32))
    build_planes(samples, coef, ring, planes)
    return planes


@njit(cache=True, inline="always")
def mirror_slot(planes, sv, cf, i, j, slot):
    """Copy slot ``slot`` of pixel ``(i, j)``'s samples ``sv`` (B, C) and coefficients ``cf`` (B,) into the row
    planes ``planes`` (:func:`build_planes`)."""
    ps, pc = planes
    for c in range(sv.shape[1]):
        ps[i, slot, c, j] = sv[slot, c]
    pc[i, slot, j] = cf[slot]


@njit(cache=True, fastmath=True, inline="always")
def decide_row(i, sums, scale, rho, feedback, out):
    """Row ``i``'s ``f = scale * sums`` (``sums`` (W,), float32 or float64) and decisions against the offsets
    ``rho``, into ``out = (score, f, mask, own)``: the score ``level - f`` (``level`` the offset, lowered where the
    pixel blinks), ``f``, the raw mask ``score > 0``, the pixel's own decision ``rho - f > 0`` and, where the
    feedback learns, the blink accumulators (``feedback = (blink, prev, post, gain, up, down)``). Each array read
    once and every store without a condition, so that the loop vectorises."""
    score, f_out, mask, own = out
    blink, prev, post = feedback[0], feedback[1], feedback[2]
    gain, up, down = feedback[3], feedback[4], feedback[5]
    blinks = gain > 0.0 and (up > 0.0 or down > 0.0)
    for j in range(sums.shape[0]):
        f = scale * np.float64(sums[j])
        f_out[i, j] = f
        level = rho[i, j]
        own[i, j] = 255 if level - f > 0.0 else 0
        bl = blink[i, j]
        sc = (feedback_level(level, np.float64(bl), gain) if gain > 0.0 else level) - f
        out_fg = sc > 0.0
        score[i, j] = sc
        mask[i, j] = 255 if out_fg else 0
        if blinks:
            flipped = (out_fg != (prev[i, j] != 0)) & (post[i, j] == 0)
            blink[i, j] = blink_accumulate(np.float64(bl), flipped, up, down)


def score(frame, planes, rho, scale, gauss, out, feedback):
    """:func:`norma_score_planes` over bands of the frame's rows, one band per thread."""
    run_bands(norma_score_planes, frame, planes, rho, scale, gauss, out, feedback)


@njit(cache=True, fastmath=True, nogil=True)
def norma_score_planes(frame, planes, rho, scale, gauss, out, feedback, rows):
    """Score the rows ``rows = (start, stop)`` of ``frame`` (H, W, C) uint8 without learning: every pixel's
    ``f = scale * sum_b coef_b gaussian_f32(||x - s_b||^2)`` over the row planes ``planes`` (:func:`build_planes`),
    ``gauss = (factor, cutoff)`` (:func:`learners.kernels.gaussian_f32_args`), the offsets ``rho`` (H, W).

    ``out = (score, f, mask, own)`` and ``feedback = (blink, prev, post, gain, up, down)`` as
    :func:`bgsub.models._norma_frame.norma_score` takes them, with the same decisions: the score
    ``level - f`` (``level`` the offset, lowered by the blink feedback), the raw mask ``score > 0``, the pixel's
    own decision ``rho - f > 0`` and the blink accumulators."""
    # the arguments as views without a reference count (:func:`bgsub.models._frame_kernels._unref`), for the
    # helper inlined in the row loop. The slots' loops are written out, here and in norma_quantile_offsets: a
    # helper inlined for both, taking the row's scratch arrays, counted their references at every slot (the pass
    # 1.2x its time at 320x240)
    ps, pc = _unref(planes[0]), _unref(planes[1])
    rho = _unref(rho)
    out = (_unref(out[0]), _unref(out[1]), _unref(out[2]), _unref(out[3]))
    feedback = (_unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2]), feedback[3], feedback[4], feedback[5])
    B, C, W = ps.shape[1], ps.shape[2], ps.shape[3]
    factor, cutoff = np.float32(gauss[0]), np.float32(gauss[1])
    # the row's values channel by channel, as bytes (as float32 the scratch and the row's planes overflow the
    # first-level cache: the pass 1.1x its time at 1920x1080)
    x = np.empty((C, W), np.uint8)
    acc = np.empty(W, np.float32)
    d2 = np.empty(W, np.float32)
    for i in range(rows[0], rows[1]):
        for c in range(C):
            for j in range(W):
                x[c, j] = frame[i, j, c]
        for j in range(W):
            acc[j] = 0.0
        for b in range(B):
            if C == 3:  # colour: the channels unrolled
                for j in range(W):
                    e0 = np.float32(ps[i, b, 0, j]) - np.float32(x[0, j])
                    e1 = np.float32(ps[i, b, 1, j]) - np.float32(x[1, j])
                    e2 = np.float32(ps[i, b, 2, j]) - np.float32(x[2, j])
                    acc[j] += pc[i, b, j] * gaussian_f32(e0 * e0 + e1 * e1 + e2 * e2, factor, cutoff)
            else:
                for j in range(W):
                    d2[j] = 0.0
                for c in range(C):
                    for j in range(W):
                        e = np.float32(ps[i, b, c, j]) - np.float32(x[c, j])
                        d2[j] += e * e
                for j in range(W):
                    acc[j] += pc[i, b, j] * gaussian_f32(d2[j], factor, cutoff)
        decide_row(i, acc, scale, rho, feedback, out)


def quantile_offsets(planes, ring, rho, scale, gauss, q):
    """:func:`norma_quantile_offsets` over bands of the rows, one band per thread."""
    run_bands(norma_quantile_offsets, ring, planes, rho, scale, gauss, q)


@njit(cache=True, fastmath=True, nogil=True)
def norma_quantile_offsets(ring, planes, rho, scale, gauss, q, rows):
    """Set the offset ``rho`` of each pixel of the rows ``rows = (start, stop)`` to the ``q``-quantile of its
    leave-one-out ``f`` over its own live samples (nu-NORMA's first-frame bootstrap, ``init_rho="quantile"``).

    For every live sample ``x_a`` of a pixel, ``f(x_a)`` without the sample's own term: the score pass's sum at
    ``x_a`` (over the row planes ``planes``, :func:`build_planes`, with the Gaussian computed in float32,
    ``gauss = (factor, cutoff)``; a row's pixels at once for each slot ``a``) less the sample's coefficient (its
    Gaussian at distance 0 is 1). ``rho`` becomes the value of rank ``floor(q * count)`` of the pixel's values, so
    a fraction ``q`` of its own values would score novel under ``rho - f``. ``ring`` (H, W, 2) gives the live
    slots. (Each pair of slots' Gaussian computed once for both sums: 0.9x the time at 1920x1080; by runs of 64 to
    256 pixels, 2x.)
    """
    ps, pc = planes
    B, C, W = ps.shape[1], ps.shape[2], ps.shape[3]
    factor, cutoff = np.float32(gauss[0]), np.float32(gauss[1])
    loo = np.empty((B, W), np.float32)  # the row's leave-one-out sums, slot by slot
    acc = np.empty(W, np.float32)
    d2 = np.empty(W, np.float32)
    vals = np.empty(B)
    for i in range(rows[0], rows[1]):
        for a in range(B):
            for j in range(W):
                acc[j] = 0.0
            for b in range(B):
                if C == 3:
                    for j in range(W):
                        e0 = np.float32(ps[i, b, 0, j]) - np.float32(ps[i, a, 0, j])
                        e1 = np.float32(ps[i, b, 1, j]) - np.float32(ps[i, a, 1, j])
                        e2 = np.float32(ps[i, b, 2, j]) - np.float32(ps[i, a, 2, j])
                        acc[j] += pc[i, b, j] * gaussian_f32(e0 * e0 + e1 * e1 + e2 * e2, factor, cutoff)
                else:
                    for j in range(W):
                        d2[j] = 0.0
                    for c in range(C):
                        for j in range(W):
                            e = np.float32(ps[i, b, c, j]) - np.float32(ps[i, a, c, j])
                            d2[j] += e * e
                    for j in range(W):
                        acc[j] += pc[i, b, j] * gaussian_f32(d2[j], factor, cutoff)
            for j in range(W):
                loo[a, j] = acc[j] - pc[i, a, j]  # leave the sample's own term out
        for j in range(W):
            start, count = ring[i, j, 0], ring[i, j, 1]
            if count == 0:
                continue
            for k in range(count):
                slot = start + k
                if slot >= B:
                    slot -= B
                vals[k] = scale * np.float64(loo[slot, j])
            # sorted in place (insertion: a few dozen compares for a budget's values)
            for k in range(1, count):
                v = vals[k]
                m = k - 1
                while m >= 0 and vals[m] > v:
                    vals[m + 1] = vals[m]
                    m -= 1
                vals[m + 1] = v
            rank = int(q * count)
            rho[i, j] = vals[rank if rank < count else count - 1]
