"""The kernel rule (lecture seed 002): classify by a kernel-weighted vote of labelled samples.

``g(x) = sum_{t_n = 1} k((x - x_n) / h) - sum_{t_n = 0} k((x - x_n) / h)``: predict
class 1 where ``g(x) > 0``. Online with a budget: the most recent ``budget``
samples vote (a ring buffer, :mod:`learners.expansion`), each with coefficient
+1 or -1 and no decay. Kernels (``h`` = ``width``): Gaussian ``exp(-||u||^2)``,
Cauchy ``1 / (1 + ||u||^(D+1))``, Epanechnikov ``max(0, 1 - ||u||^2)``, or any
other of :mod:`learners.kernels`.
"""

from __future__ import annotations

from numba import njit
from sklearn.base import ClassifierMixin

from learners import _stream
from learners._base import BinaryClassifierMixin, OnlineKernelEstimator
from learners._validation import store_params
from learners.expansion import expansion_push, expansion_sum

__all__ = ["KernelRuleClassifier"]


@njit(cache=True)
def kernel_rule_fit_stream(X, y, sv, coef, ring, state, kind, width, degree, coef0, lut, f_out):
    """Push every row with coefficient ``y`` (+1/-1); ``f_out[i]`` = ``g(X[i])`` before it joins."""
    for i in range(X.shape[0]):
        total, _ = expansion_sum(X[i], sv, coef, ring, kind, width, degree, coef0, lut)
        f_out[i] = total
        expansion_push(X[i], y[i], sv, coef, ring)
        state[_stream.STEPS] += 1.0


class KernelRuleClassifier(BinaryClassifierMixin, ClassifierMixin, OnlineKernelEstimator):
    """The kernel rule: a kernel-weighted vote of the last ``budget`` labelled samples, binary.

    Parameters
    ----------
    kernel : {"gaussian", "cauchy", "epanechnikov", "laplacian", ...}, default="gaussian"
        Smoothing kernel (:data:`learners.kernels.KERNELS`).
    width : float > 0, default=1.0
        Bandwidth ``h``: small widths follow the samples (under-smoothing), large
        ones the class proportions (over-smoothing).
    budget : int >= 1 or None, default=None
        Samples kept (the most recent); None keeps all.
    degree, coef0 : float
        Only for the polynomial kernel.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` wins where the vote is positive.
    offset_ : float
        Always 0.
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
        The voting samples, oldest first.
    dual_coef_ : ndarray of shape (n_support_,)
        Their votes, +1 (``classes_[1]``) or -1.
    n_support_ : int
    n_steps_ : int
        Samples seen.
    n_features_in_ : int
    width_ : float
        Kernel width in force (``width``, or the one ``"scale"`` chose).

    Examples
    --------
    >>> import numpy as np
    >>> from learners.kernel_rule import KernelRuleClassifier
    >>> X = np.array([[0.0], [0.2], [1.0], [1.2]])
    >>> KernelRuleClassifier(kernel="epanechnikov", width=0.5).fit(X, [0, 0, 1, 1]).predict([[0.1], [1.1]]).tolist()
    [0, 1]
    """

    def __init__(self, *, kernel="gaussian", width=1.0, budget=None, degree=3, coef0=1.0):
        store_params(self, locals())

    # the kernel rule has no rule parameters; the base's pass and pruning options are fixed
    sv_threshold = 0.0
    n_passes = 1
    shuffle = False
    random_state = None

    def _check_rule_params(self):
        return {}

    def _run_stream(self, X, y, p, f_out):
        kind, width, degree, coef0, lut = self._kernel_args(p)
        kernel_rule_fit_stream(X, y, self._sv, self._coef, self._ring, self._state, kind, width, degree, coef0, lut,
                               f_out)

    def _state_attrs(self, params):
        return {"offset_": 0.0}
