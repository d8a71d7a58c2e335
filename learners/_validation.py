"""Parameter and input checks shared by the estimators.

Every error names the parameter, the accepted range and the value received, e.g.
``ValueError: width must be > 0, got -1``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def store_params(estimator, arguments):
    """scikit-learn's ``__init__`` body: keep every argument under its own name, unchecked.

    Called as ``store_params(self, locals())`` first thing in an ``__init__`` whose
    signature lists the estimator's parameters (``get_params`` reads them from there);
    the checks run at ``fit``.
    """
    for name, value in arguments.items():
        if name != "self":
            setattr(estimator, name, value)


def _describe(value):
    return repr(value) if isinstance(value, str) else str(value)


def check_real(name, value, *, low=None, high=None, low_open=False, high_open=False, allow_none=False):
    """Return ``value`` as a float after checking it is a finite real in the given range.

    ``low_open``/``high_open`` make the bound strict (``>``/``<`` instead of
    ``>=``/``<=``). Raises ``ValueError`` (``TypeError`` for a non-number) whose
    message names ``name``, the accepted range and the value.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number{_range_text(low, high, low_open, high_open)}, "
                        f"got {_describe(value)} of type {type(value).__name__}")
    value = float(value)
    bad = not math.isfinite(value)
    if low is not None and (value < low or (low_open and value == low)):
        bad = True
    if high is not None and (value > high or (high_open and value == high)):
        bad = True
    if bad:
        raise ValueError(f"{name} must be{_range_text(low, high, low_open, high_open) or ' finite'}, "
                         f"got {_describe(value)}")
    return value


def _range_text(low, high, low_open, high_open):
    if low is not None and high is not None:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        return f" in {lo}{low:g}, {high:g}{hi}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def check_width(name, value, rules=()):
    """A kernel width: ``"scale"`` (returned as None: set from the data), one of the estimator's own
    data rules ``rules`` (returned as given), or a real > 0."""
    if isinstance(value, str):
        if value == "scale":
            return None
        if value in rules:
            return value
        names = " or ".join(repr(r) for r in ("scale",) + tuple(rules))
        raise TypeError(f"{name} must be a real number > 0 or {names}, got {value!r}")
    return check_real(name, value, low=0.0, low_open=True)


def check_int(name, value, *, low=None, allow_none=False):
    """Return ``value`` as an int after checking it is an integer ``>= low``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        extra = " or None" if allow_none else ""
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"{name} must be an integer >= {low}{extra}, got {_describe(value)}")
        if not (math.isfinite(value) and float(value).is_integer()):
            raise ValueError(f"{name} must be an integer >= {low}{extra}, got {_describe(value)}")
        value = int(value)
    value = int(value)
    if low is not None and value < low:
        extra = " (or None for no limit)" if allow_none else ""
        raise ValueError(f"{name} must be an integer >= {low}{extra}, got {value}")
    return value


def check_choice(name, value, choices):
    """Return ``value`` after checking it is one of ``choices`` (a mapping or sequence of names)."""
    names = list(choices)
    if not isinstance(value, str) or value not in names:
        listed = ", ".join(repr(c) for c in names)
        raise ValueError(f"{name} must be one of {listed}, got {_describe(value)}")
    return value


def check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_describe(value)}")
    return bool(value)
