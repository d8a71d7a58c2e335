"""SVMD (Vishwanathan, Schraudolph & Smola, JMLR 2006): one jitted step per loss of Table 1.

Online SVM with the step size adapted by stochastic meta-descent in the RKHS
(Algorithm 2). ``f_t = sum_i sum_y alpha_iy k((x_i, y), .)`` and its SMD companion
``v_t = sum_i sum_y beta_iy k((x_i, y), .)`` share one bounded expansion; the
kernel on ``X x Y`` is ``k(x, x') kappa(y, y')`` with a label kernel ``kappa``
(``(|Y|, |Y|)``; the identity is the delta kernel of eq. 61, a taxonomy's
common-ancestor count is eq. 65). Binary and novelty expansions have ``|Y| = 1``
and ``kappa = [[1]]``.

State (structure of arrays, so one learner or every pixel of a frame can hold it):

- ``sv`` ``(B, d)`` points, ``alpha`` ``(B, K)``, ``beta`` ``(B, K)`` true
  coefficients (no global scale: the beta update ``(1 - eta c) lam beta - eta c alpha``
  is not a common factor, so every step touches ``B K`` numbers, far fewer than the
  ``B d`` of a kernel row);
- ``ring`` ``(2,)`` int64 ``[start, count]``: the last ``B`` terms with a non-zero
  coefficient, a least-recently-used circular buffer (section 5.5). A step whose
  ``xi`` and ``chi`` are zero adds no term;
- ``state`` float64 ``(STATE_SIZE,)``: ``ETA`` (eta), ``PI`` (``<f, v>``),
  ``FNORM2`` (``||f||^2``), ``EPS`` (margin, 1 without the nu-trick), ``ETA_EPS``,
  ``V_EPS``, ``STEPS`` (t), ``ETA0``;
- ``offset`` float64 ``(3, K)``: rows ``b``, ``eta_b``, ``v_b`` (eq. 50-52).

The update and the stream loops take these six as one tuple ``model = (sv, alpha,
beta, ring, state, offset)`` and write them in place; the per-loss steps take them
one by one.

Parameters travel in one float64 array ``params`` (indices ``P_*``): the
regulariser ``c``, meta-step ``mu``, decay ``lam`` (the paper's lambda; 0 is the
single-step variant), ``nu`` (0 = fixed margin), the offset's and the margin's
own ``mu``/``lam``, ``use_offset``, and ``tau``: ``tau > 0`` replaces SMD by the
scheduled decay ``eta_t = eta0 tau / (tau + t)`` (eq. 59, the paper's control:
the online SVM, i.e. NORMA, with step decay). ``mu = 0`` keeps eta fixed.

Order within step t (Algorithm 2): predict ``f_t(x_t, .)`` (+ b) and ``v_t(x_t, .)``;
``xi_t`` (Table 1) and ``chi_t`` (eq. 43-44); ``<g_t, v_t> = c pi_t + xi . v_t(x_t)``
(45); eta (33), eta_b (51), eta_eps (57) updated *first* and used below; b, v_b
(50, 52); eps, v_eps (56, 58); ``<f_t, g_t>`` (48), ``<f_t, v_{t+1}>`` (47, with the
``chi`` term of the non-diagonal Hessian); beta (42) and alpha (32); ``v_{t+1}(x_t)``
from the updated expansion; pi (46); ``||f||^2`` (49). Inner products are thus
linear-time (eq. 45-49). When the buffer evicts a term, ``pi`` and ``||f||^2`` keep
counting it, as in the paper's implementation.

This module imports only numpy, numba and the kernels module.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from learners.kernels import GAUSSIAN, LAPLACIAN, LINEAR, POLYNOMIAL, self_kernel

# state
ETA = 0
PI = 1
FNORM2 = 2
EPS = 3
ETA_EPS = 4
V_EPS = 5
STEPS = 6
ETA0 = 7
STATE_SIZE = 8

# params
P_C = 0
P_MU = 1
P_DECAY = 2
P_NU = 3
P_MU_B = 4
P_DECAY_B = 5
P_MU_EPS = 6
P_DECAY_EPS = 7
P_USE_OFFSET = 8
P_TAU = 9
PARAMS_SIZE = 10

# losses (Table 1)
NOVELTY = 0
BINARY_HINGE = 1
MULTICLASS_HINGE = 2
GRAPH = 3
BINARY_LOGISTIC = 4
MULTICLASS_LOGISTIC = 5

#: Inputs with at least this many features use BLAS (``np.dot``) for the kernel row.
_BLAS_MIN_FEATURES = 16


def new_state(eta0, eta_eps0=1.0):
    """A fresh ``state``: eta = eta0, margin 1, everything else 0."""
    state = np.zeros(STATE_SIZE, dtype=np.float64)
    state[ETA] = eta0
    state[ETA0] = eta0
    state[EPS] = 1.0
    state[ETA_EPS] = eta_eps0
    return state


def new_offset(n_outputs, eta_b0):
    """A fresh ``offset`` ``(3, K)``: b = 0, eta_b = eta_b0, v_b = 0."""
    offset = np.zeros((3, n_outputs), dtype=np.float64)
    offset[1, :] = eta_b0
    return offset


def make_params(c, mu, decay, nu=0.0, mu_b=None, decay_b=None, mu_eps=None, decay_eps=None, use_offset=False,
                tau=0.0):
    """The ``params`` array; the offset's and margin's meta-parameters default to ``mu``/``decay`` (section 6)."""
    p = np.zeros(PARAMS_SIZE, dtype=np.float64)
    p[P_C] = c
    p[P_MU] = mu
    p[P_DECAY] = decay
    p[P_NU] = nu
    p[P_MU_B] = mu if mu_b is None else mu_b
    p[P_DECAY_B] = decay if decay_b is None else decay_b
    p[P_MU_EPS] = mu if mu_eps is None else mu_eps
    p[P_DECAY_EPS] = decay if decay_eps is None else decay_eps
    p[P_USE_OFFSET] = 1.0 if use_offset else 0.0
    p[P_TAU] = tau
    return p


@njit(cache=True)
def decay_step_size(eta0, tau, t):
    """The online SVM's scheduled step size (eq. 59 as used here): ``eta0 tau / (tau + t)``."""
    return eta0 * tau / (tau + t)


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


def _float64(a):
    """``a`` itself when it holds float64, else a float64 copy (jitted through the overload below)."""
    return a if a.dtype == np.float64 else a.astype(np.float64)


@overload(_float64)
def _float64_overload(a):
    if isinstance(a, types.Array) and a.dtype == types.float64:
        return lambda a: a
    return lambda a: a.astype(np.float64)



@njit(cache=True)
def kernel_row(x, sv, count, kind, width, degree, coef0, out):
    """``out[j] = k(sv[j], x)`` for the live slots ``j < count`` (BLAS for many features)."""
    d = x.shape[0]
    if count == 0:
        return
    if d >= _BLAS_MIN_FEATURES:
        dots = np.dot(_float64(sv[:count]), _float64(x))
        if kind == POLYNOMIAL:
            for j in range(count):
                out[j] = (dots[j] + coef0) ** degree
            return
        if kind == LINEAR:
            for j in range(count):
                out[j] = dots[j]
            return
        xf = _float64(x)
        xx = np.dot(xf, xf)
        for j in range(count):
            s = 0.0
            for c in range(d):
                s += sv[j, c] * sv[j, c]
            d2 = s - 2.0 * dots[j] + xx
            if d2 < 0.0:
                d2 = 0.0
            if kind == GAUSSIAN:
                out[j] = math.exp(-d2 / (width * width))
            else:
                out[j] = math.exp(-math.sqrt(d2) / width)
        return
    for j in range(count):
        if kind == GAUSSIAN or kind == LAPLACIAN:
            d2 = 0.0
            for c in range(d):
                e = np.float64(sv[j, c]) - np.float64(x[c])  # safe for uint8 pixel samples
                d2 += e * e
            if kind == GAUSSIAN:
                out[j] = math.exp(-d2 / (width * width))
            else:
                out[j] = math.exp(-math.sqrt(d2) / width)
        else:
            s = 0.0
            for c in range(d):
                s += np.float64(sv[j, c]) * np.float64(x[c])
            out[j] = (s + coef0) ** degree if kind == POLYNOMIAL else s


@njit(cache=True)
def expansion_values(krow, coef, count, kappa, out, raw):
    """``out = kappa @ (coef[:count].T @ krow[:count])``: the expansion at ``x`` for every label.

    ``raw`` is a ``(K,)`` workspace (no allocation per call: the frame loops call this per pixel).
    """
    K = coef.shape[1]
    if K == 1:
        total = 0.0
        for j in range(count):
            total += coef[j, 0] * krow[j]
        out[0] = kappa[0, 0] * total
        return
    for y in range(K):
        raw[y] = 0.0
    for j in range(count):
        kj = krow[j]
        if kj != 0.0:
            for y in range(K):
                raw[y] += coef[j, y] * kj
    for y in range(K):
        s = 0.0
        for z in range(K):
            s += kappa[y, z] * raw[z]
        out[y] = s


# --------------------------------------------------------------------------
# Table 1: the expansion coefficients xi of the loss gradient (and chi, eq. 43-44)
# --------------------------------------------------------------------------


@njit(cache=True)
def novelty_xi(f, eps, xi):
    """Novelty ``max(0, eps - f)``: ``xi = -1`` when ``f < eps``. Returns the margin violation flag."""
    xi[0] = -1.0 if f[0] < eps else 0.0
    return f[0] < eps


@njit(cache=True)
def binary_hinge_xi(f, y, eps, xi):
    """Soft margin ``max(0, eps - y f)``, ``y`` in {-1, +1}: ``xi = -y`` when ``y f < eps``."""
    violated = y * f[0] < eps
    xi[0] = -y if violated else 0.0
    return violated


@njit(cache=True)
def graph_xi(f, y, delta, xi):
    """Graph-structured loss (eq. 25): ``y* = argmax_{y' != y} delta[y, y'] + f[y']``; on a violation
    ``xi[y] = -1, xi[y*] = +1``. The multiclass soft margin is ``delta = eps`` off the diagonal."""
    K = f.shape[0]
    best = -np.inf
    star = -1
    for z in range(K):
        if z != y:
            v = delta[y, z] + f[z]
            if v > best:
                best = v
                star = z
    for z in range(K):
        xi[z] = 0.0
    if star >= 0 and f[y] < best:
        xi[y] = -1.0
        xi[star] = 1.0
        return True
    return False


@njit(cache=True)
def multiclass_hinge_xi(f, y, eps, xi):
    """Multiclass soft margin (eq. 16): ``max(0, eps + max_{y' != y} f[y'] - f[y])`` (first maximiser)."""
    K = f.shape[0]
    best = -np.inf
    star = -1
    for z in range(K):
        if z != y and f[z] > best:
            best = f[z]
            star = z
    for z in range(K):
        xi[z] = 0.0
    if star >= 0 and f[y] < eps + best:
        xi[y] = -1.0
        xi[star] = 1.0
        return True
    return False


@njit(cache=True)
def binary_logistic_xi(f, y, v, xi, chi):
    """Binary logistic (eq. 18-19): ``xi = -y / (1 + e^{y f})``; ``chi = rho v(x)`` (eq. 36, 43)."""
    m = y * f[0]
    if m > 0.0:
        e = math.exp(-m)
        xi[0] = -y * e / (1.0 + e)
        rho = e / ((1.0 + e) * (1.0 + e))
    else:
        e = math.exp(m)
        xi[0] = -y / (1.0 + e)
        rho = e / ((1.0 + e) * (1.0 + e))
    chi[0] = rho * v[0]


@njit(cache=True)
def multiclass_logistic_xi(f, y, v, xi, chi):
    """Multiclass logistic (eq. 20-22): ``xi = p - e_y``; ``chi = (diag(p) - p p^T) v(x, .)`` (eq. 37-38, 44)."""
    K = f.shape[0]
    top = f[0]
    for z in range(1, K):
        if f[z] > top:
            top = f[z]
    total = 0.0
    p = np.empty(K)
    for z in range(K):
        p[z] = math.exp(f[z] - top)
        total += p[z]
    pv = 0.0
    for z in range(K):
        p[z] /= total
        pv += p[z] * v[z]
    for z in range(K):
        xi[z] = p[z] - (1.0 if z == y else 0.0)
        chi[z] = p[z] * v[z] - p[z] * pv


# --------------------------------------------------------------------------
# the SMD update shared by every loss
# --------------------------------------------------------------------------


@njit(cache=True)
def _push_slot(ring, B):
    """Slot for a new term (the oldest one's when full) and advance the ring."""
    start = ring[0]
    count = ring[1]
    if count < B:
        ring[1] = count + 1
        return start + count if start + count < B else start + count - B
    ring[0] = start + 1 if start + 1 < B else 0
    return start


@njit(cache=True)
def svmd_update(x, krow, kxx, f_raw, v_raw, xi, chi, violated, model, kappa, params, work):
    """Steps (b)iii-(e) of Algorithm 2 given ``xi`` (and ``chi``) at ``x``; ``work`` is a ``(4, K)`` workspace.

    ``model`` is the learner's tuple ``(sv, alpha, beta, ring, state, offset)``;
    ``krow[j] = k(sv[j], x)`` for the live slots, ``f_raw = f_t(x, .)`` without the
    offset, ``v_raw = v_t(x, .)``. ``violated`` is the margin violation for the
    nu-trick (ignored when ``params[P_NU] == 0``). Writes everything in place.
    """
    sv, alpha, beta, ring, state, offset = model
    K = alpha.shape[1]
    B = alpha.shape[0]
    count = ring[1]
    c = params[P_C]
    lam = params[P_DECAY]
    nu = params[P_NU]
    t = state[STEPS] + 1.0
    state[STEPS] = t

    xi_f = 0.0
    xi_v = 0.0
    chi_f = 0.0
    has_chi = False
    nonzero = False
    for y in range(K):
        xi_f += xi[y] * f_raw[y]
        xi_v += xi[y] * v_raw[y]
        chi_f += chi[y] * f_raw[y]
        if chi[y] != 0.0:
            has_chi = True
        if xi[y] != 0.0:
            nonzero = True
    nonzero = nonzero or (has_chi and lam != 0.0)

    # (c)i step sizes
    pi = state[PI]
    if params[P_TAU] > 0.0:
        eta = decay_step_size(state[ETA0], params[P_TAU], t)
    else:
        gv = c * pi + xi_v  # (45)
        eta = state[ETA] * max(0.5, 1.0 - params[P_MU] * gv)  # (33)
    state[ETA] = eta
    if params[P_USE_OFFSET] != 0.0:
        for y in range(K):
            eb = offset[1, y] * max(0.5, 1.0 - params[P_MU_B] * xi[y] * offset[2, y])  # (51)
            offset[1, y] = eb
            offset[2, y] = params[P_DECAY_B] * offset[2, y] - eb * xi[y]  # (52)
            offset[0, y] -= eb * xi[y]  # (50)
    if nu > 0.0:
        eps = state[EPS]
        xi_eps = -1.0 if violated else 0.0
        s = eps * (xi_eps + nu)  # -d J / d log eps (54)
        v_eps = state[V_EPS]
        lam_e = params[P_DECAY_EPS]
        eta_e = state[ETA_EPS] * max(0.5, 1.0 + params[P_MU_EPS] * v_eps * s)  # (57)
        state[ETA_EPS] = eta_e
        state[V_EPS] = lam_e * v_eps + eta_e * s * (1.0 + lam_e * v_eps)  # (58)
        state[EPS] = eps * math.exp(eta_e * s)  # (56)

    # (d)i-ii incrementals before the coefficients change
    d = 1.0 - eta * c
    fnorm2 = state[FNORM2]
    fg = c * fnorm2 + xi_f  # (48)
    f_vnext = d * lam * pi - eta * fg - eta * lam * chi_f  # (47) with the chi term

    # (c)iii, (e): beta (42) with the old alpha, then alpha (32)
    dl = d * lam
    ec = eta * c
    for j in range(count):
        for y in range(K):
            beta[j, y] = dl * beta[j, y] - ec * alpha[j, y]
            alpha[j, y] = d * alpha[j, y]
    if nonzero:
        slot = _push_slot(ring, B)
        for q in range(x.shape[0]):
            sv[slot, q] = x[q]
        for y in range(K):
            alpha[slot, y] = -eta * xi[y]
            beta[slot, y] = -eta * (xi[y] + lam * chi[y])
        krow[slot] = kxx

    # (d)iii v_{t+1}(x_t, .) on the updated expansion, (d)iv pi (46), (d)v ||f||^2 (49)
    v_next = work[2]
    expansion_values(krow, beta, ring[1], kappa, v_next, work[3])
    xi_vnext = 0.0
    xkx = 0.0
    for y in range(K):
        xi_vnext += xi[y] * v_next[y]
        s = 0.0
        for z in range(K):
            s += kappa[y, z] * xi[z]
        xkx += xi[y] * s
    state[PI] = d * f_vnext - eta * xi_vnext
    state[FNORM2] = d * d * fnorm2 - 2.0 * eta * d * xi_f + eta * eta * kxx * xkx


@njit(cache=True)
def svmd_predict(x, sv, alpha, beta, ring, kappa, kind, width, degree, coef0, krow, f_raw, v_raw, raw):
    """Steps (a)ii and (b)ii: fill ``krow``, ``f_raw = f_t(x, .)`` (no offset), ``v_raw = v_t(x, .)``."""
    count = ring[1]
    kernel_row(x, sv, count, kind, width, degree, coef0, krow)
    expansion_values(krow, alpha, count, kappa, f_raw, raw)
    expansion_values(krow, beta, count, kappa, v_raw, raw)


@njit(cache=True)
def _prepare(x, model, kappa, params, kind, width, degree, coef0):
    sv, alpha, beta, ring, _, offset = model
    K = alpha.shape[1]
    krow = np.empty(alpha.shape[0])
    f_raw = np.empty(K)
    v_raw = np.empty(K)
    svmd_predict(x, sv, alpha, beta, ring, kappa, kind, width, degree, coef0, krow, f_raw, v_raw, np.empty(K))
    f = f_raw.copy()
    if params[P_USE_OFFSET] != 0.0:
        for y in range(K):
            f[y] += offset[0, y]
    kxx = self_kernel(kind, x, width, degree, coef0, np.zeros(0))
    return krow, f_raw, v_raw, f, kxx


# --------------------------------------------------------------------------
# one step per loss; each returns f_t(x_t, .) (offset included), the prediction
# made before learning
# --------------------------------------------------------------------------


@njit(cache=True)
def svmd_loss_update(loss, x, y, delta, krow, kxx, f_raw, v_raw, f, model, kappa, params, work):
    """Table 1's ``xi`` (and ``chi``) for ``loss`` at ``f = f_t(x, .) + b``, then :func:`svmd_update`.

    ``model`` is the learner's tuple ``(sv, alpha, beta, ring, state, offset)`` (written in place);
    ``work`` is a ``(4, K)`` float64 workspace (rows: xi, chi, and two for :func:`svmd_update`).
    """
    state = model[4]
    K = model[1].shape[1]
    xi = work[0]
    chi = work[1]
    for z in range(K):
        xi[z] = 0.0
        chi[z] = 0.0
    violated = False
    if loss == NOVELTY:
        violated = novelty_xi(f, state[EPS], xi)
    elif loss == BINARY_HINGE:
        violated = binary_hinge_xi(f, y, state[EPS], xi)
    elif loss == MULTICLASS_HINGE:
        violated = multiclass_hinge_xi(f, int(y), state[EPS], xi)
    elif loss == GRAPH:
        violated = graph_xi(f, int(y), delta, xi)
    elif loss == BINARY_LOGISTIC:
        binary_logistic_xi(f, y, v_raw, xi, chi)
    else:
        multiclass_logistic_xi(f, int(y), v_raw, xi, chi)
    svmd_update(x, krow, kxx, f_raw, v_raw, xi, chi, violated, model, kappa, params, work)


@njit(cache=True)
def _step(loss, x, y, delta, model, kappa, params, kind, width, degree, coef0):
    krow, f_raw, v_raw, f, kxx = _prepare(x, model, kappa, params, kind, width, degree, coef0)
    svmd_loss_update(loss, x, y, delta, krow, kxx, f_raw, v_raw, f, model, kappa, params,
                     np.empty((4, model[1].shape[1])))
    return f


@njit(cache=True)
def svmd_novelty_step(x, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree, coef0):
    """Novelty detection (Table 1, eq. 23-24; nu-trick eq. 53-58). Novelty iff ``f < eps``."""
    return _step(NOVELTY, x, 0.0, kappa, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width,
                 degree, coef0)


@njit(cache=True)
def svmd_binary_step(x, y, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree, coef0):
    """Binary soft margin (eq. 14-15), ``y`` in {-1, +1}; margin ``eps`` (1, or learnt by the nu-trick)."""
    return _step(BINARY_HINGE, x, y, kappa, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width,
                 degree, coef0)


@njit(cache=True)
def svmd_multiclass_step(x, y, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree, coef0):
    """Multiclass soft margin (eq. 16-17), ``y`` the class index; margin ``eps``."""
    return _step(MULTICLASS_HINGE, x, y, kappa, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width,
                 degree, coef0)


@njit(cache=True)
def svmd_graph_step(x, y, delta, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree, coef0):
    """Graph-structured label domains (eq. 25-26) with the label distance ``delta`` ``(K, K)``."""
    return _step(GRAPH, x, y, delta, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width, degree, coef0)


@njit(cache=True)
def svmd_logistic_step(x, y, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree, coef0):
    """Binary logistic regression (eq. 18-19, 36, 43), ``y`` in {-1, +1}."""
    return _step(BINARY_LOGISTIC, x, y, kappa, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width,
                 degree, coef0)


@njit(cache=True)
def svmd_multiclass_logistic_step(x, y, sv, alpha, beta, ring, kappa, state, offset, params, kind, width, degree,
                                  coef0):
    """Multiclass logistic regression (eq. 20-22, 37-38, 44), ``y`` the class index."""
    return _step(MULTICLASS_LOGISTIC, x, y, kappa, (sv, alpha, beta, ring, state, offset), kappa, params, kind, width,
                 degree, coef0)


@njit(cache=True)
def svmd_fit_stream(loss, X, y, delta, model, kappa, params, kind, width, degree, coef0, f_out, eta_out, margin_out):
    """Run the ``loss`` step over the rows of ``X`` in order; ``model`` is the learner's tuple
    ``(sv, alpha, beta, ring, state, offset)``, written in place.

    ``y`` holds +-1 (binary losses), class indices (multiclass, graph) or anything
    (novelty). ``f_out[i]`` is the prediction on row ``i`` before learning from it
    (offset included), ``eta_out[i]`` the step size after the step, ``margin_out[i]``
    the margin the prediction was compared with.
    """
    state = model[4]
    for i in range(X.shape[0]):
        margin_out[i] = state[EPS]
        f = _step(loss, X[i], y[i], delta, model, kappa, params, kind, width, degree, coef0)
        for z in range(f.shape[0]):
            f_out[i, z] = f[z]
        eta_out[i] = state[ETA]


@njit(cache=True)
def svmd_decision(X, sv, alpha, ring, kappa, kind, width, degree, coef0, out):
    """``out[i] = f(X[i], .)`` without the offset, ``(n, K)``."""
    krow = np.empty(alpha.shape[0])
    f = np.empty(alpha.shape[1])
    raw = np.empty(alpha.shape[1])
    for i in range(X.shape[0]):
        kernel_row(X[i], sv, ring[1], kind, width, degree, coef0, krow)
        expansion_values(krow, alpha, ring[1], kappa, f, raw)
        for z in range(f.shape[0]):
            out[i, z] = f[z]


@njit(cache=True)
def _kernel_from_dot(kind, dot, sq_a, sq_b, width, degree, coef0):
    if kind == POLYNOMIAL:
        return (dot + coef0) ** degree
    if kind == LINEAR:
        return dot
    d2 = sq_a - 2.0 * dot + sq_b
    if d2 < 0.0:
        d2 = 0.0
    if kind == GAUSSIAN:
        return math.exp(-d2 / (width * width))
    return math.exp(-math.sqrt(d2) / width)


@njit(cache=True)
def svmd_fit_block(loss, X, y, delta, products, model, kappa, params, kind, width, degree, coef0, f_out, eta_out,
                   margin_out):
    """:func:`svmd_fit_stream` over a block of rows with the inner products precomputed by BLAS.

    ``products = (dots, cross, sv_sq)``: ``dots[i, j] = <X[i], sv[j]>`` for the buffer as it stood
    before the block, ``cross = X @ X.T``, ``sv_sq[j] = ||sv[j]||^2``. A slot overwritten by row ``r``
    of the block reads ``cross[i, r]`` afterwards, so every kernel row equals the one
    :func:`kernel_row` would compute (the same update, a matrix product instead of
    one matrix-vector product per row). ``sv_sq`` is updated in place.
    """
    dots, cross, sv_sq = products
    _, alpha, beta, ring, state, offset = model
    B = alpha.shape[0]
    K = alpha.shape[1]
    source = np.full(B, -1, dtype=np.int64)  # -1: the buffer's own point; r >= 0: row r of this block
    krow = np.empty(B)
    f_raw = np.empty(K)
    v_raw = np.empty(K)
    work = np.empty((4, K))
    for i in range(X.shape[0]):
        x = X[i]
        count = ring[1]
        for j in range(count):
            r = source[j]
            if r < 0:
                krow[j] = _kernel_from_dot(kind, dots[i, j], sv_sq[j], cross[i, i], width, degree, coef0)
            else:
                krow[j] = _kernel_from_dot(kind, cross[i, r], cross[r, r], cross[i, i], width, degree, coef0)
        expansion_values(krow, alpha, count, kappa, f_raw, work[3])
        expansion_values(krow, beta, count, kappa, v_raw, work[3])
        f = f_raw.copy()
        if params[P_USE_OFFSET] != 0.0:
            for z in range(K):
                f[z] += offset[0, z]
        kxx = _kernel_from_dot(kind, cross[i, i], cross[i, i], cross[i, i], width, degree, coef0)
        margin_out[i] = state[EPS]
        start_before = ring[0]
        count_before = ring[1]
        svmd_loss_update(loss, x, y[i], delta, krow, kxx, f_raw, v_raw, f, model, kappa, params, work)
        if ring[1] != count_before or ring[0] != start_before:
            slot = count_before if ring[1] != count_before else start_before
            source[slot] = i
            sv_sq[slot] = cross[i, i]
        for z in range(K):
            f_out[i, z] = f[z]
        eta_out[i] = state[ETA]
