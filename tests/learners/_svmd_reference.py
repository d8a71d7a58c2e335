"""Plain-Python SVMD (Vishwanathan, Schraudolph & Smola 2006), O(t^2) per step, for the tests.

Written from the paper, *not* from the package: the expansions of f and v are
lists of ``(x_i, alpha_i)`` / ``(x_i, beta_i)`` with |Y|-vectors as coefficients,
and every inner product in the RKHS is computed from the Gram matrix:
``<g_t, v_t>`` in eq. 33 is ``sum_ij gamma_i^T kappa beta_j k(x_i, x_j)`` with
``gamma_t = [c alpha_{t-1}; xi_t]`` (eq. 31), never the incremental eq. 45-49.
Updates: eta (33), beta (42, with chi of eq. 43-44), alpha (32), offsets
(50-52), the nu-margin in log space (54-58), in Algorithm 2's order (step sizes
first, then used). No buffer: the test compares with an unbounded expansion.
"""

from __future__ import annotations

import math

import numpy as np

from tests.learners._reference import kernel


def _dot(a, b):
    return sum(p * q for p, q in zip(a, b))


class SVMDReference:
    def __init__(self, loss, n_outputs=1, kappa=None, delta=None, kernel_name="gaussian", width=1.0, degree=3.0,
                 coef0=1.0, eta0=0.1, c=0.01, mu=0.1, decay=0.9, nu=0.0, use_offset=False):
        self.loss = loss
        self.K = n_outputs
        self.kappa = kappa if kappa is not None else [[1.0 if i == j else 0.0 for j in range(n_outputs)]
                                                      for i in range(n_outputs)]
        self.delta = delta
        self.k = lambda x, y: kernel(kernel_name, x, y, width, degree, coef0)
        self.eta = eta0
        self.c = c
        self.mu = mu
        self.lam = decay
        self.nu = nu
        self.use_offset = use_offset
        self.points = []
        self.alphas = []  # lists of K floats
        self.betas = []
        self.b = [0.0] * n_outputs
        self.eta_b = [eta0] * n_outputs
        self.v_b = [0.0] * n_outputs
        self.eps = 1.0
        self.eta_eps = 1.0
        self.v_eps = 0.0
        self._G = []  # Gram matrix rows of the points seen (the reference's O(t^2) memory)

    # f(x, y) = sum_i sum_z coef_iz k(x_i, x) kappa(z, y)
    def _values(self, coefs, x):
        raw = [0.0] * self.K
        for p, a in zip(self.points, coefs):
            kv = self.k(p, x)
            for z in range(self.K):
                raw[z] += a[z] * kv
        return [sum(self.kappa[y][z] * raw[z] for z in range(self.K)) for y in range(self.K)]

    def _gram(self, points):
        """Gram matrix of ``points`` (always ``self.points``), grown row by row."""
        n_old = len(self._G)
        for i in range(n_old, len(points)):
            row = [self.k(points[i], points[j]) for j in range(i)]
            for j in range(i):
                self._G[j].append(row[j])
            self._G.append(row + [self.k(points[i], points[i])])
        return np.array([r[:len(points)] for r in self._G[:len(points)]])

    def _inner(self, pts_a, coef_a, coef_b):
        """``sum_ij a_i^T kappa b_j k(x_i, x_j)``; ``coef_b`` spans a prefix of ``pts_a``."""
        G = self._gram(pts_a)
        A = np.array(coef_a, dtype=float).reshape(len(pts_a), self.K)
        Bm = np.zeros_like(A)
        Bm[:len(coef_b)] = np.array(coef_b, dtype=float).reshape(len(coef_b), self.K)
        return float(np.sum(G * (A @ np.array(self.kappa) @ Bm.T)))

    def f_norm2(self):
        return self._inner(self.points, self.alphas, self.alphas)

    def f_dot_v(self):
        return self._inner(self.points, self.alphas, self.betas)

    def _loss_terms(self, f, v, y):
        """xi (Table 1), chi (eq. 43-44) and the margin violation flag."""
        K = self.K
        xi = [0.0] * K
        chi = [0.0] * K
        violated = False
        if self.loss == "novelty":
            violated = f[0] < self.eps
            xi[0] = -1.0 if violated else 0.0
        elif self.loss == "binary":
            violated = y * f[0] < self.eps
            xi[0] = -y if violated else 0.0
        elif self.loss in ("multiclass", "graph"):
            margin = (lambda z: self.delta[y][z]) if self.loss == "graph" else (lambda z: self.eps)
            others = [z for z in range(K) if z != y]
            star = max(others, key=lambda z: (margin(z) + f[z], -z))
            if f[y] < margin(star) + f[star]:
                violated = True
                xi[y], xi[star] = -1.0, 1.0
        elif self.loss == "logistic":
            xi[0] = -y / (1.0 + math.exp(y * f[0]))
            rho = math.exp(y * f[0]) / (1.0 + math.exp(y * f[0])) ** 2
            chi[0] = rho * v[0]
        elif self.loss == "multiclass_logistic":
            e = [math.exp(fz) for fz in f]
            p = [ez / sum(e) for ez in e]
            xi = [p[z] - (1.0 if z == y else 0.0) for z in range(K)]
            # rho(x, y, y~) = delta_{y y~} p(y~) - p(y~) p(y)   (eq. 38); chi_y~ = sum_y rho v(x, y)  (eq. 44)
            chi = [sum(((1.0 if a == z else 0.0) * p[z] - p[z] * p[a]) * v[a] for a in range(K)) for z in range(K)]
        return xi, chi, violated

    def step(self, x, y=None):
        """One step; returns ``(f_t(x, .) with offset, <g_t, v_t>)``."""
        x = list(x)
        K = self.K
        f_raw = self._values(self.alphas, x)
        v_raw = self._values(self.betas, x)
        f = [f_raw[z] + (self.b[z] if self.use_offset else 0.0) for z in range(K)]
        xi, chi, violated = self._loss_terms(f, v_raw, y)
        # g_t = c f_t + sum_y xi_y k((x_t, y), .)   (eq. 30-31), <g_t, v_t> from the Gram matrix
        gv = self.c * self._inner(self.points, self.alphas, self.betas)
        kx = np.array([self.k(p, x) for p in self.points])
        if self.points:
            gv += float(kx @ np.array(self.betas) @ np.array(self.kappa) @ np.array(xi))
        self.eta = self.eta * max(0.5, 1.0 - self.mu * gv)  # (33)
        eta = self.eta
        if self.use_offset:
            for z in range(K):
                self.eta_b[z] *= max(0.5, 1.0 - self.mu * xi[z] * self.v_b[z])  # (51)
                self.v_b[z] = self.lam * self.v_b[z] - self.eta_b[z] * xi[z]  # (52)
                self.b[z] -= self.eta_b[z] * xi[z]  # (50)
        if self.nu > 0:
            s = self.eps * ((-1.0 if violated else 0.0) + self.nu)
            self.eta_eps *= max(0.5, 1.0 + self.mu * self.v_eps * s)  # (57)
            self.v_eps = self.lam * self.v_eps + self.eta_eps * s * (1.0 + self.lam * self.v_eps)  # (58)
            self.eps *= math.exp(self.eta_eps * s)  # (56)
        d = 1.0 - eta * self.c
        new_betas = [[d * self.lam * bz - eta * self.c * az for bz, az in zip(b, a)]
                     for b, a in zip(self.betas, self.alphas)]  # (42), old rows
        new_alphas = [[d * az for az in a] for a in self.alphas]  # (32), old rows
        if any(v != 0.0 for v in xi) or (self.lam != 0 and any(v != 0.0 for v in chi)):
            self.points.append(x)
            new_alphas.append([-eta * xi[z] for z in range(K)])
            new_betas.append([-eta * (xi[z] + self.lam * chi[z]) for z in range(K)])
        self.alphas, self.betas = new_alphas, new_betas
        return f, gv
