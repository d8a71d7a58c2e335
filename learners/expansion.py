"""A bounded kernel expansion ``f(x) = scale * sum_j coef[j] k(sv[j], x)``, jitted.

State, all passed as arrays so the same functions serve one learner or, through
views, every pixel of a frame:

- ``sv`` : ``(B, d)`` support vectors (any numeric dtype, e.g. float64 or uint8);
- ``coef`` : ``(B,)`` stored coefficients (float64 or float32);
- ``ring`` : ``(2,)`` integers ``[start, count]``: the live terms are the slots
  ``(start + j) % B`` for ``j = 0 .. count-1``, oldest first (a ring buffer, so a
  full expansion overwrites its oldest term: SVMD section 5.5's LRU budget);
- ``scale`` : one float shared by all terms. Every update rule multiplies *all* old
  coefficients by one factor per step; instead of touching ``B`` numbers the
  caller multiplies ``scale``. The true coefficient of term ``j`` is
  ``scale * coef[j]``. Before ``scale`` leaves ``[SCALE_MIN, SCALE_MAX]`` the
  caller renormalises (``coef *= scale; scale = 1``).

This module imports only numpy and numba.
"""

import numpy as np
from numba import njit

from learners.kernels import (GAUSSIAN, GAUSSIAN_LUT, gaussian_f32, int_squared_distance, kernel_value, popcount16,
                              texture_lut_value)

#: Renormalise the coefficients when the global scale leaves this range.
SCALE_MIN = 1e-10
SCALE_MAX = 1e10


@njit(cache=True, fastmath=True, inline="always")
def full_sum_lut(x, sv, coef, lut):
    """The unscaled sum of a full buffer (every slot live), the slots in storage order: :func:`expansion_sum_lut`'s
    sum where ``ring[1] == B``, without reading the ring or the evicted term (a caller that knows every buffer is
    full). The 3-channel case is unrolled, so that the loop vectorises (fastmath: the compiler sums in lanes)."""
    n = lut.shape[0]
    total = 0.0
    if sv.shape[1] == 3:
        x0 = np.int32(x[0])
        x1 = np.int32(x[1])
        x2 = np.int32(x[2])
        for slot in range(sv.shape[0]):
            e0 = np.int32(sv[slot, 0]) - x0
            e1 = np.int32(sv[slot, 1]) - x1
            e2 = np.int32(sv[slot, 2]) - x2
            d2 = e0 * e0 + e1 * e1 + e2 * e2
            if d2 < n:
                total += np.float64(coef[slot]) * np.float64(lut[d2])
    else:
        for slot in range(sv.shape[0]):
            d2 = 0
            for c in range(sv.shape[1]):
                diff = np.int32(sv[slot, c]) - np.int32(x[c])
                d2 += diff * diff
            if d2 < n:
                total += np.float64(coef[slot]) * np.float64(lut[d2])
    return total


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_f32(x, sv, coef, ring, factor, cutoff):
    """The unscaled sum over the live slots in storage order with the Gaussian computed in float32
    (:func:`learners.kernels.gaussian_f32`, ``(factor, cutoff)`` from :func:`learners.kernels.gaussian_f32_args`),
    every distance and product in float32 and the sum a float32: one pixel's sum as nu-NORMA's score pass over row
    planes makes it for a whole row at once (:mod:`bgsub.models._norma_planes`; the GPU engine's norma score pass
    calls this)."""
    factor, cutoff = np.float32(factor), np.float32(cutoff)
    B = sv.shape[0]
    start = ring[0]
    count = ring[1]
    total = np.float32(0.0)
    for slot in range(B):
        age = slot - start
        if (age if age >= 0 else age + B) < count:
            d2 = np.float32(0.0)
            for c in range(sv.shape[1]):
                e = np.float32(sv[slot, c]) - np.float32(x[c])
                d2 += e * e
            total += np.float32(coef[slot]) * gaussian_f32(d2, factor, cutoff)
    return total


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_lut(x, sv, coef, ring, lut):
    """:func:`expansion_sum` with the Gaussian table (``kind = GAUSSIAN_LUT``), the same sums. The per-pixel
    frame kernels inline this rather than :func:`expansion_sum`, whose code for the other kernels numba would copy
    into every call site (numba inlines before it types, so before it can prune them) and compile."""
    B = sv.shape[0]
    start = ring[0]
    count = ring[1]
    total = 0.0
    oldest = 0.0
    if count == 0:
        return total, oldest
    n = lut.shape[0]
    d = sv.shape[1]
    if count == B:
        # Full buffer (the steady state of a per-pixel model): visit the slots in
        # storage order (no wrap-around test), with the common 3-channel case
        # unrolled, so that the loop vectorises; the evicted term is read
        # separately. About 2x faster per pixel than a loop in ring order.
        total = full_sum_lut(x, sv, coef, lut)
        d2 = 0
        for c in range(d):
            diff = np.int32(sv[start, c]) - np.int32(x[c])
            d2 += diff * diff
        if d2 < n:
            oldest = np.float64(coef[start]) * np.float64(lut[d2])
        return total, oldest
    # A filling buffer (no term is evicted): its live terms added one by one, oldest first
    # (:func:`filling_sum_lut`), an order a caller can reproduce without this function (the first frame's
    # bootstrap sums several pixels' buffers side by side).
    return filling_sum_lut(x, sv, coef, start, count, lut), oldest


@njit(cache=True, nogil=True)
def filling_sum_lut(x, sv, coef, start, count, lut):
    """``sum coef[s] k(sv[s], x)`` over the ``count`` live slots from ``start`` (ring order, oldest first), with
    the Gaussian table ``lut`` (0 past its end): each product ``float64(coef) * float64(table value)`` rounded,
    then added to the sum, one term after the other.

    Compiled without fastmath and called, not inlined, so that no caller's flags reorder the additions or fuse
    them with the products: any loop that adds the same products in the same order without reordering or fusing
    them, such as the bootstrap's sums over several pixels at once
    (:func:`bgsub.models._frame_kernels.olkn_bootstrap`), gets the same sum to the bit."""
    B = sv.shape[0]
    n = lut.shape[0]
    total = 0.0
    for k in range(count):
        slot = start + k
        if slot >= B:
            slot -= B
        d2 = 0
        for c in range(sv.shape[1]):
            diff = np.int64(sv[slot, c]) - np.int64(x[c])
            d2 += diff * diff
        if d2 < n:
            total = total + np.float64(coef[slot]) * np.float64(lut[d2])
    return total


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut):
    """Unscaled sum over live terms, and the oldest term's share.

    Returns
    -------
    total : float
        ``sum_j coef[j] k(sv[j], x)`` (multiply by ``scale`` for ``f(x)``).
    oldest : float
        ``coef[start] k(sv[start], x)`` when the expansion is full (the term the
        next insertion evicts), else 0.
    """
    if kind == GAUSSIAN_LUT:
        return expansion_sum_lut(x, sv, coef, ring, lut)
    B = sv.shape[0]
    count = ring[1]
    inv = 1.0 / (width * width) if kind == GAUSSIAN else 0.0
    total = 0.0
    oldest = 0.0
    for j in range(count):
        slot = ring[0] + j
        if slot >= B:
            slot -= B
        if kind == GAUSSIAN:  # exp inlined (through kernel_value every term would be a call)
            d2 = 0.0
            for c in range(sv.shape[1]):
                diff = np.float64(sv[slot, c]) - np.float64(x[c])
                d2 += diff * diff
            term = np.float64(coef[slot]) * np.exp(-d2 * inv)
        else:
            term = np.float64(coef[slot]) * kernel_value(kind, sv[slot], x, width, degree, coef0, lut)
        total += term
        if j == 0 and count == B:
            oldest = term
    return total, oldest


@njit(cache=True, fastmath=True, inline="always")
def _texture_term(x, tx, sv, tsv, coef, slot, lam, factor, lut):
    """``coef[slot] k(x, sv[slot])`` under the product kernel (:func:`expansion_sum_texture`): the squared
    distance and the Hamming distance (as :func:`learners.kernels.hamming_distance`) in one loop over the
    channels, without a view of the slot's rows per term."""
    d2 = 0
    h = 0
    for c in range(sv.shape[1]):
        e = np.int32(sv[slot, c]) - np.int32(x[c])
        d2 += e * e
        h += popcount16(np.int64(tsv[slot, c]) ^ np.int64(tx[c]))
    return np.float64(coef[slot]) * texture_lut_value(lut, d2, h, lam, factor)


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_texture(x, tx, sv, tsv, coef, ring, lam, factor, lut):
    """:func:`expansion_sum` under the product kernel of colour and texture
    (:func:`learners.kernels.texture_lut_value`): ``k = exp(-(||x - sv_j||^2 + lam h(tx, tsv_j)) / (factor p)^2)``.

    ``tx`` : ``(C,)`` uint16 binary descriptor of ``x``; ``tsv`` : ``(B, C)`` those of the support
    vectors, slot for slot with ``sv``. Returns ``(total, oldest)`` as :func:`expansion_sum`.
    """
    B, start, count = sv.shape[0], ring[0], ring[1]
    total = 0.0
    if count == B:  # storage order; the evicted term apart
        for slot in range(B):
            total += _texture_term(x, tx, sv, tsv, coef, slot, lam, factor, lut)
        return total, _texture_term(x, tx, sv, tsv, coef, start, lam, factor, lut)
    for j in range(count):
        slot = start + j
        total += _texture_term(x, tx, sv, tsv, coef, slot - B if slot >= B else slot, lam, factor, lut)
    return total, 0.0


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_texture_until(x, tx, sv, tsv, coef, lam, factor, lut, scale, limit):
    """The terms of a full expansion under the product kernel (:func:`expansion_sum_texture`), summed in
    storage order until ``scale * total`` reaches ``limit``: every term is non-negative where every
    coefficient is, so the rest could only raise it. Returns ``(total, stopped)``: ``total`` unscaled, the sum
    of all ``B`` terms when not ``stopped`` (a caller that needs :func:`expansion_sum_texture`'s bits calls it:
    compiled apart, the two sums may round differently)."""
    total = 0.0
    for slot in range(sv.shape[0]):
        total += _texture_term(x, tx, sv, tsv, coef, slot, lam, factor, lut)
        if scale * total >= limit:
            return total, True
    return total, False


@njit(cache=True, fastmath=True, inline="always")
def _inter_texture_term(x, pattern, sv, tsv, coef, slot, thresholds, lam, factor, lut):
    """``coef[slot] k(x, sv[slot])`` under the inter-frame product kernel (:func:`expansion_sum_inter_texture`)."""
    d2 = 0
    h = 0
    for c in range(sv.shape[1]):
        s = np.int32(sv[slot, c])
        e = s - np.int32(x[c])
        d2 += e * e
        thr = np.int32(thresholds[s])
        word = 0
        for k in range(16):  # branch-free, so that the 16 comparisons vectorise
            word |= np.int32(abs(np.int32(pattern[c, k]) - s) > thr) << k
        h += popcount16(np.int64(tsv[slot, c]) ^ np.int64(word))
    return np.float64(coef[slot]) * texture_lut_value(lut, d2, h, lam, factor)


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_inter_texture(x, pattern, sv, tsv, coef, ring, thresholds, lam, factor, lut):
    """:func:`expansion_sum_texture` with the inter-frame descriptor (LOBSTER's inter-LBSP): the value's
    descriptor against support vector ``j`` is computed from the value's neighbourhood ``pattern`` with
    ``sv_j``'s own centre as the reference, bit ``k`` set where ``|pattern[c, k] - sv_j[c]| >
    thresholds[sv_j[c]]``, and compared with ``sv_j``'s stored (intra-frame) descriptor ``tsv_j``.

    So the Hamming distance measures whether the neighbourhood still looks, from the sample's centre,
    as it did when the sample was taken; a change of the centre value alone is left to the colour term.

    ``pattern`` : ``(C, 16)`` uint8, the value's 16 neighbourhood points per channel;
    ``thresholds`` : ``(256,)`` integer thresholds by centre value. Returns ``(total, oldest)`` as
    :func:`expansion_sum`.
    """
    B, start, count = sv.shape[0], ring[0], ring[1]
    total = 0.0
    if count == B:  # storage order; the evicted term apart
        for slot in range(B):
            total += _inter_texture_term(x, pattern, sv, tsv, coef, slot, thresholds, lam, factor, lut)
        return total, _inter_texture_term(x, pattern, sv, tsv, coef, start, thresholds, lam, factor, lut)
    for j in range(count):
        slot = start + j
        total += _inter_texture_term(x, pattern, sv, tsv, coef, slot - B if slot >= B else slot, thresholds, lam,
                                     factor, lut)
    return total, 0.0


@njit(cache=True, fastmath=True, inline="always")
def expansion_sum_inter_texture_until(x, pattern, sv, tsv, coef, thresholds, lam, factor, lut, scale, limit):
    """:func:`expansion_sum_texture_until` with the inter-frame descriptor (:func:`expansion_sum_inter_texture`)."""
    total = 0.0
    for slot in range(sv.shape[0]):
        total += _inter_texture_term(x, pattern, sv, tsv, coef, slot, thresholds, lam, factor, lut)
        if scale * total >= limit:
            return total, True
    return total, False


@njit(cache=True, inline="always")
def expansion_newest(ring, B):
    """Slot of the newest live term (the one :func:`expansion_push` wrote last); -1 when empty."""
    if ring[1] == 0:
        return -1
    slot = ring[0] + ring[1] - 1
    return slot - B if slot >= B else slot


@njit(cache=True, fastmath=True, inline="always")
def expansion_nearest(x, sv, ring):
    """Integer squared distance from ``x`` to the nearest live support vector (integer-valued inputs such as
    uint8 pixels); -1 when the expansion is empty."""
    B = sv.shape[0]
    count = ring[1]
    if count == 0:
        return -1
    best = int_squared_distance(x, sv[ring[0]])
    if count == B:  # storage order (vectorises)
        for slot in range(B):
            best = min(best, int_squared_distance(x, sv[slot]))
        return best
    for k in range(1, count):
        slot = ring[0] + k
        if slot >= B:
            slot -= B
        best = min(best, int_squared_distance(x, sv[slot]))
    return best


@njit(cache=True)
def expansion_push(x, value, sv, coef, ring):
    """Append the term ``(x, value)``; a full expansion overwrites its oldest term.

    ``value`` is the *stored* coefficient (true coefficient divided by the scale
    in force after this step). Returns the slot written.
    """
    B = sv.shape[0]
    start = ring[0]
    count = ring[1]
    if count < B:
        slot = start + count
        if slot >= B:
            slot -= B
        ring[1] = count + 1
    else:
        slot = start
        ring[0] = start + 1 if start + 1 < B else 0
    for c in range(sv.shape[1]):
        sv[slot, c] = x[c]
    coef[slot] = value
    return slot


@njit(cache=True)
def expansion_prune(sv, coef, ring, scale, threshold):
    """Drop terms with ``|scale * coef| < threshold`` (OLK Remark 4), keeping order.

    Returns the number of terms dropped.
    """
    B = sv.shape[0]
    start = ring[0]
    count = ring[1]
    kept = 0
    for j in range(count):
        src = start + j
        if src >= B:
            src -= B
        if abs(scale * coef[src]) >= threshold:
            if kept != j:
                dst = start + kept
                if dst >= B:
                    dst -= B
                for c in range(sv.shape[1]):
                    sv[dst, c] = sv[src, c]
                coef[dst] = coef[src]
            kept += 1
    ring[1] = kept
    return count - kept


@njit(cache=True)
def expansion_order(ring, B):
    """Slots of the live terms, oldest first, as an int64 array."""
    out = np.empty(ring[1], dtype=np.int64)
    for j in range(ring[1]):
        slot = ring[0] + j
        out[j] = slot - B if slot >= B else slot
    return out


def needs_renormalise(scale):
    """True when ``scale`` should be folded into the coefficients now."""
    return not (SCALE_MIN <= scale <= SCALE_MAX)
