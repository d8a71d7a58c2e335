"""Shared machinery of the baseline estimators: validation, kernels, a growing expansion.

The baselines are plain numpy: their loops are short and dominated by one kernel
vector per step, for which numpy's vectorised single-threaded arithmetic is
faster than a call into the parallel :func:`learners.kernels.gram` (whose thread
start-up dominates a 1 x m matrix, badly so on a loaded machine). :func:`kernel_matrix`
computes the same kernels with the same conventions as :mod:`learners.kernels` (the
tests check they agree), so the Gaussian width follows the OLK paper,
``k(x, y) = exp(-||x - y||^2 / width^2)``.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, ensure_all_finite=True, **kw):
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **kw)

from learners.kernels import KERNELS


def kernel_matrix(X, Y, kernel="gaussian", width=1.0, degree=3.0, coef0=1.0):
    """``K[i, j] = k(X[i], Y[j])``, shape ``(len(X), len(Y))``, as :func:`learners.kernels.gram`.

    Kernels: ``gaussian`` ``exp(-||x-y||^2 / width^2)``, ``laplacian``
    ``exp(-||x-y|| / width)``, ``polynomial`` ``(<x, y> + coef0)^degree``,
    ``linear`` ``<x, y>``.
    """
    if kernel == "linear":
        return X @ Y.T
    if kernel == "polynomial":
        return (X @ Y.T + coef0) ** degree
    if X.shape[0] == 1 or Y.shape[0] == 1:
        d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=2)
    else:
        d2 = np.sum(X * X, axis=1)[:, None] + np.sum(Y * Y, axis=1)[None, :] - 2.0 * (X @ Y.T)
        np.maximum(d2, 0.0, out=d2)
    if kernel == "gaussian":
        return np.exp(-d2 / (width * width))
    if kernel == "laplacian":
        return np.exp(-np.sqrt(d2) / width)
    if kernel == "cauchy":
        return 1.0 / (1.0 + (d2 / (width * width)) ** (0.5 * (X.shape[1] + 1)))
    if kernel == "epanechnikov":
        return np.maximum(1.0 - d2 / (width * width), 0.0)
    raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")


def check_positive(name, value, *, allow_zero=False, allow_none=False):
    """Raise a ValueError unless ``value`` is a real number > 0 (or >= 0)."""
    if value is None and allow_none:
        return
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = value >= 0 if allow_zero else value > 0
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")


def check_kernel(kernel, width, degree, coef0):
    """Validate the kernel parameters shared by every kernel baseline."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
    check_positive("width", width)
    check_positive("degree", degree)
    if not (isinstance(coef0, numbers.Real) and np.isfinite(coef0)):
        raise ValueError(f"coef0 must be a finite number, got {coef0!r}")


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


class BinaryLabels:
    """Map two class labels to -1/+1 (``classes[1]`` is +1), sklearn style."""

    @staticmethod
    def init_classes(y, classes):
        if classes is not None:
            classes = np.unique(np.asarray(classes))
        else:
            seen = np.unique(y)
            if np.all(np.isin(seen, (-1, 1))):
                classes = np.array([-1, 1], dtype=seen.dtype)
            elif seen.size == 2:
                classes = seen
            elif seen.size > 2:
                raise ValueError(
                    f"Only binary classification is supported. The type of the target is {type_of_target(y)} "
                    f"({seen.size} classes); wrap the estimator in sklearn.multiclass.OneVsRestClassifier"
                )
            else:
                raise ValueError(
                    f"y holds one class only ({seen.tolist()}); pass classes=[neg, pos] to the first "
                    "partial_fit call when a batch holds one class"
                )
        if classes.size != 2:
            raise ValueError(f"this estimator is binary: classes must hold exactly 2 labels, got {classes.tolist()}")
        return classes

    @staticmethod
    def to_signed(y, classes):
        unknown = ~np.isin(y, classes)
        if np.any(unknown):
            raise ValueError(f"y contains labels {np.unique(y[unknown]).tolist()} not in classes {classes.tolist()}")
        return np.where(y == classes[1], 1.0, -1.0)


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
        """Kernel matrix between rows of ``X`` and ``Y``."""
        return kernel_matrix(X, Y, self.kernel, self.width, self.degree, self.coef0)

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

    _state = ("expansion_", "n_features_in_", "n_seen_", "classes_", "n_mistakes_")

    def _reset(self):
        for name in self._state:
            self.__dict__.pop(name, None)

    def _start(self, X):
        check_kernel(self.kernel, self.width, self.degree, self.coef0)
        self._validate_params()
        self.n_features_in_ = X.shape[1]
        self.n_seen_ = 0
        self.expansion_ = GrowingExpansion(X.shape[1], self.kernel, self.width, self.degree, self.coef0)

    def _validate_params(self):
        pass

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
