"""Jitted frame loops of the per-pixel SVMD novelty subtractor, ``prange`` over rows.

Every pixel owns one SVMD novelty learner (:mod:`learners.svmd_steps`, loss
``NOVELTY`` with the nu-trick): its own step size eta, margin eps and their SMD
companions. State, structure of arrays over the image (all C-contiguous):

- ``samples`` uint8 ``(H, W, B, C)``: pixel values of the expansion;
- ``alpha``, ``beta`` float64 ``(H, W, B, 1)``: coefficients of f and of v;
- ``ring`` int64 ``(H, W, 2)``: ``[start, count]``;
- ``state`` float64 ``(H, W, STATE_SIZE)``: eta, pi, ||f||^2, eps, ... per pixel;
- ``offset`` float64 ``(H, W, 3, 1)``: unused offset slots (no pixel offset).

A frame is one parallel region: each pixel evaluates ``f_t(x)`` and ``v_t(x)``
(:func:`learners.svmd_steps.svmd_predict`), scores ``eps - f`` (positive =
novelty = foreground) and, when the update policy selects it, calls the very
update the estimator :class:`learners.svmd.SVMDOneClass` uses
(:func:`learners.svmd_steps.svmd_loss_update`). With every pixel selected a
frame is exactly ``svmd_novelty_step`` per pixel.

This module imports only numpy, numba and the learners' jitted core.
"""

import numpy as np
from numba import njit, prange

from bgsub.models._frame_kernels import _bootstrap_source, _expansion_layout, _mat, _selected, _vec
from learners.kernels import GAUSSIAN
from learners.svmd_steps import EPS, NOVELTY, STATE_SIZE, svmd_loss_update, svmd_predict


@njit(cache=True, inline="always")
def _svmd_views(samples, alpha, beta, ring, state, offset, p, B, nc):
    """Pixel ``p``'s learner as reference-count-free views ``(sv, al, be, rg, st, of)``: samples, the
    coefficients of f and of v, ring, SMD state and offset slots."""
    return (_mat(samples, samples.ctypes.data, p, B, nc), _mat(alpha, alpha.ctypes.data, p, B, 1),
            _mat(beta, beta.ctypes.data, p, B, 1), _vec(ring, ring.ctypes.data, p, 2),
            _vec(state, state.ctypes.data, p, STATE_SIZE), _mat(offset, offset.ctypes.data, p, 3, 1))


@njit(cache=True, inline="always")
def _svmd_scratch(B):
    """One row's scratch for :func:`learners.svmd_steps.svmd_predict` and ``svmd_loss_update``: the kernel row,
    f, v and the work rows."""
    return np.empty(B), np.empty(1), np.empty(1), np.empty((4, 1))


@njit(cache=True, parallel=True, fastmath=False, nogil=True)
def svmd_frame(frame, samples, alpha, beta, ring, state, offset, kappa, params, width, p_bg, p_fg, seed, frame_no,
               external, score, mask, stepped):
    """One frame: score every pixel, then step those the policy selects.

    ``external`` (uint8 (H, W) or empty): when given, the policy reads this mask
    (``update_mask="post"``) instead of the raw one; ``score``/``mask`` are then
    left as the scoring pass wrote them.
    """
    H, W, B, nc, fb, _, _, _ = _expansion_layout(frame, samples, alpha, ring)
    use_external = external.shape[0] == H
    for i in prange(H):
        krow, f_raw, v_raw, work = _svmd_scratch(B)
        n = 0
        for j in range(W):
            p = i * W + j
            x = _vec(frame, fb, p, nc)
            sv, al, be, rg, st, of = _svmd_views(samples, alpha, beta, ring, state, offset, p, B, nc)
            svmd_predict(x, sv, al, be, rg, kappa, GAUSSIAN, width, 0.0, 0.0, krow, f_raw, v_raw, work[3])
            sc = st[EPS] - f_raw[0]
            if use_external:
                fg = external[i, j] != 0
            else:
                fg = sc > 0.0
                score[i, j] = sc
                mask[i, j] = 255 if fg else 0
            if _selected(fg, 1 if rg[1] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, p):
                svmd_loss_update(NOVELTY, x, 0.0, kappa, krow, 1.0, f_raw, v_raw, f_raw, sv, al, be, rg, kappa, st,
                                 of, params, work)
                n += 1
        stepped[i] = n


@njit(cache=True, parallel=True, fastmath=False, nogil=True)
def svmd_bootstrap(frame, dy, dx, samples, alpha, beta, ring, state, offset, kappa, params, width, steps, score,
                   mask):
    """The first-frame bootstrap pixel by pixel: ``steps`` SVMD steps of every pixel, step ``b`` on the value at
    :func:`bgsub.models._frame_kernels._bootstrap_source`; the same as ``steps`` calls of :func:`svmd_frame` on
    the frames of those values with every pixel selected, bit for bit (the same calls in the same order for
    each pixel), with its state in cache through its steps."""
    H, W, B, nc, fb, _, _, _ = _expansion_layout(frame, samples, alpha, ring)
    for i in prange(H):
        krow, f_raw, v_raw, work = _svmd_scratch(B)
        for j in range(W):
            sv, al, be, rg, st, of = _svmd_views(samples, alpha, beta, ring, state, offset, i * W + j, B, nc)
            for b in range(steps):
                x = _vec(frame, fb, _bootstrap_source(dy, dx, b, i, j, H, W), nc)
                svmd_predict(x, sv, al, be, rg, kappa, GAUSSIAN, width, 0.0, 0.0, krow, f_raw, v_raw, work[3])
                sc = st[EPS] - f_raw[0]
                score[i, j] = sc
                mask[i, j] = 255 if sc > 0.0 else 0
                svmd_loss_update(NOVELTY, x, 0.0, kappa, krow, 1.0, f_raw, v_raw, f_raw, sv, al, be, rg, kappa, st,
                                 of, params, work)
