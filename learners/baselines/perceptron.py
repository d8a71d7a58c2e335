"""The linear perceptron (Rosenblatt 1958), online, with an optional decaying step.

On a mistake (``y (w.x + b) <= 0``) it adds ``eta_t y x`` to ``w`` and ``eta_t y``
to ``b``; otherwise it does nothing. On linearly separable data with margin
``gamma`` and radius ``R = max ||(x, 1)||`` it makes at most ``(R / gamma)^2``
mistakes with a constant step (Novikoff 1962).

The OLK paper's Table I uses ``eta_t = exp(-t / 50)`` (``decay=50``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from learners._base import BinaryDecisionMixin
from learners._validation import check_real, store_params
from learners.baselines._common import BinaryLabels, check_X, check_Xy


class Perceptron(BinaryDecisionMixin, ClassifierMixin, BaseEstimator):
    """Online linear perceptron with a bias.

    Parameters
    ----------
    eta0 : float, default=1.0
        Initial step size (> 0).
    decay : float or None, default=None
        If given, the step of the ``t``-th sample (``t = 1, 2, ...``) is
        ``eta0 * exp(-t / decay)``; if None, the step stays ``eta0``.
    fit_intercept : bool, default=True
        Learn the bias ``b``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The weight vector ``w``.
    intercept_ : float
        The bias ``b``.
    classes_ : ndarray of shape (2,)
        The class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Number of input features.
    n_seen_ : int
        Samples processed so far.
    n_mistakes_ : int
        Online mistakes made so far (``y f(x) <= 0`` before the update).
    """

    def __init__(self, *, eta0=1.0, decay=None, fit_intercept=True):
        store_params(self, locals())

    def _validate_params(self):
        check_real("eta0", self.eta0, low=0.0, low_open=True)
        check_real("decay", self.decay, low=0.0, low_open=True, allow_none=True)

    def partial_fit(self, X, y, classes=None):
        """One pass over ``(X, y)`` in order, one update per sample."""
        first = not hasattr(self, "coef_")
        X, y = check_Xy(self, X, y, reset=first, classifier=True)
        if first:
            self._validate_params()
            self.classes_ = BinaryLabels.init_classes(y, classes, type(self).__name__)
            self.n_features_in_ = X.shape[1]
            self.coef_ = np.zeros(X.shape[1])
            self.intercept_ = 0.0
            self.n_seen_ = 0
            self.n_mistakes_ = 0
        ys = BinaryLabels.to_signed(y, self.classes_)
        w, b = self.coef_, self.intercept_
        for x, yt in zip(X, ys):
            self.n_seen_ += 1
            if yt * (x @ w + b) <= 0.0:
                self.n_mistakes_ += 1
                eta = self.eta0 if self.decay is None else self.eta0 * np.exp(-self.n_seen_ / self.decay)
                w += eta * yt * x
                if self.fit_intercept:
                    b += eta * yt
        self.intercept_ = float(b)
        return self

    def fit(self, X, y, classes=None):
        """Start afresh and make one online pass over ``(X, y)``."""
        for name in ("coef_", "intercept_", "classes_", "n_features_in_", "n_seen_", "n_mistakes_"):
            self.__dict__.pop(name, None)
        return self.partial_fit(X, y, classes=classes)

    def decision_function(self, X):
        """``w.x + b`` per sample, shape ``(n_samples,)``; positive means ``classes_[1]``."""
        check_is_fitted(self, "coef_")
        X = check_X(self, X, reset=False)
        return X @ self.coef_ + self.intercept_
