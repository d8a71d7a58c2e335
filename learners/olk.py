"""OLK estimators (Li, Wen, Li, Xu, Zhang, Ding; IEEE TNNLS 2013): classification, regression, novelty.

Every step solves ``min_f 1/2 ||f - f_t||^2 + r/2 ||f||^2 + C slack`` under one
constraint for the new point, which gives ``f_{t+1} = (f_t + a k(x_{t+1}, .)) / (1 + r)``
with ``a`` the clipped stationary point of a one-dimensional dual
(:mod:`learners.steps`: ``olk_c_step``, ``olk_r_step``, ``olk_n_step``).

Shared parameters (all three estimators)
---------------------------------------
{kernel_parameters}
r : float >= 0
    Forgetting factor: every step divides all old coefficients by ``1 + r``, so a
    term's weight halves after about ``ln 2 / r`` steps (r = 0.001: ~693 steps).
C : float > 0
    Upper bound of the new term's dual variable (the slack penalty).
{expansion_parameters}
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import ClassifierMixin, OutlierMixin, RegressorMixin

from learners import _ovr, _stream
from learners._base import (DEFAULT_BUDGET, MulticlassClassifierMixin, OneClassMixin, OnlineKernelEstimator,
                            RegressionMixin, scale_width)
from learners._docs import EXPANSION_PARAMETERS, FITTED_EXPANSION, KERNEL_PARAMETERS, fill, filled
from learners._validation import check_choice, check_real, check_width, store_params
from learners.steps import RHO_RULES

__doc__ = fill(__doc__, kernel_parameters=KERNEL_PARAMETERS, expansion_parameters=EXPANSION_PARAMETERS)

__all__ = ["OLKClassifier", "OLKRegressor", "OLKOneClass"]


#: Rows the ``width="local"`` rule of :class:`OLKOneClass` looks at, at most (its distances take m^2 floats).
LOCAL_WIDTH_ROWS = 2048


def local_width(X, nu, budget):
    """``width="local"`` of :class:`OLKOneClass`: the median distance from a row to its ``ceil(e / nu)``-th
    nearest neighbour, among at most ``budget`` (and :data:`LOCAL_WIDTH_ROWS`) rows of ``X`` spread
    evenly over it.

    Every OLK_N term weighs at least ``nu``, and a neighbour within the width adds at least ``e^-1``
    of it, so a row with ``e / nu`` neighbours within the width scores ``f >= 1``, OLK_N's
    threshold: the rule sets the width at which a typical row of the data is just normal, and
    the rows of sparser regions fall below it. ``X`` with too few rows (or all equal) falls back
    to ``"scale"``.
    """
    k = math.ceil(math.e / nu)
    n = X.shape[0]
    m = min(n, budget if budget is not None else n, LOCAL_WIDTH_ROWS)
    if m <= k:
        return scale_width(X)
    rows = X[np.unique(np.linspace(0, n - 1, m).round().astype(np.intp))]
    sq = np.einsum("ij,ij->i", rows, rows)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * rows @ rows.T, 0.0)
    kth = np.sqrt(np.partition(d2, k, axis=1)[:, k])  # position 0 holds the row itself
    width = float(np.median(kth))
    return width if width > 0.0 else scale_width(X)


def scale_bound(y):
    """``C="scale"`` of :class:`OLKRegressor`: ``|mean(y)| + 3 std(y)`` (Cherkassky & Ma 2004,
    ``max(|mean + 3 std|, |mean - 3 std|)``), with unit deviation for fewer than two rows or
    constant targets (as ``width="scale"`` takes constant rows as unit-variance)."""
    y = np.asarray(y, dtype=np.float64)
    std = float(np.std(y)) if y.shape[0] > 1 else 0.0
    return abs(float(np.mean(y))) + 3.0 * (std if std > 0.0 else 1.0)


@filled(fitted_expansion=FITTED_EXPANSION)
class OLKClassifier(MulticlassClassifierMixin, ClassifierMixin, OnlineKernelEstimator):
    """OLK_C: online kernel classification (Li et al. 2013, eq. 30-33), any number of classes.

    Per row ``(x, y)``, ``y`` mapped to -1/+1: ``a = clip((1 + r - y f_t(x)) / k(x, x), 0, C)``,
    old coefficients divided by ``1 + r``, new term ``a y / (1 + r)`` (added when ``a > 0``).
    More than two classes: one such learner per class against the rest, over one shared
    support set (:mod:`learners._ovr`); ``predict`` takes the argmax. ``predict_proba``:
    online Platt calibration of ``f`` (see :class:`learners._base.BinaryClassifierMixin`).

    Parameters
    ----------
    kernel, width, degree, coef0, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.olk`.
    C : float > 0, default 2.0
        Bound of the dual variable (paper's classification example: 2).
    r : float >= 0, default 0.001
        Forgetting factor (paper: 0.001).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class (``f > 0``).
    offset_ : float, or ndarray of shape (n_classes,) for more than two classes
        Constant term of ``f``: always 0 (OLK has no offset).{fitted_expansion}

    Examples
    --------
    >>> import numpy as np
    >>> from learners import OLKClassifier
    >>> X = np.array([[0.0, 0.0], [3.0, 3.0]] * 5)
    >>> clf = OLKClassifier(width=1.0).fit(X, [0, 1] * 5)
    >>> clf.predict([[0.1, 0.0], [2.9, 3.1]]).tolist()
    [0, 1]
    """

    _fast_rows = True

    def __init__(self, *, kernel="gaussian", width="scale", degree=3, coef0=1.0, C=2.0, r=0.001,
                 budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        return {"C": check_real("C", self.C, low=0.0, low_open=True), "r": check_real("r", self.r, low=0.0)}

    def _stream_call(self, p):
        rule = _stream.olk_rule(_stream.OLK_C, p["r"], p["C"], sv_threshold=p["sv_threshold"])
        return _stream.olk_fit_stream, (*self._expansion_args(), rule, *self._kernel_args(p))

    def _run_ovr_stream(self, X, y, p, f_out):
        _ovr.olk_c_ovr_fit_stream(X, y, *self._expansion_args(), self._offsets,
                                  _stream.olk_rule(_stream.OLK_C, p["r"], p["C"]), *self._kernel_args(p), f_out)

    def _state_attrs(self, params):
        return {"offset_": self._offsets.copy() if self._multiclass() else 0.0}


@filled(fitted_expansion=FITTED_EXPANSION)
class OLKRegressor(RegressionMixin, RegressorMixin, OnlineKernelEstimator):
    """OLK_R: online kernel regression with an epsilon-insensitive tube (Li et al. 2013, eq. 43-52).

    Per row: ``a = min(C, ((1 + r)(y - eps) - f_t(x)) / k(x, x))`` when positive, else
    ``a* = min(C, (f_t(x) - (1 + r)(y + eps)) / k(x, x))`` when positive (never both),
    new term ``(a - a*) / (1 + r)``; points inside the tube add no term.

    Parameters
    ----------
    kernel, width, degree, coef0, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.olk`.
    C : float > 0 or "scale", default "scale"
        Bound of the dual variables, in the units of ``y`` (a new term's coefficient is at
        most ``C``, so ``f`` reaches a target of size ``|y|`` only with ``C`` of that size).
        ``"scale"``: set from the targets of the first batch, ``|mean(y)| + 3 std(y)``,
        the rule of Cherkassky & Ma (2004) for SVR (a single row counts as unit
        deviation: ``|y| + 3``). The paper's regression example uses ``C = 1`` on targets
        of size about 1.
    r : float >= 0, default 0.001
        Forgetting factor.
    epsilon : float >= 0, default 0.1
        Half-width of the insensitive tube, in the units of ``y``; larger means
        fewer support vectors.

    Attributes
    ----------
    C_ : float
        The bound in force (``C``, or the value ``"scale"`` gave).
    offset_ : float
        Constant term of ``f``: always 0.{fitted_expansion}
    """

    _fast_rows = True

    def __init__(self, *, kernel="gaussian", width="scale", degree=3, coef0=1.0, C="scale", r=0.001, epsilon=0.1,
                 budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        return {"C": check_width("C", self.C), "r": check_real("r", self.r, low=0.0),
                "epsilon": check_real("epsilon", self.epsilon, low=0.0)}

    def _reset(self):
        super()._reset()
        self.__dict__.pop("C_", None)

    def _learn(self, X, y, params):
        if "C_" not in self.__dict__:
            # the first rows fix the bound, as they fix the width
            self.C_ = scale_bound(y) if params["C"] is None else params["C"]
        return super()._learn(X, y, params)

    def _stream_call(self, p):
        C = self.C_ if p["C"] is None else p["C"]
        rule = _stream.olk_rule(_stream.OLK_R, p["r"], C, epsilon=p["epsilon"], sv_threshold=p["sv_threshold"])
        return _stream.olk_fit_stream, (*self._expansion_args(), rule, *self._kernel_args(p))

    def _state_attrs(self, params):
        return {"offset_": 0.0} if params["C"] is None else {"offset_": 0.0, "C_": params["C"]}


@filled(fitted_expansion=FITTED_EXPANSION)
class OLKOneClass(OneClassMixin, OutlierMixin, OnlineKernelEstimator):
    """OLK_N: online novelty detection (Li et al. 2013, eq. 55-69).

    Per row: ``a = clip((1 + r - f_t(x)) / k(x, x), nu, C)``, old coefficients divided
    by ``1 + r``, new term ``a / (1 + r)`` (every row adds one). A point is normal
    when ``f(x) - 1 - rho >= 0``.

    Parameters
    ----------
    kernel, degree, coef0, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.olk`.
    width : float > 0, "local" or "scale", default "local"
        Kernel width (:mod:`learners.olk`). OLK_N's threshold ``f(x) = 1 + rho`` is
        absolute, so the share of points flagged rests on the width. ``"local"``: set
        from the first batch as the median distance from a row to its ``ceil(e / nu)``-th
        nearest neighbour (:func:`local_width`), the width at which a row of typical
        density scores just above the threshold; it flagged 3.5-13.4 % of the training rows
        of standardised breast_cancer, wine, digits and 2-D blobs (OneClassSVM with
        ``nu=0.1``: 9.8-12.4 %). ``"scale"`` (``sqrt(n_features * X.var())``, the width of
        OneClassSVM's ``gamma="scale"``) is wider and flags 0-2.3 %, none at all on
        clustered data; a width of 1 flags every row of standardised data with 10 or
        more features (the kernel between two of its points is close to 0). With fewer
        than ``ceil(e / nu) + 1`` rows (one row at a time) ``"local"`` falls back to
        ``"scale"``. See docs/learners.md.
    C : float > nu, default 0.2
        Upper bound of the dual variable (paper: 0.2).
    nu : float in (0, 1], default 0.1
        Lower bound of the dual variable (paper: 0.1); must be < C.
    r : float >= 0, default 0.001
        Forgetting factor (paper: 0.001).
    rho_rule : {"paper", "primal"}, default "paper"
        ``"primal"`` (eq. 68): ``rho = max(0, f_{t+1}(x_{t+1}) - 1)`` after every step.
        ``"paper"`` (eq. 69): the same only when ``nu < a < C``, else rho is kept.
        With a normalised kernel (Gaussian, Laplacian) an interior ``a`` makes
        ``f_{t+1}(x_{t+1}) = 1`` exactly, so under ``"paper"`` rho stays at 0 (up to
        rounding and budget evictions) and the threshold is ``f(x) = 1``.

    Attributes
    ----------
    rho_ : float
        Current rho (>= 0).
    offset_ : float
        ``1 + rho_``: ``decision_function = score_samples - offset_``.{fitted_expansion}
    """

    _width_rules = ("local",)

    def __init__(self, *, kernel="gaussian", width="local", degree=3, coef0=1.0, C=0.2, nu=0.1, r=0.001,
                 rho_rule="paper", budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False,
                 random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        nu = check_real("nu", self.nu, low=0.0, high=1.0, low_open=True)
        C = check_real("C", self.C, low=0.0, low_open=True)
        if not C > nu:
            raise ValueError(f"C must be > nu (OLK_N's dual variable lies in [nu, C]), got C={C:g}, nu={nu:g}")
        check_choice("rho_rule", self.rho_rule, RHO_RULES)
        return {"C": C, "nu": nu, "r": check_real("r", self.r, low=0.0), "rho_rule": RHO_RULES[self.rho_rule]}

    def _data_width(self, X, params):
        return local_width(X, params["nu"], params["budget"])

    def _stream_call(self, p):
        rule = _stream.olk_rule(_stream.OLK_N, p["r"], p["C"], nu=p["nu"], rho_rule=p["rho_rule"],
                                sv_threshold=p["sv_threshold"])
        return _stream.olk_fit_stream, (*self._expansion_args(), rule, *self._kernel_args(p))

    def _state_attrs(self, params):
        rho = float(self._state[_stream.RHO])
        return {"rho_": rho, "offset_": 1.0 + rho}
