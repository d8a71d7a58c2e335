"""The methods a benchmark compares: a name, a constructor, the paper's parameters.

OLK and NORMA come from :mod:`learners.olk` and :mod:`learners.norma`; when one of
them cannot be imported the method is reported as unavailable (with the reason)
instead of failing the whole run.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Method:
    """One method of a benchmark.

    Parameters
    ----------
    name : str
        The name used in tables and JSON (``OLK_C``, ``NORMA``, ...).
    factory : str or callable
        ``"module:Class"`` (imported on first use) or a callable returning an estimator.
    params : dict
        Constructor arguments: the paper's settings, overridable with ``--set``.
    online : bool
        Online learner (``partial_fit``, one pass) rather than a batch fit.
    note : str
        Where the parameters come from, or what was chosen where the paper is silent.
    default : bool
        Run when ``--methods`` is not given (extra references are opt-in).
    """

    name: str
    factory: str | Callable
    params: dict = field(default_factory=dict)
    online: bool = True
    note: str = ""
    default: bool = True

    def estimator_class(self):
        """The class (or callable) that builds the estimator; raises ImportError if missing."""
        if callable(self.factory):
            return self.factory
        module, _, attr = self.factory.partition(":")
        mod = importlib.import_module(module)
        try:
            return getattr(mod, attr)
        except AttributeError as exc:
            raise ImportError(f"{module} has no {attr}") from exc

    def unavailable_reason(self):
        """None if the method can be built, else a one-line reason (ValueError for bad parameters)."""
        try:
            cls = self.estimator_class()
        except ImportError as exc:
            return f"cannot import {self.factory}: {exc}"
        try:
            cls(**self.params)
        except TypeError as exc:
            raise ValueError(f"{self.name}: bad parameters {sorted(self.params)}: {exc}") from exc
        return None

    def build(self, **extra):
        """A fresh estimator with ``params`` (and ``extra``) applied."""
        return self.estimator_class()(**{**self.params, **extra})


def parse_value(text):
    """``"0.5"`` -> 0.5, ``"None"`` -> None, ``"paper"`` -> "paper"."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def apply_overrides(methods, assignments):
    """Apply ``["OLK_C.width=1", ...]`` to the methods' parameters (in place).

    Raises ValueError naming the bad assignment.
    """
    by_name = {m.name: m for m in methods}
    for item in assignments or ():
        target, sep, value = item.partition("=")
        name, dot, param = target.partition(".")
        if not sep or not dot or not param:
            raise ValueError(f"--set expects METHOD.param=value, got {item!r}")
        if name not in by_name:
            raise ValueError(f"--set {item!r}: unknown method {name!r}; choose from {sorted(by_name)}")
        by_name[name].params[param] = parse_value(value)
    return methods


def select(methods, names):
    """Keep the methods named in ``names`` (a list), in their original order; the defaults if empty."""
    if not names:
        return [m for m in methods if m.default]
    known = {m.name for m in methods}
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; choose from {[m.name for m in methods]}")
    return [m for m in methods if m.name in names]
