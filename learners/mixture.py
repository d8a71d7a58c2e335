"""Online EM mixtures: :class:`OnlineGaussianMixture` and :class:`OnlineBernoulliMixture`.

Each row of a ``partial_fit`` batch is one stochastic EM step on the sufficient
statistics (lecture seed 002; :mod:`learners.online_em`)::

    S <- (1 - eta_n) S + eta_n E[S(x_n) | theta(S)],   eta_n = max(1/n, learning_rate)

then the closed-form M step gives the fitted attributes, named as in
scikit-learn's :class:`~sklearn.mixture.GaussianMixture`. ``n`` counts the rows
seen, starting after ``n_components`` pseudo-samples that stand for the initial
guess (so the first real row has ``eta = 1/(K + 1)`` and cannot wipe it out).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from learners import online_em
from learners._docs import FIT, LEARN_ROWS, Y_IGNORED, doc
from learners._arrays import jit_array, jit_arrays
from learners._base import thaw_arrays
from learners._validation import check_choice, check_int, check_real, store_params

__all__ = ["OnlineGaussianMixture", "OnlineBernoulliMixture"]

_COVARIANCE = {"full": 0, "diag": 1, "spherical": 2}


class _OnlineMixture(DensityMixin, BaseEstimator):
    """Shared driver: validation, initialisation on the first batch, streaming, scoring."""

    @doc(FIT, passes="one pass", y=Y_IGNORED)
    def fit(self, X, y=None):
        for name in ("n_features_in_", "feature_names_in_", "_s0"):
            if hasattr(self, name):
                delattr(self, name)
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """One online-EM step per row of ``X``, in order.

        The first call draws the initial guess (it needs at least
        ``n_components`` rows); later calls continue the stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        first = not hasattr(self, "_s0")
        if not first:
            thaw_arrays(self)  # read-only arrays (loaded onto read-only memory): learning writes into copies
        params = self._check_params()
        X = validate_data(self, X, reset=first, dtype=np.float64)
        X = self._check_values(X)
        if first:
            if X.shape[0] < params["n_components"]:
                raise ValueError(f"the first partial_fit needs at least n_components={params['n_components']} "
                                 f"rows to initialise, got {X.shape[0]}")
            self._initialise(X, params)
            self.n_samples_seen_ = 0
            self._n = params["n_components"]
        self._params = params
        loglik = np.empty(X.shape[0])
        self._n = int(self._stream(jit_array(X), params, loglik))
        self.n_samples_seen_ += X.shape[0]
        #: log p(x_i) of each row of the last batch under the model just before its step
        self.stream_log_likelihood_ = loglik
        self._publish()
        return self

    def _check_values(self, X):
        return X

    def _score_rows(self, X):
        check_is_fitted(self, "_s0")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        X = jit_array(self._check_values(X))
        loglik = np.empty(X.shape[0])
        resp = np.empty((X.shape[0], self._s0.shape[0]))
        self._score(X, loglik, resp)
        return loglik, resp

    @doc(LEARN_ROWS, summary="Log-likelihood ``log p(x)`` of each row under the current model.",
         returns="ndarray of shape (n_samples,)")
    def score_samples(self, X):
        return self._score_rows(X)[0]

    def score(self, X, y=None):
        """Mean log-likelihood per row of ``X``."""
        return float(np.mean(self.score_samples(X)))

    def predict_proba(self, X):
        """Posterior probability of each component for each row, shape (n_samples, n_components)."""
        return self._score_rows(X)[1]

    def predict(self, X):
        """Most probable component of each row, shape (n_samples,)."""
        return np.argmax(self.predict_proba(X), axis=1)

    def _common_params(self):
        return {
            "n_components": check_int("n_components", self.n_components, low=1),
            "learning_rate": check_real("learning_rate", self.learning_rate, low=0.0, high=1.0),
        }


class OnlineGaussianMixture(_OnlineMixture):
    """Gaussian mixture learnt by online EM (one stochastic E step per sample).

    Parameters
    ----------
    n_components : int, default=1
        Number of components ``K``.
    covariance_type : {"full", "diag", "spherical"}, default="full"
        Form of each component's covariance.
    learning_rate : float in [0, 1], default=0.0
        Floor of the step size: ``eta_n = max(1/n, learning_rate)``. 0 gives the
        ``1/n`` schedule (converges to a fixed point of batch EM on a stationary
        stream); a positive floor keeps tracking a drifting stream, forgetting
        with time constant ``1/learning_rate`` samples.
    reg_covar : float, default=1e-6
        Added to the diagonal of every covariance (as scikit-learn's).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial means (k-means++ on the first batch).

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
    means_ : ndarray of shape (n_components, n_features)
    covariances_ : ndarray
        (n_components, n_features, n_features) full, (n_components, n_features)
        diag, (n_components,) spherical.
    precisions_ : ndarray
        Inverses of ``covariances_`` (same shapes).
    n_samples_seen_ : int
        Rows learnt from since the last ``fit``.
    stream_log_likelihood_ : ndarray of shape (n_rows_last_batch,)
        ``log p(x_i)`` of each row of the last ``partial_fit`` batch under the
        model just before its step (prequential log-likelihood).
    n_features_in_ : int

    Notes
    -----
    Initial guess, from the first batch: means by k-means++ (``random_state``);
    each row assigned to its nearest mean; weights and covariances from that
    hard assignment (plus ``reg_covar``); worth ``n_components`` pseudo-samples.
    """

    def __init__(self, n_components=1, *, covariance_type="full", learning_rate=0.0, reg_covar=1e-6,
                 random_state=None):
        store_params(self, locals())

    def _check_params(self):
        params = self._common_params()
        check_choice("covariance_type", self.covariance_type, _COVARIANCE)
        params["covariance"] = _COVARIANCE[self.covariance_type]
        params["reg"] = check_real("reg_covar", self.reg_covar, low=0.0, low_open=True)
        return params

    def _initialise(self, X, params):
        K = params["n_components"]
        n, D = X.shape
        rng = check_random_state(self.random_state)
        centers, _ = kmeans_plusplus(X, K, random_state=rng)
        labels = np.argmin(((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2), axis=1)
        s0 = np.empty(K)
        s1 = np.empty((K, D))
        cov = params["covariance"]
        s2 = np.empty((K, D, D)) if cov == 0 else np.empty((K, D if cov == 1 else 1))
        spread = X.var(axis=0).mean() + params["reg"]
        for k in range(K):
            members = X[labels == k]
            w = max(len(members), 1) / n
            mu = members.mean(axis=0) if len(members) else centers[k]
            if len(members) > 1:
                centred = members - mu
                C = centred.T @ centred / len(members)
            else:
                C = np.eye(D) * spread
            s0[k] = w
            s1[k] = w * mu
            if cov == 0:
                s2[k] = w * (C + np.outer(mu, mu))
            elif cov == 1:
                s2[k] = w * (np.diag(C) + mu * mu)
            else:
                s2[k, 0] = w * (np.trace(C) + mu @ mu)
        total = s0.sum()
        self._s0, self._s1, self._s2 = s0 / total, s1 / total, s2 / total
        self._cache = None
        if cov != 0:
            # the M step's parameters, kept in step with S by the jitted steps
            self._cache = (np.empty((K, D)), np.empty(s2.shape), np.empty(K))
            online_em.gaussian_m_step_all(self._s0, self._s1, self._s2, cov == 2, params["reg"], *self._cache)

    def _stream(self, X, params, loglik):
        if params["covariance"] == 0:
            return online_em.gaussian_full_fit_stream(X, self._n, params["learning_rate"], self._s0, self._s1,
                                                      self._s2, params["reg"], loglik)
        return online_em.gaussian_fit_stream(X, self._n, params["learning_rate"], self._s0, self._s1, self._s2,
                                             params["covariance"] == 2, params["reg"], *self._cache, loglik)

    def _score(self, X, loglik, resp):
        p = self._params
        if p["covariance"] == 0:
            online_em.gaussian_full_score_rows(X, *jit_arrays(self._s0, self._s1, self._s2), p["reg"], loglik, resp)
        else:
            online_em.gaussian_score_rows(X, *jit_arrays(self._s0, *self._cache), p["covariance"] == 2, loglik, resp)

    def _publish(self):
        """The M step: parameters from the sufficient statistics."""
        s0, s1, s2 = self._s0, self._s1, self._s2
        reg = self._params["reg"]
        cov = self._params["covariance"]
        safe = np.maximum(s0, online_em.EMPTY)
        self.weights_ = s0 / s0.sum()
        self.means_ = s1 / safe[:, None]
        mu = self.means_
        D = mu.shape[1]
        if cov == 0:
            C = s2 / safe[:, None, None] - mu[:, :, None] * mu[:, None, :] + reg * np.eye(D)[None]
            self.covariances_ = C
            self.precisions_ = np.linalg.inv(C)
        elif cov == 1:
            self.covariances_ = np.maximum(s2 / safe[:, None] - mu * mu, 0.0) + reg
            self.precisions_ = 1.0 / self.covariances_
        else:
            self.covariances_ = np.maximum(s2[:, 0] / safe - (mu * mu).sum(axis=1), 0.0) / D + reg
            self.precisions_ = 1.0 / self.covariances_


class OnlineBernoulliMixture(_OnlineMixture):
    """Mixture of multivariate Bernoullis learnt by online EM, for binary data.

    Parameters
    ----------
    n_components : int, default=1
    learning_rate : float in [0, 1], default=0.0
        Floor of the step size ``eta_n = max(1/n, learning_rate)``.
    eps : float, default=1e-6
        Component means are clipped to ``[eps, 1 - eps]`` when evaluated.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial means, uniform in ``[0.25, 0.75]`` (Bishop, PRML 9.3.3).
    binarize : float or None, default=0.0
        Threshold for binarising the inputs, as scikit-learn's
        :class:`~sklearn.naive_bayes.BernoulliNB`: a feature counts as 1 where it
        is above it, else 0 (0/1 inputs are unchanged). None: the inputs must
        already be 0/1 (booleans accepted), and anything else is refused.

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
    means_ : ndarray of shape (n_components, n_features)
        ``P(x_d = 1 | component k)``.
    n_samples_seen_ : int
    stream_log_likelihood_ : ndarray of shape (n_rows_last_batch,)
        Prequential ``log p(x_i)`` of the last batch's rows.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of ``X``, when it has string column names.
    """

    def __init__(self, n_components=1, *, learning_rate=0.0, eps=1e-6, random_state=None, binarize=0.0):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # binarize=None: the inputs must be 0/1, so at least non-negative
        tags.input_tags.positive_only = self.binarize is None
        return tags

    def _check_params(self):
        params = self._common_params()
        params["eps"] = check_real("eps", self.eps, low=0.0, high=0.5, low_open=True, high_open=True)
        return params

    def _check_values(self, X):
        threshold = check_real("binarize", self.binarize, allow_none=True)
        if threshold is not None:
            return (X > threshold).astype(np.float64)
        if not np.all((X == 0) | (X == 1)):
            negative = " (Negative values in data passed to OnlineBernoulliMixture)" if np.any(X < 0) else ""
            raise ValueError(f"OnlineBernoulliMixture with binarize=None takes binary inputs (0/1){negative}; "
                             "binarise X first, e.g. (X > 0.5).astype(float), or pass binarize=0.5")
        return X

    def _initialise(self, X, params):
        K = params["n_components"]
        rng = check_random_state(self.random_state)
        means = rng.uniform(0.25, 0.75, size=(K, X.shape[1]))
        self._s0 = np.full(K, 1.0 / K)
        self._s1 = means / K

    def _stream(self, X, params, loglik):
        return online_em.bernoulli_fit_stream(X, self._n, params["learning_rate"], self._s0, self._s1,
                                              params["eps"], loglik)

    def _score(self, X, loglik, resp):
        online_em.bernoulli_score_rows(X, *jit_arrays(self._s0, self._s1), self._params["eps"], loglik, resp)

    def _publish(self):
        self.weights_ = self._s0 / self._s0.sum()
        self.means_ = self._s1 / np.maximum(self._s0, online_em.EMPTY)[:, None]

