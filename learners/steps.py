"""One jitted step per update rule: the single source of the mathematics.

Every rule has two layers:

- a *rule*: scalar maths only (``olk_n_multiplier``, ``norma_regression_rule``,
  ...), straight from the papers (see ALGORITHMS.md);
- an *update* ``*_update(x, ..., f, ...)``: given ``f = f_t(x)`` already
  evaluated, applies the rule and writes the new term into the bounded
  expansion (:mod:`learners.expansion`); and a *step* ``*_step`` that evaluates
  ``f_t(x)`` and then calls the update.

The per-sample estimators call the steps; the background subtractors call the
same functions for every pixel inside a ``prange`` loop (they call the update
directly when their policy needs the score first).

Scale convention. Old coefficients are multiplied by a common ``decay`` each
step (OLK: ``1/(1+r)``, :func:`olk_decay`; NORMA: ``1 - eta*lam``,
:func:`norma_decay`). The steps take the global ``scale`` in force *before* the
step, store the new term already divided by ``scale * decay``, and leave the
decay itself to the caller, which must set ``scale *= decay`` once after the
step (once per frame for a whole image of learners) and renormalise when
:func:`learners.expansion.needs_renormalise` says so.

Kernel arguments ``kind, width, degree, coef0, lut`` are as in
:func:`learners.kernels.kernel_value`. ``sv_threshold > 0`` drops terms whose
true coefficient fell below it after the step (OLK Remark 4).

This module imports only numpy and numba.
"""

from numba import njit

from learners.expansion import expansion_prune, expansion_push, expansion_sum
from learners.kernels import self_kernel

# OLK_N rho rules
RHO_PAPER = 0  # eq. 69: rho follows eq. 68 only when nu < a < C
RHO_PRIMAL = 1  # eq. 68: rho = max(0, f_{t+1}(x_{t+1}) - 1) every step
RHO_RULES = {"paper": RHO_PAPER, "primal": RHO_PRIMAL}
#: per-pixel nu-trick offset (:func:`olk_n_quantile_rho`), applied by the caller at every
#: observation; :func:`olk_n_rho` leaves rho unchanged under it. Not one of the
#: estimator's ``RHO_RULES``: it needs its own step size and bounds.
RHO_QUANTILE = 2

# NORMA regression losses
LOSS_SQUARED = 0
LOSS_EPSILON_INSENSITIVE = 1
LOSS_NU_EPSILON_INSENSITIVE = 2
LOSS_HUBER = 3
LOSS_ADAPTIVE_HUBER = 4
REGRESSION_LOSSES = {
    "squared": LOSS_SQUARED,
    "epsilon_insensitive": LOSS_EPSILON_INSENSITIVE,
    "nu_epsilon_insensitive": LOSS_NU_EPSILON_INSENSITIVE,
    "huber": LOSS_HUBER,
    "adaptive_huber": LOSS_ADAPTIVE_HUBER,
}


# --------------------------------------------------------------------------
# decays
# --------------------------------------------------------------------------


@njit(cache=True)
def olk_decay(r):
    """Common factor of the old OLK coefficients per step: ``1 / (1 + r)``."""
    return 1.0 / (1.0 + r)


@njit(cache=True)
def norma_decay(eta, lam):
    """Common factor of the old NORMA coefficients per step: ``1 - eta * lam``."""
    return 1.0 - eta * lam


# --------------------------------------------------------------------------
# OLK (Li et al. 2013)
# --------------------------------------------------------------------------


@njit(cache=True)
def _stationary_point(numerator, kxx):
    """``numerator / k(x,x)``; for ``k(x,x) = 0`` (e.g. the linear kernel at x = 0, where
    the new term is the zero function) the dual is linear in ``a`` and its maximum lies
    at the bound ``numerator`` points to: +-1e300 (finite, as fastmath callers assume)
    or 0, so the clipping picks that bound (no ZeroDivisionError)."""
    if kxx > 0.0:
        return numerator / kxx
    if numerator > 0.0:
        return 1e300
    if numerator < 0.0:
        return -1e300
    return 0.0


@njit(cache=True)
def olk_c_multiplier(f, y, kxx, r, C):
    """OLK_C dual variable (eq. 30-33): ``clip((1 + r - y f) / k(x,x), 0, C)``."""
    a = _stationary_point(1.0 + r - y * f, kxx)
    if a < 0.0:
        return 0.0
    if a > C:
        return C
    return a


@njit(cache=True)
def olk_r_multipliers(f, y, kxx, r, C, epsilon):
    """OLK_R dual variables ``(a, a_star)`` (eq. 43-52); at most one is non-zero.

    ``a_bar = ((1+r)(y-eps) - f)/k(x,x)``, ``a_star_bar = (f - (1+r)(y+eps))/k(x,x)``;
    their sum is ``-2(1+r)eps/k(x,x) <= 0``, so at most one is positive; it is
    clipped to ``C``.
    """
    a_bar = _stationary_point((1.0 + r) * (y - epsilon) - f, kxx)
    if a_bar > 0.0:
        return min(a_bar, C), 0.0
    a_star_bar = _stationary_point(f - (1.0 + r) * (y + epsilon), kxx)
    if a_star_bar > 0.0:
        return 0.0, min(a_star_bar, C)
    return 0.0, 0.0


@njit(cache=True)
def olk_n_multiplier(f, kxx, r, nu, C):
    """OLK_N dual variable (eq. 65-67): ``clip((1 + r - f) / k(x,x), nu, C)``."""
    a = _stationary_point(1.0 + r - f, kxx)
    if a < nu:
        return nu
    if a > C:
        return C
    return a


@njit(cache=True)
def olk_n_rho(f_next, a, nu, C, rho, rule):
    """OLK_N offset after a step.

    ``f_next`` is ``f_{t+1}(x_{t+1})``. ``RHO_PRIMAL`` (eq. 68):
    ``max(0, f_next - 1)``. ``RHO_PAPER`` (eq. 69): the same when ``nu < a < C``,
    else ``rho`` unchanged. With ``k(x,x) = 1`` an interior ``a`` makes
    ``f_next = 1`` exactly (up to rounding), so under the paper rule rho stays at
    its initial value 0 unless the budget evicts a term.
    """
    if rule == RHO_QUANTILE:
        return rho
    if rule == RHO_PRIMAL or (a > nu and a < C):
        v = f_next - 1.0
        return v if v > 0.0 else 0.0
    return rho


@njit(cache=True)
def olk_n_quantile_rho(f, rho, eta, nu, lo, hi):
    """OLK_N offset by the nu-trick, one observation ``f = f_t(x)`` at a time.

    The novelty score is ``1 + rho - f``. As nu-NORMA's offset (Kivinen et al.
    2004, eq. 16) ``rho`` follows a quantile: a novel observation
    (``f < 1 + rho``) lowers it by ``eta (1 - nu)``, any other raises it by
    ``eta nu``, so in equilibrium a fraction ``nu`` of the observations is novel.
    ``rho`` is kept in ``[lo, hi]`` (``lo > -1`` keeps a value no past sample
    explains, ``f = 0``, novel). Returns the new ``rho``.
    """
    if f < 1.0 + rho:
        rho -= eta * (1.0 - nu)
    else:
        rho += eta * nu
    if rho < lo:
        return lo
    if rho > hi:
        return hi
    return rho


@njit(cache=True)
def blink_accumulate(v, flipped, up, down):
    """Blinking-pixel accumulator (SuBSENSE's ``v(x)``, St-Charles et al. 2015), one frame at a time.

    ``flipped``: the pixel's decision differs from its previous frame's. A flip
    raises ``v`` by ``up``, a steady frame lowers it by ``down``; ``v`` stays in
    ``[0, 1]``. Pixels whose decisions flicker (water, leaves, the edges of a
    shaking scene) build up ``v``; a passing object flips a pixel only twice.
    Returns the new ``v``.
    """
    v = v + up if flipped else v - down
    if v < 0.0:
        return 0.0
    if v > 1.0:
        return 1.0
    return v


@njit(cache=True)
def feedback_level(level, v, gain):
    """Decision level lowered by blinking: ``level - gain * v * |level|``.

    A value ``x`` is novel when ``f(x) < level`` (OLK_N: ``level = 1 + rho``;
    nu-NORMA: ``level = rho``). With ``gain < 1`` and ``v`` in ``[0, 1]`` the level
    keeps its sign, so a value no past sample explains (``f = 0``) stays novel.
    """
    return level - gain * v * abs(level)


@njit(cache=True)
def misfit_average(m, k_near, rate):
    """Moving average of a pixel's misfit (the analogue of SuBSENSE's ``D_min(x)``), one frame at a time.

    The misfit of a value ``x`` is ``1 - k_near``, where ``k_near = max_j k(x, x_j)`` is the kernel
    value of its nearest sample (SuBSENSE's normalised minimal distance, in kernel terms): 0 when a
    sample coincides with the value, towards 1 as the nearest one falls outside the kernel's
    width. ``m`` moves towards it by ``rate``: ``m + rate (1 - k_near - m)``. Returns the new ``m``.
    """
    return m + rate * ((1.0 - k_near) - m)


@njit(cache=True)
def width_factor(m, v, gain, blink, lo, hi):
    """Per-pixel kernel width factor (the analogue of SuBSENSE's ``R(x)``): ``lo + gain m + blink v``
    within ``[lo, hi]``, from the misfit average ``m`` (:func:`misfit_average`) and the blink
    accumulator ``v`` (:func:`blink_accumulate`). The pixel's kernel becomes
    ``exp(-||x - y||^2 / (s p)^2)``: wider where its values spread (water, leaves) or its
    decisions blink, ``lo`` where it is static."""
    s = lo + gain * m + blink * v
    if s < lo:
        return lo
    if s > hi:
        return hi
    return s


@njit(cache=True, fastmath=True)
def olk_c_update(x, y, f, sv, coef, ring, scale, r, C, kxx, sv_threshold):
    """Apply an OLK_C step given ``f = f_t(x)``; returns the new term's coefficient."""
    a = olk_c_multiplier(f, y, kxx, r, C)
    new_scale = scale * olk_decay(r)
    alpha = a * y / (1.0 + r)
    if a > 0.0:
        expansion_push(x, alpha / new_scale, sv, coef, ring)
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return alpha


@njit(cache=True, fastmath=True)
def olk_c_step(x, y, sv, coef, ring, scale, r, C, kind, width, degree, coef0, lut, sv_threshold):
    """One OLK_C step on ``(x, y)``, ``y`` in {-1, +1}. Returns ``(f_t(x), alpha)``.

    The caller then sets ``scale *= olk_decay(r)``.
    """
    total, _ = expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    f = scale * total
    kxx = self_kernel(kind, x, width, degree, coef0, lut)
    alpha = olk_c_update(x, y, f, sv, coef, ring, scale, r, C, kxx, sv_threshold)
    return f, alpha


@njit(cache=True, fastmath=True)
def olk_r_update(x, y, f, sv, coef, ring, scale, r, C, epsilon, kxx, sv_threshold):
    """Apply an OLK_R step given ``f = f_t(x)``; returns the new term's coefficient."""
    a, a_star = olk_r_multipliers(f, y, kxx, r, C, epsilon)
    new_scale = scale * olk_decay(r)
    alpha = (a - a_star) / (1.0 + r)
    if alpha != 0.0:
        expansion_push(x, alpha / new_scale, sv, coef, ring)
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return alpha


@njit(cache=True, fastmath=True)
def olk_r_step(x, y, sv, coef, ring, scale, r, C, epsilon, kind, width, degree, coef0, lut, sv_threshold):
    """One OLK_R step on ``(x, y)``. Returns ``(f_t(x), alpha)``.

    The caller then sets ``scale *= olk_decay(r)``.
    """
    total, _ = expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    f = scale * total
    kxx = self_kernel(kind, x, width, degree, coef0, lut)
    alpha = olk_r_update(x, y, f, sv, coef, ring, scale, r, C, epsilon, kxx, sv_threshold)
    return f, alpha


@njit(cache=True, fastmath=True)
def olk_n_update(x, f, f_oldest, sv, coef, ring, scale, r, nu, C, rho, rho_rule, kxx, sv_threshold):
    """Apply an OLK_N step given ``f = f_t(x)``.

    ``f_oldest`` is the true contribution to ``f`` of the term a full expansion
    evicts (second output of :func:`expansion_sum` times ``scale``); it keeps
    ``f_{t+1}(x)`` in the rho rule exact under a budget. Returns ``(a, rho)``;
    the new term's coefficient is ``a / (1 + r)``.
    """
    a = olk_n_multiplier(f, kxx, r, nu, C)
    new_scale = scale * olk_decay(r)
    evicted = f_oldest if ring[1] == sv.shape[0] else 0.0
    expansion_push(x, (a / (1.0 + r)) / new_scale, sv, coef, ring)
    f_next = (f - evicted + a * kxx) / (1.0 + r)
    rho = olk_n_rho(f_next, a, nu, C, rho, rho_rule)
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return a, rho


@njit(cache=True, fastmath=True)
def olk_n_step(x, sv, coef, ring, scale, r, nu, C, rho, rho_rule, kind, width, degree, coef0, lut, sv_threshold):
    """One OLK_N step on ``x``. Returns ``(f_t(x), a, rho)``.

    Novelty of ``x`` before the step: ``f_t(x) - 1 - rho < 0``. The caller then
    sets ``scale *= olk_decay(r)``.
    """
    total, oldest = expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    f = scale * total
    kxx = self_kernel(kind, x, width, degree, coef0, lut)
    a, rho = olk_n_update(x, f, scale * oldest, sv, coef, ring, scale, r, nu, C, rho, rho_rule, kxx, sv_threshold)
    return f, a, rho


# --------------------------------------------------------------------------
# NORMA (Kivinen, Smola, Williamson 2004)
# --------------------------------------------------------------------------


@njit(cache=True, fastmath=True)
def norma_value(x, sv, coef, ring, scale, b, kernel):
    """``f_t(x) = scale * sum_j coef[j] k(sv[j], x) + b``, ``kernel = (kind, width, degree, coef0, lut)``."""
    kind, width, degree, coef0, lut = kernel
    total, _ = expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    return scale * total + b


@njit(cache=True, fastmath=True)
def norma_add_term(x, alpha, new_scale, sv, coef, ring, b, use_offset, sv_threshold):
    """Store NORMA's new term ``alpha k(x, .)`` (when non-zero; ``b += alpha`` with an offset),
    then prune; returns the offset."""
    if alpha != 0.0:
        expansion_push(x, alpha / new_scale, sv, coef, ring)
        if use_offset:
            b += alpha
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return b


@njit(cache=True)
def norma_hinge_alpha(f, y, eta, margin, strict):
    """NORMA's hinge / perceptron rule: the new term ``eta y`` when ``y f < margin``
    (``<=`` when not ``strict``), else 0."""
    yf = y * f
    if yf < margin or (not strict and yf <= margin):
        return eta * y
    return 0.0


@njit(cache=True, fastmath=True)
def norma_classification_update(x, y, f, sv, coef, ring, scale, eta, lam, margin, strict, b, use_offset,
                                sv_threshold):
    """Soft-margin NORMA / kernel perceptron step given ``f = f_t(x)`` (offset included).

    Hinge ``max(0, margin - y f)``: when ``y f < margin`` (``<=`` when ``strict``
    is False, the perceptron's mistake condition for ``margin = 0``) the new term
    is ``alpha = eta y`` and, with an offset, ``b += eta y``. Returns ``(alpha, b)``.
    """
    alpha = norma_hinge_alpha(f, y, eta, margin, strict)
    b = norma_add_term(x, alpha, scale * norma_decay(eta, lam), sv, coef, ring, b, use_offset, sv_threshold)
    return alpha, b


@njit(cache=True, fastmath=True)
def norma_classification_step(x, y, sv, coef, ring, scale, eta, lam, margin, strict, b, use_offset, kernel,
                              sv_threshold):
    """One soft-margin NORMA step (fixed margin) or kernel perceptron step; ``kernel`` is the tuple
    ``(kind, width, degree, coef0, lut)``.

    Returns ``(f_t(x), alpha, b)``; ``f`` includes the offset ``b``. The caller
    then sets ``scale *= norma_decay(eta, lam)``.
    """
    f = norma_value(x, sv, coef, ring, scale, b, kernel)
    alpha, b = norma_classification_update(x, y, f, sv, coef, ring, scale, eta, lam, margin, strict, b,
                                           use_offset, sv_threshold)
    return f, alpha, b


@njit(cache=True, fastmath=True)
def norma_nu_classification_update(x, y, f, sv, coef, ring, scale, eta, lam, nu, rho, b, use_offset,
                                   sv_threshold):
    """nu-NORMA classification given ``f = f_t(x)`` (eq. 13-14; the paper sets lam = 1).

    ``y f < rho``: ``alpha = eta y``, ``rho -= eta (1 - nu)`` (and ``b += eta y``);
    else ``alpha = 0``, ``rho += eta nu``. Returns ``(alpha, rho, b)``.
    """
    new_scale = scale * norma_decay(eta, lam)
    alpha = 0.0
    if y * f < rho:
        alpha = eta * y
        expansion_push(x, alpha / new_scale, sv, coef, ring)
        if use_offset:
            b += alpha
        rho -= eta * (1.0 - nu)
    else:
        rho += eta * nu
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return alpha, rho, b


@njit(cache=True, fastmath=True)
def norma_nu_classification_step(x, y, sv, coef, ring, scale, eta, lam, nu, rho, b, use_offset, kernel,
                                 sv_threshold):
    """One nu-NORMA classification step (``kernel`` as in :func:`norma_classification_step`).
    Returns ``(f_t(x), alpha, rho, b)``.

    The caller then sets ``scale *= norma_decay(eta, lam)``.
    """
    f = norma_value(x, sv, coef, ring, scale, b, kernel)
    alpha, rho, b = norma_nu_classification_update(x, y, f, sv, coef, ring, scale, eta, lam, nu, rho, b,
                                                   use_offset, sv_threshold)
    return f, alpha, rho, b


@njit(cache=True)
def norma_regression_rule(loss, residual, eta, epsilon, nu, sigma):
    """New coefficient and loss parameters for a residual ``y - f`` (eq. 17-21).

    Returns ``(alpha, epsilon, sigma)``:

    - squared: ``alpha = eta (y - f)``;
    - epsilon-insensitive: ``eta sgn(y - f)`` when ``|y - f| > epsilon``, else 0;
    - nu-epsilon-insensitive: as above, and ``epsilon += eta (1 - nu)`` when outside
      the tube, else ``epsilon -= eta nu`` (kept >= 0);
    - Huber: ``eta sgn(y - f)`` when ``|y - f| > sigma``, else ``eta (y - f) / sigma``;
    - adaptive Huber: as Huber, and ``sigma += eta (1 - nu)`` when ``|y - f| > sigma``,
      else ``sigma -= eta nu`` (kept >= 0).
    """
    ar = abs(residual)
    sgn = 1.0 if residual > 0.0 else (-1.0 if residual < 0.0 else 0.0)
    if loss == LOSS_SQUARED:
        return eta * residual, epsilon, sigma
    if loss == LOSS_EPSILON_INSENSITIVE:
        if ar > epsilon:
            return eta * sgn, epsilon, sigma
        return 0.0, epsilon, sigma
    if loss == LOSS_NU_EPSILON_INSENSITIVE:
        if ar > epsilon:
            return eta * sgn, epsilon + eta * (1.0 - nu), sigma
        return 0.0, max(epsilon - eta * nu, 0.0), sigma
    # Huber and adaptive Huber
    if ar > sigma:
        alpha = eta * sgn
    elif sigma > 0.0:
        alpha = eta * residual / sigma
    else:
        alpha = 0.0
    if loss == LOSS_ADAPTIVE_HUBER:
        if ar > sigma:
            sigma = sigma + eta * (1.0 - nu)
        else:
            sigma = max(sigma - eta * nu, 0.0)
    return alpha, epsilon, sigma


@njit(cache=True, fastmath=True)
def norma_regression_update(x, y, f, sv, coef, ring, scale, eta, lam, loss, epsilon, nu, sigma, b, use_offset,
                            sv_threshold):
    """Apply a NORMA regression step given ``f = f_t(x)``. Returns ``(alpha, epsilon, sigma, b)``."""
    alpha, epsilon, sigma = norma_regression_rule(loss, y - f, eta, epsilon, nu, sigma)
    b = norma_add_term(x, alpha, scale * norma_decay(eta, lam), sv, coef, ring, b, use_offset, sv_threshold)
    return alpha, epsilon, sigma, b


@njit(cache=True, fastmath=True)
def norma_regression_step(x, y, sv, coef, ring, scale, eta, lam, loss, epsilon, nu, sigma, b, use_offset, kernel,
                          sv_threshold):
    """One NORMA regression step (``kernel`` as in :func:`norma_classification_step`).
    Returns ``(f_t(x), alpha, epsilon, sigma, b)``.

    The caller then sets ``scale *= norma_decay(eta, lam)``.
    """
    f = norma_value(x, sv, coef, ring, scale, b, kernel)
    alpha, epsilon, sigma, b = norma_regression_update(x, y, f, sv, coef, ring, scale, eta, lam, loss, epsilon,
                                                       nu, sigma, b, use_offset, sv_threshold)
    return f, alpha, epsilon, sigma, b


@njit(cache=True, fastmath=True)
def norma_novelty_rho(f, rho, eta, nu):
    """The offset of a nu-NORMA novelty step (eq. 16) given ``f = f_t(x)``: a novel value (``f < rho``)
    lowers it by ``eta (1 - nu)``, any other raises it by ``eta nu``. Returns the new ``rho``."""
    if f < rho:
        return rho - eta * (1.0 - nu)
    return rho + eta * nu


@njit(cache=True, fastmath=True)
def norma_novelty_update(x, f, sv, coef, ring, scale, eta, lam, nu, rho, sv_threshold):
    """nu-NORMA novelty step given ``f = f_t(x)`` (eq. 16).

    ``f < rho``: ``alpha = eta``, ``rho -= eta (1 - nu)``; else ``alpha = 0``,
    ``rho += eta nu``. Returns ``(alpha, rho)``.
    """
    new_scale = scale * norma_decay(eta, lam)
    alpha = 0.0
    if f < rho:
        alpha = eta
        expansion_push(x, alpha / new_scale, sv, coef, ring)
    rho = norma_novelty_rho(f, rho, eta, nu)
    if sv_threshold > 0.0:
        expansion_prune(sv, coef, ring, new_scale, sv_threshold)
    return alpha, rho


@njit(cache=True, fastmath=True)
def norma_novelty_step(x, sv, coef, ring, scale, eta, lam, nu, rho, kind, width, degree, coef0, lut,
                       sv_threshold):
    """One nu-NORMA novelty step. Returns ``(f_t(x), alpha, rho)``.

    Novelty of ``x`` before the step: ``f_t(x) < rho``. The caller then sets
    ``scale *= norma_decay(eta, lam)``.
    """
    total, _ = expansion_sum(x, sv, coef, ring, kind, width, degree, coef0, lut)
    f = scale * total
    alpha, rho = norma_novelty_update(x, f, sv, coef, ring, scale, eta, lam, nu, rho, sv_threshold)
    return f, alpha, rho
