"""river adapters: every estimator of :mod:`learners` inside river's pipelines and evaluators.

``pip install "olk-bgsub[river]"``. Wrap an estimator, unfitted::

    from river import datasets, evaluate, metrics, preprocessing
    from learners import OLKClassifier
    from learners.river import to_river

    model = preprocessing.StandardScaler() | to_river(OLKClassifier())
    evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())

:class:`RiverClassifier`, :class:`RiverRegressor` and :class:`RiverAnomalyDetector`
keep the wrapped estimator as a parameter, untouched (as scikit-learn's
meta-estimators do), and train a clone of it, ``model_``, one row per call through
its ``learn_one`` / ``predict_one`` (dict rows, feature order fixed on first sight).
Estimators without a single-row path (the baselines) get rows as one-row
``partial_fit`` batches; binary ones then need ``classes=[a, b]`` unless the first
row's label comes with a second one. Before the first ``learn_one`` a classifier
predicts None and ``{}`` (river's convention), a regressor 0, an anomaly detector 0.

``RiverAnomalyDetector.score_one`` is river's anomaly score, higher = more anomalous:
minus the estimator's ``decision_function``.
"""

from __future__ import annotations

import inspect

try:
    from river import base as _river_base
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("learners.river needs river: pip install 'olk-bgsub[river]' (or pip install river)") from exc

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier, is_outlier_detector, is_regressor

__all__ = ["RiverClassifier", "RiverRegressor", "RiverAnomalyDetector", "to_river"]


class _Adapter:
    def __init__(self, estimator, classes=None):
        self.estimator = estimator
        self.classes = classes
        self.model_ = clone(estimator)
        self._keys = None

    @property
    def _fitted(self):
        return getattr(self.model_, "__sklearn_is_fitted__", lambda: hasattr(self.model_, "n_features_in_"))()

    def _array(self, x):
        """A dict row as a (1, n_features) array, key order fixed on first sight (estimators without learn_one)."""
        if self._keys is None:
            self._keys = tuple(x)
        try:
            return np.array([[x[k] for k in self._keys]], dtype=np.float64)
        except KeyError as exc:
            raise ValueError(f"x lacks the feature {exc.args[0]!r} seen in the first rows") from None

    def _learn(self, x, y, **kw):
        if hasattr(self.model_, "learn_one"):
            if y is None:
                self.model_.learn_one(x)
            elif not self._fitted and self.classes is not None and _takes_classes(self.model_.learn_one):
                self.model_.learn_one(x, y, classes=self.classes)  # SVMDClassifier fixes its labels first
            else:
                self.model_.learn_one(x, y)
            return
        X = self._array(x)
        if y is None:
            self.model_.partial_fit(X)
        elif not self._fitted and self.classes is not None:
            self.model_.partial_fit(X, [y], classes=self.classes, **kw)
        else:
            self.model_.partial_fit(X, [y], **kw)

    def _decision(self, x):
        if hasattr(self.model_, "score_one"):
            return self.model_.score_one(x)
        return self.model_.decision_function(self._array(x))[0]


class RiverClassifier(_Adapter, _river_base.Classifier):
    """A :mod:`learners` classifier as a river ``Classifier``.

    Parameters
    ----------
    estimator : classifier of :mod:`learners`, unfitted
    classes : list, optional
        Every label, for estimators that need them up front (the binary baselines).

    Attributes
    ----------
    model_ : estimator
        The clone being trained.
    """

    def __init__(self, estimator, classes=None):
        super().__init__(estimator, classes)

    def learn_one(self, x, y):
        self._learn(x, y)

    def predict_one(self, x, **kwargs):
        if not self._fitted:
            return None
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(x)
        label = self.model_.predict(self._array(x))[0]
        return label.item() if isinstance(label, np.generic) else label

    def predict_proba_one(self, x, **kwargs):
        if not self._fitted:
            return {}
        if hasattr(self.model_, "predict_proba_one"):
            return self.model_.predict_proba_one(x)
        label = self.predict_one(x)
        return {label: 1.0}


def _takes_classes(learn_one):
    return "classes" in inspect.signature(learn_one).parameters


class RiverRegressor(_Adapter, _river_base.Regressor):
    """A :mod:`learners` regressor as a river ``Regressor`` (see :class:`RiverClassifier`)."""

    def __init__(self, estimator):
        super().__init__(estimator)

    def learn_one(self, x, y):
        self._learn(x, y)

    def predict_one(self, x, **kwargs):
        if not self._fitted:
            return 0.0
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(x)
        return float(self.model_.predict(self._array(x))[0])


class RiverAnomalyDetector(_Adapter, _river_base.AnomalyDetector):
    """A :mod:`learners` novelty detector as a river ``AnomalyDetector``; ``score_one`` = ``-decision``."""

    def __init__(self, estimator):
        super().__init__(estimator)

    def learn_one(self, x):
        self._learn(x, None)

    def score_one(self, x):
        if not self._fitted:
            return 0.0
        return -float(self._decision(x))


def to_river(estimator, classes=None):
    """The river adapter that fits ``estimator``: classifier, regressor or anomaly detector."""
    if not isinstance(estimator, BaseEstimator):
        raise TypeError(f"to_river takes a classifier, regressor or novelty detector of learners, "
                        f"got {type(estimator).__name__}")
    if is_classifier(estimator):
        return RiverClassifier(estimator, classes=classes)
    if is_regressor(estimator):
        return RiverRegressor(estimator)
    if is_outlier_detector(estimator):
        return RiverAnomalyDetector(estimator)
    raise TypeError(f"to_river takes a classifier, regressor or novelty detector of learners, "
                    f"got {type(estimator).__name__}")
