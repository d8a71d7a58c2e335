"""Properties of the rules and the bounded expansion (hypothesis where it helps)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learners import NORMAClassifier, NORMAOneClass, NORMARegressor, OLKClassifier, OLKOneClass, OLKRegressor
from learners import _stream
from learners.expansion import SCALE_MAX, SCALE_MIN
from learners.steps import olk_r_multipliers

SETTINGS = settings(max_examples=40, deadline=None)
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(f=finite, y=finite, kxx=st.floats(1e-3, 1e3), r=st.floats(0, 1), C=st.floats(1e-3, 1e3),
       eps=st.floats(0, 10))
def test_olk_r_never_has_both_multipliers_non_zero(f, y, kxx, r, C, eps):
    a, a_star = olk_r_multipliers(f, y, kxx, r, C, eps)
    assert a == 0.0 or a_star == 0.0
    assert 0.0 <= a <= C and 0.0 <= a_star <= C


def _stream_data(seed, n, d=2):
    return np.random.default_rng(seed).normal(size=(n, d))


@SETTINGS
@given(seed=st.integers(0, 10 ** 6), r=st.floats(0, 0.2), nu=st.floats(0.01, 0.5), gap=st.floats(0.01, 2.0),
       width=st.floats(0.2, 3.0), kernel=st.sampled_from(["gaussian", "laplacian"]))
def test_olk_n_paper_rule_keeps_rho_at_its_initial_value(seed, r, nu, gap, width, kernel):
    X = _stream_data(seed, 60)
    est = OLKOneClass(kernel=kernel, width=width, r=r, nu=nu, C=nu + gap, rho_rule="paper", budget=None)
    for i in range(0, 60, 7):
        est.partial_fit(X[i:i + 7])
        assert est.rho_ == pytest.approx(0.0, abs=1e-9)


@SETTINGS
@given(seed=st.integers(0, 10 ** 6), r=st.floats(0, 0.2), nu=st.floats(0.01, 0.5), gap=st.floats(0.01, 2.0),
       budget=st.one_of(st.none(), st.integers(1, 15)))
def test_olk_n_primal_rule_follows_eq_68(seed, r, nu, gap, budget):
    X = _stream_data(seed, 30)
    est = OLKOneClass(width=0.8, r=r, nu=nu, C=nu + gap, rho_rule="primal", budget=budget)
    for x in X:
        est.partial_fit(x[None, :])
        f_next = est.score_samples(x[None, :])[0]  # f_{t+1}(x_{t+1}) on the updated expansion
        assert est.rho_ == pytest.approx(max(0.0, f_next - 1.0), abs=1e-9)


ESTIMATORS = [
    lambda b: OLKClassifier(budget=b, r=0.05),
    lambda b: OLKRegressor(budget=b, epsilon=0.01),
    lambda b: OLKOneClass(budget=b, sv_threshold=0.0),
    lambda b: NORMAClassifier(budget=b, eta=0.5),
    lambda b: NORMAClassifier(loss="nu", budget=b),
    lambda b: NORMARegressor(loss="huber", budget=b),
    lambda b: NORMAOneClass(budget=b, eta=0.5, lam=0.2, learning_rate="constant"),
]


def _fit_stream(est, X, seed, chunk):
    y_cls = (X[:, 0] > 0).astype(int)
    y_reg = np.sin(X[:, 0])
    for i in range(0, X.shape[0], chunk):
        s = slice(i, i + chunk)
        if isinstance(est, (OLKClassifier, NORMAClassifier)):
            est.partial_fit(X[s], y_cls[s], classes=[0, 1])
        elif isinstance(est, (OLKRegressor, NORMARegressor)):
            est.partial_fit(X[s], y_reg[s])
        else:
            est.partial_fit(X[s])
        yield est


@SETTINGS
@given(which=st.integers(0, len(ESTIMATORS) - 1), budget=st.integers(1, 20), n=st.integers(1, 80),
       chunk=st.integers(1, 30), seed=st.integers(0, 10 ** 6))
def test_budget_is_never_exceeded(which, budget, n, chunk, seed):
    X = _stream_data(seed, n)
    est = ESTIMATORS[which](budget)
    for est in _fit_stream(est, X, seed, chunk):
        assert est.n_support_ <= budget
        assert est.support_vectors_.shape == (est.n_support_, 2)
    if isinstance(est, OLKOneClass):  # OLK_N adds a term every step
        assert est.n_support_ == min(n, budget)
        np.testing.assert_array_equal(est.support_vectors_, X[-est.n_support_:])


@pytest.mark.parametrize("which", range(len(ESTIMATORS)))
def test_budget_larger_than_stream_equals_unbounded(which):
    X = _stream_data(which, 150)
    bounded = list(_fit_stream(ESTIMATORS[which](151), X, 0, 40))[-1]
    unbounded = list(_fit_stream(ESTIMATORS[which](None), X, 0, 40))[-1]
    np.testing.assert_array_equal(bounded.support_vectors_, unbounded.support_vectors_)
    np.testing.assert_allclose(bounded.dual_coef_, unbounded.dual_coef_, rtol=1e-12)
    Xt = _stream_data(99, 20)
    f = bounded.decision_function(Xt) if hasattr(bounded, "decision_function") else bounded.predict(Xt)
    g = unbounded.decision_function(Xt) if hasattr(unbounded, "decision_function") else unbounded.predict(Xt)
    np.testing.assert_allclose(f, g, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    lambda: OLKOneClass(budget=16, r=0.001),
    lambda: OLKOneClass(budget=16, r=0.5, rho_rule="primal"),  # scale falls 10^-10 every ~57 steps
    lambda: NORMAClassifier(budget=16, eta=0.9, lam=1.0),  # decay 0.1 per step: renormalises every ~10 steps
])
def test_a_million_step_stream_stays_finite_with_bounded_scale(make):
    rng = np.random.default_rng(0)
    n = 1_000_000
    X = rng.normal(size=(n, 2))
    est = make()
    if isinstance(est, NORMAClassifier):
        est.partial_fit(X, (X[:, 0] * X[:, 1] > 0).astype(int))
    else:
        est.partial_fit(X)
    assert est.n_steps_ == n
    scale = est._state[_stream.SCALE]
    assert SCALE_MIN <= scale <= SCALE_MAX
    assert np.isfinite(est.dual_coef_).all() and np.isfinite(est._coef).all()
    assert np.isfinite(est.decision_function(X[:1000])).all()
    assert np.isfinite(est.offset_)
    assert est.n_support_ <= 16
