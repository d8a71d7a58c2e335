"""Jitted frame loop of the online-EM subtractor: one online-EM step of every pixel's mixture.

State is structure-of-arrays over the image (``K`` components, ``C`` channels):

- ``s0`` : float32 ``(H, W, K)``, ``s1`` : float32 ``(H, W, K, C)``,
  ``s2`` : float32 ``(H, W, K, C)`` (diag) or ``(H, W, K, 1)`` (spherical): each
  pixel's sufficient statistics (:mod:`learners.online_em`);
- ``mu`` (H, W, K, C), ``ivar`` (like ``s2``), ``nrm`` (H, W, K): float32 caches of
  the M step's parameters (means, inverse variances, ``|Sigma|^(-1)``).

A frame is one parallel region, ``prange`` over rows: every pixel calls
:func:`learners.online_em.gaussian_step` (the very step the estimator
:class:`learners.mixture.OnlineGaussianMixture` takes per sample, here with
component birth on) on reference-count-free views of its state, then scores the
frame against its *background* components, those that carry the first
``bg_ratio`` of the weight in decreasing order of weight (weights before the
step): ``score = min_k d2_k - threshold^2`` over them, ``d2_k`` the squared
Mahalanobis distance, clipped to the score range. Positive = foreground.

This module imports only numpy, numba and the learners' jitted core.
"""

import numpy as np
from numba import njit, prange

from bgsub.models._frame_kernels import _mat, _vec
from learners.online_em import FAR, gaussian_birth, gaussian_evaluate, gaussian_step

_FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}


@njit(cache=True, inline="always")
def _background_distance(w, d2, total, bg_ratio):
    """Smallest ``d2`` among the components that carry the first ``bg_ratio`` of the weight.

    Components are visited nearest first; the first one whose heavier
    companions weigh less than ``bg_ratio * total`` is a background component
    and gives the answer (usually the nearest, so one pass of ``K``).
    """
    K = w.shape[0]
    floor = -1.0
    floor_k = -1
    for _ in range(K):
        best = FAR
        bk = -1
        for k in range(K):
            if (d2[k] > floor or (d2[k] == floor and k > floor_k)) and d2[k] < best:
                best = d2[k]
                bk = k
        if bk < 0:
            return FAR
        heavier = 0.0
        for j in range(K):
            if w[j] > w[bk] or (w[j] == w[bk] and j < bk):
                heavier += w[j]
        if heavier < bg_ratio * total:
            return best
        floor = best
        floor_k = bk
    return FAR


@njit(cache=True, parallel=True, fastmath=_FAST, nogil=True)
def oem_frame(frame, st0, st1, st2, cmu, civ, cnrm, step, learn, spherical, reg, birth_d2, var_init, bg_ratio,
              threshold2, score_max, score, mask):
    """One frame: step every pixel's mixture (``learn``) and score it.

    Parameters
    ----------
    frame : uint8 (H, W, C)
    st0, st1, st2 : float32 state (see module docstring), updated in place when ``learn``.
    cmu, civ, cnrm : float32 (H, W, K, C), like ``st2``, (H, W, K)
        Each pixel's M-step cache (means, inverse variances, normalisers).
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
    K = st0.shape[2]
    V = st2.shape[3]
    fb = frame.ctypes.data
    b0 = st0.ctypes.data
    b1 = st1.ctypes.data
    b2 = st2.ctypes.data
    bm = cmu.ctypes.data
    bv = civ.ctypes.data
    bn = cnrm.ctypes.data
    for row in prange(H):
        dist2 = np.empty(K)
        post = np.empty(K)
        wt = np.empty(K)
        for col in range(W):
            pix = row * W + col
            px = _vec(frame, fb, pix, C)
            a0 = _vec(st0, b0, pix, K)
            a1 = _mat(st1, b1, pix, K, C)
            a2 = _mat(st2, b2, pix, K, V)
            mu = _mat(cmu, bm, pix, K, C)
            iv = _mat(civ, bv, pix, K, V)
            nr = _vec(cnrm, bn, pix, K)
            if step >= 1.0 and learn:
                gaussian_birth(px, 1.0, a0, a1, a2, spherical, reg, mu, iv, nr, var_init, 0)
                val = -threshold2
            else:
                wsum = 0.0
                for q in range(K):
                    wt[q] = a0[q]
                    wsum += wt[q]
                if learn:
                    gaussian_step(px, step, a0, a1, a2, spherical, reg, mu, iv, nr, birth_d2, var_init, dist2, post)
                else:
                    gaussian_evaluate(px, a0, mu, iv, nr, spherical, dist2, post)
                val = _background_distance(wt, dist2, wsum, bg_ratio) - threshold2
                if val > score_max:
                    val = score_max
            score[row, col] = val
            mask[row, col] = 255 if val > 0.0 else 0


@njit(cache=True, parallel=True, nogil=True)
def oem_background(s0, s1, out):
    """Mean of each pixel's heaviest component, as uint8 ``(H, W, C)``."""
    H = s0.shape[0]
    W = s0.shape[1]
    K = s0.shape[2]
    C = s1.shape[3]
    for i in prange(H):
        for j in range(W):
            k = 0
            for q in range(1, K):
                if s0[i, j, q] > s0[i, j, k]:
                    k = q
            a = np.float64(s0[i, j, k])
            for c in range(C):
                v = s1[i, j, k, c] / a if a > 0.0 else 0.0
                out[i, j, c] = np.uint8(min(255.0, max(0.0, v + 0.5)))
