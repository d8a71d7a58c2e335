"""The six estimators: streams equal the paper transcription, API conventions, errors."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from learners import NORMAClassifier, NORMAOneClass, NORMARegressor, OLKClassifier, OLKOneClass, OLKRegressor
from tests.learners import _reference as ref

ALL = [NORMAClassifier, NORMARegressor, NORMAOneClass, OLKClassifier, OLKRegressor, OLKOneClass]


def _data(seed=0, n=240, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y_cls = np.where(X[:, 0] * X[:, 1] > 0, 1, 0)
    y_reg = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.normal(size=n)
    return X, y_cls, y_reg


def _chunks(n, sizes=(1, 7, 50)):
    """Split range(n) into consecutive batches of varying size (a stream fed in pieces)."""
    out, i, k = [], 0, 0
    while i < n:
        j = min(n, i + sizes[k % len(sizes)])
        out.append(slice(i, j))
        i, k = j, k + 1
    return out


# -------------------------------------------------- streams equal the reference


def _feed(est, X, y=None, classes=None):
    for s in _chunks(X.shape[0]):
        if y is None:
            est.partial_fit(X[s])
        elif classes is not None:
            est.partial_fit(X[s], y[s], classes=classes)
        else:
            est.partial_fit(X[s], y[s])
    return est


def _check_expansion(est, exp):
    assert est.n_support_ == len(exp.points)
    np.testing.assert_allclose(est.support_vectors_, np.array(exp.points).reshape(-1, est.n_features_in_))
    np.testing.assert_allclose(est.dual_coef_, exp.alphas, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(C=2.0, r=0.001), dict(C=0.5, r=0.2, budget=30, sv_threshold=1e-4)])
def test_olk_classifier_stream_matches_reference(kw):
    X, y, _ = _data(1)
    est = _feed(OLKClassifier(width=0.8, **kw), X, y, classes=[0, 1])
    exp = ref.Expansion(width=0.8, budget=kw.get("budget"))
    for x, yy in zip(X, np.where(y == 1, 1.0, -1.0)):
        ref.olk_c(exp, x, yy, kw["r"], kw["C"], kw.get("sv_threshold", 0.0))
    _check_expansion(est, exp)
    np.testing.assert_allclose(est.decision_function(X[:20]), [exp.f(x) for x in X[:20]], rtol=1e-9, atol=1e-12)
    assert est.n_steps_ == X.shape[0]


@pytest.mark.parametrize("kw", [dict(C=1.0, r=0.001, epsilon=0.1), dict(C=0.3, r=0.1, epsilon=0.0, budget=20)])
def test_olk_regressor_stream_matches_reference(kw):
    X, _, y = _data(2)
    est = _feed(OLKRegressor(width=0.5, **kw), X, y)
    exp = ref.Expansion(width=0.5, budget=kw.get("budget"))
    for x, yy in zip(X, y):
        ref.olk_r(exp, x, yy, kw["r"], kw["C"], kw["epsilon"])
    _check_expansion(est, exp)
    np.testing.assert_allclose(est.predict(X[:20]), [exp.f(x) for x in X[:20]], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("rule", ["paper", "primal"])
@pytest.mark.parametrize("kw", [dict(C=0.2, nu=0.1, r=0.001), dict(C=0.9, nu=0.1, r=0.2, budget=25, width=0.7)])
def test_olk_one_class_stream_matches_reference(rule, kw):
    X, _, _ = _data(3)
    est = _feed(OLKOneClass(rho_rule=rule, **{"width": 1.0, **kw}), X)
    exp = ref.Expansion(width=kw.get("width", 1.0), budget=kw.get("budget"))
    rho = 0.0
    for x in X:
        _, _, rho = ref.olk_n(exp, x, kw["r"], kw["nu"], kw["C"], rho, rule)
    _check_expansion(est, exp)
    assert est.rho_ == pytest.approx(rho, abs=1e-9)
    assert est.offset_ == pytest.approx(1 + rho, abs=1e-9)
    np.testing.assert_allclose(est.score_samples(X[:20]), [exp.f(x) for x in X[:20]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.decision_function(X[:20]), [exp.f(x) - 1 - rho for x in X[:20]], rtol=1e-9,
                               atol=1e-9)


def _eta_t(eta, lr, t):
    return eta / math.sqrt(t) if lr == "invsqrt" else eta


@pytest.mark.parametrize("loss", ["hinge", "nu", "perceptron"])
@pytest.mark.parametrize("lr", ["constant", "invsqrt"])
def test_norma_classifier_stream_matches_reference(loss, lr):
    X, y, _ = _data(4)
    eta, lam, margin, nu = 0.3, 0.05, 0.8, 0.3
    est = _feed(NORMAClassifier(width=1.0, loss=loss, eta=eta, lam=lam, margin=margin, nu=nu, learning_rate=lr,
                                budget=60, fit_intercept=True),
                X, y, classes=[0, 1])
    exp = ref.Expansion(budget=60)
    rho = margin
    for t, (x, yy) in enumerate(zip(X, np.where(y == 1, 1.0, -1.0)), start=1):
        e = _eta_t(eta, lr, t)
        if loss == "nu":
            _, rho = ref.norma_nu_classification(exp, x, yy, e, lam, nu, rho, True)
        else:
            ref.norma_classification(exp, x, yy, e, lam, margin, loss == "perceptron", True)
    _check_expansion(est, exp)
    assert est.offset_ == pytest.approx(exp.b, abs=1e-12)
    if loss == "nu":
        assert est.rho_ == pytest.approx(rho, abs=1e-12)
    np.testing.assert_allclose(est.decision_function(X[:20]), [exp.f(x) for x in X[:20]], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "epsilon_insensitive", "nu_epsilon_insensitive", "huber",
                                  "adaptive_huber"])
def test_norma_regressor_stream_matches_reference(loss):
    X, _, y = _data(5)
    eta, lam, eps, sigma, nu = 0.2, 0.02, 0.2, 0.4, 0.3
    est = _feed(NORMARegressor(width=1.0, loss=loss, eta=eta, lam=lam, epsilon=eps, sigma=sigma, nu=nu,
                               learning_rate="invsqrt", fit_intercept=False, budget=None), X, y)
    exp = ref.Expansion()
    for t, (x, yy) in enumerate(zip(X, y), start=1):
        _, eps, sigma = ref.norma_regression(exp, x, yy, _eta_t(eta, "invsqrt", t), lam, loss, eps, nu, sigma, False)
    _check_expansion(est, exp)
    assert (est.epsilon_, est.sigma_) == pytest.approx((eps, sigma))
    np.testing.assert_allclose(est.predict(X[:20]), [exp.f(x) for x in X[:20]], rtol=1e-9, atol=1e-12)


def test_norma_one_class_stream_matches_reference():
    X, _, _ = _data(6)
    est = _feed(NORMAOneClass(width=1.0, eta=0.2, lam=0.1, nu=0.2, learning_rate="constant", budget=40), X)
    exp = ref.Expansion(budget=40)
    rho = 0.0
    for x in X:
        _, rho = ref.norma_novelty(exp, x, 0.2, 0.1, 0.2, rho)
    _check_expansion(est, exp)
    assert est.rho_ == pytest.approx(rho) and est.offset_ == est.rho_
    np.testing.assert_allclose(est.decision_function(X[:20]), [exp.f(x) - rho for x in X[:20]], atol=1e-12)


# ----------------------------------------------------------------- conventions


@pytest.mark.parametrize("cls", ALL)
def test_fit_equals_one_partial_fit_pass_and_resets(cls):
    X, yc, yr = _data(7, n=120)
    y = None if "OneClass" in cls.__name__ else (yc if "Classifier" in cls.__name__ else yr)
    a = cls(width=1.0).fit(X, y)
    b = cls(width=1.0)
    _feed(b, X, y, classes=[0, 1] if "Classifier" in cls.__name__ else None)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_)
    a.fit(X, y)  # fit again: starts afresh
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_)
    two = cls(width=1.0, n_passes=2).fit(X, y)
    assert two.n_steps_ == 2 * X.shape[0]
    s1 = cls(width=1.0, n_passes=2, shuffle=True, random_state=3).fit(X, y)
    s2 = cls(width=1.0, n_passes=2, shuffle=True, random_state=3).fit(X, y)
    np.testing.assert_array_equal(s1.dual_coef_, s2.dual_coef_)
    restored = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(restored.dual_coef_, a.dual_coef_)
    assert clone(a).get_params() == a.get_params()


def test_classifiers_learn_a_nonlinear_boundary_with_any_two_labels():
    X, y, _ = _data(8, n=1500)
    labels = np.array(["no", "yes"])[y]
    Xt, yt, _ = _data(9, n=500)
    for est in (OLKClassifier(width=0.7), NORMAClassifier(width=0.7, eta=0.3, lam=0.001),
                NORMAClassifier(loss="nu", width=0.7, lam=0.01, eta=0.1, nu=0.3),
                NORMAClassifier(loss="perceptron", lam=0.0, width=0.7)):
        est.fit(X, labels)
        assert est.classes_.tolist() == ["no", "yes"]
        acc = np.mean(est.predict(Xt) == np.array(["no", "yes"])[yt])
        assert acc > 0.85, (est, acc)
        assert set(np.unique(est.predict(Xt))) <= {"no", "yes"}
        np.testing.assert_array_equal(est.predict(Xt), est.classes_[(est.decision_function(Xt) > 0).astype(int)])


def test_regressors_learn_a_smooth_function():
    X, _, y = _data(10, n=1500)
    Xt, _, yt = _data(11, n=300)
    for est in (OLKRegressor(width=0.7, epsilon=0.05, C=1.0), NORMARegressor(width=0.7, eta=0.3, lam=0.001),
                NORMARegressor(loss="adaptive_huber", width=0.7, eta=0.3, lam=0.001, nu=0.5)):
        assert est.fit(X, y).score(Xt, yt) > 0.8, est


def test_one_class_models_flag_far_points_as_novel():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(2000, 2))
    far = np.array([[6.0, 6.0], [-7.0, 5.0], [8.0, -8.0]])
    near = np.array([[0.0, 0.0], [0.3, -0.2]])
    for est in (OLKOneClass(), OLKOneClass(rho_rule="primal"), NORMAOneClass(),
                NORMAOneClass(learning_rate="constant", lam=0.01)):
        est.fit(X)
        assert (est.predict(far) == -1).all(), est
        assert (est.predict(near) == 1).all(), est
        assert est.predict(far).dtype.kind == "i"
        np.testing.assert_allclose(est.decision_function(far), est.score_samples(far) - est.offset_)
        frac = np.mean(est.predict(X) == -1)
        assert frac < 0.6, (est, frac)
    # NORMA's nu-property on a stationary stream with the decreasing step size
    est = NORMAOneClass(nu=0.1, budget=None).fit(X)
    assert 0.02 < np.mean(est.predict(X) == -1) < 0.25


def test_budget_none_grows_and_keeps_every_term():
    X, y, _ = _data(13, n=300)
    est = OLKOneClass(budget=None)
    for s in _chunks(300, (3, 100)):
        est.partial_fit(X[s])
    assert est.n_support_ == 300  # OLK_N adds a term every step
    np.testing.assert_array_equal(est.support_vectors_, X)


def test_unfitted_errors():
    from sklearn.exceptions import NotFittedError

    for cls in ALL:
        with pytest.raises(NotFittedError):
            cls().predict(np.zeros((1, 2)))
        assert not hasattr(cls(), "support_vectors_")


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize("cls,params,match", [
    (OLKClassifier, dict(width=0), r"width must be > 0, got 0"),
    (OLKClassifier, dict(width=-1), r"width must be > 0, got -1"),
    (OLKRegressor, dict(r=-0.1), r"r must be >= 0, got -0.1"),
    (OLKRegressor, dict(epsilon=-1), r"epsilon must be >= 0"),
    (OLKOneClass, dict(budget=0), r"budget must be an integer >= 1 \(or None for no limit\), got 0"),
    (OLKOneClass, dict(C=0.1, nu=0.1), r"C must be > nu .*got C=0.1, nu=0.1"),
    (OLKOneClass, dict(C=0.05, nu=0.1), r"C must be > nu"),
    (OLKOneClass, dict(nu=1.5, C=2.0), r"nu must be in \(0, 1\], got 1.5"),
    (OLKOneClass, dict(rho_rule="other"), r"rho_rule must be one of 'paper', 'primal', got 'other'"),
    (OLKClassifier, dict(C=0), r"C must be > 0, got 0"),
    (OLKClassifier, dict(kernel="polynomial", degree=1.5), r"degree must be an integer >= 1, got 1.5"),
    (OLKClassifier, dict(kernel="polynomial", coef0=-1), r"coef0 must be >= 0, got -1"),
    (OLKClassifier, dict(kernel="rbf"), r"kernel must be one of 'gaussian', 'laplacian', 'polynomial', 'linear'"),
    (NORMAClassifier, dict(eta=0), r"eta must be > 0, got 0"),
    (NORMAClassifier, dict(loss="log"), r"loss must be one of 'hinge', 'nu', 'perceptron', got 'log'"),
    (NORMAClassifier, dict(eta=1.0, lam=1.0), r"eta \* lam must be < 1"),
    (NORMARegressor, dict(loss="absolute"), r"loss must be one of 'squared', 'epsilon_insensitive'"),
    (NORMARegressor, dict(sigma=0), r"sigma must be > 0, got 0"),
    (NORMAOneClass, dict(learning_rate="optimal"), r"learning_rate must be one of 'constant', 'invsqrt'"),
    (NORMAOneClass, dict(lam=-1), r"lam must be >= 0, got -1"),
    (NORMAOneClass, dict(sv_threshold=-1), r"sv_threshold must be >= 0, got -1"),
    (NORMAOneClass, dict(n_passes=0), r"n_passes must be an integer >= 1, got 0"),
])
def test_invalid_parameters_name_the_parameter_and_range(cls, params, match):
    X, y, _ = _data(14, n=10)
    args = (X,) if "OneClass" in cls.__name__ else (X, y)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(*args)
    with pytest.raises(ValueError, match=match):
        cls(**params).partial_fit(*args)


def test_parameter_types():
    X, y, _ = _data(14, n=10)
    with pytest.raises(TypeError, match="width must be a real number"):
        OLKClassifier(width="wide").fit(X, y)
    with pytest.raises(ValueError, match="budget must be an integer >= 1 or None, got 2.5"):
        OLKClassifier(budget=2.5).fit(X, y)
    with pytest.raises(TypeError, match="budget must be an integer"):
        OLKClassifier(budget="all").fit(X, y)


@pytest.mark.parametrize("cls", ALL)
def test_bad_input_is_rejected_clearly(cls):
    X, yc, yr = _data(15, n=20)
    y = None if "OneClass" in cls.__name__ else (yc if "Classifier" in cls.__name__ else yr)
    est = cls().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but .* is expecting 2 features"):
        est.partial_fit(np.zeros((2, 3)), None if y is None else y[:2])
    with pytest.raises(ValueError, match="X has 3 features"):
        est.predict(np.zeros((2, 3)))
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        cls().fit(bad, y)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        est.predict(bad)
    with pytest.raises(ValueError, match="Expected 2D array"):
        est.predict(X[0])
    if y is not None:
        with pytest.raises(ValueError, match="inconsistent numbers of samples"):
            cls().fit(X, y[:-1])
        with pytest.raises(ValueError, match="requires y to be passed"):
            cls().fit(X, None)


def test_classifier_label_errors():
    X, y, _ = _data(16, n=30)
    assert OLKClassifier().fit(X, np.arange(30) % 3).classes_.tolist() == [0, 1, 2]  # native multiclass
    with pytest.raises(ValueError, match="loss='nu' is for two classes"):
        NORMAClassifier(loss="nu").fit(X, np.arange(30) % 3)
    with pytest.raises(ValueError, match="Unknown label type"):
        NORMAClassifier().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="only 1 class.*pass classes="):
        NORMAClassifier().partial_fit(X[:3], [1, 1, 1])
    est = NORMAClassifier().partial_fit(X[:3], [1, 1, 1], classes=[1, 2])
    with pytest.raises(ValueError, match=r"labels \[3\] that are not among the classes \[1, 2\]"):
        est.partial_fit(X[3:5], [3, 1])
    with pytest.raises(ValueError, match="differs from the classes"):
        est.partial_fit(X[3:5], [2, 1], classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels \[5\] that are not among the classes \[0, 1, 2\]"):
        OLKClassifier().partial_fit(X[:3], [1, 1, 1], classes=[0, 1, 2]).partial_fit(X[:1], [5])


def test_linear_kernel_with_zero_rows():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, 0.0]])
    for est in (OLKRegressor(kernel="linear", epsilon=0.0).fit(X, [1.0, 2.0, 0.0, 1.0]),
                OLKClassifier(kernel="linear").fit(X, [0, 1, 0, 1]), OLKOneClass(kernel="linear").fit(X),
                OLKOneClass(kernel="polynomial", degree=2, coef0=0.0).fit(X)):
        assert np.isfinite(est.dual_coef_).all()
        out = est.predict(X) if isinstance(est, OLKRegressor) else est.decision_function(X)
        assert np.isfinite(out).all()


def test_library_example_in_docs_runs(capsys):
    """The 10-line example of docs/learners.md (copied into the README) runs and prints what the doc says."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "learners.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    exec(compile(code, "docs/learners.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == ["['same' 'other'] 512", "[ 1 -1]"]
