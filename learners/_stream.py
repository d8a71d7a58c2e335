"""Whole-stream loops around the step functions of :mod:`learners.steps`, jitted.

A call from Python into numba costs about a microsecond, more than a whole update
on a small expansion, so the estimators hand every row of a ``partial_fit`` batch
to one of these loops. Each loop calls the rule's ``*_step`` once per row, in
order, and applies the common decay to the global scale afterwards (the scale
convention of :mod:`learners.steps`), renormalising before the scale
under/overflows.

The learner's small scalar state travels in one float64 array ``state``:

=========  ==================================================================
index      meaning
=========  ==================================================================
SCALE      global scale ``s`` (true coefficient = ``s * coef[j]``)
RHO        rho of the nu rules (NORMA nu-classification / novelty, OLK_N)
OFFSET     offset ``b`` of ``f(x) = sum_j alpha_j k(x_j, x) + b`` (NORMA)
EPSILON    tube half-width epsilon (NORMA nu-epsilon-insensitive adapts it)
SIGMA      Huber's sigma (adaptive Huber adapts it)
STEPS      number of steps taken so far (for ``eta_t = eta / sqrt(t)``)
=========  ==================================================================

Every loop writes ``f_out[i] = f_t(x_i)``, the prediction made on row ``i``
*before* learning from it (offset included), so a caller can count online
mistakes.

This module imports only numpy, numba and the numba core.
"""

import math

import numpy as np
from numba import njit

from learners.expansion import SCALE_MAX, SCALE_MIN, expansion_sum
from learners.steps import (
    norma_classification_step,
    norma_decay,
    norma_novelty_step,
    norma_nu_classification_step,
    norma_regression_step,
    olk_c_step,
    olk_decay,
    olk_n_step,
    olk_r_step,
)

SCALE = 0
RHO = 1
OFFSET = 2
EPSILON = 3
SIGMA = 4
STEPS = 5
STATE_SIZE = 6


def new_state():
    """A fresh ``state`` array: scale 1, everything else 0."""
    state = np.zeros(STATE_SIZE, dtype=np.float64)
    state[SCALE] = 1.0
    return state


@njit(cache=True)
def renormalise(coef, ring, scale):
    """Fold ``scale`` into the live coefficients (``coef *= scale``); returns the new scale, 1."""
    B = coef.shape[0]
    for j in range(ring[1]):
        slot = ring[0] + j
        if slot >= B:
            slot -= B
        coef[slot] = coef[slot] * scale
    return 1.0


@njit(cache=True)
def settle_scale(coef, ring, scale):
    """``scale``, or 1 after :func:`renormalise` when it left ``[SCALE_MIN, SCALE_MAX]``."""
    if scale < SCALE_MIN or scale > SCALE_MAX:
        return renormalise(coef, ring, scale)
    return scale


@njit(cache=True)
def step_size(eta, invsqrt, t):
    """NORMA's ``eta_t``: ``eta`` (constant) or ``eta / sqrt(t)`` for the ``t``-th step (1-based)."""
    if invsqrt:
        return eta / math.sqrt(t)
    return eta


@njit(cache=True, fastmath=True)
def expansion_decision(X, sv, coef, ring, scale, kind, width, degree, coef0, lut, out):
    """``out[i] = scale * sum_j coef[j] k(sv[j], X[i])`` for every row of ``X``."""
    for i in range(X.shape[0]):
        total, _ = expansion_sum(X[i], sv, coef, ring, kind, width, degree, coef0, lut)
        out[i] = scale * total


# --------------------------------------------------------------------------
# OLK
# --------------------------------------------------------------------------


@njit(cache=True)
def olk_c_fit_stream(X, y, sv, coef, ring, state, r, C, kind, width, degree, coef0, lut, sv_threshold, f_out):
    """OLK_C over the rows of ``X`` (labels ``y`` in {-1, +1})."""
    scale = state[SCALE]
    decay = olk_decay(r)
    for i in range(X.shape[0]):
        f, _ = olk_c_step(X[i], y[i], sv, coef, ring, scale, r, C, kind, width, degree, coef0, lut, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * decay)
    state[SCALE] = scale
    state[STEPS] += X.shape[0]


@njit(cache=True)
def olk_r_fit_stream(X, y, sv, coef, ring, state, r, C, epsilon, kind, width, degree, coef0, lut, sv_threshold,
                     f_out):
    """OLK_R over the rows of ``X`` with targets ``y``."""
    scale = state[SCALE]
    decay = olk_decay(r)
    for i in range(X.shape[0]):
        f, _ = olk_r_step(X[i], y[i], sv, coef, ring, scale, r, C, epsilon, kind, width, degree, coef0, lut,
                          sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * decay)
    state[SCALE] = scale
    state[STEPS] += X.shape[0]


@njit(cache=True)
def olk_n_fit_stream(X, sv, coef, ring, state, r, nu, C, rho_rule, kind, width, degree, coef0, lut, sv_threshold,
                     f_out, a_out):
    """OLK_N over the rows of ``X``; ``a_out[i]`` receives the dual variable of row ``i``."""
    scale = state[SCALE]
    rho = state[RHO]
    decay = olk_decay(r)
    for i in range(X.shape[0]):
        f, a, rho = olk_n_step(X[i], sv, coef, ring, scale, r, nu, C, rho, rho_rule, kind, width, degree, coef0,
                               lut, sv_threshold)
        f_out[i] = f
        a_out[i] = a
        scale = settle_scale(coef, ring, scale * decay)
    state[SCALE] = scale
    state[RHO] = rho
    state[STEPS] += X.shape[0]


# --------------------------------------------------------------------------
# NORMA
# --------------------------------------------------------------------------


@njit(cache=True)
def norma_classification_fit_stream(X, y, sv, coef, ring, state, eta, invsqrt, lam, margin, strict, use_offset,
                                    kind, width, degree, coef0, lut, sv_threshold, f_out):
    """Soft-margin NORMA / kernel perceptron over the rows of ``X`` (``y`` in {-1, +1})."""
    scale = state[SCALE]
    b = state[OFFSET]
    t = state[STEPS]
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, invsqrt, t)
        f, _, b = norma_classification_step(X[i], y[i], sv, coef, ring, scale, eta_t, lam, margin, strict, b,
                                            use_offset, kind, width, degree, coef0, lut, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * norma_decay(eta_t, lam))
    state[SCALE] = scale
    state[OFFSET] = b
    state[STEPS] = t


@njit(cache=True)
def norma_nu_classification_fit_stream(X, y, sv, coef, ring, state, eta, invsqrt, lam, nu, use_offset, kind, width,
                                       degree, coef0, lut, sv_threshold, f_out):
    """nu-NORMA classification over the rows of ``X`` (``y`` in {-1, +1})."""
    scale = state[SCALE]
    rho = state[RHO]
    b = state[OFFSET]
    t = state[STEPS]
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, invsqrt, t)
        f, _, rho, b = norma_nu_classification_step(X[i], y[i], sv, coef, ring, scale, eta_t, lam, nu, rho, b,
                                                    use_offset, kind, width, degree, coef0, lut, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * norma_decay(eta_t, lam))
    state[SCALE] = scale
    state[RHO] = rho
    state[OFFSET] = b
    state[STEPS] = t


@njit(cache=True)
def norma_regression_fit_stream(X, y, sv, coef, ring, state, eta, invsqrt, lam, loss, nu, use_offset, kind, width,
                                degree, coef0, lut, sv_threshold, f_out):
    """NORMA regression (any loss of :data:`learners.steps.REGRESSION_LOSSES`) over the rows of ``X``."""
    scale = state[SCALE]
    b = state[OFFSET]
    epsilon = state[EPSILON]
    sigma = state[SIGMA]
    t = state[STEPS]
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, invsqrt, t)
        f, _, epsilon, sigma, b = norma_regression_step(X[i], y[i], sv, coef, ring, scale, eta_t, lam, loss,
                                                        epsilon, nu, sigma, b, use_offset, kind, width, degree,
                                                        coef0, lut, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * norma_decay(eta_t, lam))
    state[SCALE] = scale
    state[OFFSET] = b
    state[EPSILON] = epsilon
    state[SIGMA] = sigma
    state[STEPS] = t


@njit(cache=True)
def norma_novelty_fit_stream(X, sv, coef, ring, state, eta, invsqrt, lam, nu, kind, width, degree, coef0, lut,
                             sv_threshold, f_out):
    """nu-NORMA novelty detection over the rows of ``X``."""
    scale = state[SCALE]
    rho = state[RHO]
    t = state[STEPS]
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, invsqrt, t)
        f, _, rho = norma_novelty_step(X[i], sv, coef, ring, scale, eta_t, lam, nu, rho, kind, width, degree,
                                       coef0, lut, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * norma_decay(eta_t, lam))
    state[SCALE] = scale
    state[RHO] = rho
    state[STEPS] = t
