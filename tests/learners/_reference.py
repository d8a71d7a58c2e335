"""Plain-Python transcriptions of the NORMA and OLK update rules, for the tests.

Written from the papers (Kivinen, Smola & Williamson 2004, eq. 13-21; Li et al.
2013, eq. 30-33, 43-52, 55-69) and ../shared/ALGORITHMS.md, *not* from the
package: no global scale, no ring buffer, no shortcuts. The expansion is a list of
``(x_i, alpha_i)`` with the true coefficients; every step multiplies all of them
by the rule's factor, evaluates ``f`` by summing over the list, and (for a
budget) drops the oldest term when a new one would exceed it. OLK_R picks its
dual variables by enumerating the five candidates of eq. 50-52; OLK_N evaluates
``f_{t+1}(x_{t+1})`` for rho (eq. 68-69) on the updated expansion.
"""

from __future__ import annotations

import math


def kernel(name, x, y, width=1.0, degree=3.0, coef0=1.0):
    if name == "gaussian":
        return math.exp(-sum((a - b) ** 2 for a, b in zip(x, y)) / width ** 2)
    if name == "laplacian":
        return math.exp(-math.sqrt(sum((a - b) ** 2 for a, b in zip(x, y))) / width)
    if name == "polynomial":
        return (sum(a * b for a, b in zip(x, y)) + coef0) ** degree
    if name == "linear":
        return sum(a * b for a, b in zip(x, y))
    raise ValueError(name)


class Expansion:
    """``f(x) = sum_i alpha_i k(x_i, x) + b`` with at most ``budget`` terms (None: unbounded)."""

    def __init__(self, kernel_name="gaussian", width=1.0, degree=3.0, coef0=1.0, budget=None):
        self.k = lambda x, y: kernel(kernel_name, x, y, width, degree, coef0)
        self.budget = budget
        self.points = []
        self.alphas = []
        self.b = 0.0

    def f(self, x):
        return sum(a * self.k(p, x) for p, a in zip(self.points, self.alphas)) + self.b

    def shrink(self, factor):
        self.alphas = [a * factor for a in self.alphas]

    def add(self, x, alpha):
        if self.budget is not None and len(self.points) == self.budget:
            self.points.pop(0)
            self.alphas.pop(0)
        self.points.append(list(x))
        self.alphas.append(alpha)

    def drop_below(self, threshold):
        if threshold > 0:
            keep = [i for i, a in enumerate(self.alphas) if abs(a) >= threshold]
            self.points = [self.points[i] for i in keep]
            self.alphas = [self.alphas[i] for i in keep]


# ---------------------------------------------------------------------------- OLK


def olk_c(exp, x, y, r, C, sv_threshold=0.0):
    """OLK_C (eq. 30-33). Dual: max_a a - (a^2 k(x,x) + 2 a y f_t(x)) / (2(1+r)) on [0, C]."""
    f = exp.f(x)
    kxx = exp.k(x, x)
    a = min(max((1 + r - y * f) / kxx, 0.0), C)
    exp.shrink(1 / (1 + r))
    if a > 0:
        exp.add(x, a * y / (1 + r))
    exp.drop_below(sv_threshold)
    return f


def olk_r(exp, x, y, r, C, eps, sv_threshold=0.0):
    """OLK_R (eq. 43-52): minimum over the five candidates of eq. 50-52."""
    f = exp.f(x)
    kxx = exp.k(x, x)

    def L1(a):  # minus the dual in alpha (the alpha* = 0 branch)
        return kxx * a * a / (2 * (1 + r)) - a * (y - eps - f / (1 + r))

    def L2(a):  # minus the dual in alpha* (the alpha = 0 branch)
        return kxx * a * a / (2 * (1 + r)) - a * (f / (1 + r) - y - eps)

    a_bar = ((1 + r) * (y - eps) - f) / kxx
    a_star_bar = (f - (1 + r) * (y + eps)) / kxx
    candidates = [(0.0, 0.0), (C, 0.0), (0.0, C)]
    if 0 < a_bar < C:
        candidates.append((a_bar, 0.0))
    if 0 < a_star_bar < C:
        candidates.append((0.0, a_star_bar))
    a, a_star = min(candidates, key=lambda p: L1(p[0]) + L2(p[1]))
    exp.shrink(1 / (1 + r))
    if a - a_star != 0:
        exp.add(x, (a - a_star) / (1 + r))
    exp.drop_below(sv_threshold)
    return f, a, a_star


def olk_n(exp, x, r, nu, C, rho, rule, sv_threshold=0.0):
    """OLK_N (eq. 65-69). Returns ``(f_t(x), a, rho_{t+1})``."""
    f = exp.f(x)
    kxx = exp.k(x, x)
    a = min(max((1 + r - f) / kxx, nu), C)
    exp.shrink(1 / (1 + r))
    exp.add(x, a / (1 + r))
    if rule == "primal" or nu < a < C:
        rho = max(0.0, exp.f(x) - 1)
    exp.drop_below(sv_threshold)
    return f, a, rho


def olk_n_with_quantile_rho(exp, x, r, nu, C, rho, eta, nu_rho, lo, hi):
    """OLK_N (eq. 65-67) with the offset moved by the nu-trick (Kivinen et al. eq. 16 applied to
    OLK_N's score ``1 + rho - f``) before the step: novel (``f < 1 + rho``) lowers rho by
    ``eta (1 - nu_rho)``, else it rises by ``eta nu_rho``; then clipped to ``[lo, hi]``.
    Returns ``(f_t(x), a, rho_{t+1})``."""
    f = exp.f(x)
    rho = rho - eta * (1 - nu_rho) if f < 1 + rho else rho + eta * nu_rho
    rho = min(max(rho, lo), hi)
    kxx = exp.k(x, x)
    a = min(max((1 + r - f) / kxx, nu), C)
    exp.shrink(1 / (1 + r))
    exp.add(x, a / (1 + r))
    return f, a, rho


# -------------------------------------------------------------------------- NORMA


def norma_classification(exp, x, y, eta, lam, margin, perceptron, use_offset, sv_threshold=0.0):
    """Soft margin ``max(0, margin - y f)`` (eq. 12) or perceptron ``max(0, -y f)``, SGD step.

    The perceptron counts ``y f = 0`` as a mistake (else it never leaves f = 0).
    """
    f = exp.f(x)
    mistake = (y * f <= 0) if perceptron else (y * f < margin)
    exp.shrink(1 - eta * lam)
    if mistake:
        exp.add(x, eta * y)
        if use_offset:
            exp.b += eta * y
    exp.drop_below(sv_threshold)
    return f


def norma_nu_classification(exp, x, y, eta, lam, nu, rho, use_offset, sv_threshold=0.0):
    """nu-classification ``max(0, rho - y f) - nu rho`` (eq. 13-14): returns ``(f, rho)``."""
    f = exp.f(x)
    exp.shrink(1 - eta * lam)
    if y * f < rho:
        exp.add(x, eta * y)
        if use_offset:
            exp.b += eta * y
        rho -= eta * (1 - nu)
    else:
        rho += eta * nu
    exp.drop_below(sv_threshold)
    return f, rho


def norma_novelty(exp, x, eta, lam, nu, rho, sv_threshold=0.0):
    """Novelty ``max(0, rho - f) - nu rho`` (eq. 16): returns ``(f, rho)``."""
    f = exp.f(x)
    exp.shrink(1 - eta * lam)
    if f < rho:
        exp.add(x, eta)
        rho -= eta * (1 - nu)
    else:
        rho += eta * nu
    exp.drop_below(sv_threshold)
    return f, rho


def norma_regression(exp, x, y, eta, lam, loss, epsilon, nu, sigma, use_offset, sv_threshold=0.0):
    """Regression losses of eq. 17-21 by their derivative in f. Returns ``(f, epsilon, sigma)``."""
    f = exp.f(x)
    d = y - f
    sgn = 1.0 if d > 0 else (-1.0 if d < 0 else 0.0)
    if loss == "squared":  # 1/2 (y - f)^2
        alpha = eta * d
    elif loss == "epsilon_insensitive":  # max(0, |y - f| - eps)
        alpha = eta * sgn if abs(d) > epsilon else 0.0
    elif loss == "nu_epsilon_insensitive":  # max(0, |y - f| - eps) + nu eps, eps learnt
        if abs(d) > epsilon:
            alpha = eta * sgn
            epsilon = epsilon + eta * (1 - nu)
        else:
            alpha = 0.0
            epsilon = max(0.0, epsilon - eta * nu)
    elif loss in ("huber", "adaptive_huber"):  # |d| - sigma/2 beyond sigma, d^2/(2 sigma) inside
        outside = abs(d) > sigma
        alpha = eta * sgn if outside else (eta * d / sigma if sigma > 0 else 0.0)
        if loss == "adaptive_huber":  # + nu sigma, sigma learnt
            sigma = sigma + eta * (1 - nu) if outside else max(0.0, sigma - eta * nu)
    else:
        raise ValueError(loss)
    exp.shrink(1 - eta * lam)
    if alpha != 0:
        exp.add(x, alpha)
        if use_offset:
            exp.b += alpha
    exp.drop_below(sv_threshold)
    return f, epsilon, sigma
