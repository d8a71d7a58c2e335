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
Estimators without a single-row path (the baselines, ``WeightedMajority``) get rows
as one-row ``partial_fit`` batches; ``LSSVM``, which learns from a whole batch, is
refused. Labels follow river's conventions (see :class:`RiverClassifier`): a binary
classifier's are ``False``/``True`` unless ``classes`` says otherwise, and
``predict_proba_one`` holds every known label, uniform before the first row. Before
the first row a regressor predicts 0 and an anomaly detector scores 0.

river's ``check_estimator`` passes on every adapter, skipping (``_unit_test_skips``)
only the emerging/disappearing-feature checks that river's own scikit-learn adapter
skips: like it, the adapters learn the features of the first row.

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


def _plain(label):
    """A label as river hands it on: numpy scalars (``np.True_``) as their Python value."""
    return label.item() if isinstance(label, np.generic) else label


def _is_bool(label):
    return isinstance(label, (bool, np.bool_))


class _Adapter:
    def __init__(self, estimator, classes=None):
        _check_one_row(estimator)
        self.estimator = estimator
        self.classes = classes
        self.model_ = clone(estimator)
        self._keys = None

    # river's own scikit-learn adapter skips these three checks: a scikit-learn estimator
    # learns a fixed set of features (the first row's), as these adapters do
    def _unit_test_skips(self):
        return {
            "check_emerging_features",
            "check_disappearing_features",
            "check_radically_disappearing_features",
        }

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

    def _first_classes(self, y):
        """The labels to fix before the first row, or None where the estimator takes them as they come."""
        return self.classes

    def _learn(self, x, y):
        if hasattr(self.model_, "learn_one"):
            if y is None:
                self.model_.learn_one(x)
                return
            classes = None if self._fitted else self._first_classes(y)
            if classes is not None and _takes_classes(self.model_.learn_one):
                self.model_.learn_one(x, y, classes=classes)  # SVMDClassifier fixes its labels first
            else:
                self.model_.learn_one(x, y)
            return
        X = self._array(x)
        if y is None:
            self.model_.partial_fit(X)
            return
        classes = None if self._fitted else self._first_classes(y)
        if classes is not None:
            self.model_.partial_fit(X, [y], classes=classes)
        else:
            self.model_.partial_fit(X, [y])

    def _decision(self, x):
        if hasattr(self.model_, "score_one"):
            return self.model_.score_one(x)
        return self.model_.decision_function(self._array(x))[0]


class RiverClassifier(_Adapter, _river_base.Classifier):
    """A :mod:`learners` classifier as a river ``Classifier``.

    Parameters
    ----------
    estimator : classifier of :mod:`learners`, unfitted
        One that learns one row at a time (``learn_one`` or ``partial_fit``).
    classes : list, optional
        Every label. Without it the adapter follows river's conventions: a binary
        classifier's labels are ``False`` and ``True``, a multiclass one's those it has
        seen. Estimators that fix their labels on the first row (``SVMDClassifier``,
        the binary baselines, ``WeightedMajority``) need it unless the labels are
        ``False``/``True``.

    Attributes
    ----------
    model_ : estimator
        The clone being trained.

    Notes
    -----
    ``predict_proba_one`` holds every label known so far (``classes``, ``False`` and
    ``True`` for a binary classifier, the labels seen), those the estimator has not
    learnt yet at probability 0; before the first row it is uniform over them (``{}``
    when none is known), and ``predict_one`` its most probable label (None when none
    is known). Estimators without probabilities put 1 on their prediction.
    """

    def __init__(self, estimator, classes=None):
        super().__init__(estimator, classes)

    @classmethod
    def _unit_test_params(cls):
        from learners import OLKClassifier

        yield {"estimator": OLKClassifier()}
        yield {"estimator": OLKClassifier(), "classes": [False, True]}

    @property
    def _multiclass(self):
        """Whether this classifier learns more than two labels (river then runs its multiclass checks)."""
        many = getattr(self.estimator, "_handles_many_classes", None)
        if not (many() if many is not None else getattr(self.estimator, "_native_multiclass", False)):
            return False
        if self.classes is not None:
            return len(set(map(_plain, self.classes))) > 2
        # without classes, only estimators that take new labels row by row
        return _takes_new_labels(self.estimator)

    def _first_classes(self, y):
        if self.classes is not None:
            return list(self.classes)
        if self._multiclass or _takes_new_labels(self.estimator):
            return None
        if _is_bool(y):
            return [False, True]  # river's binary convention
        raise ValueError(f"{type(self.estimator).__name__} fixes its labels on the first row, and the label "
                         f"{_plain(y)!r} is not False/True: pass every label as to_river(..., classes=[...])")

    def _known_labels(self):
        seen = list(map(_plain, self.model_.classes_)) if self._fitted and hasattr(self.model_, "classes_") else []
        if self.classes is not None:
            labels = list(map(_plain, self.classes))
        elif self._multiclass or not all(map(_is_bool, seen)):
            labels = []
        else:
            labels = [False, True]  # river's binary convention, while the labels seen are booleans
        return labels + [c for c in seen if c not in labels]

    def learn_one(self, x, y):
        self._learn(x, y)

    def predict_one(self, x, **kwargs):
        if not self._fitted:
            labels = self._known_labels()
            return labels[0] if labels else None
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(x)
        return _plain(self.model_.predict(self._array(x))[0])

    def predict_proba_one(self, x, **kwargs):
        labels = self._known_labels()
        if not self._fitted:
            return {c: 1.0 / len(labels) for c in labels}
        if hasattr(self.model_, "predict_proba_one"):
            proba = self.model_.predict_proba_one(x)
        elif hasattr(self.model_, "predict_proba"):
            p = self.model_.predict_proba(self._array(x))[0]
            proba = {_plain(c): float(pk) for c, pk in zip(self.model_.classes_, p)}
        else:
            proba = {self.predict_one(x): 1.0}
        out = dict.fromkeys(labels, 0.0)
        out.update(proba)
        return out


def _check_one_row(estimator):
    """Refuse an estimator that cannot learn one row at a time (it has neither learn_one nor partial_fit)."""
    if not (hasattr(estimator, "learn_one") or hasattr(estimator, "partial_fit")):
        raise TypeError(f"{type(estimator).__name__} learns from a whole batch at once (fit) and has neither "
                        "learn_one nor partial_fit, so it cannot learn from river's stream one row at a "
                        "time; use an online estimator (e.g. KRLS or OLKRegressor instead of LSSVM)")


def _takes_classes(learn_one):
    return "classes" in inspect.signature(learn_one).parameters


def _takes_new_labels(estimator):
    """Whether the estimator's ``learn_one`` takes labels as they come (OLK, NORMA, the kernel rule)."""
    learn_one = getattr(estimator, "learn_one", None)
    return learn_one is not None and not _takes_classes(learn_one)


class RiverRegressor(_Adapter, _river_base.Regressor):
    """A :mod:`learners` regressor as a river ``Regressor`` (see :class:`RiverClassifier`); predicts 0
    before the first row."""

    def __init__(self, estimator):
        super().__init__(estimator)

    @classmethod
    def _unit_test_params(cls):
        from learners import OLKRegressor

        yield {"estimator": OLKRegressor()}

    def learn_one(self, x, y):
        self._learn(x, y)

    def predict_one(self, x, **kwargs):
        if not self._fitted:
            return 0.0
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(x)
        return float(self.model_.predict(self._array(x))[0])


class RiverAnomalyDetector(_Adapter, _river_base.AnomalyDetector):
    """A :mod:`learners` novelty detector as a river ``AnomalyDetector``; ``score_one`` = ``-decision``
    (0 before the first row)."""

    def __init__(self, estimator):
        super().__init__(estimator)

    @classmethod
    def _unit_test_params(cls):
        from learners import OLKOneClass

        yield {"estimator": OLKOneClass()}

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
    if is_classifier(estimator) or is_regressor(estimator) or is_outlier_detector(estimator):
        _check_one_row(estimator)
    if is_classifier(estimator):
        return RiverClassifier(estimator, classes=classes)
    if is_regressor(estimator):
        return RiverRegressor(estimator)
    if is_outlier_detector(estimator):
        return RiverAnomalyDetector(estimator)
    raise TypeError(f"to_river takes a classifier, regressor or novelty detector of learners, "
                    f"got {type(estimator).__name__}")
