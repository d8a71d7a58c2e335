"""Native multiclass: one-vs-rest over a shared support set, jitted.

``K`` binary learners, one per class (class ``k`` against the rest), share one
ring of support vectors; a slot holds the point once and ``K`` coefficients
(``coef[slot, k]``), so ``f_k(x) = scale * sum_j coef[j, k] k(x_j, x) + b_k``
costs one kernel evaluation per slot for all classes. Per row with label ``c``,
every learner ``k`` sees the binary label ``y_k = +1 if k == c else -1`` and
applies its binary rule of :mod:`learners.steps` (``olk_c_multiplier``,
``norma_hinge_alpha``) to its own ``f_k``; the point enters the ring once when
any learner adds a term (the others store 0 for it). Decay and the global scale
are shared because every learner decays alike. With ``K = 2`` the two learners
are exact mirrors (``f_0 = -f_1``), which is why two classes use the binary
loops of :mod:`learners._stream` instead.

``f_out[i, k]`` receives ``f_k`` at row ``i`` before learning from it. The ring
bookkeeping is :func:`learners.expansion.expansion_push` and
:func:`learners._stream.settle_scale`, given the 2-D ``coef`` (a slot's row of
coefficients moves as one).

This module imports only numpy, numba and the numba core.
"""

import numpy as np
from numba import njit

from learners._stream import (N_ETA, N_LAM, N_MARGIN, N_SCHEDULE, N_STRICT, N_USE_OFFSET, O_C, O_R, OFFSET, SCALE,
                              STEPS, settle_scale, step_size)
from learners.expansion import expansion_push
from learners.kernels import kernel_value, self_kernel
from learners.steps import norma_decay, norma_hinge_alpha, olk_c_multiplier, olk_decay


@njit(cache=True, fastmath=True)
def ovr_scores(x, sv, coef, ring, scale, offsets, kind, width, degree, coef0, lut, out):
    """``out[k] = scale * sum_j coef[j, k] k(sv[j], x) + offsets[k]`` over the live slots."""
    B = sv.shape[0]
    K = coef.shape[1]
    for k in range(K):
        out[k] = 0.0
    for j in range(ring[1]):
        slot = ring[0] + j
        if slot >= B:
            slot -= B
        kv = kernel_value(kind, sv[slot], x, width, degree, coef0, lut)
        for k in range(K):
            out[k] += coef[slot, k] * kv
    for k in range(K):
        out[k] = scale * out[k] + offsets[k]


@njit(cache=True, fastmath=True)
def ovr_decision(X, sv, coef, ring, scale, offsets, kind, width, degree, coef0, lut, out):
    """:func:`ovr_scores` for every row of ``X`` into ``out`` (n, K)."""
    for i in range(X.shape[0]):
        ovr_scores(X[i], sv, coef, ring, scale, offsets, kind, width, degree, coef0, lut, out[i])


@njit(cache=True)
def olk_c_ovr_fit_stream(X, y, sv, coef, ring, state, offsets, rule, kind, width, degree, coef0, lut, f_out):
    """OLK_C one-vs-rest over the rows of ``X``; ``y`` holds class indices 0..K-1; ``rule`` as
    :func:`learners._stream.olk_rule` makes it."""
    r = rule[O_R]
    C = rule[O_C]
    K = coef.shape[1]
    values = np.empty(K)
    scale = state[SCALE]
    decay = olk_decay(r)
    for i in range(X.shape[0]):
        x = X[i]
        f = f_out[i]
        ovr_scores(x, sv, coef, ring, scale, offsets, kind, width, degree, coef0, lut, f)
        kxx = self_kernel(kind, x, width, degree, coef0, lut)
        new_scale = scale * decay
        grow = False
        for k in range(K):
            yk = 1.0 if y[i] == k else -1.0
            a = olk_c_multiplier(f[k], yk, kxx, r, C)
            values[k] = a * yk / (1.0 + r) / new_scale
            grow = grow or a > 0.0
        if grow:
            expansion_push(x, values, sv, coef, ring)
        scale = settle_scale(coef, ring, new_scale)
    state[SCALE] = scale
    state[STEPS] += X.shape[0]


@njit(cache=True)
def norma_ovr_fit_stream(X, y, sv, coef, ring, state, offsets, rule, kind, width, degree, coef0, lut, f_out):
    """NORMA hinge / perceptron one-vs-rest over the rows of ``X`` (``y``: class indices; ``rule`` as
    :func:`learners._stream.norma_rule` makes it for ``NORMA_HINGE``)."""
    eta = rule[N_ETA]
    schedule = rule[N_SCHEDULE]
    lam = rule[N_LAM]
    margin = rule[N_MARGIN]
    strict = rule[N_STRICT] != 0.0
    use_offset = rule[N_USE_OFFSET] != 0.0
    K = coef.shape[1]
    values = np.empty(K)
    scale = state[SCALE]
    t = state[STEPS]
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, schedule, t)
        x = X[i]
        f = f_out[i]
        ovr_scores(x, sv, coef, ring, scale, offsets, kind, width, degree, coef0, lut, f)
        new_scale = scale * norma_decay(eta_t, lam)
        grow = False
        for k in range(K):
            yk = 1.0 if y[i] == k else -1.0
            alpha = norma_hinge_alpha(f[k], yk, eta_t, margin, strict)
            values[k] = alpha / new_scale
            if alpha != 0.0:
                grow = True
                if use_offset:
                    offsets[k] += alpha
        if grow:
            expansion_push(x, values, sv, coef, ring)
        scale = settle_scale(coef, ring, new_scale)
    state[SCALE] = scale
    state[OFFSET] = 0.0
    state[STEPS] = t
