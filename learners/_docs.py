"""Docstring text the estimators share, written once (numpydoc), filled in by :func:`doc` and :func:`fill`.

As pandas' ``@doc``: a method's docstring is a template with ``{name}`` fields,
``@doc(TEMPLATE, name=...)`` fills them in, so the estimators that differ in one line
(the ``y`` of a novelty detector, what ``return_scores`` returns) say so there
and share the rest. A module's docstring takes the shared parameter entries by
``__doc__ = fill(__doc__, ...)``.
"""

from __future__ import annotations

import re

#: The kernel's parameters (module docstrings of :mod:`learners.olk` and :mod:`learners.norma`).
KERNEL_PARAMETERS = """kernel : {"gaussian", "laplacian", "polynomial", "linear"}, default "gaussian"
    ``exp(-||x-y||^2 / width^2)``, ``exp(-||x-y|| / width)``,
    ``(<x, y> + coef0) ** degree``, ``<x, y>``.
width : float > 0 or "scale", default "scale"
    Kernel length scale (OLK's ``p``), in the units of the features (Gaussian, Laplacian).
    ``"scale"`` sets it from the first batch (the first row for ``learn_one``):
    ``sqrt(n_features * X.var())``, scikit-learn's ``gamma="scale"``; fitted ``width_``.
degree : int >= 1, default 3
    Polynomial degree.
coef0 : float >= 0, default 1.0
    Polynomial constant term (>= 0 keeps the kernel positive semi-definite)."""

#: The expansion's and ``fit``'s parameters (same modules).
EXPANSION_PARAMETERS = """budget : int >= 1 or None, default 512
    Most kernel terms kept; a full expansion drops its oldest term (a ring buffer;
    NORMA's truncation). ``None`` keeps every term (memory and prediction time grow
    with the stream).
sv_threshold : float >= 0, default 0.0
    Drop terms whose true coefficient ``|alpha_j|`` fell below this value (OLK
    Remark 4); 0 keeps them until the budget evicts them.
n_passes : int >= 1, default 1
    Passes over the data made by ``fit`` (``partial_fit`` always makes one).
shuffle : bool, default False
    Whether ``fit`` visits the rows of each pass in a random order.
random_state : int, RandomState or None, default None
    Seed of that order (used only with ``shuffle=True``)."""

#: ``fit`` of the streaming estimators (``{passes}``: how many passes it makes; ``{y}``: the ``y`` entry).
FIT = """Start afresh and learn from the rows of ``X`` in order ({passes}).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        {y}

        Returns
        -------
        self
        """

#: ``partial_fit`` of the kernel estimators.
PARTIAL_FIT = """Learn from the rows of ``X`` in order, continuing the stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        {y}
        return_scores : bool, default False
            Return {scores} each row got *before* the model learnt
            from it (test-then-train in one pass) instead of ``self``.

        Returns
        -------
        self, or scores : ndarray of shape {shape}
        """

#: A method of the rows of ``X`` alone, on a fitted model (``predict``, ``decision_function``...).
SCORE_ROWS = """{summary}

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        {returns}
        """

#: A method that learns from the rows of ``X`` alone.
LEARN_ROWS = SCORE_ROWS.replace("n_features_in_", "n_features")

#: The ``y`` entry of a novelty detector or density model.
Y_IGNORED = "y : ignored"

#: The ``y`` entry of a supervised estimator.
Y_TARGETS = "y : array-like of shape (n_samples,)"


#: The fitted attributes of an OLK or NORMA estimator's expansion (appended to the class's Attributes).
FITTED_EXPANSION = """
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
        Points of the kernel expansion, oldest first.
    dual_coef_ : ndarray of shape (n_support_,)
        Their true coefficients ``alpha_j`` in ``f(x) = sum_j alpha_j k(x_j, x) (+ offset_)``.
    n_support_ : int
        Number of terms (at most ``budget``).
    n_features_in_ : int
        Number of features seen in the first call.
    n_steps_ : int
        Rows learnt from so far (over all passes and calls).
    width_ : float
        Kernel width in force (``width``, or the one ``"scale"`` chose)."""

#: The last fitted attributes of a baseline on a growing expansion (:mod:`learners.baselines`), for a
#: ``{growing_expansion}`` line of the class's Attributes.
GROWING_EXPANSION = """n_seen_ : int
        Samples processed so far.
    expansion_ : GrowingExpansion
        The kernel expansion itself (points, coefficients, kernel); the attributes above read it.
    width_ : float
        Kernel width in force (``width``, or the one ``"scale"`` chose)."""


def fill(template, **fields):
    """``template`` with each ``{name}`` of ``fields`` replaced by its text (other braces stay as they are)."""
    return re.sub(r"\{(\w+)\}", lambda m: fields.get(m.group(1), m.group(0)), template)


def filled(**fields):
    """Class decorator: the class's own docstring with ``fields`` filled in (:func:`fill`)."""

    def decorate(cls):
        cls.__doc__ = fill(cls.__doc__, **fields)
        return cls

    return decorate


def doc(template, **fields):
    """Decorator: the function's docstring is ``template`` with ``fields`` filled in (:func:`fill`)."""

    def decorate(func):
        func.__doc__ = fill(template, **fields)
        return func

    return decorate
