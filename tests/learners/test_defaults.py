"""Library defaults that work on standardised data, and explicit settings honoured as given."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_blobs, make_regression
from sklearn.model_selection import KFold, cross_val_score
from sklearn.preprocessing import StandardScaler

from learners import NORMARegressor, OLKClassifier, OLKOneClass, OLKRegressor
from learners.olk import local_width, scale_bound


@pytest.fixture(scope="module")
def cancer():
    return StandardScaler().fit_transform(load_breast_cancer().data)


@pytest.fixture(scope="module")
def regression():
    return make_regression(300, 5, noise=10, random_state=0)


def test_olk_one_class_flags_a_few_of_its_own_training_rows(cancer):
    est = OLKOneClass().fit(cancer)
    flagged = float(np.mean(est.predict(cancer) == -1))
    assert 0.01 <= flagged <= 0.15, flagged  # a width of 1 flags every row here
    assert est.width_ == pytest.approx(local_width(cancer, nu=0.1, budget=512))
    assert float(np.mean(OLKOneClass(width=1.0).fit(cancer).predict(cancer) == -1)) == 1.0


def test_local_width_is_the_median_distance_to_the_e_over_nu_th_neighbour():
    X = np.random.default_rng(0).normal(size=(200, 3))
    k = math.ceil(math.e / 0.1)  # 28
    d = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    expected = np.median(np.sort(d, axis=1)[:, k])  # column 0 is the row itself
    assert local_width(X, 0.1, None) == pytest.approx(expected)
    # the expansion holds at most budget terms: the rule looks at that many rows spread over X
    assert local_width(X, 0.1, 50) > local_width(X, 0.1, None)
    # too few rows to count neighbours, or all equal: the global "scale" width
    assert local_width(X[:10], 0.1, None) == pytest.approx(math.sqrt(3 * X[:10].var()))
    assert local_width(np.ones((40, 2)), 0.1, None) == pytest.approx(math.sqrt(2))


def test_olk_one_class_flags_points_of_clustered_data_and_far_outliers():
    X = StandardScaler().fit_transform(make_blobs(500, 2, centers=3, random_state=0)[0])
    est = OLKOneClass().fit(X)
    assert 0.01 <= float(np.mean(est.predict(X) == -1)) <= 0.15
    far = np.random.default_rng(1).uniform(-4, 4, size=(200, 2))
    far = far[np.min(np.linalg.norm(far[:, None] - X[None], axis=2), axis=1) > 1.0]
    assert float(np.mean(est.predict(far) == -1)) > 0.9


def test_olk_one_class_one_row_at_a_time_starts_from_the_scale_width():
    X = np.random.default_rng(2).normal(size=(5, 4))
    est = OLKOneClass()
    est.learn_one(X[0])
    assert est.width_ == pytest.approx(math.sqrt(4 * X[0].var()))  # "scale" of the one row


def test_olk_regressor_default_reaches_r2_0_8(regression):
    X, y = regression
    for cv in (5, KFold(5, shuffle=True, random_state=0)):
        r2 = cross_val_score(OLKRegressor(), X, y, cv=cv).mean()
        assert r2 >= 0.8, r2
    est = OLKRegressor().fit(X, y)
    assert est.C_ == pytest.approx(abs(y.mean()) + 3 * y.std())
    # C=1 (the paper's example, for targets of size 1) cannot follow targets of size 100
    assert cross_val_score(OLKRegressor(C=1.0), X, y, cv=5).mean() < 0.3


def test_explicit_settings_stay_as_given(regression, cancer):
    X, y = regression
    est = OLKRegressor(C=2.5, width=0.7).fit(X, y)
    assert est.C_ == 2.5 and est.width_ == 0.7
    assert OLKOneClass(width=1.5).fit(cancer).width_ == 1.5
    assert OLKOneClass(width="scale").fit(cancer).width_ == pytest.approx(math.sqrt(30))
    assert NORMARegressor(eta=0.1).get_params()["eta"] == 0.1
    # set_params after fitting: the new C takes effect (and is reported)
    est.set_params(C=4.0).partial_fit(X[:5], y[:5])
    assert est.C_ == 4.0
    with pytest.raises(TypeError, match=r"width must be a real number > 0 or 'scale', got 'local'"):
        OLKClassifier(width="local").fit(X, y > 0)
    with pytest.raises(TypeError, match=r"C must be a real number > 0 or 'scale'"):
        OLKRegressor(C="auto").fit(X, y)


def test_scale_bound_one_row_and_refit(regression, tmp_path):
    X, y = regression
    assert scale_bound([40.0]) == pytest.approx(43.0)  # one row: unit deviation
    assert scale_bound([2.0, 2.0]) == pytest.approx(5.0)
    est = OLKRegressor()
    est.learn_one(X[0], y[0])
    assert est.C_ == pytest.approx(abs(y[0]) + 3)
    est.fit(X[:100], y[:100])  # fit starts afresh: the bound from its own targets
    assert est.C_ == pytest.approx(abs(y[:100].mean()) + 3 * y[:100].std())
    path = est.save(tmp_path / "reg.npz")
    back = OLKRegressor.load(path)
    assert back.C_ == est.C_
    np.testing.assert_allclose(back.partial_fit(X[100:], y[100:]).predict(X),
                               est.partial_fit(X[100:], y[100:]).predict(X))
