"""Jitted frame loop of the online-EM subtractor: one online-EM step of every pixel's mixture.

State is structure-of-arrays, row by row and, within a row, component-major with
the pixels last (``K`` components, ``C`` channels, ``V = C`` diag or 1 spherical):

- ``s0`` : float32 ``(H, K, W)``, ``s1`` : float32 ``(H, K, C, W)``,
  ``s2`` : float32 ``(H, K, V, W)``: each pixel's sufficient statistics
  (:mod:`learners.online_em`); the M step's parameters are computed from them
  every frame, not stored.

So ``s0[i]``, ``s1[i]``, ``s2[i]`` are the state of row ``i``'s ``W`` mixtures in
the layout of :func:`learners.online_em.gaussian_step_batch`, the batched form of
:func:`learners.online_em.gaussian_step` (the step the estimator
:class:`learners.mixture.OnlineGaussianMixture` takes per sample, here with
component birth on): its innermost loops run over the pixels of a row, so they
compile to SIMD instructions, and its arithmetic is float32.

A frame is one parallel region, ``prange`` over blocks of rows: each row's pixels
are split into colour planes, take the E step, are scored against their
*background* components, those that carry the first ``bg_ratio`` of the weight in
decreasing order of weight (weights before the step): ``score = min_k d2_k -
threshold^2`` over them, ``d2_k`` the squared Mahalanobis distance, clipped to the
score range (positive = foreground); then the update and M step.

This module imports only numpy, numba and the learners' jitted core.
"""

import numpy as np
from numba import njit, prange

from learners.online_em import (N_PAR, N_WORK, P_FAR, P_ONE, batch_constants, gaussian_e_batch,
                                gaussian_update_batch)

#: Rows per parallel task (scratch is allocated once per task).
ROWS_PER_TASK = 8


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "afn", "reassoc"})
def _background_score(s0, d2, bg_ratio, threshold2, score_max, far, one, tot, heavier, score, mask):
    """Score a row's pixels: the smallest ``d2`` among the components that carry the
    first ``bg_ratio`` of the weight (those whose heavier companions, ties broken by
    index, weigh less than ``bg_ratio`` of the total), minus ``threshold2``, clipped
    to ``score_max``; ``mask`` 255 where positive. ``s0``, ``d2`` (K, W); ``tot``,
    ``heavier`` (W,) scratch; ``score`` float32 and ``mask`` uint8 (W,) outputs; ``one``
    is 1 (float32), for the reason in :mod:`learners.online_em` (``_keep_note``).
    """
    K = s0.shape[0]
    W = s0.shape[1]
    ratio = np.float32(bg_ratio)
    for j in range(W):
        score[j] = far
        tot[j] = 0.0
    for k in range(K):
        sk = s0[k]
        for j in range(W):
            tot[j] += sk[j]
    for j in range(W):
        tot[j] *= ratio
    for k in range(K):
        sk = s0[k]
        dk = d2[k]
        for j in range(W):
            heavier[j] = 0.0
        for q in range(K):
            sq = s0[q]
            # every load before the conditional expressions (selects, not masked loads/stores)
            if q < k:
                for j in range(W):
                    wq = sq[j]
                    heavier[j] += wq if wq >= sk[j] else np.float32(0.0)
            elif q > k:
                for j in range(W):
                    wq = sq[j]
                    heavier[j] += wq if wq > sk[j] else np.float32(0.0)
        for j in range(W):
            dj = dk[j]
            sj = score[j]
            score[j] = dj if (heavier[j] < tot[j]) & (dj < sj) else sj * one
    t2 = np.float32(threshold2)
    smax = np.float32(score_max)
    for j in range(W):
        v = score[j] - t2
        v = smax if v > smax else v
        score[j] = v
        mask[j] = 255 if v > 0.0 else 0


@njit(cache=True, parallel=True, nogil=True)
def oem_frame(frame, st0, st1, st2, step, learn, spherical, reg, birth_d2, var_init, bg_ratio, threshold2,
              score_max, score, mask):
    """One frame: step every pixel's mixture (``learn``) and score it.

    Parameters
    ----------
    frame : uint8 (H, W, C)
    st0, st1, st2 : float32 state (see module docstring), updated in place when ``learn``.
    step : float
        Step size of this frame; 1 bootstraps (every pixel's mixture becomes one
        component at its value with variance ``var_init``).
    learn : bool
        False scores without learning.
    spherical : bool
    reg, birth_d2, var_init : float
        As :func:`learners.online_em.gaussian_step`.
    bg_ratio : float
        Weight share of the background components.
    threshold2 : float
        Squared Mahalanobis distance at which a pixel turns foreground.
    score_max : float
        Scores are clipped to ``[-threshold2, score_max]``.
    score : float32 (H, W)
        Output: ``min dist2 - threshold2`` over background components.
    mask : uint8 (H, W)
        Output: 255 where ``score > 0``.
    """
    H = frame.shape[0]
    W = frame.shape[1]
    C = frame.shape[2]
    K = st0.shape[1]
    par = np.empty(N_PAR, np.float32)
    batch_constants(step, reg, birth_d2, var_init, C, par)
    boot = step >= 1.0 and learn
    n_tasks = (H + ROWS_PER_TASK - 1) // ROWS_PER_TASK
    for task in prange(n_tasks):
        x = np.empty((C, W), np.float32)
        d2 = np.empty((K, W), np.float32)
        resp = np.empty((K, W), np.float32)
        work = np.empty((N_WORK, W), np.float32)
        for row in range(task * ROWS_PER_TASK, min(H, (task + 1) * ROWS_PER_TASK)):
            px = frame[row]
            for c in range(C):
                xc = x[c]
                for j in range(W):
                    xc[j] = px[j, c]
            if boot:
                # every pixel restarts component 0 at its value, weight 1 (the others vanish)
                for j in range(W):
                    work[0, j] = par[P_FAR]
                    work[1, j] = 0.0
                gaussian_update_batch(x, st0[row], st1[row], st2[row], spherical, par, resp, work)
                for j in range(W):
                    score[row, j] = -threshold2
                    mask[row, j] = 0
                continue
            gaussian_e_batch(x, st0[row], st1[row], st2[row], spherical, par, d2, resp, work)
            # work rows 0-1 (nearest distance, lightest component) are the update's input; 2-3 are free
            _background_score(st0[row], d2, bg_ratio, threshold2, score_max, par[P_FAR], par[P_ONE], work[2],
                              work[3], score[row], mask[row])
            if learn:
                gaussian_update_batch(x, st0[row], st1[row], st2[row], spherical, par, resp, work)


@njit(cache=True, parallel=True, nogil=True)
def oem_background(s0, s1, out):
    """Mean of each pixel's heaviest component, as uint8 ``(H, W, C)`` (state ``(H, K, ., W)``)."""
    H = s0.shape[0]
    K = s0.shape[1]
    W = s0.shape[2]
    C = s1.shape[2]
    for i in prange(H):
        for j in range(W):
            k = 0
            for q in range(1, K):
                if s0[i, q, j] > s0[i, k, j]:
                    k = q
            a = np.float64(s0[i, k, j])
            for c in range(C):
                v = s1[i, k, c, j] / a if a > 0.0 else 0.0
                out[i, j, c] = np.uint8(min(255.0, max(0.0, v + 0.5)))
