"""Online EM for mixtures, one jitted step per sample (lecture seed 002).

The E step of batch EM is replaced by a stochastic approximation on the
sufficient statistics (Cappé & Moulines 2009; ALGORITHMS.md, "Online learning
lecture")::

    S <- (1 - eta_n) S + eta_n E[S(x_n) | theta(S)],      eta_n = max(1/n, floor)

where ``theta(S)`` is the closed-form M step. Every step first evaluates the
component densities under ``theta(S)`` (the E step), then moves ``S``; the
parameters are never stored, only ``S``.

Statistics (``K`` components, ``D`` features), all normalised averages:

- ``s0`` (K,): ``E[r_k]``;
- ``s1`` (K, D): ``E[r_k x]``;
- Gaussian ``s2``: spherical (K,) ``E[r_k ||x||^2]``; diag (K, D) ``E[r_k x_d^2]``;
  full (K, D, D) ``E[r_k x x^T]``.

M step: ``w_k = s0_k / sum(s0)``, ``mu_k = s1_k / s0_k``; diag
``var_kd = max(s2_kd / s0_k - mu_kd^2, 0) + reg``; spherical
``var_k = max(s2_k / s0_k - ||mu_k||^2, 0) / D + reg``; full
``cov_k = s2_k / s0_k - mu_k mu_k^T + reg I``. Bernoulli: ``mu_kd = s1_kd / s0_k``
clipped to ``[eps, 1 - eps]``. A component with ``s0_k <= EMPTY`` is empty (zero
responsibility, infinite distance).

Birth (diag and spherical steps, used by the per-pixel subtractor): when the
squared Mahalanobis distance of ``x`` to every component exceeds ``birth_d2``,
the E step's responsibility goes entirely to the lightest component, which is
restarted at ``x`` with variance ``var_init``: its statistics become
``eta * (1, x, x^2 + var_init)`` while the others shrink by ``1 - eta`` (the
stochastic E step with that component's old statistics discarded; the
"replace the least probable distribution" rule of Stauffer & Grimson). With
``birth_d2 = inf`` the step is plain online EM (the estimators use it so).

Responsibilities of components farther than ``TAIL`` in squared distance than
the nearest are set to 0 (relative share below ``1.1e-7``, float32 resolution), which spares the
per-pixel loop its exponentials in the common case of one matching component.
The diag/spherical steps keep the M step's parameters (means, inverse
variances, normalisers) in caches next to ``S`` and recompute them only for
the components whose statistics changed other than by the common shrink.
:func:`gaussian_step_batch` is the same step for ``n`` mixtures at once (one
sample each, component-major state, SIMD over the mixtures, the M step
recomputed from ``S`` instead of cached): the per-pixel subtractor's form.

Every step returns ``(dens_sum, total, dmin)`` from which
:func:`log_likelihood` gives ``log p(x)`` under the model *before* the step,
and leaves the squared distances ``d2`` and the responsibilities ``resp`` in
its scratch arrays.

This module imports only numpy and numba.
"""

import math

import numpy as np
from numba import njit

#: s0 at or below this: the component is empty.
EMPTY = 1e-20
#: Stands for an infinite squared distance (fastmath here keeps inf/nan semantics off the hot path).
FAR = 1e300
LOG_2PI = math.log(2.0 * math.pi)
#: A component whose squared distance exceeds the nearest one's by more than this gets
#: responsibility 0 (its true share is below exp(-TAIL/2) = 1.1e-7 times the nearest one's, float32 resolution).
TAIL = 32.0

# fastmath without "nnan"/"ninf": the steps compare against FAR and may see inf.
_FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}


@njit(cache=True)
def learning_rate(n, floor):
    """``eta_n = max(1/n, floor)`` for the ``n``-th sample (``n >= 1``)."""
    r = 1.0 / n
    return r if r > floor else floor


@njit(cache=True)
def log_likelihood(dens_sum, total, dmin, D):
    """``log p(x)`` from a step's ``(dens_sum, total, dmin)``; ``-inf`` when every component is empty."""
    if dens_sum <= 0.0:
        return -np.inf
    return math.log(dens_sum / total) - 0.5 * dmin - 0.5 * D * LOG_2PI


# ----------------------------------------------------------------------------
# Gaussian, diagonal and spherical covariances
# ----------------------------------------------------------------------------


@njit(cache=True, fastmath=_FAST, inline="always")
def gaussian_m_step(k, s0, s1, s2, spherical, reg, mu, ivar, nrm):
    """Closed-form M step of component ``k``: its statistics into the parameter caches.

    ``mu[k] = s1[k] / s0[k]``; ``ivar[k]`` the inverse variance(s) (``reg``
    included), (D,) diag or (1,) spherical; ``nrm[k] = |Sigma_k|^(-1)`` (its square root is
    taken only when the E step needs it, see :func:`_gaussian_e`).
    """
    a = np.float64(s0[k])
    D = mu.shape[1]
    if a <= EMPTY:
        nrm[k] = 0.0
        return
    inv = 1.0 / a
    if spherical:
        sq = 0.0
        for c in range(D):
            m = s1[k, c] * inv
            mu[k, c] = m
            sq += m * m
        v = (s2[k, 0] * inv - sq) / D
        if v < 0.0:
            v = 0.0
        iv = 1.0 / (v + reg)
        ivar[k, 0] = iv
        idet = iv
        for c in range(1, D):
            idet *= iv
    else:
        idet = 1.0
        for c in range(D):
            m = s1[k, c] * inv
            mu[k, c] = m
            v = s2[k, c] * inv - m * m
            if v < 0.0:
                v = 0.0
            iv = 1.0 / (v + reg)
            ivar[k, c] = iv
            idet *= iv
    nrm[k] = idet


@njit(cache=True, inline="always")
def _total_weight(s0):
    """``sum_k s0[k]``, the mixture's total weight, summed in order (in the caller's arithmetic: it is inlined)."""
    total = 0.0
    for k in range(s0.shape[0]):
        total += s0[k]
    return total


@njit(cache=True, fastmath=_FAST, inline="always")
def _gaussian_e(x, s0, mu, ivar, nrm, spherical, d2, resp):
    """E step: squared Mahalanobis distances into ``d2``, responsibilities into ``resp``.

    Densities are kept as ``w_k |Sigma_k|^(-1/2) exp(-(d2_k - dmin) / 2)`` (the
    common factor ``exp(-dmin/2) (2 pi)^(-D/2)`` left out), so nothing
    underflows however far ``x`` is. When only the nearest component is within ``TAIL``
    (the common case in a frame loop) it takes responsibility 1 without exponential,
    division or square root (``dens_sum``'s square root is unused by callers that
    ignore it, and the compiler can drop it once the step is inlined). Returns ``(dens_sum, total, dmin)``.
    """
    K = s0.shape[0]
    D = x.shape[0]
    total = _total_weight(s0)
    dmin = FAR
    for k in range(K):
        if s0[k] <= EMPTY:
            d2[k] = FAR
            continue
        q = 0.0
        if spherical:
            for c in range(D):
                diff = x[c] - mu[k, c]
                q += diff * diff
            q *= ivar[k, 0]
        else:
            for c in range(D):
                diff = x[c] - mu[k, c]
                q += diff * diff * ivar[k, c]
        d2[k] = q
        if q < dmin:
            dmin = q
    kmin = -1
    n_close = 0
    for k in range(K):
        if d2[k] < FAR and d2[k] - dmin < TAIL:
            # beyond TAIL the density counts as 0 (below exp(-TAIL / 2) of the nearest one)
            n_close += 1
            if d2[k] == dmin and kmin < 0:
                kmin = k
    if n_close == 1:
        # one component within TAIL: it takes all the responsibility (no exponential, no division)
        for k in range(K):
            resp[k] = 0.0
        resp[kmin] = 1.0
        return s0[kmin] * math.sqrt(nrm[kmin]), total, dmin
    dens_sum = 0.0
    for k in range(K):
        r = 0.0
        if d2[k] < FAR:
            gap = d2[k] - dmin
            if gap < TAIL:
                r = s0[k] * math.sqrt(nrm[k])
                if gap > 0.0:
                    r *= math.exp(-0.5 * gap)
        resp[k] = r
        dens_sum += r
    if dens_sum > 0.0:
        inv_sum = 1.0 / dens_sum
        for k in range(K):
            resp[k] *= inv_sum
    return dens_sum, total, dmin


@njit(cache=True, fastmath=_FAST, inline="always")
def _gaussian_update(x, eta, s0, s1, s2, spherical, reg, mu, ivar, nrm, resp):
    """``S <- (1 - eta) S + eta * resp (x) (1, x, x^2)`` (in place), then the M step.

    A component with zero responsibility only shrinks, which leaves its mean and
    variance unchanged: only the others' caches are recomputed.
    """
    K = s0.shape[0]
    D = x.shape[0]
    keep = 1.0 - eta
    for k in range(K):
        g = eta * resp[k]
        s0[k] = keep * s0[k] + g
        if g > 0.0:
            sq = 0.0
            for c in range(D):
                xc = np.float64(x[c])
                s1[k, c] = keep * s1[k, c] + g * xc
                if spherical:
                    sq += xc * xc
                else:
                    s2[k, c] = keep * s2[k, c] + g * xc * xc
            if spherical:
                s2[k, 0] = keep * s2[k, 0] + g * sq
            gaussian_m_step(k, s0, s1, s2, spherical, reg, mu, ivar, nrm)
        elif s0[k] > 0.0:
            for c in range(D):
                s1[k, c] = keep * s1[k, c]
            for c in range(s2.shape[1]):
                s2[k, c] = keep * s2[k, c]


@njit(cache=True, fastmath=_FAST)
def gaussian_birth(x, eta, s0, s1, s2, spherical, reg, mu, ivar, nrm, var_init, k):
    """Restart component ``k`` at ``x`` with variance ``var_init`` and weight ``eta``; shrink the others.

    Deliberately not ``inline="always"``: inlined into the subtractor's ``prange``
    loop over ``carray`` views, numba 0.68 dropped its writes to ``s0[k]`` and
    ``s2[k, 0]`` (found by the frame-loop-equals-step test).
    """
    K = s0.shape[0]
    D = x.shape[0]
    keep = 1.0 - eta
    for j in range(K):
        if j != k:
            s0[j] = keep * s0[j]
            for c in range(D):
                s1[j, c] = keep * s1[j, c]
            for c in range(s2.shape[1]):
                s2[j, c] = keep * s2[j, c]
    s0[k] = eta
    sq = 0.0
    for c in range(D):
        xc = np.float64(x[c])
        s1[k, c] = eta * xc
        if spherical:
            sq += xc * xc
        else:
            s2[k, c] = eta * (xc * xc + var_init)
    if spherical:
        s2[k, 0] = eta * (sq + D * var_init)
    gaussian_m_step(k, s0, s1, s2, spherical, reg, mu, ivar, nrm)


@njit(cache=True, inline="always")
def lightest(s0):
    """Index of the component with the smallest ``s0`` (the first on ties)."""
    k = 0
    for j in range(1, s0.shape[0]):
        if s0[j] < s0[k]:
            k = j
    return k


@njit(cache=True, fastmath=_FAST, inline="always")
def gaussian_step(x, eta, s0, s1, s2, spherical, reg, mu, ivar, nrm, birth_d2, var_init, d2, resp):
    """One online-EM step of a diagonal (``spherical=False``, ``s2`` (K, D)) or
    spherical (``spherical=True``, ``s2`` (K, 1)) Gaussian mixture.

    Parameters
    ----------
    x : (D,) array
        The sample (any numeric dtype).
    eta : float
        Step size ``eta_n`` (:func:`learning_rate`).
    s0, s1, s2 : float arrays (K,), (K, D), (K, D) or (K, 1)
        Sufficient statistics, updated in place.
    spherical : bool
    reg : float
        Added to every variance (> 0).
    mu, ivar, nrm : float arrays (K, D), like ``s2``, (K,)
        The M step's parameters (means, inverse variances, ``|Sigma|^(-1)``),
        kept equal to ``M(S)`` (:func:`gaussian_m_step`); updated in place.
    birth_d2 : float
        Restart the lightest component at ``x`` when ``x``'s squared Mahalanobis
        distance to every component exceeds this (``inf``: never).
    var_init : float
        Variance of a restarted component.
    d2, resp : float64 (K,)
        Scratch: squared distances and responsibilities under the model before the step.

    Returns
    -------
    dens_sum, total, dmin : float
        See :func:`log_likelihood`.
    """
    dens_sum, total, dmin = _gaussian_e(x, s0, mu, ivar, nrm, spherical, d2, resp)
    if dmin > birth_d2:
        gaussian_birth(x, eta, s0, s1, s2, spherical, reg, mu, ivar, nrm, var_init, lightest(s0))
    else:
        _gaussian_update(x, eta, s0, s1, s2, spherical, reg, mu, ivar, nrm, resp)
    return dens_sum, total, dmin


@njit(cache=True, fastmath=_FAST, inline="always")
def gaussian_evaluate(x, s0, mu, ivar, nrm, spherical, d2, resp):
    """The E step of :func:`gaussian_step` alone (no update): ``(dens_sum, total, dmin)``."""
    return _gaussian_e(x, s0, mu, ivar, nrm, spherical, d2, resp)


@njit(cache=True)
def gaussian_m_step_all(s0, s1, s2, spherical, reg, mu, ivar, nrm):
    """:func:`gaussian_m_step` for every component (after setting the statistics directly)."""
    for k in range(s0.shape[0]):
        gaussian_m_step(k, s0, s1, s2, spherical, reg, mu, ivar, nrm)


# ----------------------------------------------------------------------------
# Gaussian, diagonal and spherical: the same step for a batch of independent mixtures
# ----------------------------------------------------------------------------
#
# The per-pixel subtractor runs one mixture per pixel. Its state is laid out
# component-major with the mixtures last (``s0`` (K, n), ``s1`` (K, D, n), ``s2``
# (K, V, n)), and the step below moves n mixtures at once, one sample each, in
# passes whose innermost loop runs over the n mixtures: contiguous and branch-free
# (selects), so the compiler turns it into SIMD instructions (8 float32 lanes with
# AVX2), divisions and square roots included. It keeps only the statistics ``S``
# and computes the M step ``theta(S)`` of every component in the E step (a SIMD
# division costs less than reading and writing a cache of the parameters). It is
# :func:`gaussian_step` column by column -- the same formulas and decisions (TAIL,
# the one-close-component case, birth of the lightest component); the tests check
# it against the plain transcription and against :func:`gaussian_step`. Its
# arithmetic is done in the state's dtype (float32 in the subtractor, float64 in
# the tests): every constant comes in ``par`` (:func:`batch_constants`), already of
# that dtype.
#
# _keep_note: every loop loads its operands before any conditional expression, and
# an element that keeps its value is written back as ``old * one`` (``one`` = 1 from
# ``par``, unknown to the compiler): written as ``old``, the compiler turns
# ``a[j] = new if c else a[j]`` into a conditional (masked) store, and a load inside a
# conditional expression into a masked load -- both slow (AVX2 ``vmaskmovps`` stores
# take about ten times a plain store on AMD Zen). ``old * 1`` is ``old``, bit for bit.

#: Indices into ``par`` (:func:`batch_constants`).
P_ETA, P_KEEP, P_REG, P_BIRTH, P_VINIT, P_EMPTY, P_FAR, P_TAIL, P_HALF, P_INVD, P_ZERO, P_ONE = range(12)
#: ``par[P_EXP:P_EXP + N_EXP]``: Taylor coefficients of ``exp(-t)`` (:func:`_exp_neg`).
P_EXP = 12
N_EXP = 16
#: Length of ``par``; rows of the batched steps' ``work`` array.
N_PAR = P_EXP + N_EXP
N_WORK = 5


@njit(cache=True)
def batch_constants(eta, reg, birth_d2, var_init, D, par):
    """Fill ``par`` (:data:`N_PAR`,), of the state's dtype, with the batched steps' constants.

    ``FAR`` becomes ``1e38`` in float32 (``1e300`` would overflow to inf).
    """
    if par.shape[0] != N_PAR:
        raise ValueError("par must have N_PAR entries")
    par[P_ETA] = eta
    par[P_KEEP] = 1.0 - eta
    par[P_REG] = reg
    par[P_BIRTH] = birth_d2
    par[P_VINIT] = var_init
    par[P_EMPTY] = EMPTY
    par[P_FAR] = FAR
    if par[P_FAR] > 1e300 * 10.0:  # inf: float32
        par[P_FAR] = 1e38
    par[P_TAIL] = TAIL
    par[P_HALF] = 0.5
    par[P_INVD] = 1.0 / D
    par[P_ZERO] = 0.0
    par[P_ONE] = 1.0
    c = 1.0
    for i in range(N_EXP):
        par[P_EXP + i] = c  # (-1)^i / i!
        c = -c / (i + 1)


@njit(cache=True, fastmath=_FAST, inline="always")
def _exp_neg(y, sixteenth, par):
    """``exp(-y)`` for ``0 <= y <= 16`` in branch-free arithmetic that vectorises:
    ``exp(-y/16)`` by its Taylor polynomial of degree ``N_EXP - 1`` (Horner; remainder
    below ``1/16! = 4.8e-14``), squared four times: relative error below 2e-12 in
    float64, 3e-6 in float32 (measured on a grid of 1000 points of ``[0, 16]``).
    ``exp(0)`` is exactly 1."""
    t = y * sixteenth
    p = par[P_EXP + N_EXP - 1]
    for i in range(N_EXP - 2, -1, -1):
        p = p * t + par[P_EXP + i]
    p *= p
    p *= p
    p *= p
    p *= p
    return p


@njit(cache=True, inline="always")
def _batch_layout(x, s0, par, work):
    """``(K, D, n, zero, one, dmin, light)`` of a batch call: components, channels and mixtures, the state dtype's
    0 and 1 (``par``), and the rows ``work[0]`` (nearest distance) and ``work[1]`` (lightest component)."""
    return s0.shape[0], x.shape[0], x.shape[1], par[P_ZERO], par[P_ONE], work[0], work[1]


@njit(cache=True, fastmath=_FAST, error_model="numpy")
def gaussian_e_batch(x, s0, s1, s2, spherical, par, d2, resp, work):
    """M step then E step of ``n`` mixtures, one sample each
    (:func:`gaussian_m_step` and :func:`_gaussian_e`, column by column).

    Parameters
    ----------
    x : (D, n) array of the state's dtype
        Sample ``j`` is ``x[:, j]``.
    s0, s1, s2 : (K, n), (K, D, n), (K, D, n) diag or (K, 1, n) spherical
        Mixture ``j``'s statistics (see :func:`gaussian_step`).
    spherical : bool
    par : (N_PAR,) array
        :func:`batch_constants`.
    d2, resp : (K, n) arrays
        Output: squared Mahalanobis distances (``FAR`` for empty components) and responsibilities.
    work : (N_WORK, n) array
        Output: ``work[0]`` the smallest distance, ``work[1]`` the index of the lightest
        component (as a float; the one :func:`gaussian_update_batch` restarts on birth);
        rows 2-4 are scratch.
    """
    K, D, n, zero, one, dmin, light = _batch_layout(x, s0, par, work)
    far = par[P_FAR]
    empty = par[P_EMPTY]
    tail = par[P_TAIL]
    half = par[P_HALF]
    reg = par[P_REG]
    invd = par[P_INVD]
    inv = work[2]
    acc = work[3]
    sqm = work[4]
    # theta(S) and the squared distances; resp[k] holds |Sigma_k|^(-1) until the responsibilities
    two = D >= 2
    three = D >= 3
    for k in range(K):
        sk = s0[k]
        dk = d2[k]
        nk = resp[k]
        x0 = x[0]
        s10 = s1[k, 0]
        if spherical:
            for j in range(n):  # first channel, and 1 / s0
                ia = one / sk[j]
                m = s10[j] * ia
                diff = x0[j] - m
                inv[j] = ia
                dk[j] = diff * diff
                sqm[j] = m * m
            for c in range(1, D):
                xc = x[c]
                s1c = s1[k, c]
                for j in range(n):
                    m = s1c[j] * inv[j]
                    diff = xc[j] - m
                    dk[j] += diff * diff
                    sqm[j] += m * m
            s2k = s2[k, 0]
            for j in range(n):
                v = (s2k[j] * inv[j] - sqm[j]) * invd
                v = v if v > zero else zero
                iv = one / (v + reg)
                idet = iv  # iv ** D: the first three factors here, any others below
                idet *= iv if two else one
                idet *= iv if three else one
                q = dk[j] * iv
                full = sk[j] > empty
                dk[j] = q if full else far
                nk[j] = idet if full else zero
                inv[j] = iv
            for c in range(3, D):
                for j in range(n):
                    nk[j] *= inv[j]  # 0 stays 0 for an empty component (its iv is finite)
        else:
            s20 = s2[k, 0]
            for j in range(n):  # first channel, and 1 / s0
                ia = one / sk[j]
                m = s10[j] * ia
                diff = x0[j] - m
                v = s20[j] * ia - m * m
                v = v if v > zero else zero
                iv = one / (v + reg)
                inv[j] = ia
                dk[j] = diff * diff * iv
                acc[j] = iv
            for c in range(1, D):
                xc = x[c]
                s1c = s1[k, c]
                s2c = s2[k, c]
                for j in range(n):
                    m = s1c[j] * inv[j]
                    diff = xc[j] - m
                    v = s2c[j] * inv[j] - m * m
                    v = v if v > zero else zero
                    iv = one / (v + reg)
                    dk[j] += diff * diff * iv
                    acc[j] *= iv
            for j in range(n):
                q = dk[j] * one  # see _keep_note
                a = acc[j]
                full = sk[j] > empty
                dk[j] = q if full else far
                nk[j] = a if full else zero
    # nearest distance, lightest component (first on ties), components within TAIL
    for j in range(n):
        dmin[j] = d2[0, j]
        light[j] = zero
        inv[j] = s0[0, j]  # weight of the lightest so far
        acc[j] = zero  # number of components within TAIL
        sqm[j] = zero  # sum of the densities
    kf = zero
    for k in range(1, K):
        kf += one
        dk = d2[k]
        sk = s0[k]
        for j in range(n):
            dj = dk[j]
            dm = dmin[j]
            sj = sk[j]
            lwj = inv[j]
            lj = light[j]
            dmin[j] = dj if dj < dm else dm * one  # see _keep_note
            lighter = sj < lwj
            light[j] = kf if lighter else lj * one
            inv[j] = sj if lighter else lwj * one
    ncl = acc
    dens = sqm
    for k in range(K):
        dk = d2[k]
        sk = s0[k]
        rk = resp[k]
        for j in range(n):
            dj = dk[j]
            r = sk[j] * math.sqrt(rk[j])
            close = (dj < far) & (dj - dmin[j] < tail)
            ncl[j] += one if close else zero
            rk[j] = r if close else zero
    # the exponentials exp(-gap / 2), gap < TAIL (1 exactly at gap 0; a component beyond
    # TAIL has density 0 already, and one alone within TAIL takes responsibility 1 below
    # whatever its density): a SIMD pass over every pixel when more than 1/16 of them have
    # two or more components within TAIL (as on a scene some hundred frames in), else a
    # scalar loop over those -- the same arithmetic either way
    sixteenth = half * half * half * half
    ymax = half * tail
    n_multi = zero
    for j in range(n):
        n_multi += one if ncl[j] > one else zero
    if n_multi * (one + one) * (one + one) * (one + one) * (one + one) > n:
        for k in range(K):
            rk = resp[k]
            dk = d2[k]
            for j in range(n):
                y = half * (dk[j] - dmin[j])
                y = y if y < ymax else ymax
                rk[j] *= _exp_neg(y, sixteenth, par)
    else:
        for j in range(n):
            if ncl[j] > one:
                for k in range(K):
                    y = half * (d2[k, j] - dmin[j])
                    y = y if y < ymax else ymax
                    resp[k, j] *= _exp_neg(y, sixteenth, par)
    for k in range(K):
        rk = resp[k]
        for j in range(n):
            dens[j] += rk[j]
    for j in range(n):
        dj = dens[j]
        dens[j] = one / dj if dj > zero else one
    for k in range(K):
        rk = resp[k]
        dk = d2[k]
        for j in range(n):
            # alone within TAIL: responsibility exactly 1 (no division), as _gaussian_e
            alone = one if dk[j] == dmin[j] else zero
            shared = rk[j] * dens[j]
            rk[j] = alone if ncl[j] == one else shared


@njit(cache=True, fastmath=_FAST, error_model="numpy")
def gaussian_update_batch(x, s0, s1, s2, spherical, par, resp, work):
    """The update of ``n`` mixtures after :func:`gaussian_e_batch` (``resp``, ``work[0:2]``).

    Mixture ``j`` restarts its lightest component (``work[1, j]``) at ``x[:, j]`` when
    ``work[0, j] > par[P_BIRTH]`` (:func:`gaussian_birth`), else takes the stochastic E
    step with ``resp[:, j]`` (:func:`_gaussian_update`). ``resp`` and ``work[2:]`` are
    overwritten.
    """
    K, D, n, zero, one, dmin, light = _batch_layout(x, s0, par, work)
    eta = par[P_ETA]
    keep = par[P_KEEP]
    birth = par[P_BIRTH]
    vinit = par[P_VINIT]
    sq = work[2]
    dvinit = zero  # D * var_init
    for j in range(n):
        sq[j] = zero
    for c in range(D):
        dvinit += vinit
        if spherical:
            xc = x[c]
            for j in range(n):
                sq[j] += xc[j] * xc[j]
    kf = zero
    for k in range(K):
        # g = eta * resp, or -1 for the component born here (0 for the others on birth)
        rk = resp[k]
        sk = s0[k]
        for j in range(n):
            born = dmin[j] > birth
            here = light[j] == kf
            g = eta * rk[j]
            g = zero if born else g
            g = -one if (born & here) else g
            rk[j] = g
            s = keep * sk[j] + g
            sk[j] = eta if g < zero else s
        kf += one
        for c in range(D):
            xc = x[c]
            s1c = s1[k, c]
            for j in range(n):
                g = rk[j]
                xj = xc[j]
                s = keep * s1c[j] + g * xj
                s1c[j] = eta * xj if g < zero else s
            if not spherical:
                s2c = s2[k, c]
                for j in range(n):
                    g = rk[j]
                    xj = xc[j]
                    s = keep * s2c[j] + g * xj * xj
                    s2c[j] = eta * (xj * xj + vinit) if g < zero else s
        if spherical:
            s2k = s2[k, 0]
            for j in range(n):
                g = rk[j]
                sqj = sq[j]
                s = keep * s2k[j] + g * sqj
                s2k[j] = eta * (sqj + dvinit) if g < zero else s


@njit(cache=True)
def gaussian_step_batch(x, s0, s1, s2, spherical, par, d2, resp, work):
    """:func:`gaussian_step` for ``n`` mixtures at once (:func:`gaussian_e_batch`, then
    :func:`gaussian_update_batch`); shapes as there, step size and the rest in ``par``."""
    gaussian_e_batch(x, s0, s1, s2, spherical, par, d2, resp, work)
    gaussian_update_batch(x, s0, s1, s2, spherical, par, resp, work)



# ----------------------------------------------------------------------------
# Gaussian, full covariances
# ----------------------------------------------------------------------------


@njit(cache=True)
def _cholesky_inplace(A, D):
    """Lower Cholesky factor of the symmetric positive-definite ``A`` (in place); False if not PD."""
    for j in range(D):
        s = A[j, j]
        for p in range(j):
            s -= A[j, p] * A[j, p]
        if s <= 0.0:
            return False
        A[j, j] = math.sqrt(s)
        for i in range(j + 1, D):
            t = A[i, j]
            for p in range(j):
                t -= A[i, p] * A[j, p]
            A[i, j] = t / A[j, j]
    return True


@njit(cache=True, inline="always")
def _responsibilities(logs, lmax, resp):
    """``resp[k] = exp(logs[k] - lmax)`` normalised to sum 1 (0 for an empty component, ``logs[k] = -FAR``; ``logs``
    may be ``resp`` itself); returns the sum before normalising (0: every component empty)."""
    dens_sum = 0.0
    for k in range(resp.shape[0]):
        if logs[k] > -FAR:
            resp[k] = math.exp(logs[k] - lmax)
            dens_sum += resp[k]
        else:
            resp[k] = 0.0
    if dens_sum > 0.0:
        for k in range(resp.shape[0]):
            resp[k] /= dens_sum
    return dens_sum


@njit(cache=True)
def _gaussian_full_e(x, s0, s1, s2, reg, d2, resp, work, z):
    K = s0.shape[0]
    D = x.shape[0]
    total = _total_weight(s0)
    dmin = FAR
    logs = np.empty(K)
    for k in range(K):
        a = s0[k]
        if a <= EMPTY:
            d2[k] = FAR
            logs[k] = -FAR
            continue
        inv = 1.0 / a
        for i in range(D):
            z[i] = s1[k, i] * inv
        for i in range(D):
            for j in range(D):
                work[i, j] = s2[k, i, j] * inv - z[i] * z[j]
            work[i, i] += reg
        if not _cholesky_inplace(work, D):
            d2[k] = FAR
            logs[k] = -FAR
            continue
        logdet = 0.0
        q = 0.0
        # forward substitution L y = x - mu
        for i in range(D):
            t = x[i] - z[i]
            for p in range(i):
                t -= work[i, p] * z[p]  # z[p] now holds y[p] for p < i
            z[i] = t / work[i, i]
            # z[i] was mu_i: consumed above before being overwritten
            q += z[i] * z[i]
            logdet += 2.0 * math.log(work[i, i])
        d2[k] = q
        logs[k] = math.log(a) - 0.5 * logdet
        if q < dmin:
            dmin = q
    lmax = -FAR
    for k in range(K):
        if d2[k] < FAR:
            logs[k] -= 0.5 * (d2[k] - dmin)
            if logs[k] > lmax:
                lmax = logs[k]
    dens_sum = _responsibilities(logs, lmax, resp)
    if dens_sum > 0.0:
        dens_sum *= math.exp(lmax)
    return dens_sum, total, dmin


@njit(cache=True, inline="always")
def _update_weights_and_sums(x, eta, resp, s0, s1):
    """The step of the statistics every mixture keeps, given the responsibilities: ``s0[k] <- (1 - eta) s0[k] + g``
    and ``s1[k] <- (1 - eta) s1[k] + g x`` with ``g = eta resp[k]``. Returns ``1 - eta``."""
    keep = 1.0 - eta
    for k in range(s0.shape[0]):
        g = eta * resp[k]
        s0[k] = keep * s0[k] + g
        for i in range(x.shape[0]):
            s1[k, i] = keep * s1[k, i] + g * x[i]
    return keep


@njit(cache=True)
def gaussian_full_step(x, eta, s0, s1, s2, reg, d2, resp, work, z):
    """One online-EM step of a full-covariance Gaussian mixture (``s2`` (K, D, D)).

    ``work`` (D, D) and ``z`` (D,) are float64 scratch. Same contract as
    :func:`gaussian_step` without birth.
    """
    dens_sum, total, dmin = _gaussian_full_e(x, s0, s1, s2, reg, d2, resp, work, z)
    keep = _update_weights_and_sums(x, eta, resp, s0, s1)
    D = x.shape[0]
    for k in range(s0.shape[0]):
        g = eta * resp[k]
        for i in range(D):
            for j in range(D):
                s2[k, i, j] = keep * s2[k, i, j] + g * x[i] * x[j]
    return dens_sum, total, dmin


@njit(cache=True)
def gaussian_full_evaluate(x, s0, s1, s2, reg, d2, resp, work, z):
    """The E step of :func:`gaussian_full_step` alone."""
    return _gaussian_full_e(x, s0, s1, s2, reg, d2, resp, work, z)


# ----------------------------------------------------------------------------
# Bernoulli
# ----------------------------------------------------------------------------


@njit(cache=True)
def _bernoulli_e(x, s0, s1, eps, resp):
    K = s0.shape[0]
    D = x.shape[0]
    total = _total_weight(s0)
    lmax = -FAR
    for k in range(K):
        a = s0[k]
        if a <= EMPTY:
            resp[k] = -FAR
            continue
        ll = math.log(a)
        for d in range(D):
            m = s1[k, d] / a
            if m < eps:
                m = eps
            elif m > 1.0 - eps:
                m = 1.0 - eps
            ll += math.log(m) if x[d] > 0.5 else math.log(1.0 - m)
        resp[k] = ll
        if ll > lmax:
            lmax = ll
    return _responsibilities(resp, lmax, resp), total, lmax


@njit(cache=True)
def bernoulli_step(x, eta, s0, s1, eps, resp):
    """One online-EM step of a mixture of Bernoullis on binary ``x`` (D,), 0 or 1 in every place.

    Returns ``log p(x)`` under the model before the step.
    """
    dens_sum, total, lmax = _bernoulli_e(x, s0, s1, eps, resp)
    _update_weights_and_sums(x, eta, resp, s0, s1)
    if dens_sum <= 0.0:
        return -np.inf
    return math.log(dens_sum / total) + lmax


@njit(cache=True)
def bernoulli_evaluate(x, s0, s1, eps, resp):
    """``log p(x)`` and responsibilities (in ``resp``) without updating."""
    dens_sum, total, lmax = _bernoulli_e(x, s0, s1, eps, resp)
    if dens_sum <= 0.0:
        return -np.inf
    return math.log(dens_sum / total) + lmax


# ----------------------------------------------------------------------------
# streams: the estimators' loops over rows
# ----------------------------------------------------------------------------


@njit(cache=True)
def gaussian_fit_stream(X, n_seen, floor, s0, s1, s2, spherical, reg, mu, ivar, nrm, loglik):
    """Step a diag/spherical mixture through the rows of ``X`` in order.

    ``loglik[i]`` receives ``log p(X[i])`` under the model before its step.
    ``n_seen`` counts the samples (and pseudo-samples) before ``X[0]``. Returns
    the new count.
    """
    K = s0.shape[0]
    D = X.shape[1]
    d2 = np.empty(K)
    resp = np.empty(K)
    n = n_seen
    for i in range(X.shape[0]):
        n += 1
        a, t, m = gaussian_step(X[i], learning_rate(n, floor), s0, s1, s2, spherical, reg, mu, ivar, nrm, np.inf, 0.0,
                                d2, resp)
        loglik[i] = log_likelihood(a, t, m, D)
    return n


@njit(cache=True)
def _full_scratch(K, D):
    """Work arrays of :func:`gaussian_full_step`/:func:`gaussian_full_evaluate` for ``K`` components in ``D``
    dimensions: ``d2``, ``resp`` (K,), ``work`` (D, D), ``z`` (D,)."""
    return np.empty(K), np.empty(K), np.empty((D, D)), np.empty(D)


@njit(cache=True)
def gaussian_full_fit_stream(X, n_seen, floor, s0, s1, s2, reg, loglik):
    """Full-covariance counterpart of :func:`gaussian_fit_stream`."""
    D = X.shape[1]
    d2, resp, work, z = _full_scratch(s0.shape[0], D)
    n = n_seen
    for i in range(X.shape[0]):
        n += 1
        a, t, m = gaussian_full_step(X[i], learning_rate(n, floor), s0, s1, s2, reg, d2, resp, work, z)
        loglik[i] = log_likelihood(a, t, m, D)
    return n


@njit(cache=True)
def gaussian_score_rows(X, s0, mu, ivar, nrm, spherical, loglik, resp_out):
    """``log p(X[i])`` and the responsibilities of every row (diag/spherical), without learning."""
    K = s0.shape[0]
    D = X.shape[1]
    d2 = np.empty(K)
    resp = np.empty(K)
    for i in range(X.shape[0]):
        a, t, m = gaussian_evaluate(X[i], s0, mu, ivar, nrm, spherical, d2, resp)
        loglik[i] = log_likelihood(a, t, m, D)
        resp_out[i] = resp


@njit(cache=True)
def gaussian_full_score_rows(X, s0, s1, s2, reg, loglik, resp_out):
    """Full-covariance counterpart of :func:`gaussian_score_rows`."""
    D = X.shape[1]
    d2, resp, work, z = _full_scratch(s0.shape[0], D)
    for i in range(X.shape[0]):
        a, t, m = gaussian_full_evaluate(X[i], s0, s1, s2, reg, d2, resp, work, z)
        loglik[i] = log_likelihood(a, t, m, D)
        resp_out[i] = resp


@njit(cache=True)
def bernoulli_fit_stream(X, n_seen, floor, s0, s1, eps, loglik):
    """Bernoulli counterpart of :func:`gaussian_fit_stream`."""
    resp = np.empty(s0.shape[0])
    n = n_seen
    for i in range(X.shape[0]):
        n += 1
        loglik[i] = bernoulli_step(X[i], learning_rate(n, floor), s0, s1, eps, resp)
    return n


@njit(cache=True)
def bernoulli_score_rows(X, s0, s1, eps, loglik, resp_out):
    """``log p(X[i])`` and responsibilities of every row, without learning."""
    resp = np.empty(s0.shape[0])
    for i in range(X.shape[0]):
        loglik[i] = bernoulli_evaluate(X[i], s0, s1, eps, resp)
        for k in range(s0.shape[0]):
            resp_out[i, k] = resp[k]
