"""Every jitted step function of learners.steps against the plain-Python transcription.

Each test feeds a few hundred steps of a random stream to the step function,
called once per sample from Python exactly as documented (the caller applies the
common decay to the global scale after each step and renormalises when
``needs_renormalise`` says so), and to tests/learners/_reference.py; the
predictions ``f_t(x_t)``, the new terms, rho/epsilon/sigma/b and the final
expansion must agree to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from learners import steps
from learners.expansion import expansion_order, expansion_sum, needs_renormalise
from learners.kernels import EMPTY_LUT, KERNELS
from tests.learners import _reference as ref

N_STEPS = 300
RTOL = 1e-9
ATOL = 1e-10


class JitExpansion:
    """The array state the step functions work on, driven as their docstrings say."""

    def __init__(self, d, capacity, kernel="gaussian", width=1.0, degree=3.0, coef0=1.0):
        self.sv = np.zeros((capacity, d))
        self.coef = np.zeros(capacity)
        self.ring = np.zeros(2, dtype=np.int64)
        self.scale = 1.0
        self.kargs = (KERNELS[kernel], float(width), float(degree), float(coef0), EMPTY_LUT)
        self.renormalisations = 0

    def decay(self, factor):
        self.scale *= factor
        if needs_renormalise(self.scale):
            order = expansion_order(self.ring, self.coef.shape[0])
            self.coef[order] *= self.scale
            self.scale = 1.0
            self.renormalisations += 1

    def terms(self):
        order = expansion_order(self.ring, self.coef.shape[0])
        return self.sv[order], self.scale * self.coef[order]


def _stream(seed, n=N_STEPS, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y_cls = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y_reg = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.normal(size=n)
    return X, y_cls, y_reg


def _capacity(budget):
    return N_STEPS + 1 if budget is None else budget


def _empty_expansions(budget, kernel="gaussian", **kw):
    """The jitted state and the reference expansion, both empty, with the same kernel and budget."""
    return JitExpansion(2, _capacity(budget), kernel, **kw), ref.Expansion(kernel, budget=budget, **kw)


def _assert_same_expansion(jit, exp):
    sv, alpha = jit.terms()
    assert sv.shape[0] == len(exp.points)
    if exp.points:
        np.testing.assert_allclose(sv, np.array(exp.points), rtol=0, atol=0)
        np.testing.assert_allclose(alpha, np.array(exp.alphas), rtol=RTOL, atol=ATOL)


KERNEL_CASES = [("gaussian", {}), ("polynomial", {"degree": 2.0, "coef0": 1.0, "width": 1.0})]


# ------------------------------------------------------------------------- OLK


@pytest.mark.parametrize("kernel,kw", KERNEL_CASES)
@pytest.mark.parametrize("r,C,budget,thr", [
    (0.001, 2.0, None, 0.0),
    (0.3, 1.0, 40, 0.0),  # fast decay: the global scale renormalises many times
    (0.05, 0.5, None, 1e-3),  # OLK Remark 4: drop small terms
])
def test_olk_c_step_matches_reference(kernel, kw, r, C, budget, thr):
    X, y, _ = _stream(1)
    if kernel == "polynomial":
        X = X * 0.5
    jit, exp = _empty_expansions(budget, kernel, **kw)
    for x, yy in zip(X, y):
        f_ref = ref.olk_c(exp, x, yy, r, C, thr)
        f, alpha = steps.olk_c_step(x, yy, jit.sv, jit.coef, jit.ring, jit.scale, r, C, *jit.kargs, thr)
        jit.decay(steps.olk_decay(r))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)
    if r == 0.3:
        assert jit.renormalisations > 0


@pytest.mark.parametrize("kernel,kw", KERNEL_CASES)
@pytest.mark.parametrize("r,C,eps,budget,thr", [
    (0.001, 1.0, 0.2, None, 0.0),
    (0.3, 0.5, 0.05, 30, 0.0),
    (0.01, 2.0, 0.0, None, 1e-3),
])
def test_olk_r_step_matches_reference(kernel, kw, r, C, eps, budget, thr):
    X, _, y = _stream(2)
    if kernel == "polynomial":
        X = X * 0.5
    jit, exp = _empty_expansions(budget, kernel, **kw)
    for x, yy in zip(X, y):
        f_ref, a, a_star = ref.olk_r(exp, x, yy, r, C, eps, thr)
        f, alpha = steps.olk_r_step(x, yy, jit.sv, jit.coef, jit.ring, jit.scale, r, C, eps, *jit.kargs, thr)
        jit.decay(steps.olk_decay(r))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert alpha == pytest.approx((a - a_star) / (1 + r), rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)


@pytest.mark.parametrize("rule", ["paper", "primal"])
@pytest.mark.parametrize("kernel,kw,r,nu,C,budget,thr", [
    ("gaussian", {}, 0.001, 0.1, 0.2, None, 0.0),
    ("gaussian", {"width": 0.7}, 0.2, 0.1, 0.9, 25, 0.0),  # budget evictions, interior a, renormalisation
    ("gaussian", {}, 0.05, 0.05, 0.5, None, 5e-3),
    ("polynomial", {"degree": 2.0, "coef0": 1.0}, 0.01, 0.1, 0.5, 40, 0.0),
])
def test_olk_n_step_matches_reference(rule, kernel, kw, r, nu, C, budget, thr):
    X, _, _ = _stream(3)
    if kernel == "polynomial":
        X = X * 0.3
    jit, exp = _empty_expansions(budget, kernel, **kw)
    rho_ref = rho = 0.0
    interior = 0
    for x in X:
        f_ref, a_ref, rho_ref = ref.olk_n(exp, x, r, nu, C, rho_ref, rule, thr)
        f, a, rho = steps.olk_n_step(x, jit.sv, jit.coef, jit.ring, jit.scale, r, nu, C, rho,
                                     steps.RHO_RULES[rule], *jit.kargs, thr)
        jit.decay(steps.olk_decay(r))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert a == pytest.approx(a_ref, rel=RTOL, abs=ATOL)
        assert rho == pytest.approx(rho_ref, rel=1e-8, abs=1e-9)
        interior += nu < a < C
    _assert_same_expansion(jit, exp)
    assert interior > 0  # the stream exercises the interior branch of rule (69)


@pytest.mark.parametrize("eta,nu_rho,lo,hi,budget", [(0.02, 0.1, -0.9, 0.0, 30), (0.05, 0.3, -0.3, 0.5, None)])
def test_olk_n_quantile_rho_matches_reference(eta, nu_rho, lo, hi, budget):
    # the per-pixel nu-trick offset, applied by the caller before olk_n_update (RHO_QUANTILE)
    X, _, _ = _stream(5)
    r, nu, C = 0.01, 0.1, 0.5
    jit, exp = _empty_expansions(budget)
    rho_ref = rho = 0.0
    novel = 0
    for x in X:
        f_ref, a_ref, rho_ref = ref.olk_n_with_quantile_rho(exp, x, r, nu, C, rho_ref, eta, nu_rho, lo, hi)
        total, oldest = expansion_sum(x, jit.sv, jit.coef, jit.ring, *jit.kargs)
        f = jit.scale * total
        novel += f < 1.0 + rho
        rho = steps.olk_n_quantile_rho(f, rho, eta, nu_rho, lo, hi)
        a, rho = steps.olk_n_update(x, f, jit.scale * oldest, jit.sv, jit.coef, jit.ring, jit.scale, r, nu, C, rho,
                                    steps.RHO_QUANTILE, 1.0, 0.0)
        jit.decay(steps.olk_decay(r))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert a == pytest.approx(a_ref, rel=RTOL, abs=ATOL)
        assert rho == pytest.approx(rho_ref, rel=1e-12, abs=1e-12)
        assert lo <= rho <= hi
    _assert_same_expansion(jit, exp)


def test_olk_n_quantile_rho_makes_a_fraction_nu_novel():
    # unclipped, the offset settles where a fraction nu of the observations is novel
    rng = np.random.default_rng(0)
    fs = rng.uniform(0.0, 2.0, 20000)
    for nu in (0.05, 0.3):
        rho, novel = 0.0, 0
        for k, f in enumerate(fs):
            if k >= 5000:
                novel += f < 1.0 + rho
            rho = steps.olk_n_quantile_rho(f, rho, 0.01, nu, -10.0, 10.0)
        assert novel / 15000 == pytest.approx(nu, abs=0.02)
    assert steps.olk_n_quantile_rho(0.0, -0.3, 0.1, 0.1, -0.3, 0.0) == -0.3  # clipped at lo
    assert steps.olk_n_quantile_rho(5.0, 0.0, 0.1, 0.1, -0.3, 0.0) == 0.0  # and at hi
    assert steps.olk_n_rho(5.0, 0.15, 0.1, 0.2, -0.2, steps.RHO_QUANTILE) == -0.2  # the step leaves it alone


# ----------------------------------------------------------------------- NORMA


@pytest.mark.parametrize("kernel,kw", KERNEL_CASES)
@pytest.mark.parametrize("loss,eta,lam,margin,use_offset,budget,thr", [
    ("hinge", 0.1, 0.01, 1.0, True, None, 0.0),
    ("hinge", 0.5, 0.5, 0.5, False, 30, 0.0),  # decay 0.75: renormalisation
    ("hinge", 0.2, 0.1, 1.0, True, None, 1e-3),
    ("perceptron", 0.3, 0.0, 0.0, False, None, 0.0),  # kernel perceptron
    ("perceptron", 0.3, 0.05, 0.0, True, 20, 0.0),  # regularised kernel perceptron
])
def test_norma_classification_step_matches_reference(kernel, kw, loss, eta, lam, margin, use_offset, budget, thr):
    X, y, _ = _stream(4)
    if kernel == "polynomial":
        X = X * 0.5
    perceptron = loss == "perceptron"
    jit, exp = _empty_expansions(budget, kernel, **kw)
    b = 0.0
    for x, yy in zip(X, y):
        f_ref = ref.norma_classification(exp, x, yy, eta, lam, margin, perceptron, use_offset, thr)
        f, alpha, b = steps.norma_classification_step(x, yy, jit.sv, jit.coef, jit.ring, jit.scale, eta, lam,
                                                      margin, not perceptron, b, use_offset, jit.kargs, thr)
        jit.decay(steps.norma_decay(eta, lam))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert b == pytest.approx(exp.b, rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)


@pytest.mark.parametrize("eta,lam,nu,use_offset,budget", [
    (0.1, 1.0, 0.3, True, None),  # the paper's lam = 1
    (0.2, 0.1, 0.5, False, 25),
])
def test_norma_nu_classification_step_matches_reference(eta, lam, nu, use_offset, budget):
    X, y, _ = _stream(5)
    jit, exp = _empty_expansions(budget)
    rho = rho_ref = 1.0
    b = 0.0
    for x, yy in zip(X, y):
        f_ref, rho_ref = ref.norma_nu_classification(exp, x, yy, eta, lam, nu, rho_ref, use_offset)
        f, alpha, rho, b = steps.norma_nu_classification_step(x, yy, jit.sv, jit.coef, jit.ring, jit.scale, eta,
                                                              lam, nu, rho, b, use_offset, jit.kargs, 0.0)
        jit.decay(steps.norma_decay(eta, lam))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert rho == pytest.approx(rho_ref, rel=RTOL, abs=ATOL)
        assert b == pytest.approx(exp.b, rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)


@pytest.mark.parametrize("loss", list(steps.REGRESSION_LOSSES))
@pytest.mark.parametrize("eta,lam,use_offset,budget,thr", [
    (0.1, 0.01, True, None, 0.0),
    (0.4, 0.5, False, 30, 0.0),
    (0.2, 0.05, True, None, 1e-3),
])
def test_norma_regression_step_matches_reference(loss, eta, lam, use_offset, budget, thr):
    X, _, y = _stream(6)
    code = steps.REGRESSION_LOSSES[loss]
    jit, exp = _empty_expansions(budget)
    eps = eps_ref = 0.3
    sigma = sigma_ref = 0.5
    nu = 0.3
    b = 0.0
    for x, yy in zip(X, y):
        f_ref, eps_ref, sigma_ref = ref.norma_regression(exp, x, yy, eta, lam, loss, eps_ref, nu, sigma_ref,
                                                         use_offset, thr)
        f, alpha, eps, sigma, b = steps.norma_regression_step(x, yy, jit.sv, jit.coef, jit.ring, jit.scale, eta, lam,
                                                              code, eps, nu, sigma, b, use_offset, jit.kargs, thr)
        jit.decay(steps.norma_decay(eta, lam))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert (eps, sigma) == pytest.approx((eps_ref, sigma_ref), rel=RTOL, abs=ATOL)
        assert b == pytest.approx(exp.b, rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)


@pytest.mark.parametrize("eta,lam,nu,budget,thr", [
    (0.1, 0.01, 0.1, None, 0.0),
    (0.5, 1.0, 0.2, 20, 0.0),
    (0.2, 0.1, 0.3, None, 1e-3),
])
def test_norma_novelty_step_matches_reference(eta, lam, nu, budget, thr):
    X, _, _ = _stream(7)
    jit, exp = _empty_expansions(budget)
    rho = rho_ref = 0.0
    for x in X:
        f_ref, rho_ref = ref.norma_novelty(exp, x, eta, lam, nu, rho_ref, thr)
        f, alpha, rho = steps.norma_novelty_step(x, jit.sv, jit.coef, jit.ring, jit.scale, eta, lam, nu, rho,
                                                 *jit.kargs, thr)
        jit.decay(steps.norma_decay(eta, lam))
        assert f == pytest.approx(f_ref, rel=RTOL, abs=ATOL)
        assert rho == pytest.approx(rho_ref, rel=RTOL, abs=ATOL)
    _assert_same_expansion(jit, exp)


def test_norma_novelty_rho_is_the_steps_offset():
    # the offset alone (the frame kernels move it for every selected pixel before the steps that add a term)
    rng = np.random.default_rng(3)
    for f, rho in zip(rng.uniform(-1.0, 1.0, 200), rng.uniform(-1.0, 1.0, 200)):
        rho_new = steps.norma_novelty_rho(f, rho, 0.1, 0.2)
        assert rho_new == pytest.approx(rho - 0.1 * (1.0 - 0.2) if f < rho else rho + 0.1 * 0.2, rel=1e-15, abs=1e-15)
        jit, _ = _empty_expansions(5)
        _, step_rho = steps.norma_novelty_update(np.array([0.5, 0.5]), f, jit.sv, jit.coef, jit.ring, 1.0, 0.1, 0.0,
                                                 0.2, rho, 0.0)
        assert step_rho == rho_new  # the step's offset is this one, to the bit


# ---------------------------------------------------------------- scalar rules


def test_olk_multipliers_clip_to_their_intervals():
    assert steps.olk_c_multiplier(5.0, 1.0, 1.0, 0.0, 2.0) == 0.0
    assert steps.olk_c_multiplier(-5.0, 1.0, 1.0, 0.0, 2.0) == 2.0
    assert steps.olk_c_multiplier(0.5, 1.0, 1.0, 0.1, 2.0) == pytest.approx(0.6)
    assert steps.olk_n_multiplier(5.0, 1.0, 0.0, 0.1, 0.2) == 0.1
    assert steps.olk_n_multiplier(-5.0, 1.0, 0.0, 0.1, 0.2) == 0.2
    assert steps.olk_n_multiplier(0.85, 1.0, 0.0, 0.1, 0.2) == pytest.approx(0.15)
    # inside the tube: no term; above it: a > 0; below: a* > 0
    assert steps.olk_r_multipliers(1.0, 1.05, 1.0, 0.0, 1.0, 0.1) == (0.0, 0.0)
    a, a_star = steps.olk_r_multipliers(0.0, 1.0, 1.0, 0.0, 5.0, 0.1)
    assert (a, a_star) == pytest.approx((0.9, 0.0))
    a, a_star = steps.olk_r_multipliers(0.0, -1.0, 1.0, 0.0, 0.5, 0.1)
    assert (a, a_star) == pytest.approx((0.0, 0.5))


def test_olk_n_rho_rules():
    # eq. 68: every step
    assert steps.olk_n_rho(1.7, 0.2, 0.1, 0.2, 0.3, steps.RHO_PRIMAL) == pytest.approx(0.7)
    assert steps.olk_n_rho(0.4, 0.2, 0.1, 0.2, 0.3, steps.RHO_PRIMAL) == 0.0
    # eq. 69: only for an interior a
    assert steps.olk_n_rho(1.7, 0.2, 0.1, 0.2, 0.3, steps.RHO_PAPER) == 0.3
    assert steps.olk_n_rho(1.7, 0.1, 0.1, 0.2, 0.3, steps.RHO_PAPER) == 0.3
    assert steps.olk_n_rho(1.7, 0.15, 0.1, 0.2, 0.3, steps.RHO_PAPER) == pytest.approx(0.7)


def test_norma_decays():
    assert steps.norma_decay(0.1, 0.01) == pytest.approx(0.999)
    assert steps.olk_decay(0.001) == pytest.approx(1 / 1.001)


def test_zero_self_kernel_does_not_divide_by_zero():
    """Linear kernel at x = 0: k(x, .) = 0 and f(x) = 0; the dual is linear in a, so a sits at a bound."""
    assert steps.olk_c_multiplier(0.0, 1.0, 0.0, 0.0, 2.0) == 2.0
    assert steps.olk_n_multiplier(0.0, 0.0, 0.0, 0.1, 0.2) == 0.2
    assert steps.olk_r_multipliers(0.0, 1.0, 0.0, 0.0, 1.0, 0.1) == (1.0, 0.0)
    assert steps.olk_r_multipliers(0.0, -1.0, 0.0, 0.0, 1.0, 0.1) == (0.0, 1.0)
    assert steps.olk_r_multipliers(0.0, 0.05, 0.0, 0.0, 1.0, 0.1) == (0.0, 0.0)
    jit = JitExpansion(2, 8, "linear")
    zero = np.zeros(2)
    f, alpha = steps.olk_r_step(zero, 1.0, jit.sv, jit.coef, jit.ring, jit.scale, 0.0, 1.0, 0.0, *jit.kargs, 0.0)
    assert (f, alpha) == (0.0, 1.0)
    f, a, rho = steps.olk_n_step(zero, jit.sv, jit.coef, jit.ring, jit.scale, 0.0, 0.1, 0.2, 0.0, steps.RHO_PAPER,
                                 *jit.kargs, 0.0)
    assert np.isfinite([f, a, rho]).all()
