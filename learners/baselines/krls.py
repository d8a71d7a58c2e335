"""Kernel recursive least squares (Engel, Mannor & Meir, IEEE TSP 2004).

Online least-squares regression ``f(x) = sum_j alpha_j k(d_j, x)`` over a
dictionary ``D = {d_j}`` grown by the approximate-linear-dependence (ALD) test:
a new input ``x_t`` with ``a_t = K_D^{-1} k_D(x_t)`` and
``delta_t = k(x_t, x_t) - k_D(x_t)^T a_t`` joins ``D`` only if ``delta_t > nu``.
Otherwise the sample still updates the weights through the recursive
least-squares gain with the projection matrix ``P``. Exact recursions of the
paper's Table 1:

- dictionary grows:  ``K^{-1} <- [[delta K^{-1} + a a^T, -a], [-a^T, 1]] / delta``,
  ``P <- diag(P, 1)``, ``alpha <- [alpha - a e / delta, e / delta]``;
- ALD holds:  ``q = P a / (1 + a^T P a)``, ``P <- P - q a^T P``,
  ``alpha <- alpha + K^{-1} q e``;

with the a-priori error ``e = y_t - k_D(x_t)^T alpha``. A smaller ``nu`` keeps a
larger dictionary (``nu = 0`` keeps every linearly independent input); the
dictionary's elements satisfy ``delta > nu`` against their predecessors, so it
stays finite on a compact input set.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin

from learners._docs import GROWING_EXPANSION, filled
from learners._validation import check_real, store_params
from learners.baselines._common import OnlineRegressionBaseline, grow_gram_inverse


@filled(growing_expansion=GROWING_EXPANSION)
class KRLS(RegressorMixin, OnlineRegressionBaseline):
    """Kernel recursive least squares with the ALD sparsification.

    Parameters
    ----------
    nu : float, default=0.001
        ALD threshold (>= 0); the OLK paper's Example 2 uses 0.001.
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_dictionary, n_features)
        The dictionary ``D``, in order of admission.
    dual_coef_ : ndarray of shape (n_dictionary,)
        The weights ``alpha``.
    n_support_ : int
        Dictionary size.
    gram_inv_ : ndarray of shape (n_dictionary, n_dictionary)
        ``K_D^{-1}``.
    projection_ : ndarray of shape (n_dictionary, n_dictionary)
        The matrix ``P`` of the recursion.
    dictionary_sizes_ : list of int
        Dictionary size after each processed sample.
    n_features_in_ : int
    {growing_expansion}
    """

    _state = OnlineRegressionBaseline._state + ("gram_inv_", "projection_", "dictionary_sizes_")

    def __init__(self, *, nu=0.001, kernel="gaussian", width="scale", degree=3.0, coef0=1.0):
        store_params(self, locals())

    def _validate_params(self):
        check_real("nu", self.nu, low=0.0)

    def partial_fit(self, X, y):
        """One online pass over ``(X, y)`` in order."""
        X, y, first = self._begin(X, y, classifier=False)
        if first:
            self.gram_inv_ = np.zeros((0, 0))
            self.projection_ = np.zeros((0, 0))
            self.dictionary_sizes_ = []
        ex = self.expansion_
        for x, yt in zip(X, y):
            self.n_seen_ += 1
            kv = ex.kernel_vector(x)
            kxx = ex.k_self(x)
            m = ex.n
            alpha = ex.coef[:m]
            a = self.gram_inv_ @ kv
            delta = kxx - kv @ a
            err = yt - kv @ alpha
            if m == 0 or delta > self.nu:
                if delta <= 0.0:  # only for a degenerate first input, k(x, x) = 0
                    self.dictionary_sizes_.append(m)
                    continue
                self.gram_inv_ = grow_gram_inverse(self.gram_inv_, a, delta)
                P = np.zeros((m + 1, m + 1))
                P[:m, :m] = self.projection_
                P[m, m] = 1.0
                self.projection_ = P
                alpha -= a * (err / delta)
                ex.append(x, err / delta)
            else:
                Pa = self.projection_ @ a
                q = Pa / (1.0 + a @ Pa)
                self.projection_ = self.projection_ - np.outer(q, Pa)
                alpha += (self.gram_inv_ @ q) * err
            self.dictionary_sizes_.append(ex.n)
        return self
