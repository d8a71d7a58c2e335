"""Shared machinery of the baseline estimators: validation, labels, a growing expansion.

The baselines are plain numpy around the kernels of :mod:`learners.kernels`
(:func:`~learners.kernels.gram`, which runs serially for the one kernel vector per
step), with the parameter checks of :mod:`learners._validation` and the label
handling of :mod:`learners._base`, so they share conventions and messages with the
main estimators: ``k(x, y) = exp(-||x - y||^2 / width^2)``, ``width="scale"``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, ensure_all_finite=True, **kw):
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **kw)

from learners._base import binary_classes, check_known_labels, scale_width
from learners._validation import check_choice, check_real, check_width
from learners.kernels import KERNELS, gram


class BinaryLabels:
    """Two class labels mapped to -1/+1 (``classes_[1]`` is +1), as the main estimators map them."""

    @staticmethod
    def init_classes(y, classes, name="this estimator"):
        """The sorted pair from ``classes`` or from the first batch ``y`` (one class there needs ``classes``)."""
        return binary_classes(y, classes, name)

    @staticmethod
    def to_signed(y, classes, name="binary classifier"):
        check_known_labels(y, classes, name)
        return np.where(y == classes[1], 1.0, -1.0)


def check_kernel(kernel, width, degree, coef0):
    """Validate the kernel parameters shared by every kernel baseline (as the main estimators do)."""
    check_choice("kernel", kernel, KERNELS)
    check_width("width", width)
    check_real("degree", degree, low=0.0, low_open=True)
    check_real("coef0", coef0)


def resolve_width(width, X):
    """The width in force: ``width``, or from ``X`` when it is ``"scale"`` (see :func:`learners._base.scale_width`)."""
    return scale_width(X) if isinstance(width, str) else float(width)


def check_X(est, X, reset):
    """``X`` as a C-contiguous float64 2-D array with finite values (scikit-learn's checks).

    ``reset=True`` (first call) records ``n_features_in_``; later calls check it.
    """
    return validate_data(est, X, reset=reset, dtype=np.float64, order="C", ensure_all_finite=True)


def check_Xy(est, X, y, reset, *, classifier):
    """``X`` as in :func:`check_X` and ``y`` as a 1-D array (float64 unless ``classifier``)."""
    X, y = validate_data(
        est, X, y, reset=reset, dtype=np.float64, order="C", ensure_all_finite=True, y_numeric=not classifier
    )
    if classifier:
        check_classification_targets(y)
    return X, y


def grow_gram_inverse(gram_inv, a, delta):
    """The inverse Gram matrix of a dictionary after adding one point, by the block inverse.

    ``gram_inv`` is ``K^-1`` (m, m); the new point ``x`` has ``a = K^-1 k(x)`` and
    ``delta = k(x, x) - k(x) . a > 0`` (its squared distance to the span). Returns the
    (m + 1, m + 1) inverse (Engel et al.'s KRLS, Orabona et al.'s Projectron).
    """
    m = gram_inv.shape[0]
    inv = np.empty((m + 1, m + 1))
    inv[:m, :m] = gram_inv + np.outer(a, a) / delta
    inv[:m, m] = -a / delta
    inv[m, :m] = -a / delta
    inv[m, m] = 1.0 / delta
    return inv


class GrowingExpansion:
    """``f(x) = sum_j coef[j] k(sv[j], x)`` over a list that grows by doubling.

    Parameters
    ----------
    n_features : int
    kernel, width, degree, coef0 : kernel parameters (see :mod:`learners.kernels`).
    """

    def __init__(self, n_features, kernel, width, degree, coef0):
        self.kernel = kernel
        self.width = float(width)
        self.degree = float(degree)
        self.coef0 = float(coef0)
        self.sv = np.empty((16, n_features))
        self.coef = np.empty(16)
        self.n = 0

    def __len__(self):
        return self.n

    def k(self, X, Y):
        """Kernel matrix between rows of ``X`` and ``Y`` (:func:`learners.kernels.gram`)."""
        return gram(X, Y, self.kernel, self.width, self.degree, self.coef0)

    def k_self(self, x):
        """``k(x, x)`` for one sample."""
        return float(self.k(x[None, :], x[None, :])[0, 0])

    def kernel_vector(self, x):
        """``[k(sv[j], x) for j]`` for one sample ``x`` (shape ``(n,)``)."""
        if self.n == 0:
            return np.zeros(0)
        return self.k(self.sv[: self.n], x[None, :])[:, 0]

    def append(self, x, c):
        if self.n == self.sv.shape[0]:
            cap = 2 * self.sv.shape[0]
            sv = np.empty((cap, self.sv.shape[1]))
            sv[: self.n] = self.sv[: self.n]
            coef = np.empty(cap)
            coef[: self.n] = self.coef[: self.n]
            self.sv, self.coef = sv, coef
        self.sv[self.n] = x
        self.coef[self.n] = c
        self.n += 1

    def remove(self, j):
        """Delete term ``j`` (the order of the others is kept)."""
        self.sv[j : self.n - 1] = self.sv[j + 1 : self.n]
        self.coef[j : self.n - 1] = self.coef[j + 1 : self.n]
        self.n -= 1

    def evaluate(self, X, batch=2048):
        """``f`` at every row of ``X``."""
        out = np.zeros(X.shape[0])
        if self.n == 0:
            return out
        sv, coef = self.sv[: self.n], self.coef[: self.n]
        for s in range(0, X.shape[0], batch):
            out[s : s + batch] = self.k(X[s : s + batch], sv) @ coef
        return out

    @property
    def support_vectors(self):
        return self.sv[: self.n].copy()

    @property
    def dual_coef(self):
        return self.coef[: self.n].copy()


class KernelExpansionEstimator(BaseEstimator):
    """Fitted-state plumbing shared by the online kernel baselines."""

    _state = ("expansion_", "n_features_in_", "n_seen_", "classes_", "n_mistakes_", "width_")

    def _reset(self):
        for name in self._state:
            self.__dict__.pop(name, None)

    def _start(self, X):
        check_kernel(self.kernel, self.width, self.degree, self.coef0)
        self._validate_params()
        self.n_features_in_ = X.shape[1]
        self.n_seen_ = 0
        self.width_ = resolve_width(self.width, X)
        self.expansion_ = GrowingExpansion(X.shape[1], self.kernel, self.width_, self.degree, self.coef0)

    def _validate_params(self):
        pass

    def _begin(self, X, y, classes=None, *, classifier):
        """Check a batch; the first one starts the model (and, for a classifier, its classes).

        Returns ``(X, targets, first)``: targets as -1/+1 for a classifier.
        """
        first = not hasattr(self, "expansion_")
        X, y = check_Xy(self, X, y, reset=first, classifier=classifier)
        if first:
            self._start(X)
            if classifier:
                self.classes_ = BinaryLabels.init_classes(y, classes, type(self).__name__)
                self.n_mistakes_ = 0
        if classifier:
            y = BinaryLabels.to_signed(y, self.classes_)
        return X, y, first

    def _raw_decision(self, X):
        check_is_fitted(self, "expansion_")
        return self.expansion_.evaluate(check_X(self, X, reset=False))

    @property
    def support_vectors_(self):
        """ndarray of shape (n_support, n_features): the stored inputs."""
        check_is_fitted(self, "expansion_")
        return self.expansion_.support_vectors

    @property
    def dual_coef_(self):
        """ndarray of shape (n_support,): their coefficients."""
        check_is_fitted(self, "expansion_")
        return self.expansion_.dual_coef

    @property
    def n_support_(self):
        """int: number of stored terms."""
        check_is_fitted(self, "expansion_")
        return len(self.expansion_)


class OnlineBinaryBaseline(KernelExpansionEstimator):
    """``fit`` (start afresh, one pass) and ``decision_function`` of the online kernel classifiers."""

    def fit(self, X, y, classes=None):
        """Start afresh and make one online pass over ``(X, y)``."""
        self._reset()
        return self.partial_fit(X, y, classes=classes)

    def decision_function(self, X):
        """``f(x)``, shape ``(n_samples,)``; positive means ``classes_[1]``."""
        return self._raw_decision(X)


class OnlineRegressionBaseline(KernelExpansionEstimator):
    """``fit`` (start afresh, one pass) and ``predict`` of the online kernel regressors."""

    def fit(self, X, y):
        """Start afresh and make one online pass over ``(X, y)``."""
        self._reset()
        return self.partial_fit(X, y)

    def predict(self, X):
        """``f(x)``, shape ``(n_samples,)``."""
        return self._raw_decision(X)
