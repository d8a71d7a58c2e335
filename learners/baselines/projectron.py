"""The Projectron (Orabona, Keshet & Caputo, ICML 2008 / JMLR 2009).

A kernel perceptron that does not always grow. On a mistake (``y f(x) <= 0``) it
projects ``k(x, .)`` onto the span of the current support set ``S``:
``d = K_S^{-1} k_S(x)`` and the distance ``delta = sqrt(k(x, x) - k_S(x)^T d)``.
If ``delta <= eta`` the update ``y k(x, .)`` is replaced by its projection: the
old coefficients change by ``y d`` and ``S`` stays as it is; otherwise ``x`` joins
``S`` with coefficient ``y`` and ``K_S^{-1}`` grows by the block-inverse formula.
The support set is therefore linearly independent in feature space, so its size is
bounded for a kernel with a finite-dimensional span on a bounded input set (the
paper's bound grows as ``eta`` falls). ``eta = 0`` gives the kernel perceptron up to
round-off. The OLK paper's Table I uses ``width = 1.2`` and ``eta = 0.02``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin

from learners._base import BinaryDecisionMixin
from learners._validation import check_real, store_params
from learners.baselines._common import OnlineBinaryBaseline, grow_gram_inverse


class Projectron(BinaryDecisionMixin, ClassifierMixin, OnlineBinaryBaseline):
    """Bounded kernel perceptron by projection.

    Parameters
    ----------
    eta : float, default=0.5
        Projection threshold (>= 0) on the distance ``delta`` of ``k(x, .)`` from
        the span of the support set (``delta`` lies in [0, 1] for the Gaussian kernel).
        0.5 keeps the support set small at the kernel perceptron's accuracy (measured
        on Phishing, Bananas and breast cancer, ``width="scale"``: 81, 20 and 29 support
        vectors against the perceptron's 168, 819 and 46, accuracy within 0.5 point).
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_support, n_features)
    dual_coef_ : ndarray of shape (n_support,)
    n_support_ : int
    gram_inv_ : ndarray of shape (n_support, n_support)
        ``K_S^{-1}``, the inverse kernel matrix of the support set.
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    n_seen_ : int
        Samples processed so far.
    n_mistakes_ : int
        Online mistakes (``y f(x) <= 0`` before the update).
    n_projections_ : int
        Mistakes handled by projection (no new support vector).
    expansion_ : GrowingExpansion
        The kernel expansion itself (points, coefficients, kernel); the attributes above read it.
    width_ : float
        Kernel width in force (``width``, or the one ``"scale"`` chose).
    """

    _state = OnlineBinaryBaseline._state + ("gram_inv_", "n_projections_")

    def __init__(self, *, eta=0.5, kernel="gaussian", width="scale", degree=3.0, coef0=1.0):
        store_params(self, locals())

    def _validate_params(self):
        check_real("eta", self.eta, low=0.0)

    def partial_fit(self, X, y, classes=None):
        """One online pass over ``(X, y)`` in order."""
        X, ys, first = self._begin(X, y, classes, classifier=True)
        if first:
            self.n_projections_ = 0
            self.gram_inv_ = np.zeros((0, 0))
        ex = self.expansion_
        for x, yt in zip(X, ys):
            self.n_seen_ += 1
            kv = ex.kernel_vector(x)
            if yt * (kv @ ex.coef[: ex.n]) > 0.0:
                continue
            self.n_mistakes_ += 1
            kxx = ex.k_self(x)
            d = self.gram_inv_ @ kv
            delta2 = max(kxx - kv @ d, 0.0)
            if ex.n > 0 and np.sqrt(delta2) <= self.eta:
                ex.coef[: ex.n] += yt * d
                self.n_projections_ += 1
                continue
            if delta2 <= 1e-12 * max(kxx, 1e-300):
                # numerically inside the span (only reachable with eta = 0): the
                # block inverse would blow up, so project even so.
                if ex.n > 0:
                    ex.coef[: ex.n] += yt * d
                    self.n_projections_ += 1
                continue
            self.gram_inv_ = grow_gram_inverse(self.gram_inv_, d, delta2)
            ex.append(x, yt)
        return self
