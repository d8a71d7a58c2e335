"""SVMD estimators (Vishwanathan, Schraudolph & Smola, JMLR 2006): online SVMs whose step size adapts.

Stochastic gradient descent in the RKHS on ``l(x_t, y_t, f) + c/2 ||f||^2`` (the
online SVM, NORMA) with the step size ``eta`` tuned at every step by stochastic
meta-descent: ``eta <- eta max(1/2, 1 - mu <g_t, v_t>)``, where ``v`` (a second
kernel expansion on the same points) tracks how ``f`` depends on past step sizes
with the decay ``decay`` (the paper's lambda). The steps are in
:mod:`learners.svmd_steps`, one per loss of the paper's Table 1.

Shared parameters
-----------------
kernel : {"gaussian", "laplacian", "polynomial", "linear"}, default "gaussian"
    ``exp(-||x-y||^2 / width^2)`` (the paper's ``exp(-||x-y||^2/(2 sigma^2))`` is
    ``width = sqrt(2) sigma``), ``exp(-||x-y|| / width)``, ``(<x, y> + coef0) ** degree``,
    ``<x, y>``. Multiclass expansions use the delta kernel on labels (eq. 61).
width : float > 0, default 1.0
    Kernel length scale, in the units of the features.
degree : int >= 1, default 3
    Polynomial degree.
coef0 : float >= 0, default 1.0
    Polynomial constant term.
eta0 : float > 0, default 1.0
    Initial step size (also of the offsets; the nu-margin's starts at 1, as in section 6).
mu : float >= 0, default 0.1
    Meta-step size; 0 keeps ``eta = eta0``.
decay : float in [0, 1], default 0.95
    The paper's lambda, SMD's decay of ``v``: 0 is the single-step variant, 1 suits
    stationary streams, below 1 tracks non-stationary ones.
lam : float >= 0, default 0.01
    The regulariser ``c``: old coefficients shrink by ``1 - eta c`` per step.
nu : float in (0, 1) or None, default None
    None: a fixed margin of 1. A number: the nu-trick (eq. 53-58), the margin
    ``margin_`` learnt in log space so that about a fraction nu of the rows violate it.
fit_intercept : bool
    Learn an offset ``b`` per output with its own SMD step size (eq. 50-52).
tau : float > 0 or None, default None
    None: SMD. A number: no adaptation but the scheduled decay
    ``eta_t = eta0 tau / (tau + t)`` of eq. 59 (the paper's control, the online
    SVM / NORMA with step decay).
budget : int >= 1 or None, default 512
    The expansion keeps the last ``budget`` terms with a non-zero coefficient (an LRU
    circular buffer, section 5.5); None keeps all.
store_eta_trace : bool, default False
    Record ``eta`` after every step in ``eta_trace_``.
n_passes : int >= 1, default 1
    Passes over the data made by ``fit``.
shuffle : bool, default False
    Whether ``fit`` visits the rows of each pass in a random order.
random_state : int, RandomState or None, default None
    Seed of that order (used only with ``shuffle=True``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, OutlierMixin
from scipy.special import expit, softmax
from sklearn.utils.validation import check_is_fitted

from learners import svmd_steps as S
from learners._base import DEFAULT_BUDGET, OneClassMixin, OnlineKernelEstimator, StreamClassifierMixin, validate_data
from learners._docs import LEARN_ROWS, doc, filled
from learners._arrays import jit_array, jit_arrays
from learners._validation import check_bool, check_choice, check_real, store_params
from learners.taxonomy import Taxonomy

__all__ = ["SVMDClassifier", "SVMDOneClass"]

_INITIAL_CAPACITY = 64

#: Inputs with this many features or more learn in blocks of rows whose kernel rows come from matrix products.
_BLOCK_MIN_FEATURES = 16
_BLOCK_ROWS = 256

_FITTED_DOC = """
    eta_ : float
        The current step size.
    eta_trace_ : ndarray of shape (n_steps_,)
        ``eta`` after every step (only with ``store_eta_trace=True``).
    margin_ : float
        The margin in force: 1, or learnt by the nu-trick.
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
        Points of the kernel expansion, oldest first.
    n_support_ : int
        Number of terms (at most ``budget``).
    n_features_in_ : int
        Number of features seen in the first call.
    n_steps_ : int
        Rows learnt from so far.
    width_ : float
        Kernel width in force (``width``, or the one ``"scale"`` chose)."""


class _SVMDBase(OnlineKernelEstimator):
    #: SVMD keeps the last ``budget`` non-zero terms; it has no coefficient threshold.
    sv_threshold = 0.0

    _loss_code = S.NOVELTY

    # an unbounded expansion grows these (and never wraps: start stays 0)
    _slot_arrays = ("_sv", "_alpha", "_beta")

    def _check_smd_params(self):
        eta0 = check_real("eta0", self.eta0, low=0.0, low_open=True)
        mu = check_real("mu", self.mu, low=0.0)
        decay = check_real("decay", self.decay, low=0.0, high=1.0)
        lam = check_real("lam", self.lam, low=0.0)
        nu = check_real("nu", self.nu, low=0.0, high=1.0, low_open=True, high_open=True, allow_none=True)
        tau = check_real("tau", self.tau, low=0.0, low_open=True, allow_none=True)
        use_offset = check_bool("fit_intercept", self.fit_intercept)
        check_bool("store_eta_trace", self.store_eta_trace)
        return {"eta0": eta0, "mu": mu, "decay": decay, "lam": lam, "nu": nu, "tau": tau, "use_offset": use_offset,
                "params": S.make_params(lam, mu, decay, nu=0.0 if nu is None else nu, use_offset=use_offset,
                                        tau=0.0 if tau is None else tau)}

    # ---------------------------------------------------------------- expansion
    def _reset(self):
        super()._reset()
        for name in ("_alpha", "_beta", "_offset", "_kappa", "_delta", "eta_trace_"):
            if hasattr(self, name):
                delattr(self, name)

    def _n_outputs(self):
        return 1

    def _allocate(self, n_features, params):
        capacity = params["budget"] if params["budget"] is not None else _INITIAL_CAPACITY
        K = self._n_outputs()
        self._sv = np.zeros((capacity, n_features), dtype=np.float64)
        self._alpha = np.zeros((capacity, K), dtype=np.float64)
        self._beta = np.zeros((capacity, K), dtype=np.float64)
        self._ring = np.zeros(2, dtype=np.int64)
        self._state = S.new_state(params["eta0"])
        self._offset = S.new_offset(K, params["eta0"])
        if not hasattr(self, "_kappa"):
            self._kappa = np.eye(K)
            self._delta = np.zeros((K, K))
        if params["store_eta_trace"]:
            self.eta_trace_ = np.zeros(0)

    @property
    def dual_coef_(self):
        """ndarray of shape (n_support_, n_outputs): the coefficients ``alpha_jy`` of ``f``, oldest first."""
        self._check_fitted_expansion()
        return self._alpha[self._order()].copy()

    # ------------------------------------------------------------------ stream
    def _learn(self, X, y, params):
        self._ensure_capacity(X.shape[0], params)
        n = X.shape[0]
        f_out = np.empty((n, self._n_outputs()), dtype=np.float64)
        eta_out = np.empty(n, dtype=np.float64)
        self._margin_out = margin_out = np.empty(n, dtype=np.float64)
        y_arr = np.zeros(n) if y is None else jit_array(y)
        kind, width, degree, coef0, _ = self._kernel_args(params)
        args = ((self._sv, self._alpha, self._beta, self._ring, self._state, self._offset), self._kappa,
                params["params"], kind, width, degree, coef0)
        if X.shape[1] < _BLOCK_MIN_FEATURES:
            S.svmd_fit_stream(self._loss_code, X, y_arr, self._delta, *args, f_out, eta_out, margin_out)
            return self._after_learn(f_out, eta_out, params)
        # many features: the kernel rows of a block of rows come from two matrix products (BLAS)
        for start in range(0, n, _BLOCK_ROWS):
            block = slice(start, min(n, start + _BLOCK_ROWS))
            Xb = X[block]
            dots = Xb @ self._sv.T
            cross = Xb @ Xb.T
            sv_sq = np.einsum("ij,ij->i", self._sv, self._sv)
            S.svmd_fit_block(self._loss_code, Xb, y_arr[block], self._delta, (dots, cross, sv_sq), *args,
                             f_out[block], eta_out[block], margin_out[block])
        return self._after_learn(f_out, eta_out, params)

    def _after_learn(self, f_out, eta_out, params):
        if hasattr(self, "eta_trace_"):
            self.eta_trace_ = np.concatenate([self.eta_trace_, eta_out])
        self._publish_state(params)
        return f_out

    def _publish_state(self, params):
        self.n_steps_ = int(self._state[S.STEPS])
        self.eta_ = float(self._state[S.ETA])
        self.margin_ = float(self._state[S.EPS])

    def _scores(self, f_out):
        """``partial_fit(..., return_scores=True)``: ``f_t(x) + b`` per row, (n,) for one output."""
        return f_out[:, 0] if f_out.shape[1] == 1 else f_out

    def _raw_one(self, X):
        """``f(x)`` (first output, no offset) of one validated row, for ``score_one``/``predict_one``."""
        return float(self._raw_rows(X)[0, 0])

    def _raw_rows(self, X):
        """``f(x, .)`` without the offset of validated rows, shape ``(n, n_outputs)``."""
        out = np.empty((X.shape[0], self._alpha.shape[1]), dtype=np.float64)
        kind, width, degree, coef0, _ = self._kernel_args(self._params())
        S.svmd_decision(X, *jit_arrays(self._sv, self._alpha, self._ring, self._kappa), kind, width, degree, coef0,
                        out)
        return out

    def _raw_values(self, X):
        """``f(x, .)`` without the offset, shape ``(n, n_outputs)``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite=True)
        return self._raw_rows(jit_array(X))


@filled(fitted=_FITTED_DOC)
class SVMDClassifier(StreamClassifierMixin, ClassifierMixin, _SVMDBase):
    """Online SVM classification with SMD step sizes: binary or multiclass from the labels.

    Two classes make a binary problem (``f`` scalar, ``classes_[1]`` where ``f > 0``);
    more make a multiclass one with one coefficient per class and term (the delta
    kernel on labels), predicting ``argmax_y f(x, y)``.

    Parameters
    ----------
    loss : {"hinge", "logistic", "graph"}, default "hinge"
        The soft margin (eq. 14 / 16), logistic regression (eq. 18 / 20, with the
        non-diagonal Hessian terms of eq. 36-44), or the graph-structured loss of
        eq. 25 on ``taxonomy`` (always multiclass; label kernel eq. 65, distance eq. 62).
    taxonomy : dict or None, default None
        ``loss="graph"``: the parent of every node (``{child: parent}``, the root's
        parent None or absent); the labels are nodes of this tree.
    kernel, width, degree, coef0, eta0, mu, decay, lam, nu, tau, budget, store_eta_trace, n_passes, shuffle, random_state
        See :mod:`learners.svmd`. ``nu`` works with the hinge loss only.
    fit_intercept : bool, default True
        Learn an offset per output with its own SMD step size (eq. 50-52).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted.
    offset_ : float or ndarray of shape (n_classes,)
        The offset ``b`` (a float for a binary problem).
    dual_coef_ : ndarray of shape (n_support_, 1 or n_classes)
        The coefficients of ``f`` per term (one column for a binary problem).{fitted}

    Examples
    --------
    >>> import numpy as np
    >>> from learners import SVMDClassifier
    >>> X = np.tile([[0.0, 0.0], [1.0, 1.0]], (20, 1))
    >>> y = np.tile([0, 1], 20)
    >>> SVMDClassifier().fit(X, y).predict([[0.0, 0.1], [1.0, 0.9]])
    array([0, 1])
    """

    def __init__(self, *, loss="hinge", taxonomy=None, kernel="gaussian", width=1.0, degree=3, coef0=1.0, eta0=1.0,
                 mu=0.1, decay=0.95, lam=0.01, nu=None, fit_intercept=True, tau=None, budget=DEFAULT_BUDGET,
                 store_eta_trace=False, n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    _native_multiclass = True

    def _check_rule_params(self):
        p = self._check_smd_params()
        p["store_eta_trace"] = self.store_eta_trace
        check_choice("loss", self.loss, ("hinge", "logistic", "graph"))
        if p["nu"] is not None and self.loss != "hinge":
            raise ValueError(f"nu (the nu-trick) works with loss='hinge' only, got loss={self.loss!r}; "
                             "set nu=None")
        if self.loss == "graph" and not isinstance(self.taxonomy, dict):
            raise ValueError("loss='graph' needs taxonomy={child: parent, ...}, a dict giving every label's parent, "
                             f"got {self.taxonomy!r}")
        return p

    def _n_outputs(self):
        return 1 if self._binary else self.classes_.shape[0]

    def _encode_labels(self, y, classes, first):
        self._check_labels(y, classes, first)
        if first:
            cls = self.classes_
            self._binary = cls.shape[0] == 2 and self.loss != "graph"
            if self.loss == "graph":
                tree = Taxonomy(self.taxonomy)
                self._delta = tree.distance_matrix(cls)
                self._kappa = tree.label_kernel(cls)
            self._loss_code = {
                ("hinge", True): S.BINARY_HINGE, ("hinge", False): S.MULTICLASS_HINGE,
                ("logistic", True): S.BINARY_LOGISTIC, ("logistic", False): S.MULTICLASS_LOGISTIC,
                ("graph", False): S.GRAPH}[(self.loss, self._binary)]
        index = np.searchsorted(self.classes_, y).astype(np.float64)
        return np.where(index == 1, 1.0, -1.0) if self._binary else index

    def _reset(self):
        super()._reset()
        if hasattr(self, "_binary"):
            del self._binary

    def learn_stream(self, X, y, classes=None):
        """``partial_fit`` that also returns the prediction made on each row *before* learning from it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), optional

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The online predictions (what an online mistake count compares with ``y``).
        """
        params = self._check_params()
        first = not hasattr(self, "_state")
        X, y = self._validate_X(X, y, reset=first)
        y_enc = self._encode_labels(y, classes, first)
        if first:
            self._allocate(X.shape[1], params)
        return self._labels(self._scores(self._learn(X, y_enc, params)))

    def _publish_state(self, params):
        super()._publish_state(params)
        b = self._offset[0].copy()
        self.offset_ = float(b[0]) if self._binary else b

    def _has_probabilities(self):
        return self.loss == "logistic"

    def _proba(self, f):
        """``predict_proba`` (``loss="logistic"`` only): the model's own probabilities,
        ``1 / (1 + exp(-f))`` for ``classes_[1]`` (two classes, eq. 18) or ``softmax_y f(x, y)`` (eq. 20)."""
        if self._binary:
            p1 = expit(f)
            return np.column_stack([1.0 - p1, p1])
        return softmax(f, axis=1)

    # -------------------------------------------------------------- one row
    def learn_one(self, x, y, *, classes=None, return_score=False):
        """Learn from one row (river's API): ``x`` a dict or a 1-D array, ``y`` one of the labels.

        SVMD's expansion has one coefficient per class, so the labels are fixed before the
        first row: give every label as ``classes=`` to the first call (or start with
        ``partial_fit``). Returns ``self``, or with ``return_score=True`` the score the row
        got before the update (as :meth:`score_one`).
        """
        params = self._params()
        X = self._row(x)
        first = not hasattr(self, "_state")
        if first and classes is None:
            raise ValueError(f"{type(self).__name__}.learn_one needs every label before the first row: pass "
                             "classes=[...] to the first learn_one call (or start with partial_fit)")
        y_enc = self._encode_labels(np.asarray([y]), classes, first)
        f = self._scores(self._learn_row(X, y_enc, params))[0]
        if return_score:
            return float(f) if self._binary else f.copy()
        return self

    def _decision_rows(self, X):
        f = self._raw_rows(X) + self._offset[0]
        return f[:, 0] if self._binary else f

    def _decision_one(self, X):
        f = self._decision_rows(X)[0]
        return float(f) if self._binary else f


@filled(fitted=_FITTED_DOC)
class SVMDOneClass(OneClassMixin, OutlierMixin, _SVMDBase):
    """Novelty detection with SMD step sizes (Table 1: ``max(0, margin - f(x))``).

    A point is normal when ``f(x) + b >= margin_``; ``decision_function = f(x) + b - margin_``
    (``f(x) - 1`` with ``nu=None`` and no offset). With ``nu`` the margin is learnt
    (eq. 53-58) so that about a fraction nu of a stationary stream falls below it.

    Parameters
    ----------
    kernel, width, degree, coef0, eta0, mu, decay, lam, nu, tau, budget, store_eta_trace, n_passes, shuffle, random_state
        See :mod:`learners.svmd`.
    fit_intercept : bool, default False
        Learn an offset ``b`` with its own SMD step size (eq. 50-52).

    Attributes
    ----------
    offset_ : float
        ``margin_ - b``: ``decision_function = score_samples - offset_``.
    dual_coef_ : ndarray of shape (n_support_, 1)
        The coefficients of ``f``.{fitted}
    """

    _loss_code = S.NOVELTY

    def __init__(self, *, kernel="gaussian", width=1.0, degree=3, coef0=1.0, eta0=1.0, mu=0.1, decay=0.95,
                 lam=0.01, nu=None, fit_intercept=False, tau=None, budget=DEFAULT_BUDGET, store_eta_trace=False,
                 n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        p = self._check_smd_params()
        p["store_eta_trace"] = self.store_eta_trace
        return p

    def _publish_state(self, params):
        super()._publish_state(params)
        self.offset_ = self.margin_ - float(self._offset[0, 0])

    def _raw_decision(self, X):
        return self._raw_values(X)[:, 0]

    @doc(LEARN_ROWS, summary="``partial_fit`` that also returns ``decision_function`` on each row *before* "
         "learning from it.", returns="margin : ndarray of shape (n_samples,)\n            ``f_t(x_t) + b_t - "
         "margin_t``: negative for the rows flagged as novelties online.")
    def learn_stream(self, X):
        params = self._check_params()
        first = not hasattr(self, "_state")
        X, _ = self._validate_X(X, None, reset=first)
        if first:
            self._allocate(X.shape[1], params)
        f = self._learn(X, None, params)[:, 0]
        return f - self._margin_out
