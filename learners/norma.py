"""NORMA estimators (Kivinen, Smola, Williamson 2004): classification, regression, novelty.

Stochastic gradient descent in the RKHS on ``loss(f(x_t), y_t) + lam/2 ||f||^2``:
each step multiplies the old coefficients by ``1 - eta_t lam`` and adds the term
``-eta_t dloss/df(x_t)`` (:mod:`learners.steps`: ``norma_*_step``).

Shared parameters (all three estimators)
---------------------------------------
{kernel_parameters}
eta : float > 0, default 0.1
    Step size (learning rate); dimensionless, in units of ``f`` per unit loss slope.
learning_rate : {"constant", "invsqrt", "decay"}, default "constant"
    ``eta_t = eta``, ``eta_t = eta / sqrt(t)`` at the ``t``-th step (NORMA Theorem 2), or
    the step decay ``eta_t = eta tau / (tau + t)`` (Vishwanathan et al. 2006, eq. 59:
    the online SVM that SVMD is compared with).
tau : float > 0, default 100.0
    ``learning_rate="decay"`` only: the step count at which ``eta_t`` has halved.
lam : float >= 0, default 0.01
    Regularisation ``lambda``; old coefficients shrink by ``1 - eta_t lam`` per step, so
    a term's weight halves after about ``ln 2 / (eta lam)`` steps. ``eta * lam < 1``.
{expansion_parameters}
"""

from __future__ import annotations

from sklearn.base import ClassifierMixin, OutlierMixin, RegressorMixin

from learners import _ovr, _stream
from learners._base import (DEFAULT_BUDGET, MulticlassClassifierMixin, OneClassMixin, OnlineKernelEstimator,
                            RegressionMixin)
from learners._docs import EXPANSION_PARAMETERS, FITTED_EXPANSION, KERNEL_PARAMETERS, fill, filled
from learners._validation import check_bool, check_choice, check_real, store_params
from learners.steps import REGRESSION_LOSSES

__doc__ = fill(__doc__, kernel_parameters=KERNEL_PARAMETERS, expansion_parameters=EXPANSION_PARAMETERS)

__all__ = ["NORMAClassifier", "NORMARegressor", "NORMAOneClass"]

LEARNING_RATES = ("constant", "invsqrt", "decay")
CLASSIFICATION_LOSSES = ("hinge", "nu", "perceptron")


class _NORMABase(OnlineKernelEstimator):
    def _check_step_params(self):
        eta = check_real("eta", self.eta, low=0.0, low_open=True)
        lam = check_real("lam", self.lam, low=0.0)
        if not eta * lam < 1.0:
            raise ValueError("eta * lam must be < 1 (old coefficients are multiplied by 1 - eta*lam each step), "
                             f"got eta={eta:g}, lam={lam:g}")
        check_choice("learning_rate", self.learning_rate, LEARNING_RATES)
        tau = check_real("tau", self.tau, low=0.0, low_open=True)
        return {"eta": eta, "lam": lam, "schedule": _stream.schedule_code(self.learning_rate, tau)}


@filled(fitted_expansion=FITTED_EXPANSION)
class NORMAClassifier(MulticlassClassifierMixin, ClassifierMixin, _NORMABase):
    """NORMA classification: soft margin, nu-classification, kernel perceptron.

    Two classes by the rules below; more (hinge and perceptron losses) by one learner
    per class against the rest over one shared support set (:mod:`learners._ovr`),
    ``predict`` taking the argmax. ``predict_proba``: online Platt calibration of ``f``
    (see :class:`learners._base.BinaryClassifierMixin`).

    Per row ``(x, y)``, ``y`` mapped to -1/+1, ``f = f_t(x)`` with offset:

    - ``loss="hinge"``: ``max(0, margin - y f)``; when ``y f < margin`` add
      ``alpha = eta_t y`` (and ``b += eta_t y``);
    - ``loss="nu"``: ``max(0, rho - y f) - nu rho`` with rho learnt: when ``y f < rho``
      add ``eta_t y`` and ``rho -= eta_t (1 - nu)``, else ``rho += eta_t nu``
      (the paper uses ``lam = 1``);
    - ``loss="perceptron"``: ``max(0, -y f)``; when ``y f <= 0`` add ``eta_t y``.
      ``lam=0`` is the classic kernel perceptron, ``lam > 0`` its regularised form.

    Parameters
    ----------
    kernel, width, degree, coef0, learning_rate, tau, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.norma`.
    loss : {"hinge", "nu", "perceptron"}, default "hinge"
    margin : float >= 0, default 1.0
        The fixed margin rho of ``loss="hinge"`` (units of ``f``); the initial rho of
        ``loss="nu"``; unused by the perceptron.
    nu : float in (0, 1], default 0.5
        ``loss="nu"`` only: target fraction of margin errors.
    eta : float > 0, default 1.0
        Step size: each margin error adds the term ``eta y k(x, .)`` (see :mod:`learners.norma`).
    lam : float >= 0, default 0.001
        Regularisation: old terms shrink by ``1 - eta lam`` per row (halving after ~690 rows).
    fit_intercept : bool, default False
        Learn the offset ``b`` (updated by ``eta_t y`` on every added term, not regularised).
        Off by default: the offset moves by ``eta`` on every margin error and is never
        shrunk, while with a Gaussian kernel in a few dimensions the kernel values
        between distinct points are small, so ``b`` can swamp ``f`` (measured with
        ``learners-bench streams``: 1 to 10 points of prequential accuracy lost on every
        stream but Phishing; see docs/learners.md).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class (``f > 0``).
    offset_ : float, or ndarray of shape (n_classes,) for more than two classes
        The offset ``b`` (one per class).
    rho_ : float
        Margin in force: learnt for ``loss="nu"``, ``margin`` for hinge, 0 for the perceptron.{fitted_expansion}
    """

    _fast_rows = True

    def __init__(self, *, loss="hinge", kernel="gaussian", width="scale", degree=3, coef0=1.0, eta=1.0,
                 learning_rate="constant", tau=100.0, lam=0.001, margin=1.0, nu=0.5, fit_intercept=False,
                 budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        p = self._check_step_params()
        p["loss"] = check_choice("loss", self.loss, CLASSIFICATION_LOSSES)
        p["margin"] = check_real("margin", self.margin, low=0.0)
        p["nu"] = check_real("nu", self.nu, low=0.0, high=1.0, low_open=True)
        p["use_offset"] = check_bool("fit_intercept", self.fit_intercept)
        return p

    def _init_state(self, p):
        self._state[_stream.RHO] = p["margin"] if p["loss"] == "nu" else 0.0

    def _rule(self, p):
        if p["loss"] == "nu":
            return _stream.norma_rule(_stream.NORMA_NU, p, nu=p["nu"], use_offset=p["use_offset"])
        perceptron = p["loss"] == "perceptron"
        return _stream.norma_rule(_stream.NORMA_HINGE, p, margin=0.0 if perceptron else p["margin"],
                                  strict=not perceptron, use_offset=p["use_offset"])

    def _stream_call(self, p):
        return _stream.norma_fit_stream, (*self._expansion_args(), self._rule(p), *self._kernel_args(p))

    def _handles_many_classes(self):
        """Whether more than two classes can be learnt: not with ``loss="nu"`` (river's adapter asks)."""
        return self.loss != "nu"

    def _check_ovr_params(self, p):
        super()._check_ovr_params(p)
        if p["loss"] == "nu":
            raise ValueError(f"loss='nu' is for two classes; NORMAClassifier with {self.classes_.shape[0]} "
                             "classes takes loss='hinge' or 'perceptron'")

    def _run_ovr_stream(self, X, y, p, f_out):
        _ovr.norma_ovr_fit_stream(X, y, *self._expansion_args(), self._offsets, self._rule(p), *self._kernel_args(p),
                                  f_out)

    def _state_attrs(self, p):
        if p["loss"] == "nu":
            rho = float(self._state[_stream.RHO])
        else:
            rho = 0.0 if p["loss"] == "perceptron" else p["margin"]
        return {"offset_": self._offsets.copy() if self._multiclass() else float(self._state[_stream.OFFSET]),
                "rho_": rho}


@filled(fitted_expansion=FITTED_EXPANSION)
class NORMARegressor(RegressionMixin, RegressorMixin, _NORMABase):
    """NORMA regression with the losses of Kivinen et al. (eq. 17-21).

    Per row with residual ``res = y - f_t(x)`` (offset included):

    - ``"squared"``: add ``eta_t res``;
    - ``"epsilon_insensitive"``: add ``eta_t sgn(res)`` when ``|res| > epsilon``;
    - ``"nu_epsilon_insensitive"``: as above, and epsilon grows by ``eta_t (1 - nu)``
      outside the tube, shrinks by ``eta_t nu`` inside (kept >= 0);
    - ``"huber"``: add ``eta_t sgn(res)`` when ``|res| > sigma``, else ``eta_t res / sigma``;
    - ``"adaptive_huber"``: as Huber, and sigma grows by ``eta_t (1 - nu)`` when
      ``|res| > sigma``, else shrinks by ``eta_t nu`` (kept >= 0).

    Parameters
    ----------
    kernel, width, degree, coef0, learning_rate, tau, lam, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.norma`.
    loss : {"squared", "epsilon_insensitive", "nu_epsilon_insensitive", "huber", "adaptive_huber"}, default "squared"
    eta : float > 0, default 0.3
        Step size: with the squared loss each row corrects the share ``eta k(x, x)`` of its
        residual (a normalised kernel: ``eta``), so ``y`` needs no scaling. 0.3 measured
        best of 0.1-0.8 on three standardised data sets (cross-validated R^2 on
        ``make_regression``, Friedman #1, diabetes: 0.81, 0.65, 0.36 against 0.75, 0.55,
        0.36 for 0.1; see docs/learners.md); steps of 2 or more diverge.
    epsilon : float >= 0, default 0.1
        Tube half-width in units of ``y`` (initial value for ``"nu_epsilon_insensitive"``).
    sigma : float > 0, default 1.0
        Huber's threshold in units of ``y`` (initial value for ``"adaptive_huber"``).
    nu : float in (0, 1], default 0.5
        Adaptive losses: the fraction of residuals left outside the tube / beyond sigma.
    fit_intercept : bool, default True
        Learn the offset ``b`` (changed by every added coefficient, not regularised).

    Attributes
    ----------
    offset_ : float
        The offset ``b``.
    epsilon_ : float
        Tube half-width in force (learnt by ``"nu_epsilon_insensitive"``).
    sigma_ : float
        Huber threshold in force (learnt by ``"adaptive_huber"``).{fitted_expansion}
    """

    _fast_rows = True

    def __init__(self, *, loss="squared", kernel="gaussian", width="scale", degree=3, coef0=1.0, eta=0.3,
                 learning_rate="constant", tau=100.0, lam=0.01, epsilon=0.1, sigma=1.0, nu=0.5, fit_intercept=True,
                 budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False, random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        p = self._check_step_params()
        p["loss"] = REGRESSION_LOSSES[check_choice("loss", self.loss, REGRESSION_LOSSES)]
        p["epsilon"] = check_real("epsilon", self.epsilon, low=0.0)
        p["sigma"] = check_real("sigma", self.sigma, low=0.0, low_open=True)
        p["nu"] = check_real("nu", self.nu, low=0.0, high=1.0, low_open=True)
        p["use_offset"] = check_bool("fit_intercept", self.fit_intercept)
        return p

    def _init_state(self, p):
        self._state[_stream.EPSILON] = p["epsilon"]
        self._state[_stream.SIGMA] = p["sigma"]

    def _stream_call(self, p):
        rule = _stream.norma_rule(_stream.NORMA_REGRESSION, p, loss=p["loss"], nu=p["nu"], use_offset=p["use_offset"])
        return _stream.norma_fit_stream, (*self._expansion_args(), rule, *self._kernel_args(p))

    def _state_attrs(self, p):
        state = self._state
        return {"offset_": float(state[_stream.OFFSET]), "epsilon_": float(state[_stream.EPSILON]),
                "sigma_": float(state[_stream.SIGMA])}


@filled(fitted_expansion=FITTED_EXPANSION)
class NORMAOneClass(OneClassMixin, OutlierMixin, _NORMABase):
    """nu-NORMA novelty detection (Kivinen et al., eq. 16).

    Loss ``max(0, rho - f(x)) - nu rho``. Per row: when ``f_t(x) < rho`` add
    ``alpha = eta_t`` and ``rho -= eta_t (1 - nu)``; else ``rho += eta_t nu``. A point is
    normal when ``f(x) - rho >= 0``; about a fraction ``nu`` of a stationary stream
    falls below.

    Parameters
    ----------
    kernel, width, degree, coef0, eta, learning_rate, tau, lam, budget, sv_threshold, n_passes, shuffle, random_state
        See :mod:`learners.norma`.
    nu : float in (0, 1], default 0.1
        Target fraction of novelties (margin errors).
    learning_rate : {"constant", "invsqrt", "decay"}, default "invsqrt"
        Unlike the other NORMA estimators the default decreases, ``eta_t = eta / sqrt(t)``,
        as in the paper's novelty experiment: with a constant rate the pair ``f``/rho
        keeps fluctuating and the fraction of novelties on a stationary stream
        overshoots ``nu``. Use ``"constant"`` for drifting streams (background
        subtraction).

    Attributes
    ----------
    rho_ : float
        Learnt threshold rho.
    offset_ : float
        Equal to ``rho_``: ``decision_function = score_samples - offset_``.{fitted_expansion}
    """

    def __init__(self, *, kernel="gaussian", width="scale", degree=3, coef0=1.0, eta=0.1, learning_rate="invsqrt",
                 tau=100.0, lam=0.01, nu=0.1, budget=DEFAULT_BUDGET, sv_threshold=0.0, n_passes=1, shuffle=False,
                 random_state=None):
        store_params(self, locals())

    def _check_rule_params(self):
        p = self._check_step_params()
        p["nu"] = check_real("nu", self.nu, low=0.0, high=1.0, low_open=True)
        return p

    def _stream_call(self, p):
        rule = _stream.norma_rule(_stream.NORMA_NOVELTY, p, nu=p["nu"])
        return _stream.norma_fit_stream, (*self._expansion_args(), rule, *self._kernel_args(p))

    def _state_attrs(self, p):
        rho = float(self._state[_stream.RHO])
        return {"rho_": rho, "offset_": rho}
