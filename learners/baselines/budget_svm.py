"""The budget online SVM of the lecture notes (seed ``002_…``, "Budget online SVM").

``y(x) = sum_{m in S} a_m t_m k(x, x_m) + b`` with ``b = 0`` and ``a_m = 1``.
For each example ``(x_i, t_i)``:

1. if ``t_i y(x_i) <= beta`` (a mistake, or a margin smaller than ``beta``), add
   ``i`` to ``S`` with ``a_i = 1``;
2. if then ``|S| > M``, remove ``argmax_{m in S} t_m (y(x_m) - a_m t_m k(x_m, x_m))``:
   the support vector that the rest of the expansion classifies with the largest
   margin, i.e. the one the classifier misses least when it is dropped.

With ``beta = 0`` and no budget it is the kernel perceptron (the notes' "Online SVM").
The expansion never holds more than ``M`` terms.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin

from learners._base import DEFAULT_BUDGET, BinaryDecisionMixin
from learners._docs import GROWING_EXPANSION, filled
from learners._validation import check_int, check_real, store_params
from learners.baselines._common import OnlineBinaryBaseline


@filled(growing_expansion=GROWING_EXPANSION)
class BudgetOnlineSVM(BinaryDecisionMixin, ClassifierMixin, OnlineBinaryBaseline):
    """Online kernel classifier with a margin ``beta`` and at most ``budget`` support vectors.

    Parameters
    ----------
    beta : float, default=1.0
        Add the example when ``t y(x) <= beta`` (``beta >= 0``): the margin that makes it
        an SVM rather than a perceptron (``beta = 0``).
    budget : int or None, default=512
        ``M``, the largest number of support vectors kept (>= 1), as the other
        estimators' ``budget``; None: unbounded.
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_support, n_features)
        The set ``S``, oldest first.
    dual_coef_ : ndarray of shape (n_support,)
        ``a_m t_m`` (that is ``t_m`` in {-1, +1}).
    n_support_ : int
        ``|S|`` (never more than ``budget``).
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is ``t = +1``.
    n_features_in_ : int
    n_mistakes_ : int
        Online mistakes (``t y(x) <= 0`` before the update).
    n_removed_ : int
        Support vectors removed to keep the budget.
    margins_ : ndarray of shape (n_support,)
        The current output ``y(x_m)`` at each support vector (for the removal rule).
    {growing_expansion}
    """

    _state = OnlineBinaryBaseline._state + ("margins_", "n_removed_")

    def __init__(self, *, beta=1.0, budget=DEFAULT_BUDGET, kernel="gaussian", width="scale", degree=3.0, coef0=1.0):
        store_params(self, locals())

    def _validate_params(self):
        check_real("beta", self.beta, low=0.0)
        check_int("budget", self.budget, low=1, allow_none=True)

    def partial_fit(self, X, y, classes=None):
        """One online pass over ``(X, y)`` in order."""
        X, ts, first = self._begin(X, y, classes, classifier=True)
        if first:
            self.n_removed_ = 0
            # margins_[m] = y(x_m): the current output at each support vector
            self.margins_ = np.empty(0)
        ex = self.expansion_
        for x, t in zip(X, ts):
            self.n_seen_ += 1
            kv = ex.kernel_vector(x)
            out = kv @ ex.coef[: ex.n]
            if t * out <= 0.0:
                self.n_mistakes_ += 1
            if t * out > self.beta:
                continue
            kxx = ex.k_self(x)
            self.margins_ = np.append(self.margins_ + t * kv, out + t * kxx)
            ex.append(x, t)
            if self.budget is not None and ex.n > self.budget:
                coef = ex.coef[: ex.n]
                self_k = np.array([ex.k_self(s) for s in ex.sv[: ex.n]]) if not self._normalised else 1.0
                loo = coef * (self.margins_ - coef * self_k)
                j = int(np.argmax(loo))
                kj = ex.kernel_vector(ex.sv[j])
                self.margins_ = np.delete(self.margins_ - coef[j] * kj, j)
                ex.remove(j)
                self.n_removed_ += 1
        return self

    @property
    def _normalised(self):
        return self.kernel in ("gaussian", "laplacian")
