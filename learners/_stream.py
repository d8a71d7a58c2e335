"""Whole-stream loops around the step functions of :mod:`learners.steps`, jitted.

A call from Python into numba costs about a microsecond, more than a whole update
on a small expansion, so the estimators hand every row of a ``partial_fit`` batch
to one of these loops: :func:`olk_fit_stream` (OLK_C, OLK_R, OLK_N) and
:func:`norma_fit_stream` (the four NORMA rules). Each loop runs the rule once per
row, in order, and applies the common decay to the global scale afterwards (the
scale convention of :mod:`learners.steps`), renormalising before the scale
under/overflows.

Every loop takes ``(X, y, sv, coef, ring, state, rule, kind, width, degree, coef0, lut,
f_out, memo, memo_x)``: the rows, the expansion's arrays (written in place), the
rule's constants as one float64 array ``rule`` (built once by :func:`olk_rule` /
:func:`norma_rule`; ``rule[0]`` picks the rule), the kernel arguments of
:func:`learners.kernels.kernel_value`, and the outputs. Arrays keep the call from
Python cheap: a tuple argument costs numba's dispatcher about 1 us more, a
namedtuple about 3 us, as much as a whole single-row update.

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
mistakes. ``memo``/``memo_x`` hold the last single-row prediction :func:`score_row`
made (:data:`NO_MEMO` for batches): when the first row of ``X`` is that row and the
model has not changed since (same step count), its ``f_t(x)`` is taken from there
instead of being computed again (``predict_one`` then ``learn_one`` on the same row
evaluate the expansion once, and learn exactly what two evaluations would).

Each loop body is exactly the rule's ``*_step`` of :mod:`learners.steps`: evaluate
``f_t(x)`` (:func:`kernel_sum`), then call the rule's ``*_update``. The only
difference is the evaluation: for the Gaussian kernel on 1- to 3-dimensional
inputs :func:`kernel_sum` uses a loop the compiler can vectorise, with a
polynomial ``exp`` (:func:`exp_neg`, relative error below 1e-15) in place of the
scalar libm call that bounds :func:`learners.expansion.expansion_sum` (about 5x
faster on 2-D data). Every other case calls ``expansion_sum`` itself.

This module imports only numpy, numba and the numba core.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from learners.expansion import SCALE_MAX, SCALE_MIN, expansion_sum
from learners.kernels import GAUSSIAN, self_kernel
from learners.steps import (
    norma_classification_update,
    norma_decay,
    norma_novelty_update,
    norma_nu_classification_update,
    norma_regression_update,
    olk_c_update,
    olk_decay,
    olk_n_update,
    olk_r_update,
)

SCALE = 0
RHO = 1
OFFSET = 2
EPSILON = 3
SIGMA = 4
STEPS = 5
STATE_SIZE = 6


#: ``memo`` and ``memo_x`` of the stream loops when no prediction is remembered (batches), and the
#: ``y`` of the novelty rules.
NO_MEMO = np.zeros(0, dtype=np.float64)


def new_memo(n_features):
    """``(memo, memo_x)`` for :func:`score_row`: ``memo = [step count, raw f]`` (step count -1: nothing
    remembered), ``memo_x`` the row."""
    return np.array([-1.0, 0.0]), np.zeros(n_features, dtype=np.float64)


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
def step_size(eta, schedule, t):
    """NORMA's ``eta_t`` for the ``t``-th step (1-based), by ``schedule`` (see :func:`schedule_code`):

    ``SCHEDULE_CONSTANT`` (0): ``eta``; ``SCHEDULE_INVSQRT`` (-1): ``eta / sqrt(t)``;
    ``tau > 0``: the step decay ``eta tau / (tau + t)`` (SVMD paper, eq. 59).
    """
    if schedule > 0.0:
        return eta * schedule / (schedule + t)
    if schedule < 0.0:
        return eta / math.sqrt(t)
    return eta


#: ``schedule`` codes of :func:`step_size` (a positive value is the decay's ``tau``).
SCHEDULE_CONSTANT = 0.0
SCHEDULE_INVSQRT = -1.0


def schedule_code(learning_rate, tau):
    """The float :func:`step_size` takes for ``learning_rate`` in {"constant", "invsqrt", "decay"}."""
    if learning_rate == "decay":
        return float(tau)
    return SCHEDULE_INVSQRT if learning_rate == "invsqrt" else SCHEDULE_CONSTANT


# --------------------------------------------------------------------------
# evaluation: a vectorisable Gaussian kernel sum
# --------------------------------------------------------------------------

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10


@intrinsic
def _int64_bits_as_float64(typingctx, bits):
    """Reinterpret the 64 bits of an int64 as a float64 (an LLVM bitcast)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@njit(inline="always", fastmath=True)
def exp_neg(v):
    """``exp(v)`` for ``v <= 0`` without a libm call, so loops over it vectorise.

    ``v`` is clamped at -700 (``exp(-700) ~ 1e-304``); ``exp(v) = 2^k exp(r)`` with
    ``|r| <= ln2/2`` and ``exp(r)`` by its degree-12 Taylor polynomial (truncation
    below 2e-16 relative); ``2^k`` is built from its exponent bits.
    """
    v = max(v, -700.0)
    k = math.floor(v * _LOG2E + 0.5)
    r = v - k * _LN2_HI - k * _LN2_LO
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (
            1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600))))))))))))
    return p * _int64_bits_as_float64((np.int64(k) + 1023) << 52)


@njit(cache=True, fastmath=True)
def _gaussian_segment(flat, d, coef, lo, hi, x, inv):
    """``sum_{j=lo}^{hi-1} coef[j] exp(-||sv[j] - x||^2 inv)`` over the flattened ``sv``, d = 1, 2 or 3."""
    s = 0.0
    if d == 1:
        x0 = x[0]
        for j in range(lo, hi):
            a = flat[j] - x0
            s += coef[j] * exp_neg(-(a * a) * inv)
    elif d == 2:
        x0 = x[0]
        x1 = x[1]
        for j in range(lo, hi):
            a = flat[2 * j] - x0
            b = flat[2 * j + 1] - x1
            s += coef[j] * exp_neg(-(a * a + b * b) * inv)
    else:
        x0 = x[0]
        x1 = x[1]
        x2 = x[2]
        for j in range(lo, hi):
            a = flat[3 * j] - x0
            b = flat[3 * j + 1] - x1
            c = flat[3 * j + 2] - x2
            s += coef[j] * exp_neg(-(a * a + b * b + c * c) * inv)
    return s


@njit(cache=True, fastmath=True)
def kernel_sum(x, sv, coef, ring, kind, width, degree, coef0, lut):
    """Same contract as :func:`learners.expansion.expansion_sum`: ``(total, oldest)``.

    ``sv`` must be C-contiguous. Gaussian kernel with ``d <= 3``: the live slots are
    two contiguous runs of the ring, summed by :func:`_gaussian_segment`; else
    ``expansion_sum``.
    """
    d = sv.shape[1]
    if kind != GAUSSIAN or d > 3:
        return expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    B = sv.shape[0]
    start = ring[0]
    count = ring[1]
    if count == 0:
        return 0.0, 0.0
    inv = 1.0 / (width * width)
    flat = sv.reshape(-1)
    end = start + count
    if end <= B:
        total = _gaussian_segment(flat, d, coef, start, end, x, inv)
    else:
        total = _gaussian_segment(flat, d, coef, start, B, x, inv) + _gaussian_segment(flat, d, coef, 0, end - B,
                                                                                       x, inv)
    oldest = 0.0
    if count == B:
        oldest = _gaussian_segment(flat, d, coef, start, start + 1, x, inv)
    return total, oldest


@njit(cache=True)
def finite_row(X):
    """Whether the first row of ``X`` holds only finite values."""
    for v in X[0]:
        if not math.isfinite(v):
            return False
    return True


@njit(cache=True)
def take_memo(X, memo, memo_x, steps):
    """Whether ``memo`` holds the raw ``f`` of the one row of ``X`` on this model (the step count
    :func:`score_row` saw is ``steps``, the row has the same values); forgets it either way, since
    the caller is about to change the model."""
    if memo.shape[0] == 0:
        return False
    hit = memo[0] == steps and X.shape[0] == 1 and memo_x.shape[0] == X.shape[1]
    memo[0] = -1.0
    if hit:
        for c in range(X.shape[1]):
            if X[0, c] != memo_x[c]:
                return False
    return hit


@njit(cache=True)
def score_row(X, sv, coef, ring, state, kind, width, degree, coef0, lut, memo, memo_x):
    """``scale * sum_j coef[j] k(sv[j], x)`` of the one row of ``X``, remembered in ``memo``/``memo_x``
    for the stream loop that may learn from this row next; NaN (nothing remembered) when ``x`` holds
    NaN or infinity."""
    x = X[0]
    for v in x:
        if not math.isfinite(v):
            memo[0] = -1.0
            return math.nan
    total, _ = kernel_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    raw = state[SCALE] * total
    memo_x[:] = x
    memo[0] = state[STEPS]
    memo[1] = raw
    return raw


@njit(cache=True, inline="always")
def given_f(X, memo, memo_x, steps, b):
    """``f_given`` of a stream loop: ``[raw + b]`` when ``memo`` holds the raw ``f`` of the one row
    of ``X`` on this model (:func:`take_memo`), else empty."""
    if take_memo(X, memo, memo_x, steps):
        memo[1] += b
        return memo[1:2]
    return memo[0:0]


@njit(cache=True, inline="always")
def stream_value(f_given, i, x, sv, coef, ring, scale, b, kind, width, degree, coef0, lut):
    """``f_t(x)`` of row ``i``: ``f_given[i]`` when the caller already has it (``f_given`` not empty),
    else ``scale * sum_j coef[j] k(sv[j], x) + b``."""
    if f_given.shape[0] > 0:
        return f_given[i]
    total, _ = kernel_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    return scale * total + b


@njit(cache=True, fastmath=True)
def expansion_decision(X, sv, coef, ring, scale, kind, width, degree, coef0, lut, out):
    """``out[i] = scale * sum_j coef[j] k(sv[j], X[i])`` for every row of ``X``."""
    for i in range(X.shape[0]):
        total, _ = kernel_sum(X[i], sv, coef, ring, kind, width, degree, coef0, lut)
        out[i] = scale * total


# --------------------------------------------------------------------------
# the rule's constants: one float64 array per loop call
# --------------------------------------------------------------------------

# OLK rules (:func:`olk_fit_stream`) and the indices of their ``rule`` array (:func:`olk_rule`)
OLK_C = 0
OLK_R = 1
OLK_N = 2
O_FORM, O_R, O_C, O_EPSILON, O_NU, O_RHO_RULE, O_THRESHOLD = range(7)

# NORMA rules (:func:`norma_fit_stream`) and the indices of their ``rule`` array (:func:`norma_rule`)
NORMA_HINGE = 0
NORMA_NU = 1
NORMA_REGRESSION = 2
NORMA_NOVELTY = 3
N_FORM, N_ETA, N_SCHEDULE, N_LAM, N_MARGIN, N_STRICT, N_NU, N_LOSS, N_USE_OFFSET, N_THRESHOLD = range(10)


def olk_rule(form, r, C, *, epsilon=0.0, nu=0.0, rho_rule=0, sv_threshold=0.0):
    """The ``rule`` array of :func:`olk_fit_stream` (and of the one-vs-rest OLK_C loop)."""
    return np.array([form, r, C, epsilon, nu, rho_rule, sv_threshold], dtype=np.float64)


def norma_rule(form, p, *, margin=0.0, strict=True, nu=0.0, loss=0, use_offset=False):
    """The ``rule`` array of :func:`norma_fit_stream` (and of the one-vs-rest NORMA loop); ``p`` holds
    the checked ``eta``, ``schedule``, ``lam`` and ``sv_threshold``."""
    return np.array([form, p["eta"], p["schedule"], p["lam"], margin, strict, nu, loss, use_offset,
                     p["sv_threshold"]], dtype=np.float64)


# --------------------------------------------------------------------------
# OLK
# --------------------------------------------------------------------------


@njit(cache=True)
def olk_fit_stream(X, y, sv, coef, ring, state, rule, kind, width, degree, coef0, lut, f_out, memo, memo_x):
    """OLK_C (labels ``y`` in {-1, +1}), OLK_R (targets ``y``) or OLK_N (``y`` unused) over the rows of
    ``X``, by ``rule[O_FORM]``. OLK_N evaluates every row itself (its rho rule needs the term a full
    expansion evicts): it takes no remembered ``f``."""
    form = int(rule[O_FORM])
    r = rule[O_R]
    C = rule[O_C]
    sv_threshold = rule[O_THRESHOLD]
    f_given = given_f(X, memo, memo_x, state[STEPS], 0.0)
    if form == OLK_N:
        f_given = f_given[0:0]
    scale = state[SCALE]
    rho = state[RHO]
    decay = olk_decay(r)
    for i in range(X.shape[0]):
        x = X[i]
        if f_given.shape[0] > 0:
            f = f_given[i]
            oldest = 0.0
        else:
            total, oldest = kernel_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
            f = scale * total
        kxx = self_kernel(kind, x, width, degree, coef0, lut)
        if form == OLK_C:
            olk_c_update(x, y[i], f, sv, coef, ring, scale, r, C, kxx, sv_threshold)
        elif form == OLK_R:
            olk_r_update(x, y[i], f, sv, coef, ring, scale, r, C, rule[O_EPSILON], kxx, sv_threshold)
        else:
            _, rho = olk_n_update(x, f, scale * oldest, sv, coef, ring, scale, r, rule[O_NU], C, rho,
                                  int(rule[O_RHO_RULE]), kxx, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * decay)
    state[SCALE] = scale
    state[RHO] = rho
    state[STEPS] += X.shape[0]


# --------------------------------------------------------------------------
# NORMA
# --------------------------------------------------------------------------


@njit(cache=True)
def norma_fit_stream(X, y, sv, coef, ring, state, rule, kind, width, degree, coef0, lut, f_out, memo, memo_x):
    """NORMA over the rows of ``X``, by ``rule[N_FORM]``: soft margin / kernel perceptron
    (``NORMA_HINGE``) or nu-classification (``y`` in {-1, +1}), regression (any loss of
    :data:`learners.steps.REGRESSION_LOSSES`, targets ``y``) or nu-novelty (``y`` unused)."""
    form = int(rule[N_FORM])
    eta, schedule, lam, nu = rule[N_ETA], rule[N_SCHEDULE], rule[N_LAM], rule[N_NU]
    use_offset = rule[N_USE_OFFSET] != 0.0
    sv_threshold = rule[N_THRESHOLD]
    scale, rho, b = state[SCALE], state[RHO], state[OFFSET]
    epsilon, sigma, t = state[EPSILON], state[SIGMA], state[STEPS]
    f_given = given_f(X, memo, memo_x, t, b)
    for i in range(X.shape[0]):
        t += 1.0
        eta_t = step_size(eta, schedule, t)
        x = X[i]
        f = stream_value(f_given, i, x, sv, coef, ring, scale, b, kind, width, degree, coef0, lut)
        if form == NORMA_HINGE:
            _, b = norma_classification_update(x, y[i], f, sv, coef, ring, scale, eta_t, lam, rule[N_MARGIN],
                                               rule[N_STRICT] != 0.0, b, use_offset, sv_threshold)
        elif form == NORMA_NU:
            _, rho, b = norma_nu_classification_update(x, y[i], f, sv, coef, ring, scale, eta_t, lam, nu, rho, b,
                                                       use_offset, sv_threshold)
        elif form == NORMA_REGRESSION:
            _, epsilon, sigma, b = norma_regression_update(x, y[i], f, sv, coef, ring, scale, eta_t, lam,
                                                           int(rule[N_LOSS]), epsilon, nu, sigma, b, use_offset,
                                                           sv_threshold)
        else:
            _, rho = norma_novelty_update(x, f, sv, coef, ring, scale, eta_t, lam, nu, rho, sv_threshold)
        f_out[i] = f
        scale = settle_scale(coef, ring, scale * norma_decay(eta_t, lam))
    state[SCALE], state[RHO], state[OFFSET] = scale, rho, b
    state[EPSILON], state[SIGMA], state[STEPS] = epsilon, sigma, t
