"""What the six online kernel estimators share: the bounded expansion and its bookkeeping.

Each estimator owns one bounded kernel expansion (:mod:`learners.expansion`)
``f(x) = sum_j alpha_j k(x_j, x) + b`` held as arrays, and hands every row of a
``partial_fit`` batch to one jitted loop of :mod:`learners._stream`, which calls
the rule's step function of :mod:`learners.steps` per row.

Two ways in, one state:

- scikit-learn's ``fit`` / ``partial_fit`` / ``predict`` on 2-D batches, with
  scikit-learn's input checks; the parameters are validated again only when one of
  them changed since the previous call;
- river's ``learn_one(x, y)`` / ``predict_one(x)`` / ``score_one(x)`` on single rows,
  a dict (feature order fixed on first sight, as river does) or a 1-D array, checked
  in a few microseconds and run straight into the same jitted loop.

``partial_fit(..., return_scores=True)`` and ``learn_one(..., return_score=True)``
return the scores the stream loop computed before learning from each row
(test-then-train in one kernel pass).
"""

from __future__ import annotations

import math
import numbers
import operator
import weakref

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, ensure_all_finite=True,
                      **kwargs):
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **kwargs)

from learners import _calibration, _ovr, _stream
from learners._row_plan import RowPlan
from learners._docs import FIT, PARTIAL_FIT, SCORE_ROWS, Y_IGNORED, Y_TARGETS, doc
from learners._persist import PersistMixin
from learners._arrays import jit_array, jit_arrays
from learners._validation import check_bool, check_choice, check_int, check_real, check_width
from learners.kernels import EMPTY_LUT, KERNELS

#: Default ``budget``: the number of kernel terms kept (the most recent ones).
DEFAULT_BUDGET = 512

#: Capacity of an unbounded expansion (``budget=None``) before it first grows.
_INITIAL_CAPACITY = 64

#: Fitted attributes a :class:`RowPlan` holds or depends on: setting one drops the plan.
_PLAN_INPUTS = frozenset({"_sv", "_coef", "_ring", "_state", "_offsets", "_calibrator", "_feature_keys", "classes_",
                          "width_", "n_features_in_", "feature_names_in_"})


#: Per-estimator caches that are not fitted state (the validated parameters, the single-row
#: plan, the dict keys, the label codes): kept out of the instance ``__dict__``, so pickles,
#: checkpoints and ``clone`` never see them.
_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def thaw_arrays(model) -> bool:
    """Give ``model`` writable copies of its read-only arrays (and of those in its tuples and lists), which
    learning writes into: a model whose arrays a reader froze, or that was loaded onto read-only memory.
    Returns whether it had any. One pass over the model's attributes (it runs before every learnt row)."""
    state = vars(model)
    # (:func:`_frozen` written out for the attributes themselves: a call for each costs a microsecond a row)
    frozen = [k for k, v in state.items() if (isinstance(v, np.ndarray) and not v.flags.writeable)
              or (isinstance(v, (tuple, list)) and any(map(_frozen, v)))]
    for k in frozen:
        state[k] = _thawed(state[k])
    return bool(frozen)


def _frozen(v) -> bool:
    if isinstance(v, np.ndarray):
        return not v.flags.writeable
    return isinstance(v, (tuple, list)) and any(map(_frozen, v))


def _thawed(v):
    if isinstance(v, (tuple, list)):
        return type(v)(map(_thawed, v))
    return v.copy() if _frozen(v) else v


def _cache(est):
    cache = _CACHES.get(est)
    if cache is None:
        cache = _CACHES[est] = {}
    return cache


def scale_width(X):
    """``width="scale"``: ``sqrt(n_features * X.var())``, scikit-learn's ``gamma="scale"``
    (``gamma = 1 / (n_features X.var())``) for ``k = exp(-||x - y||^2 / width^2)``.

    When ``X`` is constant (a single standardised row is all zeros) the features are
    taken as unit-variance: ``sqrt(n_features)`` (scikit-learn takes ``gamma = 1``).
    """
    var = float(np.var(X))
    return math.sqrt(X.shape[1] * (var if var > 0.0 else 1.0))


def binary_classes(y, classes, name):
    """The two sorted labels of a binary classifier from the first batch ``y`` or ``classes``.

    0/1, +-1, bool and string labels all work; a first batch of one class needs
    ``classes=``, and says so.
    """
    if classes is not None:
        cls = np.unique(np.asarray(classes))
        if cls.shape[0] != 2:
            raise ValueError(f"{name} is a binary classifier: classes must hold exactly 2 labels, "
                             f"got {cls.shape[0]} ({cls.tolist()})")
        return cls
    cls = np.unique(y)
    if cls.shape[0] > 2:
        raise ValueError(f"Only binary classification is supported. {name} got y with {cls.shape[0]} classes "
                         f"({cls.tolist()[:10]}); wrap it in sklearn.multiclass.OneVsRestClassifier "
                         "for more than two classes")
    if cls.shape[0] < 2:
        raise ValueError(f"{name} needs samples of 2 classes, but y has only 1 class "
                         f"({cls.tolist()}); pass classes=[label_a, label_b] to the first "
                         "partial_fit call when a batch holds one class")
    return cls


def label_of_score(classes, f):
    """The label a classifier's score ``f`` of one row picks: argmax of an array, else the sign of ``f``
    (``classes_[1]`` when positive), as a plain Python value."""
    if isinstance(f, np.ndarray):
        label = classes[int(np.argmax(f))]
    elif classes.shape[0] == 1:
        label = classes[0]
    else:
        label = classes[1] if f > 0 else classes[0]
    return label.item() if isinstance(label, np.generic) else label


def check_known_labels(y, classes, name):
    """Raise unless every label of ``y`` is one of ``classes``."""
    unseen = ~np.isin(y, classes)
    if unseen.any():
        raise ValueError(f"y contains labels {np.unique(y[unseen]).tolist()[:10]} that are not among the "
                         f"classes {classes.tolist()} of this {name}")


class OnlineKernelEstimator(PersistMixin, BaseEstimator):
    """Base class: kernel parameters, the bounded expansion, the stream driver.

    Subclasses implement ``_check_rule_params`` (validated rule parameters as a
    dict), ``_stream_call`` (the jitted loop of :mod:`learners._stream` and its
    arguments; or ``_run_stream``, one jitted pass over validated rows) and, where
    the rule has them, ``_init_state`` (fill the fresh ``state`` array) and
    ``_state_attrs`` (the fitted scalars its state holds).
    """

    _supervised = True

    #: The arrays holding one row per slot of the expansion (an unbounded one grows them together).
    _slot_arrays = ("_sv", "_coef")

    #: Whether single rows take the :class:`learners._row_plan.RowPlan` fast path (the subclass
    #: implements ``_stream_call``).
    _fast_rows = False

    #: Data rules for ``width`` besides ``"scale"`` that the subclass implements in ``_data_width``.
    _width_rules = ()

    # ------------------------------------------------------------------ params
    def _check_kernel_params(self):
        check_choice("kernel", self.kernel, KERNELS)
        width = check_width("width", self.width, self._width_rules)
        degree = float(check_int("degree", self.degree, low=1))
        coef0 = check_real("coef0", self.coef0, low=0.0)
        budget = check_int("budget", self.budget, low=1, allow_none=True)
        sv_threshold = check_real("sv_threshold", self.sv_threshold, low=0.0)
        n_passes = check_int("n_passes", self.n_passes, low=1)
        check_bool("shuffle", self.shuffle)
        return {
            "kind": KERNELS[self.kernel],
            "width": width,
            "degree": degree,
            "coef0": coef0,
            "budget": budget,
            "sv_threshold": sv_threshold,
            "n_passes": n_passes,
        }

    def _check_params(self):
        params = self._check_kernel_params()
        params.update(self._check_rule_params())
        return params

    def _check_rule_params(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _init_state(self, params):
        """Fill the fresh ``state`` array beyond :func:`learners._stream.new_state`'s defaults."""

    def _publish_state(self, params):
        """Copy the scalar state into the fitted attributes: ``n_steps_`` and those of :meth:`_state_attrs`.

        Written into the instance dict directly (after every row of ``learn_one``): they are neither
        parameters nor plan inputs, so ``__setattr__``'s bookkeeping has nothing to do for them.
        """
        attrs = self._state_attrs(params)
        attrs["n_steps_"] = int(self._state[_stream.STEPS])
        self.__dict__.update(attrs)

    def _state_attrs(self, params):
        """``{name_: value}``: the fitted scalars the rule's state holds besides ``n_steps_``."""
        return {}

    def _params(self):
        """:meth:`_check_params`, run again only after a parameter was set (``set_params`` or assignment)."""
        cache = _cache(self)
        params = cache.get("params")
        if params is None:
            params = cache["params"] = self._check_params()
        return params

    def __setattr__(self, name, value):
        # parameters are the public attributes without a trailing underscore: setting one
        # (set_params, clone, est.width = 2) drops the validated copy and the single-row plan;
        # setting what the plan holds (arrays, classes, width, feature names) drops the plan
        if name[0] != "_" and name[-1] != "_":
            cache = _CACHES.get(self)
            if cache:
                cache.pop("params", None)
                cache.pop("plan", None)
        elif name in _PLAN_INPUTS:
            cache = _CACHES.get(self)
            if cache:
                cache.pop("plan", None)
        object.__setattr__(self, name, value)

    # --------------------------------------------------------------- expansion
    def _reset(self):
        for name in ("_sv", "_coef", "_ring", "_state", "_offsets", "_calibrator", "_feature_keys", "classes_",
                     "n_features_in_", "feature_names_in_", "width_"):
            if hasattr(self, name):
                delattr(self, name)
        _CACHES.pop(self, None)

    def _start(self, X, params):
        """First rows: fix the kernel width (``"scale"``: from this batch) and allocate."""
        width = params["width"]
        self.width_ = scale_width(X) if width is None else self._data_width(X, params) if isinstance(width, str) \
            else width
        self._allocate(X.shape[1], params)

    def _data_width(self, X, params):  # pragma: no cover - only for the rules a subclass lists
        """The width a rule of ``_width_rules`` gives for the first rows ``X``."""
        raise NotImplementedError

    def _allocate(self, n_features, params):
        capacity = params["budget"] if params["budget"] is not None else _INITIAL_CAPACITY
        self._sv = np.zeros((capacity, n_features), dtype=np.float64)
        self._coef = np.zeros(capacity, dtype=np.float64)
        self._ring = np.zeros(2, dtype=np.int64)
        self._state = _stream.new_state()
        self._init_state(params)

    def _ensure_capacity(self, n_new, params):
        """Unbounded expansions (``budget=None``) grow to hold ``n_new`` more terms."""
        if params["budget"] is not None:
            # a budget set after the first call: keep the expansion as allocated
            return
        capacity = self._sv.shape[0]
        count = int(self._ring[1])
        if count + n_new <= capacity:
            return
        new_capacity = max(count + n_new, 2 * capacity)
        order = self._order()
        for name in self._slot_arrays:
            old = getattr(self, name)
            new = np.zeros((new_capacity,) + old.shape[1:], dtype=np.float64)
            new[:count] = old[order]
            setattr(self, name, new)
        self._ring[:] = (0, count)

    def _order(self):
        capacity = self._sv.shape[0]
        return (int(self._ring[0]) + np.arange(int(self._ring[1]))) % capacity

    # ------------------------------------------------------------------ public
    @property
    def support_vectors_(self):
        """ndarray of shape (n_support_, n_features_in_): the expansion's points, oldest first."""
        self._check_fitted_expansion()
        return self._sv[self._order()].copy()

    @property
    def dual_coef_(self):
        """ndarray of shape (n_support_,), or (n_support_, n_classes) for a multiclass classifier:
        the true coefficients ``alpha_j`` (global scale folded in)."""
        self._check_fitted_expansion()
        return self._state[_stream.SCALE] * self._coef[self._order()]

    @property
    def n_support_(self):
        """int: number of terms in the expansion (at most ``budget``)."""
        self._check_fitted_expansion()
        return int(self._ring[1])

    def _check_fitted_expansion(self):
        if not hasattr(self, "_state"):
            raise AttributeError(f"This {type(self).__name__} instance is not fitted yet; call fit or partial_fit")

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_state")

    # ------------------------------------------------------------------ driver
    def _validate_X(self, X, y, reset):
        if self._supervised:
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
            X, y = validate_data(self, X, y, reset=reset, dtype=np.float64, order="C",
                                 y_numeric=not self._is_classifier(), ensure_all_finite=True)
            return jit_array(X), y
        X = validate_data(self, X, reset=reset, dtype=np.float64, order="C", ensure_all_finite=True)
        return jit_array(X), None

    def _is_classifier(self):
        return False

    @doc(FIT, passes="``n_passes`` times", y=Y_TARGETS + " or None\n            Labels or targets; ignored by "
         "the novelty detectors.")
    def fit(self, X, y=None):
        return self._fit(X, y if self._supervised else None)

    def _partial_fit(self, X, y, classes, params, return_scores=False):
        first = not hasattr(self, "_state")
        if not first:
            self._thaw()
        X, y = self._validate_X(X, y, reset=first)
        if first:
            self._feature_keys = None
            _CACHES.pop(self, None)
        if self._is_classifier():
            y = self._encode_labels(y, classes, first)
        if first:
            self._start(X, params)
        f_out = self._learn(X, y, params)
        return self._scores(f_out) if return_scores else self

    def _scores(self, f_out):
        """What ``return_scores`` hands back: the stream's ``f_t(x)`` (subclasses may reshape it)."""
        return f_out

    def _learn(self, X, y, params):
        self._ensure_capacity(X.shape[0], params)
        f_out = np.empty(X.shape[0], dtype=np.float64)
        self._run_stream(X, y, params, f_out)
        self._publish_state(params)
        return f_out

    def _fit(self, X, y, classes=None):
        params = self._params()
        self._reset()
        X, y = self._validate_X(X, y, reset=True)
        self._feature_keys = None
        if self._is_classifier():
            y = self._encode_labels(y, classes, True)
        self._start(X, params)
        rng = check_random_state(self.random_state) if self.shuffle else None
        for _ in range(params["n_passes"]):
            if rng is not None:
                order = rng.permutation(X.shape[0])
                Xp = np.ascontiguousarray(X[order])
                yp = None if y is None else np.ascontiguousarray(y[order])
            else:
                Xp, yp = X, y
            self._learn(Xp, yp, params)
        return self

    def _kernel_args(self, params):
        width = params["width"]
        if width is None or isinstance(width, str):
            width = self.width_
        return params["kind"], width, params["degree"], params["coef0"], EMPTY_LUT

    def _raw_decision(self, X):
        """``sum_j alpha_j k(x_j, x)`` for the rows of ``X`` (no offset)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite=True)
        return self._raw_decision_rows(jit_array(X))

    def _raw_decision_rows(self, X):
        """:meth:`_raw_decision` on rows already validated (:func:`~learners._arrays.jit_array`, 2-D)."""
        params = self._params()
        out = np.empty(X.shape[0], dtype=np.float64)
        kind, width, degree, coef0, lut = self._kernel_args(params)
        _stream.expansion_decision(X, *jit_arrays(self._sv, self._coef, self._ring),
                                   float(self._state[_stream.SCALE]), kind, width, degree, coef0, lut, out)
        return out

    def _run_stream(self, X, y, params, f_out):
        """One jitted pass over validated rows: the loop and arguments :meth:`_stream_call` names."""
        stream, args = self._stream_call(params)
        stream(X, _stream.NO_MEMO if y is None else jit_array(y), *args, f_out, _stream.NO_MEMO, _stream.NO_MEMO)

    def _stream_call(self, params):  # pragma: no cover - abstract
        """``(loop, args)``: the stream loop of :mod:`learners._stream` and its arguments between ``X, y``
        and ``f_out``."""
        raise NotImplementedError

    def _expansion_args(self):
        """The expansion's arrays, as the stream loops take them."""
        return self._sv, self._coef, self._ring, self._state

    # ------------------------------------------------------------- single rows
    def _raw_one(self, X):
        """:meth:`_raw_decision_rows` of one validated row of shape (1, n_features), as a float."""
        return float(self._raw_decision_rows(X)[0])

    def _plan(self):
        """The single-row :class:`RowPlan` of this model, or None when its rows take the full path
        (not fitted, more than two classes or one, no fast path for this estimator)."""
        cache = _CACHES.get(self)
        plan = cache.get("plan") if cache else None
        if plan is None:
            plan = False
            if self._fast_rows and hasattr(self, "_state") and (
                    not hasattr(self, "classes_") or self.classes_.shape[0] == 2) and all(
                    a.flags.writeable for a in self._expansion_args()):
                plan = RowPlan(self, self._params(), self._row_keys())
            _cache(self)["plan"] = plan
        return plan

    def _learn_fast(self, plan, x, target):
        """``learn_one`` on the plan: ``f_t(x)``, or None when the row needs the full path."""
        X = plan.row(x)
        if X is None:
            return None
        f = plan.learn(X, target)
        if f is not None:
            self._publish_state(plan.params)
        return f

    def _score_fast(self, x):
        """``(raw f(x) without the offset, plan)`` of one row on the plan; raw is None when the row
        needs the full path."""
        plan = self._plan()
        if plan:
            X = plan.row(x)
            if X is not None:
                return plan.score(X), plan
        return None, plan

    def _row_keys(self):
        """The feature names of dict rows once fixed (first dict row, or ``fit`` on a DataFrame), else None."""
        stored = self.__dict__.get("_feature_keys")
        if stored is not None:
            return tuple(stored.tolist())
        names = getattr(self, "feature_names_in_", None)
        return tuple(names) if names is not None else None

    def _row(self, x):
        """One row (a dict or a 1-D array-like) as a :func:`~learners._arrays.jit_array` of shape
        (1, n_features).

        A dict's keys fix the feature order on first sight (or follow
        ``feature_names_in_`` when ``fit`` saw a DataFrame).
        """
        if type(x) is np.ndarray and x.ndim == 1 and x.dtype == np.float64 and x.flags.c_contiguous and \
                x.flags.writeable and x.shape[0] == self.__dict__.get("n_features_in_", -1):
            if not _stream.finite_row(x.reshape(1, -1)):
                raise ValueError(f"x contains NaN or infinity: {x.tolist()[:10]}")
            return x.reshape(1, -1)
        if isinstance(x, dict):
            cache = _cache(self)
            keys = cache.get("keys")
            if keys is None:
                keys = self._row_keys()
                if keys is None:
                    keys = tuple(x)
                    if hasattr(self, "n_features_in_") and len(keys) != self.n_features_in_:
                        raise ValueError(f"x has {len(x)} features, but {type(self).__name__} is expecting "
                                         f"{self.n_features_in_} features as input")
                    # fitted state (saved with the model): strings as a str array, other keys as objects
                    self._feature_keys = np.array(keys, dtype=str if all(isinstance(k, str) for k in keys)
                                                  else object)
                cache["keys"] = keys
            if len(x) != len(keys):
                extra = sorted(map(str, set(x) - set(keys)))[:5]
                missing = sorted(map(str, set(keys) - set(x)))[:5]
                raise ValueError(f"x must have the {len(keys)} features seen first; missing {missing}, "
                                 f"new {extra}")
            getter = cache.get("getter")
            if getter is None:
                getter = cache["getter"] = operator.itemgetter(*keys)
            try:
                row = np.array(getter(x), dtype=np.float64).reshape(-1)
            except KeyError as exc:
                raise ValueError(f"x lacks the feature {exc.args[0]!r} seen in the first rows") from None
            except (TypeError, ValueError):
                raise ValueError(f"x must map feature names to numbers, got {x!r}"[:300]) from None
        else:
            try:
                row = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"x must be a dict of numbers or a 1-D array of numbers, "
                                 f"got {type(x).__name__}") from None
            if row.ndim != 1:
                raise ValueError(f"x must be one row (a dict or a 1-D array), got an array of shape {row.shape}; "
                                 "use partial_fit / predict for batches")
            n = getattr(self, "n_features_in_", None)
            if n is not None and row.shape[0] != n:
                raise ValueError(f"x has {row.shape[0]} features, but {type(self).__name__} is expecting "
                                 f"{n} features as input")
        if not np.isfinite(row).all():
            raise ValueError(f"x contains NaN or infinity: {row.tolist()[:10]}")
        if row.shape[0] == 0:
            raise ValueError("x has no features")
        return jit_array(row.reshape(1, -1))

    def _learn_row(self, X, y, params):
        """Learn from one validated row (``y`` encoded); starts the model on the first row."""
        if not hasattr(self, "_state"):
            self.n_features_in_ = X.shape[1]
            self._start(X, params)
        else:
            self._thaw()
        return self._learn(X, y, params)

    def _thaw(self):
        """:func:`thaw_arrays` of the model, before it learns (its single-row plan rebuilt after)."""
        if thaw_arrays(self):
            _CACHES.pop(self, None)

    def _require_fitted(self):
        if not hasattr(self, "_state"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call learn_one, "
                                 "partial_fit or fit first")


class BinaryDecisionMixin:
    """``predict`` from the sign of ``decision_function``, and the multi-class tag (binary-only unless
    ``_native_multiclass``).

    Shared by the kernel estimators and the baselines (mix in before ClassifierMixin).
    """

    @doc(SCORE_ROWS, returns="y : ndarray of shape (n_samples,)",
         summary="Class labels: ``classes_[1]`` where ``decision_function(X) > 0``, else ``classes_[0]``.")
    def predict(self, X):
        d = self.decision_function(X)
        return self.classes_[(d > 0).astype(np.intp)]

    #: Whether more than two classes are learnt natively (else the estimator is binary-only).
    _native_multiclass = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._native_multiclass
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"binary_only": not self._native_multiclass}


class StreamClassifierMixin:
    """What the online classifiers share: ``fit``/``partial_fit`` on labelled batches and the label checks.

    The first call fixes ``classes_`` (``partial_fit``'s ``classes=`` or the labels of the
    batch); later calls must hold only those labels. ``_native_multiclass`` says whether
    more than two are allowed. Batches and single rows score through the same methods:
    subclasses implement ``_encode_labels`` (calling :meth:`_check_labels`),
    ``_decision_rows(X)`` (validated rows: ``f``, (n,) or (n, n_classes)),
    ``_decision_one(X)`` (one row: a float or an array) and ``_proba(f)``, offering
    ``predict_proba`` only where ``_has_probabilities()``.
    """

    #: Whether more than two classes are learnt natively.
    _native_multiclass = False

    def _is_classifier(self):
        return True

    @doc(PARTIAL_FIT, y=Y_TARGETS + "\n        classes : array-like, optional\n            Every label; needed on the "
         "first call when its batch does not hold all of them.", scores="the decision values ``f_t(x)``",
         shape="(n_samples,) (binary) or (n_samples, n_classes)")
    def partial_fit(self, X, y, classes=None, *, return_scores=False):
        return self._partial_fit(X, y, classes, self._params(), return_scores)

    # ------------------------------------------------------------- scores
    @doc(SCORE_ROWS, returns="f : ndarray of shape (n_samples,) or (n_samples, n_classes)",
         summary="``f(x)`` (offsets included): shape (n_samples,) for two classes (positive for\n"
                 "        ``classes_[1]``), else (n_samples, n_classes), one score per class.")
    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite=True)
        return self._decision_rows(jit_array(X))

    @doc(SCORE_ROWS, summary="Class labels: the sign of ``f`` for two classes, its argmax for more.",
         returns="y : ndarray of shape (n_samples,)")
    def predict(self, X):
        return self._labels(self.decision_function(X))

    def _labels(self, f):
        if f.ndim == 2:
            return self.classes_[np.argmax(f, axis=1)]
        if self.classes_.shape[0] == 1:
            return np.repeat(self.classes_, f.shape[0])
        return self.classes_[(f > 0).astype(np.intp)]

    def _has_probabilities(self):
        """Whether this model gives class probabilities (``predict_proba`` exists only then)."""
        return True

    def _offers_probabilities(self):  # for available_if: the subclass's _has_probabilities
        return self._has_probabilities()

    @available_if(_offers_probabilities)
    @doc(SCORE_ROWS, summary="Class probabilities from ``decision_function`` (how: see the class's notes).",
         returns="proba : ndarray of shape (n_samples, n_classes), rows summing to 1")
    def predict_proba(self, X):
        return self._proba(self.decision_function(X))

    def score_one(self, x):
        """``decision_function`` of one row: a float (binary) or an array of one score per class."""
        raw, _ = self._score_fast(x)
        if raw is not None:
            return raw + self.offset_
        self._require_fitted()
        return self._decision_one(self._row(x))

    def predict_one(self, x):
        """The predicted label of one row (a dict or a 1-D array)."""
        raw, plan = self._score_fast(x)
        if raw is not None:
            return plan.labels[raw + self.offset_ > 0]
        self._require_fitted()
        return label_of_score(self.classes_, self._decision_one(self._row(x)))

    @available_if(_offers_probabilities)
    def predict_proba_one(self, x):
        """``{label: probability}`` for one row (as :meth:`predict_proba`)."""
        self._require_fitted()
        p = self._proba(self._decision_rows(self._row(x)))[0]
        return {(c.item() if isinstance(c, np.generic) else c): float(pk) for c, pk in zip(self.classes_, p)}

    def _check_labels(self, y, classes, first):
        """Fix ``classes_`` on the first call (from ``y`` or ``classes``); later, check ``y`` against them."""
        name = type(self).__name__
        check_classification_targets(y)
        if first:
            if self._native_multiclass:
                cls = np.unique(np.asarray(classes)) if classes is not None else np.unique(y)
                if cls.shape[0] < 2:
                    raise ValueError(f"{name} needs samples of at least 2 classes, but y has only 1 class "
                                     f"({cls.tolist()}); pass classes=[every label] to the first "
                                     "partial_fit call when a batch does not hold them all")
            else:
                cls = binary_classes(y, classes, name)
            self.classes_ = cls
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes={list(classes)} differs from the classes {self.classes_.tolist()} "
                             "of the first partial_fit call")
        check_known_labels(y, self.classes_, name)


class BinaryClassifierMixin(StreamClassifierMixin, BinaryDecisionMixin):
    """Binary labels of any two values: ``classes_[0]`` maps to -1, ``classes_[1]`` to +1.

    Rows one at a time: ``learn_one(x, y)``, ``predict_one(x)``, ``score_one(x)``
    (``f(x)``), ``predict_proba_one(x)``. ``learn_one`` takes labels as they come
    (river's way): a model that has seen one class predicts it.

    ``predict_proba`` calibrates ``f`` online: ``P(classes_[1] | x) = 1 / (1 + exp(-A f(x)))``
    (a softmax of ``A f_k(x)`` for more classes), the temperature ``A`` moved by one
    AdaGrad step of the log-loss on every row's ``f_t(x)``, the score the model gave
    the row *before* learning from it, so the calibration sees honest out-of-sample
    scores; its most probable class is always ``predict``'s (:mod:`learners._calibration`).
    """

    def _proba(self, f):
        if self.classes_.shape[0] == 1:
            return np.ones((f.shape[0], 1))
        return _calibration.probabilities(f, self._calibrator)

    # ------------------------------------------------------------------ labels
    def _encode_labels(self, y, classes, first):
        self._check_labels(y, classes, first)
        if first:
            self._calibrator = _calibration.new_calibrator()
        if self.classes_.shape[0] > 2:
            return np.searchsorted(self.classes_, y).astype(np.int64)
        # up to two classes: classes_[1] is +1, classes_[0] -1 (a model that has seen one class through learn_one
        # learns its rows as -1, as :meth:`_label_codes` codes them)
        return np.where(y == self.classes_[1], 1.0, -1.0) if self.classes_.shape[0] == 2 else np.full(len(y), -1.0)

    def _code_one(self, y):
        """Encode one label for :meth:`learn_one`, taking a new class in (river's way)."""
        cache = _cache(self)
        codes = cache.get("codes")
        if codes is None and hasattr(self, "classes_"):
            codes = cache["codes"] = self._label_codes()
        if codes is not None:
            code = codes.get(y)
            if code is not None:
                return code
        if isinstance(y, float) and not y.is_integer() or not isinstance(y, (str, numbers.Integral, np.generic)):
            check_classification_targets(np.asarray([y]))
        if not hasattr(self, "classes_"):
            self.classes_ = np.asarray([y])
            self._calibrator = _calibration.new_calibrator()
        else:
            self._add_class(y)
        codes = cache["codes"] = self._label_codes()
        return codes[y]

    def _label_codes(self):
        """``{label: code}``: -1/+1 for up to two classes, the class index for more."""
        cls = self.classes_
        if cls.shape[0] <= 2:
            return {c.item() if isinstance(c, np.generic) else c: (1.0 if i == 1 else -1.0)
                    for i, c in enumerate(cls)}
        return {c.item() if isinstance(c, np.generic) else c: i for i, c in enumerate(cls)}

    def _add_class(self, label):
        cls = np.unique(np.append(self.classes_, label))
        pos = int(np.searchsorted(cls, label))
        old = self.classes_
        if old.shape[0] == 1:
            # one class seen (learnt as classes_[0], code -1): it becomes the positive one when the
            # new label sorts first, which flips the sign of f
            if pos == 0 and hasattr(self, "_state"):
                self._flip_binary()
        elif old.shape[0] == 2:
            if not self._native_multiclass:
                raise ValueError(f"{type(self).__name__} is a binary classifier and has seen the classes "
                                 f"{old.tolist()}; got the label {label!r}")
            self._to_multiclass()
            self._insert_class(pos)
        else:
            self._insert_class(pos)
        self.classes_ = cls

    def _flip_binary(self):
        self._coef *= -1.0
        self._state[_stream.OFFSET] *= -1.0
        self._publish_state(self._params())

    def _to_multiclass(self):
        """Two mirrored one-vs-rest learners from the binary one (exact: ``f_0 = -f_1``)."""
        if hasattr(self, "_state"):
            c = self._coef
            self._coef = np.ascontiguousarray(np.column_stack([-c, c]))
            b = float(self._state[_stream.OFFSET])
            self._offsets = np.array([-b, b])
            self._state[_stream.OFFSET] = 0.0

    def _insert_class(self, pos):
        if hasattr(self, "_state"):
            self._coef = np.ascontiguousarray(np.insert(self._coef, pos, 0.0, axis=1))
            self._offsets = np.insert(self._offsets, pos, 0.0)

    # -------------------------------------------------------------- one row
    def learn_one(self, x, y, *, return_score=False):
        """Learn from one row (river's API): ``x`` a dict or a 1-D array, ``y`` any label.

        Returns ``self``, or with ``return_score=True`` the score ``f_t(x)`` the row got
        before the update (a float; an array of one score per class for a multiclass model).
        """
        plan = self._plan()
        if plan:
            code = plan.code(y)
            if code is not None:
                f = self._learn_fast(plan, x, code)
                if f is not None:
                    return f if return_score else self
        params = self._params()
        X = self._row(x)
        code = self._code_one(y)
        y_arr = np.array([code], dtype=np.int64 if self.classes_.shape[0] > 2 else np.float64)
        f = self._learn_row(X, y_arr, params)
        if return_score:
            return f[0].copy() if f.ndim == 2 else float(f[0])
        return self

    def _decision_one(self, X):
        return self._raw_one(X) + self.offset_

    def _decision_rows(self, X):
        return self._raw_decision_rows(X) + self.offset_

    def _learn(self, X, y, params):
        f_out = super()._learn(X, y, params)
        _calibration.calibrate_binary(f_out, y, self._calibrator)
        return f_out


class MulticlassClassifierMixin(BinaryClassifierMixin):
    """Any number of classes: two use the binary rule, more one-vs-rest over a shared support set.

    Subclasses implement ``_run_ovr_stream(X, codes, params, f_out)`` (``f_out`` of
    shape (n, n_classes)) with the loops of :mod:`learners._ovr`.
    """

    _native_multiclass = True

    def _multiclass(self):
        return hasattr(self, "classes_") and self.classes_.shape[0] > 2

    def _start(self, X, params):
        super()._start(X, params)
        if self._multiclass():
            K = self.classes_.shape[0]
            self._coef = np.zeros((self._coef.shape[0], K), dtype=np.float64)
            self._offsets = np.zeros(K, dtype=np.float64)

    def _learn(self, X, y, params):
        if not self._multiclass():
            return super()._learn(X, y, params)
        self._check_ovr_params(params)
        self._ensure_capacity(X.shape[0], params)
        f_out = np.empty((X.shape[0], self.classes_.shape[0]), dtype=np.float64)
        self._run_ovr_stream(X, y, params, f_out)
        self._publish_state(params)
        _calibration.calibrate_multiclass(f_out, y, self._calibrator)
        return f_out

    def _check_ovr_params(self, params):
        if params["sv_threshold"] > 0.0:
            raise ValueError(f"sv_threshold > 0 is for two classes; {type(self).__name__} with "
                             f"{self.classes_.shape[0]} classes keeps terms until the budget evicts them "
                             "(set sv_threshold=0)")

    def _raw_decision_rows(self, X):
        if not self._multiclass():
            return super()._raw_decision_rows(X)
        params = self._params()
        out = np.empty((X.shape[0], self.classes_.shape[0]), dtype=np.float64)
        kind, width, degree, coef0, lut = self._kernel_args(params)
        sv, coef, ring, offsets = jit_arrays(self._sv, self._coef, self._ring, self._offsets)
        _ovr.ovr_decision(X, sv, coef, ring, float(self._state[_stream.SCALE]), offsets, kind, width, degree, coef0,
                          lut, out)
        return out

    def _decision_rows(self, X):
        if self._multiclass():
            return self._raw_decision_rows(X)
        return super()._decision_rows(X)

    def _decision_one(self, X):
        if self._multiclass():
            return self._raw_decision_rows(X)[0]
        return super()._decision_one(X)


class RegressionMixin:
    """Real-valued targets: ``predict(X) = f(x) + offset_``."""

    @doc(PARTIAL_FIT, y=Y_TARGETS, scores="the predictions ``f_t(x)``", shape="(n_samples,)")
    def partial_fit(self, X, y, *, return_scores=False):
        return self._partial_fit(X, y, None, self._params(), return_scores)

    def learn_one(self, x, y, *, return_score=False):
        """Learn from one row (river's API): ``x`` a dict or a 1-D array, ``y`` a number.

        Returns ``self``, or with ``return_score=True`` the prediction ``f_t(x)`` made before the update.
        """
        try:
            target = float(y)
        except (TypeError, ValueError):
            raise ValueError(f"y must be a number, got {y!r}") from None
        if not math.isfinite(target):
            raise ValueError(f"y must be finite, got {target}")
        plan = self._plan()
        if plan:
            f = self._learn_fast(plan, x, target)
            if f is not None:
                return f if return_score else self
        params = self._params()
        f = self._learn_row(self._row(x), np.array([target]), params)
        return float(f[0]) if return_score else self

    def predict_one(self, x):
        """The prediction ``f(x)`` for one row (a dict or a 1-D array), a float."""
        raw, _ = self._score_fast(x)
        if raw is None:
            self._require_fitted()
            raw = self._raw_one(self._row(x))
        return raw + self.offset_

    score_one = predict_one

    @doc(SCORE_ROWS, summary="``f(x) = sum_j alpha_j k(x_j, x) + offset_``.",
         returns="y : ndarray of shape (n_samples,)")
    def predict(self, X):
        return self._raw_decision(X) + self.offset_


class OneClassMixin:
    """Novelty detection: ``decision_function = score_samples - offset_``, positive = normal."""

    _supervised = False

    @doc(PARTIAL_FIT, y=Y_IGNORED + "\n        classes : ignored", shape="(n_samples,)",
         scores="the raw scores ``f_t(x)`` (as :meth:`score_samples`)")
    def partial_fit(self, X, y=None, classes=None, *, return_scores=False):
        return self._partial_fit(X, None, None, self._params(), return_scores)

    def learn_one(self, x, y=None, *, return_score=False):
        """Learn from one row (river's API): ``x`` a dict or a 1-D array; ``y`` ignored.

        Returns ``self``, or with ``return_score=True`` the raw score ``f_t(x)`` (as
        :meth:`score_samples`) the row got before the update.
        """
        f = self._learn_row(self._row(x), None, self._params())
        return float(f[0]) if return_score else self

    def score_one(self, x):
        """``decision_function`` of one row: positive = normal, negative = novelty."""
        self._require_fitted()
        return self._raw_one(self._row(x)) - self.offset_

    def predict_one(self, x):
        """+1 (normal) or -1 (novelty) for one row."""
        return 1 if self.score_one(x) >= 0 else -1

    @doc(SCORE_ROWS, summary="Raw score ``f(x)``: higher is more normal.",
         returns="scores : ndarray of shape (n_samples,)")
    def score_samples(self, X):
        return self._raw_decision(X)

    @doc(SCORE_ROWS, returns="margin : ndarray of shape (n_samples,)",
         summary="Signed margin ``score_samples(X) - offset_``: positive = normal, negative = novelty.")
    def decision_function(self, X):
        return self.score_samples(X) - self.offset_

    @doc(SCORE_ROWS, summary="+1 for normal points (``decision_function >= 0``), -1 for novelties.",
         returns="labels : ndarray of shape (n_samples,), int")
    def predict(self, X):
        d = self.decision_function(X)
        return np.where(d >= 0, 1, -1)
