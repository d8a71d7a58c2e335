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


@njit(cache=True, parallel=True, fastmath=False, nogil=True)
def svmd_frame(frame, samples, alpha, beta, ring, state, offset, kappa, params, width, p_bg, p_fg, seed, frame_no,
               external, score, mask, stepped):
    """One frame: score every pixel, then step those the policy selects.

    ``external`` (uint8 (H, W) or empty): when given, the policy reads this mask
    (``update_mask="post"``) instead of the raw one; ``score``/``mask`` are then
    left as the scoring pass wrote them.
    """
    H, W, B, nc, fb, sb, ab, rb = _expansion_layout(frame, samples, alpha, ring)
    use_external = external.shape[0] == H
    bb = beta.ctypes.data
    tb = state.ctypes.data
    ob = offset.ctypes.data
    for i in prange(H):
        krow = np.empty(B)
        f_raw = np.empty(1)
        v_raw = np.empty(1)
        work = np.empty((4, 1))
        n = 0
        for j in range(W):
            p = i * W + j
            x = _vec(frame, fb, p, nc)
            sv = _mat(samples, sb, p, B, nc)
            al = _mat(alpha, ab, p, B, 1)
            be = _mat(beta, bb, p, B, 1)
            rg = _vec(ring, rb, p, 2)
            st = _vec(state, tb, p, STATE_SIZE)
            of = _mat(offset, ob, p, 3, 1)
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
    H, W, B, nc, fb, sb, ab, rb = _expansion_layout(frame, samples, alpha, ring)
    bb = beta.ctypes.data
    tb = state.ctypes.data
    ob = offset.ctypes.data
    for i in prange(H):
        krow = np.empty(B)
        f_raw = np.empty(1)
        v_raw = np.empty(1)
        work = np.empty((4, 1))
        for j in range(W):
            p = i * W + j
            sv = _mat(samples, sb, p, B, nc)
            al = _mat(alpha, ab, p, B, 1)
            be = _mat(beta, bb, p, B, 1)
            rg = _vec(ring, rb, p, 2)
            st = _vec(state, tb, p, STATE_SIZE)
            of = _mat(offset, ob, p, 3, 1)
            for b in range(steps):
                x = _vec(frame, fb, _bootstrap_source(dy, dx, b, i, j, H, W), nc)
                svmd_predict(x, sv, al, be, rg, kappa, GAUSSIAN, width, 0.0, 0.0, krow, f_raw, v_raw, work[3])
                sc = st[EPS] - f_raw[0]
                score[i, j] = sc
                mask[i, j] = 255 if sc > 0.0 else 0
                svmd_loss_update(NOVELTY, x, 0.0, kappa, krow, 1.0, f_raw, v_raw, f_raw, sv, al, be, rg, kappa, st,
                                 of, params, work)
