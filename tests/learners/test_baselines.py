"""Baselines against hand-worked cases and published properties."""

import math

import numpy as np
import pytest
from sklearn.base import clone

from learners.baselines import (
    KRLS,
    LSSVM,
    BudgetOnlineSVM,
    KernelPerceptron,
    KernelPerceptronRegressor,
    Perceptron,
    Projectron,
)
from learners.kernels import gram


def separable_data(n, gamma, seed):
    """Points with ``y <u, (x, 1)> >= gamma`` for the unit vector ``u``."""
    rng = np.random.default_rng(seed)
    u = np.array([1.0, -2.0, 0.5])
    u /= np.linalg.norm(u)
    X, y = [], []
    while len(X) < n:
        x = rng.uniform(-2, 2, size=2)
        s = u[:2] @ x + u[2]
        if abs(s) >= gamma:
            X.append(x)
            y.append(1 if s > 0 else -1)
    return np.array(X), np.array(y), u


# ---------------------------------------------------------------- Perceptron

def test_perceptron_hand_worked():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    y = np.array([1, -1, -1])
    p = Perceptron().fit(X, y)
    # x1: f = 0 -> mistake, w = (1, 0), b = 1; x2: f = 1, y = -1 -> mistake, w = (1, -1), b = 0;
    # x3: f = -1, y = -1 -> correct.
    np.testing.assert_array_equal(p.coef_, [1.0, -1.0])
    assert p.intercept_ == 0.0
    assert p.n_mistakes_ == 2


def test_perceptron_decaying_step():
    X = np.array([[1.0], [1.0]])
    y = np.array([1, -1])
    p = Perceptron(eta0=2.0, decay=50.0).fit(X, y)
    # t = 1 mistake: w = 2 e^{-1/50}; t = 2: f = 2 e^{-1/50} (1 + 1) > 0, y = -1 -> mistake
    w = 2 * math.exp(-1 / 50) - 2 * math.exp(-2 / 50)
    assert p.coef_[0] == pytest.approx(w)
    assert p.intercept_ == pytest.approx(w)


def test_perceptron_novikoff_mistake_bound():
    gamma = 0.2
    X, y, _ = separable_data(300, gamma, seed=1)
    R2 = np.max(np.sum(X**2, axis=1) + 1.0)
    bound = R2 / gamma**2
    p = Perceptron()
    for _ in range(50):  # cycle until it stops making mistakes
        before = getattr(p, "n_mistakes_", 0)
        p.partial_fit(X, y)
        if p.n_mistakes_ == before:
            break
    assert p.n_mistakes_ <= bound
    assert p.score(X, y) == 1.0


def test_perceptron_string_labels_and_classes():
    X = np.array([[1.0], [-1.0], [2.0], [-2.0]])
    y = np.array(["spam", "ham", "spam", "ham"])
    p = Perceptron().fit(X, y)
    assert list(p.classes_) == ["ham", "spam"]
    assert list(p.predict(np.array([[3.0], [-3.0]]))) == ["spam", "ham"]
    with pytest.raises(ValueError, match="not among the classes"):
        p.partial_fit(np.array([[0.0]]), np.array(["eggs"]))
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        Perceptron().fit(np.zeros((3, 1)), [0, 1, 2])
    with pytest.raises(ValueError, match="pass classes="):
        Perceptron().partial_fit(np.zeros((2, 1)), [3, 3])


# ---------------------------------------------------------- Kernel perceptron

def test_kernel_perceptron_linear_kernel_equals_perceptron_without_bias():
    X, y, _ = separable_data(200, 0.1, seed=2)
    kp = KernelPerceptron(kernel="linear").fit(X, y)
    p = Perceptron(fit_intercept=False).fit(X, y)
    assert kp.n_mistakes_ == p.n_mistakes_ == kp.n_support_
    np.testing.assert_allclose(kp.decision_function(X), p.decision_function(X), atol=1e-9)
    np.testing.assert_allclose(kp.support_vectors_.T @ kp.dual_coef_, p.coef_, atol=1e-9)


def test_kernel_perceptron_eta_only_scales():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    a = KernelPerceptron(width=0.8, eta=1.0).fit(X, y)
    b = KernelPerceptron(width=0.8, eta=0.1).fit(X, y)
    assert a.n_mistakes_ == b.n_mistakes_
    np.testing.assert_allclose(0.1 * a.decision_function(X), b.decision_function(X), atol=1e-9)
    assert set(np.abs(a.dual_coef_)) == {1.0}


def test_kernel_perceptron_mistake_bound_gaussian():
    # With k(x, x) = 1, a separator g in the RKHS with y g(x) >= gamma ||g|| bounds the
    # mistakes by 1 / gamma^2. Build g from a few centres and keep only points with margin.
    rng = np.random.default_rng(4)
    centres = rng.uniform(-2, 2, size=(5, 2))
    w = np.array([1.0, -1.0, 1.0, -1.0, 0.5])
    norm = math.sqrt(w @ gram(centres, centres, width=1.0) @ w)
    X = rng.uniform(-2.5, 2.5, size=(4000, 2))
    g = gram(X, centres, width=1.0) @ w / norm
    gamma = 0.15
    keep = np.abs(g) >= gamma
    X, y = X[keep], np.where(g[keep] > 0, 1, -1)
    kp = KernelPerceptron(width=1.0)
    for _ in range(20):
        before = getattr(kp, "n_mistakes_", 0)
        kp.partial_fit(X, y)
        if kp.n_mistakes_ == before:
            break
    assert kp.n_mistakes_ <= 1 / gamma**2
    assert kp.score(X, y) == 1.0


def test_kernel_perceptron_regressor_is_kernel_lms():
    X = np.array([[0.0], [1.0]])
    y = np.array([1.0, 2.0])
    r = KernelPerceptronRegressor(width=1.0, eta=0.5).fit(X, y)  # the default step
    a1 = 0.5 * 1.0
    a2 = 0.5 * (2.0 - a1 * math.exp(-1.0))
    np.testing.assert_allclose(r.dual_coef_, [a1, a2])
    assert r.predict(np.array([[1.0]]))[0] == pytest.approx(a1 * math.exp(-1.0) + a2)


# ---------------------------------------------------------- Budget online SVM

def test_budget_svm_removal_rule_hand_worked():
    X = np.array([[0.0], [3.0], [1.5]])
    y = np.array([1, -1, 1])
    m = BudgetOnlineSVM(beta=0.5, budget=2, width=1.0).fit(X, y)
    # after x3 joins, leave-one-out margins t_m (y(x_m) - t_m k(x_m, x_m)):
    # x1: e^-2.25 - e^-9 = 0.105, x2: -(e^-9 + e^-2.25), x3: e^-2.25 - e^-2.25 = 0 -> drop x1
    np.testing.assert_array_equal(m.support_vectors_, [[3.0], [1.5]])
    np.testing.assert_array_equal(m.dual_coef_, [-1.0, 1.0])
    assert m.n_removed_ == 1


def test_budget_svm_margin_beta_adds_correct_points():
    X = np.array([[0.0], [0.5]])
    y = np.array([1, 1])
    # y(x2) = e^-0.25 = 0.78: kept out with beta = 0.5, added with beta = 1
    assert BudgetOnlineSVM(beta=0.5, width=1.0).fit(X, y, classes=[0, 1]).n_support_ == 1
    assert BudgetOnlineSVM(beta=1.0, width=1.0).fit(X, y, classes=[0, 1]).n_support_ == 2


@pytest.mark.parametrize("budget", [1, 5, 20])
def test_budget_svm_never_exceeds_budget(budget):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=400) > 0, 1, -1)
    m = BudgetOnlineSVM(beta=0.1, budget=budget, width=1.5)
    for s in range(0, 400, 7):
        m.partial_fit(X[s : s + 7], y[s : s + 7], classes=[-1, 1])
        assert m.n_support_ <= budget
    assert m.n_support_ == budget
    # the tracked outputs at the support vectors stay exact
    np.testing.assert_allclose(m.margins_, m.decision_function(m.support_vectors_), atol=1e-9)


def test_budget_svm_without_budget_is_the_kernel_perceptron():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 < 1.2, 1, -1)
    a = BudgetOnlineSVM(beta=0.0).fit(X, y)
    b = KernelPerceptron().fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))


# ----------------------------------------------------------------- Projectron

def test_projectron_projects_a_repeated_point():
    X = np.array([[0.0], [0.0]])
    y = np.array([1, -1])
    p = Projectron(eta=0.1).fit(X, y)
    # the second mistake lies in span{k(0, .)} (delta = 0): coefficient 1 + (-1) * 1 = 0
    assert p.n_support_ == 1 and p.n_projections_ == 1
    np.testing.assert_allclose(p.dual_coef_, [0.0])


def test_projectron_eta_zero_is_the_kernel_perceptron():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 2))
    y = np.where(np.sin(2 * X[:, 0]) > X[:, 1], 1, -1)
    a = Projectron(eta=0.0, width=1.2).fit(X, y)
    b = KernelPerceptron(width=1.2).fit(X, y)
    assert a.n_mistakes_ == b.n_mistakes_
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)


def test_projectron_keeps_fewer_vectors_and_an_exact_inverse():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1000, 2))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=1000) > 0, 1, -1)
    sizes = []
    for eta in (0.0, 0.1, 0.5):
        p = Projectron(eta=eta, width=1.2).fit(X, y)
        sizes.append(p.n_support_)
        if eta == 0.0:
            continue  # every mistake joins: K_S is too ill-conditioned to invert reliably
        K = gram(p.support_vectors_, p.support_vectors_, width=1.2)
        np.testing.assert_allclose(p.gram_inv_ @ K, np.eye(p.n_support_), atol=1e-5)
    assert sizes[0] > sizes[1] > sizes[2]
    assert p.n_support_ + p.n_projections_ == p.n_mistakes_


# ----------------------------------------------------------------------- KRLS

def test_krls_single_element_dictionary_is_least_squares():
    rng = np.random.default_rng(9)
    X = rng.uniform(-1, 1, size=(30, 1))
    y = rng.normal(size=30)
    m = KRLS(nu=2.0, width=1.0).fit(X, y)  # delta <= 1 < nu: only x_1 is ever admitted
    assert m.n_support_ == 1
    k = gram(X, X[:1], width=1.0)[:, 0]
    np.testing.assert_allclose(m.dual_coef_, [k @ y / (k @ k)], rtol=1e-9)


def test_krls_with_nu_zero_interpolates_few_points():
    X = np.array([[-2.0], [-0.5], [0.7], [2.0]])
    y = np.array([0.3, -1.0, 2.0, 0.5])
    m = KRLS(nu=0.0, width=1.0).fit(X, y)
    assert m.n_support_ == 4
    np.testing.assert_allclose(m.predict(X), y, atol=1e-8)


def test_krls_dictionary_shrinks_as_nu_grows():
    rng = np.random.default_rng(10)
    X = rng.uniform(-np.pi, np.pi, size=(500, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)
    sizes = [KRLS(nu=nu, width=0.5).fit(X, y).n_support_ for nu in (1e-4, 1e-3, 1e-2, 1e-1)]
    assert sizes[0] > sizes[1] > sizes[2] > sizes[3] >= 1
    m = KRLS(nu=1e-3, width=0.5).fit(X, y)
    assert np.all(np.diff(m.dictionary_sizes_) >= 0)
    assert m.dictionary_sizes_[-1] == m.n_support_
    assert np.sqrt(np.mean((m.predict(X) - np.sin(X[:, 0])) ** 2)) < 0.05


# ---------------------------------------------------------------------- LSSVM

def test_lssvm_optimality_conditions():
    rng = np.random.default_rng(11)
    X = rng.uniform(-3, 3, size=(40, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    m = LSSVM(C=10.0, width=0.5).fit(X, y)
    # alpha_i = C e_i with e_i = y_i - f(x_i), and sum(alpha) = 0
    np.testing.assert_allclose(m.dual_coef_, 10.0 * (y - m.predict(X)), atol=1e-8)
    assert abs(m.dual_coef_.sum()) < 1e-8
    assert m.n_support_ == 40


# -------------------------------------------------------------- conventions

ALL = [
    Perceptron(),
    KernelPerceptron(),
    KernelPerceptronRegressor(),
    BudgetOnlineSVM(budget=3),
    Projectron(),
    KRLS(),
    LSSVM(),
]


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_conventions(est):
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [-1.0, 0.5]])
    y = np.array([1, -1, 1, -1])
    c = clone(est)
    assert c.get_params() == est.get_params()
    assert not hasattr(c, "n_features_in_")
    c.fit(X, y)
    assert c.n_features_in_ == 2
    assert c.predict(X).shape == (4,)
    with pytest.raises(ValueError, match="features"):
        c.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2D array"):
        clone(est).fit(np.zeros(4), y)


@pytest.mark.parametrize(
    "est, message",
    [
        (KernelPerceptron(width=-1), "width must be > 0, got -1"),
        (Projectron(eta=-0.5), "eta must be >= 0, got -0.5"),
        (KRLS(kernel="rbf"), "kernel must be one of"),
        (BudgetOnlineSVM(budget=0), "budget must be an integer >= 1"),
        (LSSVM(C=0), "C must be > 0, got 0"),
        (Perceptron(decay=0), "decay must be > 0, got 0"),
    ],
)
def test_bad_parameters(est, message):
    with pytest.raises(ValueError, match=message):
        est.fit(np.array([[0.0], [1.0]]), np.array([1, -1]))


def test_unfitted():
    with pytest.raises(ValueError, match="not fitted"):
        KRLS().predict(np.zeros((1, 1)))


ONLINE_CLASSIFIERS = [Perceptron, KernelPerceptron, BudgetOnlineSVM, Projectron]


@pytest.mark.parametrize("cls", ONLINE_CLASSIFIERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("first, second, classes", [
    ([1, 1], [0, 1], [0, 1]),
    ([0, 0], [1, 0], [0, 1]),
    ([1, 1], [-1, 1], [-1, 1]),
    ([True, True], [False, True], [False, True]),
    (["b", "b"], ["a", "b"], ["a", "b"]),
], ids=["ones-of-0/1", "zeros-of-0/1", "ones-of-+-1", "bool", "str"])
def test_first_batch_of_one_class_works_with_classes_and_fails_clearly_without(cls, first, second, classes):
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    est = cls().partial_fit(X, np.array(first), classes=classes)
    assert est.classes_.tolist() == sorted(classes)
    est.partial_fit(X, np.array(second))  # the second class arrives later: no error
    assert set(est.predict(X).tolist()) <= set(classes)
    with pytest.raises(ValueError, match="only 1 class.*pass classes="):
        cls().partial_fit(X, np.array(first))


def test_baselines_take_keyword_arguments_only():
    for cls in (*ONLINE_CLASSIFIERS, KRLS, LSSVM):
        with pytest.raises(TypeError):
            cls(1.0)



@pytest.mark.parametrize(
    "est", [BudgetOnlineSVM(budget=20) if isinstance(e, BudgetOnlineSVM) else e for e in ALL], ids=lambda e: type(e).__name__
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_scikit_learn_estimator_checks(est):
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(clone(est))
