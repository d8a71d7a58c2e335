"""The single-row fast path: what ``learn_one`` / ``predict_one`` need, looked up once per model.

A river user calls ``predict_one(x)`` then ``learn_one(x, y)`` for every row, so the
per-call Python work (parameter dictionaries, attribute look-ups, the label codes, the
dict's key order, temporary arrays) costs as much as the kernel sum itself. A
:class:`RowPlan` gathers it once: the stream loop and its arguments, the arguments of
:func:`learners._stream.score_row`, the label codes, the dict getter and a row buffer.
Each row then costs a type check, one jitted call to predict and one (two for a
classifier, with the calibration) to learn.

``score_row`` remembers the raw ``f`` of the row it scored (``memo``/``memo_x``), and
the stream loop takes it from there when it learns that same row on the unchanged
model (see :mod:`learners._stream`): test-then-train evaluates the expansion once.

An estimator builds its plan on the first single-row call after a change and drops it
whenever a parameter or a piece of its fitted structure (arrays, classes, width,
feature names) is set (``OnlineKernelEstimator.__setattr__``). Rows the plan does not
take (another dtype, a strided or read-only array, unknown dict keys, NaN, an expansion
that must grow) go through the estimator's full path, which checks them and says what is wrong.
"""

from __future__ import annotations

import operator

import numpy as np

from learners import _calibration, _stream

_F64 = np.dtype(np.float64)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


class RowPlan:
    """The single-row path of one fitted binary classifier or regressor (see the module notes)."""

    __slots__ = ("n", "shape", "params", "stream", "stream_args", "score_args", "memo", "memo_x", "y", "f_out",
                 "ring", "capacity", "getter", "buf", "buf_values", "calibrator", "labels", "codes")

    def __init__(self, est, params, keys):
        n = est.n_features_in_
        self.n, self.shape, self.params = n, (n,), params
        self.stream, self.stream_args = est._stream_call(params)
        self.memo, self.memo_x = _stream.new_memo(n)
        self.score_args = (est._sv, est._coef, est._ring, est._state) + est._kernel_args(params) + (self.memo,
                                                                                                   self.memo_x)
        self.y, self.f_out, self.buf = np.zeros(1), np.empty(1), np.empty((1, n))
        self.buf_values = None  # the dict values ``buf`` holds
        self.ring = est._ring
        # an unbounded expansion (budget=None) grows on the full path
        self.capacity = est._coef.shape[0] if params["budget"] is None else None
        self.getter = operator.itemgetter(*keys) if keys is not None and len(keys) == n else None
        classes = getattr(est, "classes_", None)
        self.calibrator = getattr(est, "_calibrator", None) if classes is not None else None
        if classes is not None:
            self.labels = (_plain(classes[0]), _plain(classes[1]))
            self.codes = {self.labels[0]: -1.0, self.labels[1]: 1.0}

    def row(self, x):
        """``x`` as a float64 array of shape (1, n_features) when the plan takes it, else None."""
        if type(x) is np.ndarray:
            if x.shape == self.shape and x.dtype is _F64 and x.flags.c_contiguous and x.flags.writeable:
                return x.reshape(1, self.n)
            return None
        if type(x) is dict and self.getter is not None and len(x) == self.n:
            try:
                values = self.getter(x)
                # learn_one(x, y) after predict_one(x) finds the same value objects: the tuple
                # comparison sees them identical and skips converting the row again
                if values != self.buf_values:
                    self.buf_values = None
                    self.buf[0] = values
                    self.buf_values = values
            except (KeyError, TypeError, ValueError):
                return None
            return self.buf
        return None

    def code(self, label):
        """-1.0 / +1.0 for a known label, else None."""
        try:
            return self.codes.get(label)
        except TypeError:  # unhashable
            return None

    def score(self, X):
        """Raw ``f`` of the row (no offset), remembered for :meth:`learn`; None when ``x`` is not finite."""
        raw = _stream.score_row(X, *self.score_args)
        return raw if raw == raw else None

    def learn(self, X, target):
        """Learn from the row: ``f_t(x)`` (offset included), or None when the full path must take it."""
        if self.capacity is not None and self.ring[1] >= self.capacity:
            return None
        if not _stream.finite_row(X):
            return None
        y = self.y
        y[0] = target
        self.stream(X, y, *self.stream_args, self.f_out, self.memo, self.memo_x)
        if self.calibrator is not None:
            _calibration.calibrate_binary(self.f_out, y, self.calibrator)
        return float(self.f_out[0])
