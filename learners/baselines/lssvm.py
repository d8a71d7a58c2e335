"""Least-squares SVM regression (Suykens & Vandewalle 1999), closed form.

Minimises ``1/2 ||w||^2 + C/2 sum_i e_i^2`` subject to ``y_i = w.phi(x_i) + b + e_i``.
The optimality conditions are one linear system of size ``n + 1``::

    [ 0      1^T         ] [ b     ]   [ 0 ]
    [ 1      K + I / C   ] [ alpha ] = [ y ]

so ``f(x) = sum_i alpha_i k(x_i, x) + b``. Every training point is a support
vector; the solve costs ``O(n^3)``, meant for small ``n`` (a few thousand). The OLK
paper's Example 2 uses ``width = 0.5`` and ``C = 10``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from learners._validation import check_real, store_params
from learners.baselines._common import check_kernel, check_X, check_Xy, resolve_width
from learners.kernels import gram


class LSSVM(RegressorMixin, BaseEstimator):
    """Least-squares support vector regression, solved in closed form.

    Parameters
    ----------
    C : float, default=10.0
        Weight of the squared errors (> 0); larger fits the data more closely.
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_samples, n_features)
        The training inputs (all of them).
    dual_coef_ : ndarray of shape (n_samples,)
        ``alpha``.
    intercept_ : float
        ``b``.
    n_support_ : int
        Number of training samples.
    n_features_in_ : int
    width_ : float
        Kernel width in force.
    """

    def __init__(self, *, C=10.0, kernel="gaussian", width="scale", degree=3.0, coef0=1.0):
        store_params(self, locals())

    def _gram(self, X, Y):
        return gram(X, Y, self.kernel, self.width_, self.degree, self.coef0)

    def fit(self, X, y):
        """Solve the LS-SVM system on ``(X, y)``."""
        check_kernel(self.kernel, self.width, self.degree, self.coef0)
        check_real("C", self.C, low=0.0, low_open=True)
        X, y = check_Xy(self, X, y, reset=True, classifier=False)
        self.width_ = resolve_width(self.width, X)
        n = X.shape[0]
        A = np.empty((n + 1, n + 1))
        A[0, 0] = 0.0
        A[0, 1:] = 1.0
        A[1:, 0] = 1.0
        A[1:, 1:] = self._gram(X, X)
        A[1:, 1:][np.diag_indices(n)] += 1.0 / self.C
        rhs = np.concatenate(([0.0], y))
        sol = scipy.linalg.solve(A, rhs, assume_a="sym")
        self.intercept_ = float(sol[0])
        self.dual_coef_ = sol[1:]
        self.support_vectors_ = X
        self.n_support_ = n
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """``f(x)``, shape ``(n_samples,)``."""
        check_is_fitted(self, "dual_coef_")
        X = check_X(self, X, reset=False)
        return self._gram(X, self.support_vectors_) @ self.dual_coef_ + self.intercept_
