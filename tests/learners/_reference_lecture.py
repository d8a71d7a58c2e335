"""Plain-Python transcriptions of the lecture's online learners (seed 002), for the tests.

Written from ALGORITHMS.md ("Online learning lecture") and the documented choices
of the package (log-free weights, the TAIL cut-off, component birth), *not* from
the package: no caches, no scratch arrays, no numba; every quantity recomputed
from its definition at every step.
"""

from __future__ import annotations

import math

TAIL = 32.0  # learners.online_em.TAIL: documented cut-off of negligible responsibilities


# ------------------------------------------------------------------ kernels
def kernel(name, x, y, width):
    u2 = sum((a - b) ** 2 for a, b in zip(x, y)) / width ** 2
    if name == "gaussian":
        return math.exp(-u2)
    if name == "cauchy":
        return 1.0 / (1.0 + math.sqrt(u2) ** (len(x) + 1))
    if name == "epanechnikov":
        return max(0.0, 1.0 - u2)
    raise ValueError(name)


# ------------------------------------------------------------------ weighted majority
def weighted_majority(Y, t, eta):
    """Rounds of the lecture's algorithm: returns (forecasts p_n, final weights, expert costs)."""
    M = len(Y[0])
    w = [1.0 / M] * M
    costs = [0.0] * M
    forecasts = []
    for y, tn in zip(Y, t):
        forecasts.append(sum(wm * ym for wm, ym in zip(w, y)))
        c = [abs(ym - tn) for ym in y]
        costs = [a + b for a, b in zip(costs, c)]
        unnorm = [wm * math.exp(-eta * cm) for wm, cm in zip(w, c)]
        z = sum(unnorm)
        w = [u / z for u in unnorm]
    return forecasts, w, costs


# ------------------------------------------------------------------ kernel rule
def kernel_rule_decision(points, labels, x, name, width, budget=None):
    """sum over the last `budget` samples of label 1 minus label 0 of k((x - x_n)/h)."""
    if budget is not None:
        points, labels = points[-budget:], labels[-budget:]
    return sum((1.0 if t == 1 else -1.0) * kernel(name, p, x, width) for p, t in zip(points, labels))


# ------------------------------------------------------------------ online EM, Gaussian
def gaussian_params(S, cov, reg):
    """M step from S = (s0, s1, s2): weights, means, variances (lists)."""
    s0, s1, s2 = S
    D = len(s1[0])
    total = sum(s0)
    out = []
    for k in range(len(s0)):
        if s0[k] <= 1e-20:
            out.append(None)
            continue
        mu = [v / s0[k] for v in s1[k]]
        if cov == "spherical":
            var = [max((s2[k][0] / s0[k] - sum(m * m for m in mu)) / D, 0.0) + reg] * D
        else:
            var = [max(s2[k][c] / s0[k] - mu[c] ** 2, 0.0) + reg for c in range(D)]
        out.append((s0[k] / total, mu, var))
    return out


def gaussian_step(S, x, eta, cov, reg, birth_d2=math.inf, var_init=0.0):
    """One stochastic EM step on S (lists, modified copy returned) and log p(x) before it."""
    s0, s1, s2 = list(S[0]), [list(r) for r in S[1]], [list(r) for r in S[2]]
    D = len(x)
    K = len(s0)
    params = gaussian_params((s0, s1, s2), cov, reg)
    d2 = []
    logdens = []
    for p in params:
        if p is None:
            d2.append(math.inf)
            logdens.append(-math.inf)
            continue
        w, mu, var = p
        q = sum((x[c] - mu[c]) ** 2 / var[c] for c in range(D))
        d2.append(q)
        logdens.append(math.log(w) - 0.5 * sum(math.log(v) for v in var) - 0.5 * q - 0.5 * D * math.log(2 * math.pi))
    dmin = min(d2)
    dens = [math.exp(l) if d - dmin < TAIL else 0.0 for l, d in zip(logdens, d2)]
    # (exp of a log density is fine here: the test data keep it far from underflow)
    px = sum(dens)
    loglik = math.log(px) if px > 0 else -math.inf
    if dmin > birth_d2:
        k = min(range(K), key=lambda j: (s0[j], j))
        for j in range(K):
            if j != k:
                s0[j] *= 1 - eta
                s1[j] = [v * (1 - eta) for v in s1[j]]
                s2[j] = [v * (1 - eta) for v in s2[j]]
        s0[k] = eta
        s1[k] = [eta * v for v in x]
        if cov == "spherical":
            s2[k] = [eta * (sum(v * v for v in x) + D * var_init)]
        else:
            s2[k] = [eta * (v * v + var_init) for v in x]
        return (s0, s1, s2), loglik
    r = [d / px for d in dens]
    for k in range(K):
        s0[k] = (1 - eta) * s0[k] + eta * r[k]
        s1[k] = [(1 - eta) * a + eta * r[k] * v for a, v in zip(s1[k], x)]
        if cov == "spherical":
            s2[k] = [(1 - eta) * s2[k][0] + eta * r[k] * sum(v * v for v in x)]
        else:
            s2[k] = [(1 - eta) * a + eta * r[k] * v * v for a, v in zip(s2[k], x)]
    return (s0, s1, s2), loglik


def gaussian_full_step(S, x, eta, reg):
    """Full covariance: S = (s0, s1, s2) with s2[k] a D x D list; uses numpy only for det/inverse."""
    import numpy as np

    s0, s1, s2 = S
    K = len(s0)
    D = len(x)
    total = sum(s0)
    logdens = []
    for k in range(K):
        mu = np.array(s1[k]) / s0[k]
        cov = np.array(s2[k]) / s0[k] - np.outer(mu, mu) + reg * np.eye(D)
        diff = np.array(x) - mu
        q = float(diff @ np.linalg.solve(cov, diff))
        logdens.append(math.log(s0[k] / total) - 0.5 * math.log(np.linalg.det(cov)) - 0.5 * q
                       - 0.5 * D * math.log(2 * math.pi))
    top = max(logdens)
    dens = [math.exp(l - top) for l in logdens]
    z = sum(dens)
    r = [d / z for d in dens]
    xs = np.array(x, dtype=float)
    new0 = [(1 - eta) * s0[k] + eta * r[k] for k in range(K)]
    new1 = [((1 - eta) * np.array(s1[k]) + eta * r[k] * xs).tolist() for k in range(K)]
    new2 = [((1 - eta) * np.array(s2[k]) + eta * r[k] * np.outer(xs, xs)).tolist() for k in range(K)]
    return (new0, new1, new2), math.log(z) + top


# ------------------------------------------------------------------ online EM, Bernoulli
def bernoulli_step(S, x, eta, eps):
    s0, s1 = S
    K = len(s0)
    total = sum(s0)
    logdens = []
    for k in range(K):
        ll = math.log(s0[k] / total)
        for d, xd in enumerate(x):
            m = min(max(s1[k][d] / s0[k], eps), 1 - eps)
            ll += math.log(m if xd == 1 else 1 - m)
        logdens.append(ll)
    top = max(logdens)
    dens = [math.exp(l - top) for l in logdens]
    z = sum(dens)
    r = [d / z for d in dens]
    new0 = [(1 - eta) * s0[k] + eta * r[k] for k in range(K)]
    new1 = [[(1 - eta) * a + eta * r[k] * xd for a, xd in zip(s1[k], x)] for k in range(K)]
    return (new0, new1), math.log(z) + top
