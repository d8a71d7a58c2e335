"""Jitted frame loops of the per-pixel SVMD novelty subtractor, ``prange`` over rows.

Every pixel owns one SVMD novelty learner (:mod:`learners.svmd_steps`, loss
``NOVELTY`` with the nu-trick): its own step size eta, margin eps and their SMD
companions. State, structure of arrays over the image (all C-contiguous):

- ``samples`` uint8 ``(H, W, B, C)``: pixel values of the expansion;
- ``alpha``, ``beta`` float64 ``(H, W, B, 1)``: coefficients of f and of v;
- ``ring`` int64 ``(H, W, 2)``: ``[start, count]``;
- ``state`` float64 ``(H, W, STATE_SIZE)``: eta, pi, ||f||^2, eps, ... per pixel;
- ``offset`` float64 ``(H, W, 3, 1)``: unused offset slots (no pixel offset);

passed to the kernels as one tuple ``model = (samples, alpha, beta, ring, state, offset)``.

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
def _svmd_views(model, p, B, nc):
    """Pixel ``p``'s learner ``(sv, al, be, rg, st, of)`` as reference-count-free views of ``model = (samples,
    alpha, beta, ring, state, offset)``: samples, the coefficients of f and of v, ring, SMD state and offset
    slots."""
    return (_mat(model[0], model[0].ctypes.data, p, B, nc), _mat(model[1], model[1].ctypes.data, p, B, 1),
            _mat(model[2], model[2].ctypes.data, p, B, 1), _vec(model[3], model[3].ctypes.data, p, 2),
            _vec(model[4], model[4].ctypes.data, p, STATE_SIZE), _mat(model[5], model[5].ctypes.data, p, 3, 1))


@njit(cache=True, inline="always")
def _svmd_scratch(B):
    """One row's scratch for :func:`learners.svmd_steps.svmd_predict` and ``svmd_loss_update``: the kernel row,
    f, v and the work rows."""
    return np.empty(B), np.empty(1), np.empty(1), np.empty((4, 1))


@njit(cache=True, inline="always")
def _svmd_score(x, views, kappa, width, krow, f_raw, v_raw, work):
    """``eps - f_t(x)`` of one pixel's learner (``views``: :func:`_svmd_views`), filling the kernel row, f and v
    for its step."""
    sv, al, be, rg, st, _ = views
    svmd_predict(x, sv, al, be, rg, kappa, GAUSSIAN, width, 0.0, 0.0, krow, f_raw, v_raw, work[3])
    return st[EPS] - f_raw[0]


@njit(cache=True, parallel=True, fastmath=False, nogil=True)
def svmd_frame(frame, model, kappa, params, width, policy, external, out):
    """One frame: score every pixel, then step those the policy selects.

    ``model = (samples, alpha, beta, ring, state, offset)`` (module docstring); ``policy = (p_bg, p_fg, p_diff,
    radius, seed, frame_no)`` (no diffusion: a pixel learns only its own values); ``out = (score, mask,
    stepped)``. ``external`` (uint8 (H, W) or empty): when given, the policy reads this mask
    (``update_mask="post"``) instead of the raw one; ``score``/``mask`` are then
    left as the scoring pass wrote them.
    """
    samples = model[0]
    score = out[0]  # (indexed, not unpacked: see bgsub.models._frame_kernels)
    mask = out[1]
    stepped = out[2]
    p_bg, p_fg, _, _, seed, frame_no = policy
    H, W, B, nc, fb, _, _, _ = _expansion_layout(frame, samples, model[1], model[3])
    use_external = external.shape[0] == H
    for i in prange(H):
        krow, f_raw, v_raw, work = _svmd_scratch(B)
        n = 0
        for j in range(W):
            p = i * W + j
            x = _vec(frame, fb, p, nc)
            views = _svmd_views(model, p, B, nc)
            sc = _svmd_score(x, views, kappa, width, krow, f_raw, v_raw, work)
            if use_external:
                fg = external[i, j] != 0
            else:
                fg = sc > 0.0
                score[i, j] = sc
                mask[i, j] = 255 if fg else 0
            if _selected(fg, 1 if views[3][1] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, p):
                svmd_loss_update(NOVELTY, x, 0.0, kappa, krow, 1.0, f_raw, v_raw, f_raw, views, kappa, params, work)
                n += 1
        stepped[i] = n


@njit(cache=True, parallel=True, fastmath=False, nogil=True)
def svmd_bootstrap(frame, draws, model, kappa, params, width, steps, score, mask):
    """The first-frame bootstrap pixel by pixel: ``steps`` SVMD steps of every pixel, step ``b`` on the value at
    :func:`bgsub.models._frame_kernels._bootstrap_source`; the same as ``steps`` calls of :func:`svmd_frame` on
    the frames of those values with every pixel selected, bit for bit (the same calls in the same order for
    each pixel), with its state in cache through its steps."""
    H, W, B, nc, fb, _, _, _ = _expansion_layout(frame, model[0], model[1], model[3])
    for i in prange(H):
        krow, f_raw, v_raw, work = _svmd_scratch(B)
        for j in range(W):
            views = _svmd_views(model, i * W + j, B, nc)
            for b in range(steps):
                x = _vec(frame, fb, _bootstrap_source(draws, b, i, j, H, W), nc)
                sc = _svmd_score(x, views, kappa, width, krow, f_raw, v_raw, work)
                score[i, j] = sc
                mask[i, j] = 255 if sc > 0.0 else 0
                svmd_loss_update(NOVELTY, x, 0.0, kappa, krow, 1.0, f_raw, v_raw, f_raw, views, kappa, params, work)
