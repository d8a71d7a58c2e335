"""OLK_N frames that skip the kernel sum wherever a bound settles every decision.

:func:`bgsub.models._frame_kernels.olkn_frame` evaluates every pixel's full
expansion ``f_t(x) = scale * sum_b coef_b k(x, s_b)`` every frame: ``B`` kernel
values and 140 bytes of state per pixel (``B = 20`` colour samples and their
coefficients), most of a frame's time. Yet almost every decision is far from its
level: a road pixel sees ``f`` near 2 against a level near 1 frame after frame.

Each pixel keeps a reference value ``ref`` (its value at the last full sum), the
unscaled sum there, ``ref_sum = sum_b coef_b k(ref, s_b)``, and the unscaled mass
``ref_mass = sum_b coef_b`` (all coefficients of OLK_N are positive). The Gaussian
``k = exp(-d^2 / width^2)`` is Lipschitz in the value with constant
``slope = sqrt(2) exp(-1/2) / width`` (its steepest point, ``d = width / sqrt(2)``),
so for the new value ``x``

    |f_t(x) - scale * ref_sum| <= scale * ref_mass * (slope * ||x - ref|| + BOUND_SLACK)

(``BOUND_SLACK`` covers the table's float32 rounding and truncation and the
rounding of the cached sums). A pixel whose interval ``[lo, hi]`` lies on one side
of each level it is compared with -- its own decision level ``1 + rho``, the
blink-lowered output level, and, when it steps, the points where the multiplier
``a = clip(1 + r - f, nu, C)`` saturates -- needs no sum: the decisions, the
offset and the learnt term are those the full sum would give, bit for bit, and
the learner step is the same :func:`learners.steps.olk_n_update` (called with a
surrogate ``f`` in the same saturated range). Every other pixel sums in full and
takes its value as the new reference. A step keeps the cache exact by adding the
new term's share at ``ref`` and removing the evicted one's (two table reads), so
steps do not force sums either. Every pixel sums in full at least every
``REFRESH_PERIOD`` frames, which bounds the rounding drift of the cache.

What is *not* the full sum: the score map of a pixel that skipped its sum is
``level - scale * ref_sum`` (within the bound of the exact score and of the same
sign, so ``score > 0`` is still the raw mask). Callers that need exact scores
(ROC curves, score thresholds) use ``score_map="exact"``.

The offset rules supported are those whose step needs only the saturation of
``a`` (``quantile`` and ``paper``: eq. 69 leaves ``rho`` alone at a saturated
``a``), which are all the subtractor has.

This module imports only numpy, numba, the learners' jitted core and the frame
loops' helpers.
"""

import numpy as np
from numba import njit

from bgsub.models._frame_kernels import (_diffuses, _diffusion_draw, _diffusion_neighbour, _diffusion_source,
                                         _emit, _hash24, _layout, _level, _olkn_update, _quantile_rho, _selected,
                                         _selected_drawn, _unref, _vec, _views)
from bgsub.models._bands import run_bands
from bgsub.models._prefetch import PREFETCH_AHEAD, prefetch_state
from learners.expansion import expansion_sum_lut
from learners.kernels import int_squared_distance, lut_value
from learners.steps import RHO_QUANTILE, blink_accumulate, feedback_level

#: Every pixel's sum is recomputed in full at least this often (frames; a power of two).
REFRESH_PERIOD = 256
#: Slack of the bound per unit of coefficient mass: the table's float32 rounding and truncation (about
#: 1e-7) and the cache's float32 rounding over ``REFRESH_PERIOD`` steps (at most one step a frame, one
#: rounding of 6e-8 each in the sum and in the mass: about 3e-5 where the bound can decide anything,
#: which needs ``slope * ||x - ref|| < 1``).
BOUND_SLACK = 5e-5
#: Margin kept from the multiplier's saturation points (their floating-point evaluation).
SATURATION_MARGIN = 1e-9


def gaussian_slope(width: float) -> float:
    """Lipschitz constant of ``exp(-d^2 / width^2)`` in ``d``: ``sqrt(2) exp(-1/2) / width`` (slightly
    rounded up)."""
    return float(np.sqrt(2.0) * np.exp(-0.5) / width) * (1.0 + 1e-6)


@njit(cache=True, inline="always")
def _recentre(x, xr, sv, cf, rg, ref_sum, ref_mass, i, j, nc, B, lut):
    """Full sum of the pixel's expansion at ``x``; ``x`` becomes its reference. Returns ``(total, oldest)``
    (unscaled, as :func:`learners.expansion.expansion_sum_lut`)."""
    total, oldest = expansion_sum_lut(x, sv, cf, rg, lut)
    mass = 0.0
    if rg[1] == B:
        for b in range(B):
            mass += np.float64(cf[b])
    else:
        for k in range(rg[1]):
            slot = rg[0] + k
            if slot >= B:
                slot -= B
            mass += np.float64(cf[slot])
    for c in range(nc):
        xr[c] = x[c]
    ref_sum[i, j] = np.float32(total)
    ref_mass[i, j] = np.float32(mass)
    return total, oldest


@njit(cache=True, inline="always")
def _surrogate(lo, hi, a_hi, a_lo):
    """``(True, f)`` with a value ``f`` that gives the multiplier every ``f`` in ``[lo, hi]`` gives, or
    ``(False, hi)`` when the interval reaches into the unsaturated range (``1 + r - C < f < 1 + r - nu``),
    where ``f`` means nothing. Selects, not branches, so that the loop tagging a row's pixels vectorises.
    (No NaN sentinel: the loops are compiled with fastmath, which assumes there is none.)"""
    above = lo >= a_hi + SATURATION_MARGIN
    below = hi <= a_lo - SATURATION_MARGIN
    return above | below, lo if above else hi


@njit(cache=True, inline="always")
def _next_slot(sv, cf, rg, xr, B, lut):
    """Before a push: the slot it will write, and the share at ``xr`` and the coefficient of the term it
    evicts (0 when the buffer is not full)."""
    start = rg[0]
    count = rg[1]
    if count < B:
        slot = start + count
        return slot - B if slot >= B else slot, 0.0, 0.0
    mass = np.float64(cf[start])
    return start, mass * lut_value(lut, int_squared_distance(sv[start], xr)), mass


@njit(cache=True, inline="always")
def _admit(x, xr, cf, slot, removed, removed_mass, ref_sum, ref_mass, i, j, lut):
    """After a push into ``slot``: the cached sum and mass at ``xr`` gain the new term and lose the evicted
    one (:func:`_next_slot`), so they stay those of the pixel's expansion."""
    added_mass = np.float64(cf[slot])
    added = added_mass * lut_value(lut, int_squared_distance(x, xr))
    ref_sum[i, j] = np.float32(np.float64(ref_sum[i, j]) + added - removed)
    ref_mass[i, j] = np.float32(np.float64(ref_mass[i, j]) + added_mass - removed_mass)


@njit(cache=True, inline="always")
def _tracked_step(x, f, f_oldest, view, xr, ref_sum, ref_mass, i, j, lut, scale, rule, rho0):
    """:func:`learners.steps.olk_n_update` on ``x`` (:func:`bgsub.models._frame_kernels._olkn_update` of the
    expansion ``view = (sv, cf, rg)``), keeping the pixel's cached sum and mass at its reference exact. Returns
    the new offset."""
    sv, cf, rg = view
    slot, removed, removed_mass = _next_slot(sv, cf, rg, xr, sv.shape[0], lut)
    _, new_rho = _olkn_update(x, f, f_oldest, view, scale, rule, rho0)
    _admit(x, xr, cf, slot, removed, removed_mass, ref_sum, ref_mass, i, j, lut)
    return new_rho


@njit(cache=True, inline="always")
def _bound(x, xr, ref_sum, ref_mass, i, j, scale, slope):
    """``(lo, hi)``: where the pixel's ``f`` at ``x`` lies, from its cached sum at ``xr``."""
    f = scale * np.float64(ref_sum[i, j])
    distance = np.sqrt(np.float64(int_squared_distance(x, xr)))
    beta = scale * np.float64(ref_mass[i, j]) * (slope * distance + BOUND_SLACK)
    return f - beta, f + beta


@njit(cache=True, inline="always")
def _row_bounds(frame, ref, ref_sum, ref_mass, i, W, nc, fb, refb, scale, slope, squares, out):
    """:func:`_bound` of every pixel of row ``i`` into ``out[0]`` (lo) and ``out[1]`` (hi), ahead of the
    first loop: a loop without branches or stores but these, which the compiler vectorises for colour
    frames (about 1.15x a whole frame, against the bound computed inside the first loop). ``squares``:
    int32 scratch of ``3 W``."""
    if nc == 3:
        # the squared differences over the row's bytes first: contiguous, where the channels read pixel by pixel
        # (stride 3) are not vectorised (0.77 against 1.37 ms for a 1280x720 frame's bounds)
        fr = frame[i].reshape(3 * W)
        rr = ref[i].reshape(3 * W)
        for k in range(3 * W):
            e = np.int32(fr[k]) - np.int32(rr[k])
            squares[k] = e * e
        for j in range(W):
            f = scale * np.float64(ref_sum[i, j])
            distance = np.sqrt(np.float64(squares[3 * j] + squares[3 * j + 1] + squares[3 * j + 2]))
            beta = scale * np.float64(ref_mass[i, j]) * (slope * distance + BOUND_SLACK)
            out[0, j] = f - beta
            out[1, j] = f + beta
    else:
        for j in range(W):
            p = i * W + j
            out[0, j], out[1, j] = _bound(_vec(frame, fb, p, nc), _vec(ref, refb, p, nc), ref_sum, ref_mass, i, j,
                                          scale, slope)


@njit(cache=True, inline="always")
def _decide(f, lo, hi, rho0, level, out_level, rho, blink, prev, post, fbc, pix, score, mask, rule):
    """The decisions of a pixel whose ``f`` lies in ``[lo, hi]``, on one side of ``level`` and of
    ``out_level`` (after a full sum ``lo == hi == f``): score ``out_level - f``, raw mask and blink
    accumulator (:func:`bgsub.models._frame_kernels._emit`; ``fbc = (gain, up, down)``), its own decision, its
    offset under the quantile rule. Returns ``(rho, fg)``."""
    i, j = pix
    _emit(out_level - f, blink, prev, post, i, j, fbc[0], fbc[1], fbc[2], score, mask)
    fg = hi < level  # the pixel's own decision, without the feedback
    if rule[3] == RHO_QUANTILE:
        rho0 = _quantile_rho(hi if fg else lo, rho0, rule)
        rho[i, j] = rho0
    return rho0, fg


#: Deferred work of a row (second loop): the pixel's column, tagged.
_STEP = 1 << 27  # it learns its own value, and the bound gives its multiplier (the bound's end in ``todo_f``)
_EXACT = 1 << 28  # its decisions need the full sum
_DIFFUSE = 1 << 29  # it may learn a neighbour's value (if the neighbour was background)
_EXACT_STEP = 1 << 30  # it learns its own value, and its multiplier needs the full sum
_COLUMN = (1 << 27) - 1


@njit(cache=True, inline="always")
def _tag(flag, selected, lo, hi, a_hi, a_lo, p_diff, radius, diffusion_draw):
    """``(tag, f)``: what the second loop does with a pixel of first-loop ``flag`` (bit 0: decided, bit 1: its own
    decision foreground) whose ``f`` lies in ``[lo, hi]`` and whose update draw ``selected`` it, and the ``f`` a
    step takes when the bound gives its multiplier (:func:`_surrogate`). Selects, not branches."""
    known, f = _surrogate(lo, hi, a_hi, a_lo)
    step = _STEP if known else _EXACT_STEP
    tag = step if selected else (_DIFFUSE if _diffuses(p_diff, radius, diffusion_draw) else 0)
    return (tag if (flag & 1) != 0 else _EXACT), f


def frame_bounded(frame, state, scale, lut, rule, policy, feedback, out, cache):
    """One bounded OLK_N frame: :func:`olkn_frame_bounded` over bands of the frame's rows, one band per thread
    (:func:`bgsub.models._bands.run_bands`)."""
    run_bands(olkn_frame_bounded, frame, state, scale, lut, rule, policy, feedback, out, cache)


@njit(cache=True, fastmath=True, nogil=True)
def olkn_frame_bounded(frame, state, scale, lut, rule, policy, feedback, out, cache, rows):
    """:func:`bgsub.models._frame_kernels.olkn_frame` with sums only where a bound does not decide, over the
    rows ``rows = (start, stop)`` (:func:`frame_bounded` runs the bands in parallel).

    The arguments but ``cache`` and ``rows`` are :func:`~bgsub.models._frame_kernels.olkn_frame`'s (without
    texture features); the masks, offsets, blink accumulators, steps and model state it leaves are the same (see
    the module docstring for the score map).

    Each row runs two loops: the first decides every pixel it can from the bounds (scores, masks,
    blink accumulators, offsets, the update policy's draws) and lists the rest -- pixels that need
    their full sum, and pixels that step -- which the second loop handles. Kept apart, the first
    loop stays small and fast; the state arrays are touched only by the second.

    A serial kernel, not a ``prange`` loop: numba compiles it in about a third of the time the same loop took
    with its parallel-loop passes, and with its arrays as views without reference counts
    (:func:`bgsub.models._frame_kernels._unref`) a band runs as fast as the ``prange`` loop's rows did (measured
    side by side, ``benchmarks/bounded_frame_ab.py``). Its second loop is written out in it rather than an inlined
    function of its own (see the comment there): about 40 % less compile time.

    ``cache = (ref, ref_sum, ref_mass, slope, refresh_all, filling, summed)``:

    ref : uint8 (H, W, C)
        Each pixel's reference value (written where a pixel sums in full).
    ref_sum, ref_mass : float32 (H, W)
        Unscaled sum of the pixel's expansion at ``ref``, and of its coefficients (kept exact
        through steps).
    slope : float
        :func:`gaussian_slope` of the table's width.
    refresh_all : bool
        Every pixel sums in full (the cache is not valid: first frame, new parameters, another
        engine moved the state).
    filling : bool
        Some pixel's buffer is not full yet (it steps whatever the policy draws); False lets the
        first loop skip every pixel's count.
    summed : int64 (H,)
        Output: the number of pixels of each row that summed in full.
    """
    # every array as a view without a reference count (:func:`bgsub.models._frame_kernels._unref`), taken out of
    # its tuple by index, once
    frame, lut = _unref(frame), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    blink, nbr_mask, post = _unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2])
    fbc = (feedback[3], feedback[4], feedback[5])
    score, mask, stepped = _unref(out[0]), _unref(out[1]), _unref(out[2])
    ref, ref_sum, ref_mass = _unref(cache[0]), _unref(cache[1]), _unref(cache[2])
    slope, refresh_all, filling = cache[3], cache[4], cache[5]
    summed = _unref(cache[6])
    state = (samples, coef, ring, rho)
    feedback = (blink, nbr_mask, post, fbc[0], fbc[1], fbc[2])
    out = (score, mask, stepped)
    cache = (ref, ref_sum, ref_mass, slope, refresh_all, filling, summed)
    lay = _layout(frame, state)
    H, W, B, nc, fb, sb, cb, rb = lay
    p_bg, p_fg, p_diff, radius, seed, frame_no = policy
    refb = ref.ctypes.data
    a_hi = 1.0 + rule[0] - rule[1]  # f >= a_hi: a = nu
    a_lo = 1.0 + rule[0] - rule[2]  # f <= a_lo: a = C
    period = REFRESH_PERIOD - 1
    gain, up, down = fbc
    blinks = gain > 0.0 and (up > 0.0 or down > 0.0)  # :func:`bgsub.models._frame_kernels._emit`'s condition
    # the rows' scratch, once for the band
    bounds = np.empty((2, W))
    squares = np.empty(3 * W, np.int32)
    flags = np.empty(W, np.uint8)
    draws = np.empty((2, W), np.int32)
    tags = np.empty(W, np.int32)
    ends = np.empty(W)  # a step's f in its saturated range (the bound's end)
    todo = np.empty(W, np.int32)
    todo_f = np.empty(W)
    old_rho = np.empty(W)  # the row's offsets and blink accumulators before the first loop
    old_blink = np.empty(W, np.float32)
    for i in range(rows[0], rows[1]):
        _row_bounds(frame, ref, ref_sum, ref_mass, i, W, nc, fb, refb, scale, slope, squares, bounds)
        # first loop: the decisions the bounds settle. Every pixel's score, mask, blink accumulator and offset are
        # written as if its bound settled them, and its old offset and accumulator are kept in the row's scratch: a
        # pixel the bound does not settle sums in full in the second loop, which restores them and decides again.
        # Stores without conditions and each array read once: the compiler vectorises the loop (the whole kernel
        # 0.77x its time at 1280x720 and 1920x1080 against selects that kept the old values where the bound did not
        # settle them, ``benchmarks/bounded_frame_ab.py``). The score, mask and blink writes are ``_emit``'s, written
        # out as in norma's score pass: through an inlined helper taking the accumulator's value, the kernel took
        # 11.2 against 9.3 ms at 1280x720
        for j in range(W):
            rho0 = rho[i, j]
            bl = blink[i, j]
            old_rho[j] = rho0
            old_blink[j] = bl
            level = 1.0 + rho0
            out_level = feedback_level(level, np.float64(bl), gain) if gain > 0.0 else level
            lo = bounds[0, j]
            hi = bounds[1, j]
            ok = (((hi < level) | (lo >= level)) & ((hi < out_level) | (lo >= out_level))
                  & (not refresh_all) & (((frame_no + i + j) & period) != 0))
            sc = out_level - scale * np.float64(ref_sum[i, j])
            out_fg = sc > 0.0
            score[i, j] = sc
            mask[i, j] = 255 if out_fg else 0
            if blinks:
                flipped = (out_fg != (nbr_mask[i, j] != 0)) & (post[i, j] == 0)
                blink[i, j] = blink_accumulate(np.float64(bl), flipped, up, down)
            fg = hi < level  # the pixel's own decision, without the feedback
            if rule[3] == RHO_QUANTILE:
                rho[i, j] = _quantile_rho(hi if fg else lo, rho0, rule)
            flags[j] = np.uint8(ok) | (np.uint8(fg) << 1)
        # the update policy's draws (counter-based hashes: drawn for every pixel, used where needed)
        for j in range(W):
            p = i * W + j
            draws[0, j] = _hash24(seed, frame_no, p)
            draws[1, j] = _diffusion_draw(seed, frame_no, p)
        # deferred work: each pixel's tag (selects: no branch to mispredict on the policy's draws), then the list
        if not filling:  # every buffer full: no count to read (1.2 ms less at 1280x720 than the loop below)
            for j in range(W):
                fl = np.int32(flags[j])
                selected = _selected_drawn((fl & 2) != 0, B, B, p_bg, p_fg, draws[0, j])
                tags[j], ends[j] = _tag(fl, selected, bounds[0, j], bounds[1, j], a_hi, a_lo, p_diff, radius,
                                        draws[1, j])
        else:  # buffers filling
            for j in range(W):
                fl = np.int32(flags[j])
                selected = _selected_drawn((fl & 2) != 0, ring[i, j, 1], B, p_bg, p_fg, draws[0, j])
                tags[j], ends[j] = _tag(fl, selected, bounds[0, j], bounds[1, j], a_hi, a_lo, p_diff, radius,
                                        draws[1, j])
        n_todo = 0
        for j in range(W):  # every pixel written, the untagged overwritten by the next
            todo[n_todo] = j | tags[j]
            todo_f[n_todo] = ends[j]
            n_todo += tags[j] != 0
        # second loop: full sums and steps. Every pixel's step is the one call of :func:`_tracked_step` at the end
        # (the branches only choose the value and its ``f``), so that the learner's update is inlined once. Written
        # out here, not an inlined function: numba copies an inlined function's code into its caller block by
        # block, each block with a copy of all the function's variables, a cost that grows with the square of its
        # size (as an inlined function, copying this loop took about a third of the kernel's compile time); called,
        # not inlined, it ran about 1.2x slower
        n = 0
        n_sum = 0
        for k in range(n_todo):
            if k + PREFETCH_AHEAD < n_todo:
                prefetch_state(sb, cb, rb, i * W + (todo[k + PREFETCH_AHEAD] & _COLUMN), B, nc)
            tag = todo[k]
            j = tag & _COLUMN
            p = i * W + j
            x = _vec(frame, fb, p, nc)
            xr = _vec(ref, refb, p, nc)
            view = _views(samples, coef, ring, lay, p)
            sv, cf, rg = view
            rho0 = rho[i, j]
            # the value the pixel learns (its own x, or a neighbour's: q >= 0) and its f; one step below, so that the
            # learner's update is compiled once
            fs = todo_f[k]
            oldest = 0.0
            q = -1
            if tag & (_EXACT | _EXACT_STEP):
                total, oldest = _recentre(x, xr, sv, cf, rg, ref_sum, ref_mass, i, j, nc, B, lut)
                n_sum += 1
                fs = scale * total
                oldest *= scale
            if tag & _EXACT:  # the first loop's decisions undone, and made from the sum
                rho0 = old_rho[j]
                rho[i, j] = rho0
                blink[i, j] = old_blink[j]
                level = 1.0 + rho0
                rho0, fg = _decide(fs, fs, fs, rho0, level, _level(level, blink, i, j, fbc[0]), rho, blink, nbr_mask,
                                   post, fbc, (i, j), score, mask, rule)
                if not _selected(fg, rg[1], B, p_bg, p_fg, seed, frame_no, p):
                    q = _diffusion_source(nbr_mask, i, j, H, W, radius, p_diff, seed, frame_no, p)
                    if q < 0:
                        continue
            elif tag & _DIFFUSE:
                q = _diffusion_neighbour(nbr_mask, i, j, H, W, radius, seed, frame_no, p)
                if q < 0:
                    continue
            if q >= 0:  # learn the neighbour value y = frame[q]
                x = _vec(frame, fb, q, nc)
                lo, hi = _bound(x, xr, ref_sum, ref_mass, i, j, scale, slope)
                known, fs = _surrogate(lo, hi, a_hi, a_lo)
                oldest = 0.0
                if not known:
                    total, oldest = expansion_sum_lut(x, sv, cf, rg, lut)
                    fs = scale * total
                    oldest *= scale
                    n_sum += 1
            rho[i, j] = _tracked_step(x, fs, oldest, view, xr, ref_sum, ref_mass, i, j, lut, scale, rule, rho0)
            n += 1
        stepped[i] = n
        summed[i] = n_sum
