"""The single-row path (learn_one / predict_one / score_one), test-then-train scores, multiclass, probabilities."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.multiclass import OneVsRestClassifier

from learners import NORMAClassifier, NORMAOneClass, NORMARegressor, OLKClassifier, OLKOneClass, OLKRegressor
from learners._base import scale_width


def _data(seed=0, n=200, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] * X[:, 1] > 0, "same", "other")
    t = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    return X, y, t


def _dicts(X, names=("a", "b", "c")):
    return [dict(zip(names, row)) for row in X]


@pytest.mark.parametrize("cls", [OLKClassifier, NORMAClassifier])
def test_learn_one_equals_partial_fit_and_predict_one_equals_predict(cls):
    X, y, _ = _data()
    batch = cls(width=0.9).partial_fit(X, y, classes=["other", "same"])
    one = cls(width=0.9)
    for row, label in zip(_dicts(X), y):
        one.learn_one(row, label)
    np.testing.assert_array_equal(one.dual_coef_, batch.dual_coef_)
    rows = _dicts(X[:20])
    assert [one.predict_one(r) for r in rows] == batch.predict(X[:20]).tolist()
    np.testing.assert_allclose([one.score_one(r) for r in rows], batch.decision_function(X[:20]), rtol=1e-12)
    # a dict's key order does not matter once the order is fixed
    shuffled = {k: rows[0][k] for k in ("c", "a", "b")}
    assert one.score_one(shuffled) == one.score_one(rows[0])


@pytest.mark.parametrize("cls", [OLKClassifier, NORMAClassifier, OLKRegressor, NORMARegressor])
def test_predict_one_then_learn_one_reuses_f_and_learns_exactly_the_same(cls):
    X, y, t = _data(1)
    target = y if "Classifier" in cls.__name__ else t
    plain, tested = cls(width=0.8, budget=50), cls(width=0.8, budget=50)
    for i, (x, label) in enumerate(zip(X, target)):
        plain.learn_one(x, label)
        if i:
            tested.predict_one(x)
        tested.learn_one(x, label)
    np.testing.assert_array_equal(tested.dual_coef_, plain.dual_coef_)
    # a changed row or a changed parameter in between is not taken for the row predicted
    tested.predict_one(X[0])
    tested.learn_one(X[1], target[1])
    plain.learn_one(X[1], target[1])
    np.testing.assert_array_equal(tested.dual_coef_, plain.dual_coef_)


@pytest.mark.parametrize("cls", [OLKClassifier, NORMAClassifier, OLKRegressor, NORMARegressor])
def test_a_remembered_prediction_is_used_only_for_the_same_row_on_the_same_model(cls):
    from learners import _stream

    X, y, t = _data(5, n=80)
    target = y if "Classifier" in cls.__name__ else t
    kw = dict(width=0.8, budget=30) if cls is not NORMAClassifier else dict(width=0.8, budget=30, loss="nu")
    plain, tested = cls(**kw), cls(**kw)
    for i in range(40):
        plain.learn_one(X[i], target[i])
        tested.learn_one(X[i], target[i])
    memo = tested._plan().memo
    # the prediction is remembered and taken by the next learn_one of the same values (another array)
    tested.predict_one(X[40])
    assert memo[0] == tested._state[_stream.STEPS]
    score = tested.learn_one(X[40].copy(), target[40], return_score=True)
    assert score == plain.learn_one(X[40], target[40], return_score=True)
    assert memo[0] == -1.0  # taken, and forgotten

    def poisoned_predict(row):  # a remembered f the stream loop must not take: it would show in the score
        tested.predict_one(row)
        memo[1] = 1e6

    # a different row in between: computed afresh
    poisoned_predict(X[41])
    assert tested.learn_one(X[42], target[42], return_score=True) == plain.learn_one(X[42], target[42],
                                                                                      return_score=True)
    # an update in between (partial_fit, learn_one of another row): the remembered f is stale, not used
    poisoned_predict(X[43])
    tested.partial_fit(X[44:45], target[44:45])
    plain.partial_fit(X[44:45], target[44:45])
    assert tested.learn_one(X[43], target[43], return_score=True) == plain.learn_one(X[43], target[43],
                                                                                      return_score=True)
    poisoned_predict(X[45])
    tested.learn_one(X[46], target[46])
    plain.learn_one(X[46], target[46])
    assert tested.learn_one(X[45], target[45], return_score=True) == plain.learn_one(X[45], target[45],
                                                                                      return_score=True)
    # and it is taken when nothing changed (the poisoned value shows)
    poisoned_predict(X[46])
    probe, offset = copy.deepcopy(tested), tested.offset_
    assert tested.learn_one(X[46], target[46], return_score=True) == 1e6 + offset
    tested = probe
    # a parameter set in between drops the plan and what it remembered
    tested.predict_one(X[47])
    tested.set_params(r=0.01) if "OLK" in cls.__name__ else tested.set_params(eta=0.05)
    plain.set_params(**tested.get_params())
    assert tested._plan().memo[0] == -1.0
    tested.learn_one(X[47], target[47])
    plain.learn_one(X[47], target[47])
    # dict rows share the plan's buffer: still exact
    names = ("a", "b", "c")
    for row, label in zip(_dicts(X[48:60], names), target[48:60]):
        tested.predict_one(row)
        tested.learn_one(row, label)
        plain.learn_one(row, label)
    np.testing.assert_array_equal(tested.dual_coef_, plain.dual_coef_)
    np.testing.assert_array_equal(tested._state, plain._state)


def test_a_dict_changed_between_predict_one_and_learn_one_is_learnt_as_it_is_then():
    X, _, t = _data(7, n=40)
    tested, plain = OLKRegressor(width=1.0), OLKRegressor(width=1.0)
    for row, target in zip(_dicts(X), t):
        tested.learn_one(row, target)
        plain.learn_one(dict(row), target)
    x = _dicts(X[:1])[0]
    tested.predict_one(x)
    x["a"] += 0.5
    tested.learn_one(x, 1.0)
    plain.learn_one(dict(x), 1.0)
    np.testing.assert_array_equal(tested.support_vectors_, plain.support_vectors_)
    np.testing.assert_array_equal(tested.dual_coef_, plain.dual_coef_)


def test_rows_off_the_fast_path_are_learnt_alike_and_checked():
    X, y, _ = _data(6, n=60)
    fast, slow = OLKClassifier(width=1.0), OLKClassifier(width=1.0)
    for i in range(30):
        fast.learn_one(X[i], y[i])
        slow.learn_one(X[i], y[i])
    F = np.asfortranarray(X)
    for i in range(30, 60):
        # a strided view, big-endian, a list: the full path, same result
        other = [F[i], X[i].astype(">f8"), X[i].tolist()][i % 3]
        assert fast.predict_one(other) == slow.predict_one(X[i])
        fast.learn_one(other, y[i])
        slow.learn_one(X[i], y[i])
    np.testing.assert_array_equal(fast.dual_coef_, slow.dual_coef_)
    with pytest.raises(ValueError, match="NaN or infinity"):
        fast.learn_one(np.array([1.0, np.inf, 0.0]), y[0])
    with pytest.raises(ValueError, match="NaN or infinity"):
        fast.score_one(np.array([1.0, np.nan, 0.0]))
    np.testing.assert_array_equal(fast.dual_coef_, slow.dual_coef_)
    # an unbounded expansion grows on the full path and keeps learning on the fast one
    grow = OLKRegressor(width=1.0, budget=None)
    for i in range(200):
        grow.learn_one(np.tile(X[i % 60], 1) + i * 1e-3, float(i % 7))
    assert grow.n_support_ > 64


@pytest.mark.parametrize("cls,kind", [(OLKClassifier, "cls"), (NORMAClassifier, "cls"), (OLKRegressor, "reg"),
                                      (NORMARegressor, "reg"), (OLKOneClass, "one"), (NORMAOneClass, "one")])
def test_return_scores_are_the_test_then_train_predictions(cls, kind):
    X, y, t = _data(2, n=60)
    target = {"cls": y, "reg": t, "one": None}[kind]
    est = cls(width=1.0)
    kw = {"classes": ["other", "same"]} if kind == "cls" else {}
    est.partial_fit(X[:30], target[:30] if target is not None else None, **kw)
    before = est.decision_function(X[30:31]) if kind == "cls" else (
        est.predict(X[30:31]) if kind == "reg" else est.score_samples(X[30:31]))
    scores = est.partial_fit(X[30:], target[30:] if target is not None else None, return_scores=True)
    assert scores.shape == (30,)
    assert scores[0] == pytest.approx(before[0], rel=1e-12, abs=1e-12)
    one = cls(width=1.0)
    for i in range(5):
        s = one.learn_one(X[i], target[i], return_score=True) if target is not None else \
            one.learn_one(X[i], return_score=True)
        assert isinstance(s, float)


def test_rows_are_checked_clearly():
    X, y, _ = _data(3, n=10)
    est = OLKClassifier().fit(X, y)
    with pytest.raises(ValueError, match="x has 2 features, but OLKClassifier is expecting 3"):
        est.predict_one([1.0, 2.0])
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.predict_one(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="one row"):
        est.predict_one(X[:2])
    d = OLKRegressor()
    d.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    with pytest.raises(ValueError, match="lacks the feature 'b'"):
        d.learn_one({"a": 1.0, "z": 2.0}, 1.0)
    with pytest.raises(ValueError, match="must have the 2 features seen first"):
        d.learn_one({"a": 1.0, "b": 2.0, "z": 2.0}, 1.0)
    with pytest.raises(ValueError, match="y must be a number"):
        d.learn_one({"a": 1.0, "b": 2.0}, "high")
    with pytest.raises(NotFittedError):
        OLKClassifier().predict_one([1.0, 2.0])


def test_parameters_are_validated_once_and_again_after_a_change():
    X, y, _ = _data(4, n=20)
    est = OLKClassifier(width=1.0).partial_fit(X, y, classes=["other", "same"])
    first = est._params()
    est.partial_fit(X, y)
    assert est._params() is first  # not validated again
    est.set_params(C=-1.0)
    with pytest.raises(ValueError, match="C must be > 0, got -1"):
        est.partial_fit(X, y)
    est.C = 3.0
    est.learn_one(X[0], y[0])
    assert est._params()["C"] == 3.0


def test_learn_one_takes_classes_as_they_come_and_grows_to_multiclass_exactly():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 2))
    labels = np.array(["b", "c", "a"])[np.argmax(np.column_stack([X[:, 0], X[:, 1], -X.sum(axis=1)]), axis=1)]
    est = OLKClassifier(width=1.0)
    est.learn_one(X[0], "b")
    assert est.predict_one(X[1]) == "b" and est.predict_proba_one(X[1]) == {"b": 1.0}
    for x, label in zip(X[1:], labels[1:]):
        est.learn_one(x, label)
    assert est.classes_.tolist() == ["a", "b", "c"]
    assert est.decision_function(X[:1]).shape == (1, 3)
    acc = np.mean(est.predict(X) == labels)
    assert acc > 0.85


def test_binary_to_multiclass_keeps_the_decision():
    X, y, _ = _data(6, n=80)
    est = NORMAClassifier(width=1.0, fit_intercept=True)
    for x, label in zip(X, y):
        est.learn_one(x, label)
    f = est.decision_function(X[:10])
    # a third label sorts after both: the learners of "other" and "same" are -f and f, "third" starts at 0
    scores = est.learn_one(X[0], "third", return_score=True)
    assert est.classes_.tolist() == ["other", "same", "third"]
    np.testing.assert_allclose(scores, [-f[0], f[0], 0.0], rtol=1e-12, atol=1e-15)
    # a label sorting first, on a model that has seen one class, makes that class the positive one
    first = OLKClassifier(width=1.0)
    first.learn_one(X[0], "m")
    f_before = first.score_one(X[1])
    assert f_before < 0  # "m" learnt as the negative side so far
    assert first.learn_one(X[1], "a", return_score=True) == pytest.approx(-f_before, rel=1e-12)
    assert first.classes_.tolist() == ["a", "m"] and first.predict_one(X[0]) == "m"


def test_a_batch_of_the_one_class_seen_learns_as_learn_one_does():
    """A binary classifier that has seen one class through learn_one learns a batch of that class with its code
    (-1), as learn_one does (it raised an IndexError: a mutated checkpoint of one class reached it), and a batch
    with a new label is refused with the classes it knows."""
    X, _, _ = _data(7, n=6)
    by_rows, by_batch = OLKClassifier(width=1.0), OLKClassifier(width=1.0)
    for est in (by_rows, by_batch):
        est.learn_one(X[0], "m")
    for x in X[1:4]:
        by_rows.learn_one(x, "m")
    by_batch.partial_fit(np.asarray(X[1:4]), np.array(["m", "m", "m"]))
    np.testing.assert_array_equal(by_batch.decision_function(np.asarray(X)), by_rows.decision_function(np.asarray(X)))
    assert by_batch.predict(np.asarray(X[4:])).tolist() == ["m", "m"]
    with pytest.raises(ValueError, match=r"labels \['z'\] that are not among the classes \['m'\]"):
        by_batch.partial_fit(np.asarray(X[4:]), np.array(["m", "z"]))

@pytest.mark.parametrize("cls", [OLKClassifier, NORMAClassifier])
def test_native_multiclass_learns_and_matches_one_vs_rest_over_its_classes(cls):
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    est = cls()
    scores = est.partial_fit(X, y, classes=[0, 1, 2], return_scores=True)
    assert scores.shape == (150, 3)
    assert np.mean(np.argmax(scores, axis=1)[50:] == y[50:]) > 0.8  # prequential, after 50 rows
    assert est.decision_function(X).shape == (150, 3)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[np.argmax(proba, axis=1)], est.predict(X))
    # scikit-learn's wrapper keeps working
    ovr = OneVsRestClassifier(cls()).fit(X, y)
    assert np.mean(ovr.predict(X) == y) > 0.8


def test_predict_proba_is_calibrated_online_and_agrees_with_predict():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(1500, 2))
    p_true = 1 / (1 + np.exp(-3 * X[:, 0]))
    y = (rng.random(1500) < p_true).astype(int)
    est = OLKClassifier(width=1.0).partial_fit(X, y, classes=[0, 1])
    proba = est.predict_proba(X)
    np.testing.assert_array_equal(est.classes_[np.argmax(proba, axis=1)], est.predict(X))
    # better log-loss than the constant predictor and than the raw sigmoid of f
    eps = 1e-12
    ll = -np.mean(np.log(np.clip(proba[np.arange(1500), y], eps, 1)))
    base = -np.mean(y * np.log(y.mean()) + (1 - y) * np.log(1 - y.mean()))
    assert ll < base - 0.1
    assert est.predict_proba_one(X[0]).keys() == {0, 1}


def test_width_scale_follows_the_first_batch():
    X, y, _ = _data(8, n=40)
    est = OLKClassifier().fit(5 * X, y)
    assert est.width_ == pytest.approx(np.sqrt(3 * np.var(5 * X)))
    assert scale_width(np.zeros((1, 9))) == pytest.approx(3.0)  # a constant row: unit variance assumed
    one = OLKClassifier()
    one.learn_one({"a": 0.0, "b": 0.0}, 1)
    assert one.width_ == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize("cls,kw", [(OLKClassifier, dict(C=1.0, r=0.2)),
                                    (NORMAClassifier, dict(eta=0.5, lam=0.5, fit_intercept=True))])
def test_one_vs_rest_equals_one_binary_learner_per_class(cls, kw):
    # budget=None: a class's zero coefficients on the shared points change nothing, so each
    # class's f_k is exactly the binary learner of "k against the rest"; r=0.2 / eta*lam=0.25
    # make the shared scale renormalise within the stream
    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 2))
    y = np.argmax(np.column_stack([X[:, 0], X[:, 1], -X.sum(axis=1)]), axis=1)
    multi = cls(width=1.0, budget=None, **kw).partial_fit(X, y, classes=[0, 1, 2])
    for k in range(3):
        binary = cls(width=1.0, budget=None, **kw).partial_fit(X, (y == k).astype(int), classes=[0, 1])
        np.testing.assert_allclose(multi.decision_function(X[:30])[:, k], binary.decision_function(X[:30]),
                                   rtol=1e-9, atol=1e-12)


def test_fitted_state_is_plain_arrays_and_scalars_caches_stay_out():
    # checkpoints (learners._persist) and pickles see only the fitted state, never the caches
    est = OLKClassifier()
    X, y, _ = _data(10, n=30)
    for i, (row, label) in enumerate(zip(_dicts(X), y)):
        if i:
            est.predict_one(row)
        est.learn_one(row, label)
    est.learn_one(_dicts(X[:1])[0], "third")
    for name, value in vars(est).items():
        assert isinstance(value, (np.ndarray, bool, int, float, str, type(None), np.floating)), name
        if isinstance(value, np.ndarray):
            assert value.dtype != object, name
    assert est._feature_keys.tolist() == ["a", "b", "c"]
