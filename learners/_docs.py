"""Docstring text the estimators share, written once (numpydoc), filled in by :func:`doc`.

As pandas' ``@doc``: a method's docstring is a template with ``{name}`` fields,
``@doc(TEMPLATE, name=...)`` formats it, so the estimators that differ in one line
(the ``y`` of a novelty detector, what ``return_scores`` returns) say so there
and share the rest.
"""

from __future__ import annotations

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


def doc(template, **fields):
    """Decorator: the function's docstring is ``template`` with ``fields`` filled in."""

    def decorate(func):
        func.__doc__ = template.format(**fields)
        return func

    return decorate
