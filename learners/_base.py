"""What the six online kernel estimators share: the bounded expansion and its bookkeeping.

Each estimator owns one bounded kernel expansion (:mod:`learners.expansion`)
``f(x) = sum_j alpha_j k(x_j, x) + b`` held as arrays, and hands every row of a
``partial_fit`` batch to one jitted loop of :mod:`learners._stream`, which calls
the rule's step function of :mod:`learners.steps` per row.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, ensure_all_finite=True,
                      **kwargs):
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **kwargs)

from learners import _stream
from learners._persist import PersistMixin
from learners._validation import check_bool, check_choice, check_int, check_real
from learners.kernels import EMPTY_LUT, KERNELS

#: Default ``budget``: the number of kernel terms kept (the most recent ones).
DEFAULT_BUDGET = 512

#: Capacity of an unbounded expansion (``budget=None``) before it first grows.
_INITIAL_CAPACITY = 64


class OnlineKernelEstimator(PersistMixin, BaseEstimator):
    """Base class: kernel parameters, the bounded expansion, the stream driver.

    Subclasses set ``_task`` and implement ``_check_rule_params`` (validated rule
    parameters as a dict), ``_init_state`` (fill the fresh ``state`` array),
    ``_run_stream`` (one jitted pass over validated rows) and
    ``_publish_state`` (copy scalar state into fitted attributes).
    """

    _supervised = True

    # ------------------------------------------------------------------ params
    def _check_kernel_params(self):
        check_choice("kernel", self.kernel, KERNELS)
        width = check_real("width", self.width, low=0.0, low_open=True)
        degree = float(check_int("degree", self.degree, low=1))
        coef0 = check_real("coef0", self.coef0, low=0.0)
        budget = check_int("budget", self.budget, low=1, allow_none=True)
        sv_threshold = check_real("sv_threshold", self.sv_threshold, low=0.0)
        n_passes = check_int("n_passes", self.n_passes, low=1)
        check_bool("shuffle", self.shuffle)
        return {
            "kind": KERNELS[self.kernel],
            "width": width,
            "degree": degree,
            "coef0": coef0,
            "budget": budget,
            "sv_threshold": sv_threshold,
            "n_passes": n_passes,
        }

    def _check_params(self):
        params = self._check_kernel_params()
        params.update(self._check_rule_params())
        return params

    def _check_rule_params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    # --------------------------------------------------------------- expansion
    def _reset(self):
        for name in ("_sv", "_coef", "_ring", "_state", "classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(self, name):
                delattr(self, name)

    def _allocate(self, n_features, params):
        capacity = params["budget"] if params["budget"] is not None else _INITIAL_CAPACITY
        self._sv = np.zeros((capacity, n_features), dtype=np.float64)
        self._coef = np.zeros(capacity, dtype=np.float64)
        self._ring = np.zeros(2, dtype=np.int64)
        self._state = _stream.new_state()
        self._init_state(params)

    def _ensure_capacity(self, n_new, params):
        """Unbounded expansions (``budget=None``) grow to hold ``n_new`` more terms."""
        if params["budget"] is not None:
            # a budget set after the first call: keep the expansion as allocated
            return
        capacity = self._coef.shape[0]
        count = int(self._ring[1])
        if count + n_new <= capacity:
            return
        new_capacity = max(count + n_new, 2 * capacity)
        order = self._order()
        sv = np.zeros((new_capacity, self._sv.shape[1]), dtype=np.float64)
        coef = np.zeros(new_capacity, dtype=np.float64)
        sv[:count] = self._sv[order]
        coef[:count] = self._coef[order]
        self._sv, self._coef = sv, coef
        self._ring[:] = (0, count)

    def _order(self):
        capacity = self._coef.shape[0]
        return (int(self._ring[0]) + np.arange(int(self._ring[1]))) % capacity

    # ------------------------------------------------------------------ public
    @property
    def support_vectors_(self):
        """ndarray of shape (n_support_, n_features_in_): the expansion's points, oldest first."""
        self._check_fitted_expansion()
        return self._sv[self._order()].copy()

    @property
    def dual_coef_(self):
        """ndarray of shape (n_support_,): the true coefficients ``alpha_j`` (global scale folded in)."""
        self._check_fitted_expansion()
        return self._state[_stream.SCALE] * self._coef[self._order()]

    @property
    def n_support_(self):
        """int: number of terms in the expansion (at most ``budget``)."""
        self._check_fitted_expansion()
        return int(self._ring[1])

    def _check_fitted_expansion(self):
        if not hasattr(self, "_state"):
            raise AttributeError(f"This {type(self).__name__} instance is not fitted yet; call fit or partial_fit")

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_state")

    # ------------------------------------------------------------------ driver
    def _validate_X(self, X, y, reset):
        if self._supervised:
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
            X, y = validate_data(self, X, y, reset=reset, dtype=np.float64, order="C",
                                 y_numeric=not self._is_classifier(), ensure_all_finite=True)
            return X, y
        X = validate_data(self, X, reset=reset, dtype=np.float64, order="C", ensure_all_finite=True)
        return X, None

    def _is_classifier(self):
        return False

    def _partial_fit(self, X, y, classes, params):
        first = not hasattr(self, "_state")
        X, y = self._validate_X(X, y, reset=first)
        if self._is_classifier():
            y = self._encode_labels(y, classes, first)
        if first:
            self._allocate(X.shape[1], params)
        self._learn(X, y, params)
        return self

    def _learn(self, X, y, params):
        self._ensure_capacity(X.shape[0], params)
        f_out = np.empty(X.shape[0], dtype=np.float64)
        self._run_stream(X, y, params, f_out)
        self._publish_state(params)
        return f_out

    def _fit(self, X, y, classes=None):
        params = self._check_params()
        self._reset()
        X, y = self._validate_X(X, y, reset=True)
        if self._is_classifier():
            y = self._encode_labels(y, classes, True)
        self._allocate(X.shape[1], params)
        rng = check_random_state(self.random_state) if self.shuffle else None
        for _ in range(params["n_passes"]):
            if rng is not None:
                order = rng.permutation(X.shape[0])
                Xp = np.ascontiguousarray(X[order])
                yp = None if y is None else np.ascontiguousarray(y[order])
            else:
                Xp, yp = X, y
            self._learn(Xp, yp, params)
        return self

    def _kernel_args(self, params):
        return params["kind"], params["width"], params["degree"], params["coef0"], EMPTY_LUT

    def _raw_decision(self, X):
        """``sum_j alpha_j k(x_j, x)`` for the rows of ``X`` (no offset)."""
        check_is_fitted(self)
        params = self._check_kernel_params()
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite=True)
        out = np.empty(X.shape[0], dtype=np.float64)
        kind, width, degree, coef0, lut = self._kernel_args(params)
        _stream.expansion_decision(X, self._sv, self._coef, self._ring, float(self._state[_stream.SCALE]), kind,
                                   width, degree, coef0, lut, out)
        return out


class BinaryDecisionMixin:
    """``predict`` from the sign of ``decision_function``, and the binary-only tag.

    Shared by the kernel estimators and the baselines (mix in before ClassifierMixin).
    """

    def predict(self, X):
        """Class labels: ``classes_[1]`` where ``decision_function(X) > 0``, else ``classes_[0]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        d = self.decision_function(X)
        return self.classes_[(d > 0).astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"binary_only": True}


class BinaryClassifierMixin(BinaryDecisionMixin):
    """Binary labels of any two values: ``classes_[0]`` maps to -1, ``classes_[1]`` to +1."""

    def _is_classifier(self):
        return True

    def fit(self, X, y):
        """Start afresh and learn from the rows of ``X`` in order (``n_passes`` times).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two distinct labels

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def partial_fit(self, X, y, classes=None):
        """Learn from the rows of ``X`` in order, continuing the stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two distinct labels
        classes : array-like of shape (2,), optional
            Both labels; needed on the first call when its batch holds one class.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes, self._check_params())

    def decision_function(self, X):
        """``f(x) = sum_j alpha_j k(x_j, x) + offset_``: positive for ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        f : ndarray of shape (n_samples,)
        """
        return self._raw_decision(X) + self.offset_

    def _encode_labels(self, y, classes, first):
        name = type(self).__name__
        check_classification_targets(y)
        if first:
            if classes is not None:
                cls = np.unique(np.asarray(classes))
                if cls.shape[0] != 2:
                    raise ValueError(f"{name} is a binary classifier: classes must hold exactly 2 labels, "
                                     f"got {cls.shape[0]} ({cls.tolist()})")
            else:
                cls = np.unique(y)
                if cls.shape[0] > 2:
                    raise ValueError(f"Only binary classification is supported. {name} got y with {cls.shape[0]} classes "
                                     f"({cls.tolist()[:10]}); wrap it in sklearn.multiclass.OneVsRestClassifier "
                                     "for more than two classes")
                if cls.shape[0] < 2:
                    raise ValueError(f"{name} needs samples of 2 classes, but y has only 1 class "
                                     f"({cls.tolist()}); pass classes=[label_a, label_b] to the first "
                                     "partial_fit call when a batch holds one class")
            self.classes_ = cls
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes={list(classes)} differs from the classes {self.classes_.tolist()} "
                             "of the first partial_fit call")
        unseen = ~np.isin(y, self.classes_)
        if unseen.any():
            raise ValueError(f"y contains labels {np.unique(y[unseen]).tolist()[:10]} that are not among the "
                             f"classes {self.classes_.tolist()} of this binary {name}")
        return np.where(y == self.classes_[1], 1.0, -1.0)


class RegressionMixin:
    """Real-valued targets: ``predict(X) = f(x) + offset_``."""

    def fit(self, X, y):
        """Start afresh and learn from the rows of ``X`` in order (``n_passes`` times).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def partial_fit(self, X, y):
        """Learn from the rows of ``X`` in order, continuing the stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, None, self._check_params())

    def predict(self, X):
        """``f(x) = sum_j alpha_j k(x_j, x) + offset_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._raw_decision(X) + self.offset_


class OneClassMixin:
    """Novelty detection: ``decision_function = score_samples - offset_``, positive = normal."""

    _supervised = False

    def fit(self, X, y=None):
        """Start afresh and learn from the rows of ``X`` in order (``n_passes`` times).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        return self._fit(X, None)

    def partial_fit(self, X, y=None, classes=None):
        """Learn from the rows of ``X`` in order, continuing the stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        classes : ignored

        Returns
        -------
        self
        """
        return self._partial_fit(X, None, None, self._check_params())

    def score_samples(self, X):
        """Raw score ``f(x)``: higher is more normal.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return self._raw_decision(X)

    def decision_function(self, X):
        """Signed margin ``score_samples(X) - offset_``: positive = normal, negative = novelty.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        margin : ndarray of shape (n_samples,)
        """
        return self.score_samples(X) - self.offset_

    def predict(self, X):
        """+1 for normal points (``decision_function >= 0``), -1 for novelties.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        labels : ndarray of shape (n_samples,), int
        """
        d = self.decision_function(X)
        return np.where(d >= 0, 1, -1)
