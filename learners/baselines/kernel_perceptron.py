"""Kernel perceptrons: the classifier (Freund & Schapire 1999) and its regression twin.

:class:`KernelPerceptron` keeps ``f(x) = sum_j alpha_j k(x_j, x)`` and on a mistake
(``y f(x) <= 0``) adds the term ``eta y k(x, .)``; ``eta`` only scales ``f`` (no bias),
so the predictions do not depend on it. It is NORMA with the loss ``max(0, -y f)``
and ``lambda = 0``. On data separable in the feature space with margin ``gamma``
and ``k(x, x) <= R^2`` it makes at most ``(R / gamma)^2`` mistakes.

:class:`KernelPerceptronRegressor` is the perceptron's update applied to regression:
the stochastic gradient step on the squared loss without regularisation, adding
``eta (y - f(x)) k(x, .)`` at every step (kernel least-mean-squares). The OLK paper
compares a "kernel perceptron" in its regression Example 2 with ``eta = 0.02``
without saying which rule; this is the one we use.
"""

from __future__ import annotations

from sklearn.base import ClassifierMixin, RegressorMixin

from learners._base import BinaryDecisionMixin
from learners._docs import GROWING_EXPANSION, filled
from learners._validation import check_real, store_params
from learners.baselines._common import OnlineBinaryBaseline, OnlineRegressionBaseline


@filled(growing_expansion=GROWING_EXPANSION)
class KernelPerceptron(BinaryDecisionMixin, ClassifierMixin, OnlineBinaryBaseline):
    """Online kernel perceptron classifier.

    Parameters
    ----------
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)
    eta : float, default=1.0
        Coefficient of each new term (> 0); scales ``f`` only.

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_support, n_features)
        Inputs on which a mistake was made.
    dual_coef_ : ndarray of shape (n_support,)
        Their coefficients ``eta * y``.
    n_support_ : int
        Number of support vectors (= number of mistakes).
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Number of input features.
    n_mistakes_ : int
        Online mistakes (``y f(x) <= 0`` before the update).
    {growing_expansion}
    """

    def __init__(self, *, kernel="gaussian", width="scale", degree=3.0, coef0=1.0, eta=1.0):
        store_params(self, locals())

    def _validate_params(self):
        check_real("eta", self.eta, low=0.0, low_open=True)

    def partial_fit(self, X, y, classes=None):
        """One online pass over ``(X, y)`` in order."""
        X, ys, _ = self._begin(X, y, classes, classifier=True)
        ex = self.expansion_
        for x, yt in zip(X, ys):
            self.n_seen_ += 1
            f = ex.kernel_vector(x) @ ex.coef[: ex.n]
            if yt * f <= 0.0:
                self.n_mistakes_ += 1
                ex.append(x, self.eta * yt)
        return self


@filled(growing_expansion=GROWING_EXPANSION)
class KernelPerceptronRegressor(RegressorMixin, OnlineRegressionBaseline):
    """Online kernel least-mean-squares: the perceptron-style update for regression.

    At every sample it adds ``eta (y - f(x)) k(x, .)`` (terms with a zero
    coefficient are not stored).

    Parameters
    ----------
    kernel, width, degree, coef0 : as :mod:`learners.olk`'s (``width="scale"``, fitted ``width_``)
    eta : float, default=0.5
        Step size (> 0; stable below ``2 / k(x, x)``). The OLK paper's Example 2
        uses 0.02, which ``learners-bench example2`` passes explicitly.

    Attributes
    ----------
    support_vectors_ : ndarray of shape (n_support, n_features)
    dual_coef_ : ndarray of shape (n_support,)
    n_support_ : int
    n_features_in_ : int
    {growing_expansion}
    """

    def __init__(self, *, kernel="gaussian", width="scale", degree=3.0, coef0=1.0, eta=0.5):
        store_params(self, locals())

    def _validate_params(self):
        check_real("eta", self.eta, low=0.0, low_open=True)

    def partial_fit(self, X, y):
        """One online pass over ``(X, y)`` in order."""
        X, y, _ = self._begin(X, y, classifier=False)
        ex = self.expansion_
        for x, yt in zip(X, y):
            self.n_seen_ += 1
            err = yt - ex.kernel_vector(x) @ ex.coef[: ex.n]
            if err != 0.0:
                ex.append(x, self.eta * err)
        return self
