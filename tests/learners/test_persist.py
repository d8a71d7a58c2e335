"""save/load of the kernel estimators: same predictions, same continuation, pickling unchanged."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import learners
from learners._persist import CheckpointError

ESTIMATORS = ["OLKClassifier", "OLKRegressor", "OLKOneClass", "NORMAClassifier", "NORMARegressor", "NORMAOneClass"]


def _score(est, X):
    return est.predict(X) if "Regressor" in type(est).__name__ else est.decision_function(X)


def _data(name, n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if "Classifier" in name:
        y = np.where(X[:, 0] + X[:, 1] > 0, "pos", "neg")
    elif "Regressor" in name:
        y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    else:
        y = None
    return X, y


@pytest.mark.parametrize("name", ESTIMATORS)
def test_save_load_round_trip(tmp_path, name):
    cls = getattr(learners, name)
    X, y = _data(name)
    est = cls(width=2.0, budget=30)
    fit = (lambda e, a, b: e.partial_fit(a, b, classes=["neg", "pos"])) if "Classifier" in name else \
        (lambda e, a, b: e.partial_fit(a) if b is None else e.partial_fit(a, b))
    fit(est, X[:40], None if y is None else y[:40])
    est.save(tmp_path / "e.npz")
    back = cls.load(tmp_path / "e.npz")
    assert back.get_params() == est.get_params()
    np.testing.assert_array_equal(_score(back, X), _score(est, X))
    # both continue the stream identically
    fit(est, X[40:], None if y is None else y[40:])
    fit(back, X[40:], None if y is None else y[40:])
    np.testing.assert_array_equal(_score(back, X), _score(est, X))
    np.testing.assert_array_equal(_score(pickle.loads(pickle.dumps(est)), X), _score(est, X))


def test_feature_names_survive(tmp_path):
    # what scikit-learn sets when fitted on a DataFrame: an object array of str
    X, _ = _data("OneClass")
    est = learners.OLKOneClass(width=2.0).fit(X)
    est.feature_names_in_ = np.array(["a", "b", "c"], dtype=object)
    est.save(tmp_path / "e.npz")
    back = learners.OLKOneClass.load(tmp_path / "e.npz")
    assert back.feature_names_in_.dtype == object and list(back.feature_names_in_) == ["a", "b", "c"]


def test_wrong_class_and_unsavable_params(tmp_path):
    X, _ = _data("OneClass")
    learners.OLKOneClass().fit(X).save(tmp_path / "e.npz")
    with pytest.raises(CheckpointError, match="holds a 'OLKOneClass' model, not 'NORMAOneClass'"):
        learners.NORMAOneClass.load(tmp_path / "e.npz")
    est = learners.OLKOneClass(shuffle=True, random_state=np.random.RandomState(0)).fit(X)
    with pytest.raises(CheckpointError, match="random_state"):
        est.save(tmp_path / "r.npz")
    assert not (tmp_path / "r.npz").exists()
