"""Weighted majority with exponential weights (lecture seed 002; Hedge).

:class:`WeightedMajority` combines ``M`` experts on a stream of binary outcomes:
each round it forecasts ``p = sum_m w_m y_m`` (or draws one expert from ``w``),
then every expert pays ``c_m = |y_m - t|`` and ``w_m`` is multiplied by
``exp(-eta c_m)`` and renormalised (:func:`learners.hedge.hedge_step`).

Tuning: with a known horizon ``N``, ``eta = sqrt(8 ln M / N)``
(:func:`learners.hedge.hedge_eta`, Cesa-Bianchi & Lugosi 2006, Thm 2.2) bounds
the regret ``sum_n |p_n - t_n| - min_m sum_n c_nm`` by ``sqrt(N ln M / 2)`` on
every sequence. The lecture's own formula for ``eta`` is garbled in the seed;
its bound ``2 sqrt(N log M)`` is implied by this one.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from learners._validation import check_bool, check_real, store_params
from learners.hedge import hedge_fit_stream

__all__ = ["WeightedMajority"]


class WeightedMajority(ClassifierMixin, BaseEstimator):
    """Exponentially weighted majority vote over experts, for 0/1 outcomes.

    Parameters
    ----------
    experts : list or "precomputed"
        The experts: fitted estimators (their ``predict``, or
        ``predict_proba(X)[:, 1]`` when they have it, gives ``y_m``), or
        callables ``f(X) -> (n_samples,)``; their outputs must lie in [0, 1].
        ``"precomputed"``: ``X`` itself is the (n_rounds, M) matrix of the
        experts' predictions.
    eta : float > 0, default=0.5
        Learning rate; see :func:`learners.hedge.hedge_eta` for the tuning that
        guarantees regret ``<= sqrt(N ln M / 2)`` over ``N`` rounds.
    randomized : bool, default=True
        ``predict`` draws one expert per row from the weights (the lecture's
        algorithm); False takes the weighted vote ``p >= 1/2``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of ``predict``.

    Attributes
    ----------
    weights_ : ndarray of shape (M,)
        Current weights (sum 1).
    cumulative_loss_ : float
        ``sum_n |p_n - t_n|``: the expected number of mistakes of the randomized
        forecaster (the absolute loss of the weighted vote).
    expert_losses_ : ndarray of shape (M,)
        Each expert's cumulative cost ``sum_n |y_nm - t_n|``.
    regret_ : float
        ``cumulative_loss_ - min(expert_losses_)``.
    forecasts_ : ndarray of shape (n_rounds_last_batch,)
        ``p_n`` of the last ``partial_fit`` batch, made before each update.
    n_rounds_ : int
    n_experts_ : int
    classes_ : ndarray ``[0, 1]``
    """

    def __init__(self, experts="precomputed", eta=0.5, *, randomized=True, random_state=None):
        store_params(self, locals())

    def _expert_predictions(self, X):
        if isinstance(self.experts, str):
            if self.experts != "precomputed":
                raise ValueError(f"experts must be a list of estimators or callables, or 'precomputed', "
                                 f"got {self.experts!r}")
            Y = np.asarray(X, dtype=np.float64)
            if Y.ndim != 2 or Y.shape[1] < 1:
                raise ValueError(f"with experts='precomputed', X must be the (n_rounds, n_experts) matrix of the "
                                 f"experts' predictions, got shape {Y.shape}")
        else:
            experts = list(self.experts)
            if not experts:
                raise ValueError("experts is empty; give at least one estimator or callable")
            cols = []
            for m, e in enumerate(experts):
                if hasattr(e, "predict_proba"):
                    out = np.asarray(e.predict_proba(X))[:, 1]
                elif hasattr(e, "predict"):
                    out = e.predict(X)
                elif callable(e):
                    out = e(X)
                else:
                    raise TypeError(f"expert {m} is neither an estimator nor a callable: {type(e).__name__}")
                cols.append(np.asarray(out, dtype=np.float64).reshape(-1))
            Y = np.column_stack(cols)
        if not np.all(np.isfinite(Y)) or Y.min(initial=0.0) < 0.0 or Y.max(initial=0.0) > 1.0:
            raise ValueError("expert predictions must lie in [0, 1] (0/1 labels or probabilities of label 1)")
        if hasattr(self, "n_experts_") and Y.shape[1] != self.n_experts_:
            raise ValueError(f"got predictions of {Y.shape[1]} experts, expected {self.n_experts_}")
        return np.ascontiguousarray(Y)

    def fit(self, X, y):
        """Start afresh and play the rounds ``(X[n], y[n])`` in order."""
        for name in ("weights_", "n_experts_"):
            if hasattr(self, name):
                delattr(self, name)
        return self.partial_fit(X, y)

    def partial_fit(self, X, y, classes=None):
        """Play one round per row: forecast, then update the weights with the outcome ``y[n]`` in {0, 1}.

        Parameters
        ----------
        X : array-like
            Inputs of the experts (or their predictions with ``experts="precomputed"``).
        y : array-like of shape (n_rounds,)
            Outcomes, 0 or 1.
        classes : ignored
            Always ``[0, 1]``.

        Returns
        -------
        self
        """
        eta = check_real("eta", self.eta, low=0.0, low_open=True)
        check_bool("randomized", self.randomized)
        Y = self._expert_predictions(X)
        t = np.asarray(y, dtype=np.float64).reshape(-1)
        if t.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {Y.shape[0]} rounds but y has {t.shape[0]} outcomes")
        if not np.all((t == 0) | (t == 1)):
            raise ValueError("y must hold outcomes 0 or 1")
        if not hasattr(self, "weights_"):
            M = Y.shape[1]
            self.n_experts_ = M
            self.weights_ = np.full(M, 1.0 / M)
            self._log_w = np.zeros(M)
            self.expert_losses_ = np.zeros(M)
            self.cumulative_loss_ = 0.0
            self.n_rounds_ = 0
            self.classes_ = np.array([0, 1])
        forecasts = np.empty(Y.shape[0])
        hedge_fit_stream(Y, t, eta, self._log_w, self.weights_, self.expert_losses_, forecasts)
        self.forecasts_ = forecasts
        self.cumulative_loss_ += float(np.abs(forecasts - t).sum())
        self.n_rounds_ += Y.shape[0]
        self.regret_ = self.cumulative_loss_ - float(self.expert_losses_.min())
        return self

    def predict_proba(self, X):
        """``[1 - p, p]`` per row, ``p = sum_m w_m y_m`` the weighted vote."""
        check_is_fitted(self, "weights_")
        p = self._expert_predictions(X) @ self.weights_
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """0/1 per row: a drawn expert's prediction (``randomized``) or the weighted vote ``p >= 1/2``."""
        check_is_fitted(self, "weights_")
        Y = self._expert_predictions(X)
        if self.randomized:
            rng = check_random_state(self.random_state)
            picks = rng.choice(Y.shape[1], size=Y.shape[0], p=self.weights_)
            return (Y[np.arange(Y.shape[0]), picks] >= 0.5).astype(np.int64)
        return (Y @ self.weights_ >= 0.5).astype(np.int64)
