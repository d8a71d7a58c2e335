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
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from learners._base import binary_classes, check_known_labels
from learners._validation import check_bool, check_real, store_params
from learners.hedge import hedge_fit_stream

__all__ = ["WeightedMajority"]


class WeightedMajority(ClassifierMixin, BaseEstimator):
    """Exponentially weighted majority vote over experts, for binary outcomes.

    Parameters
    ----------
    experts : list or "precomputed"
        The experts: fitted estimators (their ``predict``, or
        ``predict_proba(X)[:, 1]`` when they have it, gives ``y_m``), or
        callables ``f(X) -> (n_samples,)``; each ``y_m`` is the expert's prediction
        of ``classes_[1]`` (a 0/1 label or a probability). ``"precomputed"``: ``X``
        itself is the (n_rounds, M) matrix of the experts' predictions.
    eta : float > 0, default=0.5
        Learning rate; see :func:`learners.hedge.hedge_eta` for the tuning that
        guarantees regret ``<= sqrt(N ln M / 2)`` over ``N`` rounds.
    randomized : bool, default=True
        ``predict`` draws one expert per row from the weights (the lecture's
        algorithm); False takes the weighted vote ``p >= 1/2``.
    clip : bool, default=True
        Predictions outside [0, 1] (scores, -1/+1 votes) are projected onto it
        before use: with an outcome of 0 or 1 an expert's cost ``|y_m - t|`` can
        only fall, and the regret bound (costs in [0, 1]) holds. False refuses them.
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
        Rounds played since the last ``fit``.
    n_experts_ : int
        Number of experts ``M``.
    classes_ : ndarray of shape (2,)
        The two labels; the outcome ``t`` is 1 for ``classes_[1]``, 0 for ``classes_[0]``.
    n_features_in_ : int
        Number of columns of ``X`` (the experts with ``"precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of ``X``, when it has string column names.
    """

    def __init__(self, experts="precomputed", eta=0.5, *, randomized=True, clip=True, random_state=None):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # two labels: the outcome of each round
        tags.non_deterministic = bool(self.randomized) and self.random_state is None
        # with "precomputed", X holds the experts' predictions, not features: on features (as
        # scikit-learn's checks feed it) the vote follows whichever columns happen to be large
        tags.classifier_tags.poor_score = isinstance(self.experts, str)
        return tags

    def _precomputed(self):
        if isinstance(self.experts, str):
            if self.experts != "precomputed":
                raise ValueError(f"experts must be a list of estimators or callables, or 'precomputed', "
                                 f"got {self.experts!r}")
            return True
        return False

    def _check_X(self, X, reset):
        """``X`` checked (a finite 2-D float array with ``"precomputed"``; as given to the experts otherwise)."""
        if self._precomputed():
            return validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite=True)
        return validate_data(self, X, reset=reset, skip_check_array=True)

    def _expert_predictions(self, X):
        if self._precomputed():
            Y = np.asarray(X, dtype=np.float64)
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
        if not np.all(np.isfinite(Y)):
            raise ValueError("expert predictions must be finite")
        if Y.size and (Y.min() < 0.0 or Y.max() > 1.0):
            if not check_bool("clip", self.clip):
                raise ValueError("expert predictions must lie in [0, 1] (0/1 labels or probabilities of "
                                 "classes_[1]); pass clip=True to project them onto [0, 1]")
            Y = np.clip(Y, 0.0, 1.0)
        if hasattr(self, "n_experts_") and Y.shape[1] != self.n_experts_:
            raise ValueError(f"got predictions of {Y.shape[1]} experts, expected {self.n_experts_}")
        return np.ascontiguousarray(Y)

    def fit(self, X, y):
        """Start afresh and play the rounds ``(X[n], y[n])`` in order.

        Parameters
        ----------
        X : array-like
            Inputs of the experts (or their predictions with ``experts="precomputed"``).
        y : array-like of shape (n_rounds,)
            Outcomes: two labels (one is refused: a fit needs both classes).

        Returns
        -------
        self
        """
        for name in ("weights_", "n_experts_", "classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(self, name):
                delattr(self, name)
        return self._play(X, y, None, strict=True)

    def partial_fit(self, X, y, classes=None):
        """Play one round per row: forecast, then update the weights with the outcome ``y[n]``.

        Parameters
        ----------
        X : array-like
            Inputs of the experts (or their predictions with ``experts="precomputed"``).
        y : array-like of shape (n_rounds,)
            Outcomes, one of the two labels.
        classes : array-like of shape (2,), optional
            Both labels, needed on the first call when its batch holds one label,
            except for 0/1 outcomes (then ``[0, 1]``).

        Returns
        -------
        self
        """
        return self._play(X, y, classes, strict=False)

    def _play(self, X, y, classes, strict):
        eta = check_real("eta", self.eta, low=0.0, low_open=True)
        check_bool("randomized", self.randomized)
        first = not hasattr(self, "weights_")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X = self._check_X(X, reset=first)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        Y = self._expert_predictions(X)
        if y.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {Y.shape[0]} rounds but y has {y.shape[0]} outcomes")
        if first:
            labels = np.unique(y)
            if classes is None and not strict and labels.shape[0] == 1 and np.isin(labels, [0, 1]).all():
                classes = [0, 1]
            cls = binary_classes(y, classes, type(self).__name__)
        else:
            cls = self.classes_
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), cls):
                raise ValueError(f"classes={list(classes)} differs from the classes {cls.tolist()} "
                                 "of the first partial_fit call")
            check_known_labels(y, cls, type(self).__name__)
        t = (y == cls[1]).astype(np.float64)
        if first:
            M = Y.shape[1]
            self.classes_ = cls
            self.n_experts_ = M
            self.weights_ = np.full(M, 1.0 / M)
            self._log_w = np.zeros(M)
            self.expert_losses_ = np.zeros(M)
            self.cumulative_loss_ = 0.0
            self.n_rounds_ = 0
        forecasts = np.empty(Y.shape[0])
        hedge_fit_stream(Y, t, eta, self._log_w, self.weights_, self.expert_losses_, forecasts)
        self.forecasts_ = forecasts
        self.cumulative_loss_ += float(np.abs(forecasts - t).sum())
        self.n_rounds_ += Y.shape[0]
        self.regret_ = self.cumulative_loss_ - float(self.expert_losses_.min())
        return self

    def _votes(self, X):
        check_is_fitted(self, "weights_")
        return self._expert_predictions(self._check_X(X, reset=False))

    def predict_proba(self, X):
        """``[1 - p, p]`` per row, ``p = sum_m w_m y_m`` the weighted vote for ``classes_[1]``."""
        p = np.clip(self._votes(X) @ self.weights_, 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """A label per row: a drawn expert's vote (``randomized``) or the weighted vote ``p >= 1/2``."""
        Y = self._votes(X)
        if self.randomized:
            rng = check_random_state(self.random_state)
            picks = rng.choice(Y.shape[1], size=Y.shape[0], p=self.weights_)
            return self.classes_[(Y[np.arange(Y.shape[0]), picks] >= 0.5).astype(np.intp)]
        return self.classes_[(Y @ self.weights_ >= 0.5).astype(np.intp)]
