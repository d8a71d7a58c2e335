"""nu-NORMA's frames without texture features: serial kernels over bands of rows.

The same passes as :func:`bgsub.models._frame_kernels.score_frame` (``offset = 0``),
:func:`~bgsub.models._frame_kernels.norma_update_frame` and
:func:`~bgsub.models._frame_kernels.norma_frame`, with the same per-pixel helpers, so the same
arithmetic in the same order: the same scores, masks, offsets, blink accumulators and model state,
bit for bit. Each kernel is a serial ``nogil`` loop over the rows ``rows = (start, stop)`` of a band,
which :func:`bgsub.models._bands.run_bands` runs on its threads (one band per thread), with every
array a view without a reference count (:func:`bgsub.models._frame_kernels._unref`): numba compiles a
serial loop in a fraction of the time a ``prange`` loop's passes take, and a band runs as fast as the
``prange`` loop's rows did.

Every pixel sums its expansion in full. The decisions cannot be read from a bound: nu-NORMA's offset
tracks the ``nu``-quantile of the pixel's own ``f``, and a background pixel's ``f`` stays within a
fraction of one term of its offset (``docs/performance.md``), so a partial sum or a bound from a
reference value settles few of them.

The score pass writes the pixels' own decisions for the update pass, not ``f`` (float64) nor the share of the
term a full buffer evicts as ``score_frame`` does: nu-NORMA's step on the pixel's own value reads ``f`` only as
``f < rho`` (:func:`_own_f`), and not the evicted share.

This module imports only numba, the frame loops' helpers and the bands' thread pool.
"""

from numba import njit

from bgsub.models._bands import run_bands
from bgsub.models._frame_kernels import (_emit, _layout, _level, _norma_step, _pixel_sum, _selected, _unref, _vec,
                                         _views)

__all__ = ["score", "update", "frame"]


def score(frame, state, scale, lut, out, feedback):
    """:func:`norma_score` over bands of the frame's rows, one band per thread."""
    run_bands(norma_score, frame.shape[0], frame, state, scale, lut, out, feedback)


def update(frame, state, scale, lut, rule, own, mask, policy, stepped):
    """:func:`norma_update` over bands of the frame's rows, one band per thread."""
    run_bands(norma_update, frame.shape[0], frame, state, scale, lut, rule, own, mask, policy, stepped)


def frame(frame, state, scale, lut, rule, policy, feedback, out):
    """:func:`norma_frame` over bands of the frame's rows, one band per thread."""
    run_bands(norma_frame, frame.shape[0], frame, state, scale, lut, rule, policy, feedback, out)


@njit(cache=True, fastmath=True, nogil=True)
def norma_score(frame, state, scale, lut, out, feedback, rows):
    """Score the rows ``rows = (start, stop)`` without learning (:func:`bgsub.models._frame_kernels.score_frame`
    with ``offset = 0`` and no texture features).

    ``state = (samples, coef, ring, rho)`` and ``feedback = (blink, prev, post, gain, up, down)`` as the frame
    kernels take them; ``out = (score, mask, own)``: the score ``level - f`` float32 (H, W), the raw mask and the
    pixel's own decision (``rho - f > 0``, without the blink feedback) uint8 (H, W). Unlike ``score_frame`` it
    writes neither ``f`` nor the evicted term's share: :func:`norma_update` needs only the own decision.
    """
    # every array as a view without a reference count, taken out of its tuple by index, once
    frame, lut = _unref(frame), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    score, mask, own = _unref(out[0]), _unref(out[1]), _unref(out[2])
    blink, prev, post = _unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2])
    gain, up, down = feedback[3], feedback[4], feedback[5]
    lay = _layout(frame, (samples, coef, ring, rho))
    W = lay[1]
    for i in range(rows[0], rows[1]):
        for j in range(W):
            _, _, _, _, f, _ = _pixel_sum(frame, samples, coef, ring, lay, i * W + j, lut, scale, None)
            level = rho[i, j]
            own[i, j] = 255 if level - f > 0.0 else 0
            _emit(_level(level, blink, i, j, gain) - f, blink, prev, post, i, j, gain, up, down, score, mask)


@njit(cache=True, inline="always")
def _own_f(own, rho0):
    """A value ``f`` on the side of ``rho0`` the pixel's own decision ``own`` (``rho0 - f > 0`` in the score pass)
    says: nu-NORMA's step reads its ``f`` only as ``f < rho`` (:func:`learners.steps.norma_novelty_update`). A
    novel pixel's ``rho0`` is above its ``f >= 0``, so above -1."""
    return -1.0 if own != 0 else rho0


@njit(cache=True, fastmath=True, nogil=True)
def norma_update(frame, state, scale, lut, rule, own, mask, policy, stepped, rows):
    """Step the pixels of the rows ``rows = (start, stop)`` that ``mask`` (the post-processed mask) selects, after
    :func:`norma_score` (:func:`bgsub.models._frame_kernels.norma_update_frame` without texture features):
    ``rule = (eta, lam, nu)``, ``own`` the score pass's own decisions (for the pixel's own value's ``f < rho``,
    :func:`_own_f`), ``policy`` as the frame kernels take it; ``stepped[i]`` receives the number of pixels of row
    ``i`` that stepped."""
    frame, lut, own, mask = _unref(frame), _unref(lut), _unref(own), _unref(mask)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho, stepped = _unref(state[3]), _unref(stepped)
    lay = _layout(frame, (samples, coef, ring, rho))
    p_bg, p_fg, _, _, seed, frame_no = policy
    W = lay[1]
    for i in range(rows[0], rows[1]):
        n = 0
        for j in range(W):
            p = i * W + j
            sv, cf, rg = _views(samples, coef, ring, lay, p)
            sel = _selected(mask[i, j] != 0, 1 if rg[1] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, p)
            rho0 = rho[i, j]
            done, new_rho = _norma_step(sel, _vec(frame, lay[4], p, lay[3]), _own_f(own[i, j], rho0), frame, lay,
                                        mask, (i, j, p), (sv, cf, rg), lut, scale, rule, rho0, policy, None)
            if done:
                rho[i, j] = new_rho
                n += 1
        stepped[i] = n


@njit(cache=True, fastmath=True, nogil=True)
def norma_frame(frame, state, scale, lut, rule, policy, feedback, out, rows):
    """One nu-NORMA frame over the rows ``rows = (start, stop)`` in one pass (``update_mask="raw"``): score, then
    the selected pixels step (:func:`bgsub.models._frame_kernels.norma_frame` without texture features; the
    arguments are its own, ``out = (score, mask, stepped)``)."""
    frame, lut = _unref(frame), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    blink, nbr_mask, post = _unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2])
    gain, up, down = feedback[3], feedback[4], feedback[5]
    score, mask, stepped = _unref(out[0]), _unref(out[1]), _unref(out[2])
    lay = _layout(frame, (samples, coef, ring, rho))
    p_bg, p_fg, _, _, seed, frame_no = policy
    W = lay[1]
    for i in range(rows[0], rows[1]):
        n = 0
        for j in range(W):
            p = i * W + j
            x, sv, cf, rg, f, _ = _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, None)
            rho0 = rho[i, j]
            _emit(_level(rho0, blink, i, j, gain) - f, blink, nbr_mask, post, i, j, gain, up, down, score, mask)
            fg = rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
            sel = _selected(fg, 1 if rg[1] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, p)
            done, new_rho = _norma_step(sel, x, f, frame, lay, nbr_mask, (i, j, p), (sv, cf, rg), lut, scale, rule,
                                        rho0, policy, None)
            if done:
                rho[i, j] = new_rho
                n += 1
        stepped[i] = n
