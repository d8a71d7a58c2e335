"""Updates per second of the jitted OLK/NORMA learners next to a straightforward NumPy version.

For each budget B in (64, 512, 4096) and input dimension d in (2, 256) the script
fills a learner's expansion to its budget, then times a stream of further
updates through the estimator's ``partial_fit`` (one jitted loop over the rows
running the rule of ``learners.steps`` per row), and times the
same rule written the plain NumPy way (a Python loop over rows, vectorised over
the expansion) in the same run on the same data. Every update evaluates the
Gaussian kernel against all terms of the expansion, so kernel evaluations per
second are ``terms * updates/s``. OLK_N (the default rule) adds a term every step,
so both expansions stay full; NORMA adds one only on margin errors, so the
``terms`` columns show the expansion sizes the two versions ran at.

Usage::

    python benchmarks/learners_speed.py [--rule olk_n|norma_novelty] [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from learners import NORMAOneClass, OLKOneClass  # noqa: E402

BUDGETS = (64, 512, 4096)
DIMS = (2, 256)
WIDTH = 1.0
R, NU, C = 0.001, 0.1, 0.2  # OLK_N, paper settings
ETA, LAM = 0.1, 0.01  # NORMA


class NumpyBudgetExpansion:
    """Up to ``budget`` support vectors with their true coefficients; a new one replaces the oldest."""

    def __init__(self, budget, d):
        self.sv = np.zeros((budget, d))
        self.alpha = np.zeros(budget)
        self.count = 0
        self.pos = 0
        self.rho = 0.0

    def kernel_values(self, x):
        """``k(x_i, x)`` for the stored points, in storage order."""
        d2 = ((self.sv[: self.count] - x) ** 2).sum(axis=1)
        return np.exp(-d2 / WIDTH ** 2)

    def add(self, x, alpha):
        self.sv[self.pos] = x
        self.alpha[self.pos] = alpha
        self.pos = (self.pos + 1) % len(self.alpha)
        self.count = min(self.count + 1, len(self.alpha))


class NumpyOLKN(NumpyBudgetExpansion):
    """OLK_N the straightforward NumPy way: true coefficients, all scaled every step."""

    def update(self, x):
        n = self.count
        k = self.kernel_values(x)
        f = float(self.alpha[:n] @ k)
        a = min(max(1.0 + R - f, NU), C)
        evicted = self.alpha[self.pos] * k[self.pos] if n == len(self.alpha) else 0.0
        self.alpha /= 1.0 + R
        self.add(x, a / (1.0 + R))
        if NU < a < C:  # eq. 69
            self.rho = max(0.0, (f - evicted + a) / (1.0 + R) - 1.0)
        return f


class NumpyNORMANovelty(NumpyBudgetExpansion):
    """nu-NORMA novelty detection the straightforward NumPy way."""

    def __init__(self, budget, d):
        super().__init__(budget, d)
        self.t = 0

    def update(self, x):
        self.t += 1
        eta = ETA / np.sqrt(self.t)
        f = float(self.alpha[: self.count] @ self.kernel_values(x))
        self.alpha *= 1.0 - eta * LAM
        if f < self.rho:
            self.add(x, eta)
            self.rho -= eta * (1.0 - NU)
        else:
            self.rho += eta * NU
        return f


def make_ours(rule, budget):
    if rule == "olk_n":
        return OLKOneClass(width=WIDTH, r=R, nu=NU, C=C, budget=budget)
    return NORMAOneClass(width=WIDTH, eta=ETA, lam=LAM, nu=NU, budget=budget)


def make_numpy(rule, budget, d):
    return NumpyOLKN(budget, d) if rule == "olk_n" else NumpyNORMANovelty(budget, d)


def time_ours(rule, budget, d, seconds, rng):
    est = make_ours(rule, budget)
    est.partial_fit(rng.normal(size=(budget, d)))  # fill the expansion (and compile)
    n = 256
    while True:
        X = rng.normal(size=(n, d))
        t0 = time.perf_counter()
        est.partial_fit(X)
        dt = time.perf_counter() - t0
        if dt > seconds or n >= 4_000_000:
            return n / dt, est.n_support_
        n = int(n * min(8.0, max(2.0, 1.5 * seconds / max(dt, 1e-6))))


def time_numpy(rule, budget, d, seconds, rng):
    model = make_numpy(rule, budget, d)
    for x in rng.normal(size=(budget, d)):
        model.update(x)
    n = 16
    while True:
        X = rng.normal(size=(n, d))
        t0 = time.perf_counter()
        for x in X:
            model.update(x)
        dt = time.perf_counter() - t0
        if dt > seconds or n >= 1_000_000:
            return n / dt, model.count
        n = int(n * min(8.0, max(2.0, 1.5 * seconds / max(dt, 1e-6))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rule", choices=("olk_n", "norma_novelty"), default="olk_n")
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum timed seconds per cell")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"rule {args.rule}, Gaussian kernel width {WIDTH}, one thread; {platform.processor() or platform.machine()}"
          f", numpy {np.__version__}")
    header = (f"{'budget':>7} {'dims':>5} {'ours upd/s':>12} {'numpy upd/s':>12} {'ratio':>7} {'terms ours':>10} "
              f"{'terms numpy':>11} {'ours kernel evals/s':>20}")
    print(header)
    print("-" * len(header))
    for d in DIMS:
        for budget in BUDGETS:
            ours, n_support = time_ours(args.rule, budget, d, args.seconds, rng)
            ref, n_ref = time_numpy(args.rule, budget, d, args.seconds, rng)
            evals = ours * n_support
            print(f"{budget:>7} {d:>5} {ours:>12.4g} {ref:>12.4g} {ours / ref:>7.1f} {n_support:>10} {n_ref:>11} "
                  f"{evals:>20.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
