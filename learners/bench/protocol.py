"""How a method is run on one seed's data: online passes with snapshots, batch refits, timing.

Online methods see the training stream once, in order. *Prequential* evaluation
(classification): before learning from sample ``i`` the method predicts it with
``f_i(x_i)`` and makes a mistake when ``y_i f_i(x_i) <= 0`` (the first sample, with
``f = 0``, always counts); at every grid point ``n`` the model that has seen ``n``
samples is scored on the test set. Batch methods are refitted on the first ``n``
samples at every grid point. The time of a method is one ``fit`` on all training
samples (the best of three runs), measured apart from the evaluation, after a
warm-up fit (numba compilation is not timed).
"""

from __future__ import annotations

import inspect

import numpy as np

from learners.bench.report import Timer


def n_terms(est):
    """Number of stored kernel terms, or NaN for a method without any (linear perceptron)."""
    sv = getattr(est, "support_vectors_", None)
    if sv is None:
        return np.nan
    return float(len(sv))


def n_nonzero(est):
    """Number of non-zero expansion coefficients."""
    coef = getattr(est, "dual_coef_", None)
    if coef is None:
        return np.nan
    return float(np.count_nonzero(np.asarray(coef)))


def _takes_classes(est):
    try:
        return "classes" in inspect.signature(est.partial_fit).parameters
    except (TypeError, ValueError):
        return False


def check_grid(grid, n_max=None):
    """Sorted distinct positive integers; raises ValueError otherwise."""
    try:
        g = sorted({int(v) for v in grid})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the grid must be integers, got {grid!r}") from exc
    if not g or g[0] < 1:
        raise ValueError(f"the grid must be positive integers, got {grid!r}")
    if n_max is not None and g[-1] > n_max:
        raise ValueError(f"grid point {g[-1]} exceeds the {n_max} samples available")
    return g


def prequential_classification(est, X, y, grid, X_test, y_test):
    """One online pass; mistakes, test error and size at each grid point.

    Returns
    -------
    dict of ndarray of shape (len(grid),): ``mistakes``, ``test_error``, ``n_support``.
    """
    mistakes = 0
    out = {k: np.full(len(grid), np.nan) for k in ("mistakes", "test_error", "n_support")}
    gi = 0
    classes = np.array([-1, 1])
    takes_classes = _takes_classes(est)
    for i in range(grid[-1]):
        x = X[i : i + 1]
        f = 0.0 if i == 0 else float(est.decision_function(x)[0])
        if y[i] * f <= 0.0:
            mistakes += 1
        if i == 0 and takes_classes:
            est.partial_fit(x, y[i : i + 1], classes=classes)
        else:
            est.partial_fit(x, y[i : i + 1])
        if i + 1 == grid[gi]:
            out["mistakes"][gi] = mistakes
            if len(X_test):
                out["test_error"][gi] = float(np.mean(est.predict(X_test) != y_test))
            out["n_support"][gi] = n_terms(est)
            gi += 1
    return out


def batch_classification(build, X, y, grid, X_test, y_test):
    """Refit at each grid point; training errors ("mistakes"), test error, size, fit time.

    Returns
    -------
    dict of ndarray of shape (len(grid),): ``mistakes`` (training errors of the
    fit on the first ``n`` samples), ``test_error``, ``n_support``, ``seconds``.
    """
    out = {k: np.full(len(grid), np.nan) for k in ("mistakes", "test_error", "n_support", "seconds")}
    for gi, n in enumerate(grid):
        if np.unique(y[:n]).size < 2:
            continue  # a batch SVM needs both classes
        est = build()
        with Timer() as t:
            est.fit(X[:n], y[:n])
        out["seconds"][gi] = t.seconds
        out["mistakes"][gi] = float(np.sum(est.predict(X[:n]) != y[:n]))
        if len(X_test):
            out["test_error"][gi] = float(np.mean(est.predict(X_test) != y_test))
        nsv = getattr(est, "n_support_", None)
        out["n_support"][gi] = float(np.sum(nsv)) if nsv is not None else n_terms(est)
    return out


def chunked_online(est, X, y, grid, evaluate, size=n_terms):
    """One online pass in chunks ending at the grid points; ``evaluate(est)`` at each.

    Returns
    -------
    score : ndarray of shape (len(grid),)
    n_support : ndarray of shape (len(grid),)
    """
    score = np.full(len(grid), np.nan)
    n_sup = np.full(len(grid), np.nan)
    start = 0
    for gi, n in enumerate(grid):
        if n > start:
            if y is None:
                est.partial_fit(X[start:n])
            else:
                est.partial_fit(X[start:n], y[start:n])
            start = n
        score[gi] = evaluate(est)
        n_sup[gi] = size(est)
    return score, n_sup


def batch_curve(build, X, y, grid, evaluate):
    """Refit on the first ``n`` samples at each grid point; ``evaluate(est)`` each time."""
    score = np.full(len(grid), np.nan)
    for gi, n in enumerate(grid):
        est = build()
        est.fit(X[:n], y[:n])
        score[gi] = evaluate(est)
    return score


def timed_fit(build, X, y=None, repeat=3):
    """Seconds for ``build().fit(X, y)``: the best of ``repeat`` runs.

    The best of a few runs (as :mod:`timeit` reports) keeps one seed's figure from
    being inflated by other processes on a shared machine.
    """
    best = float("inf")
    for _ in range(repeat):
        est = build()
        with Timer() as t:
            if y is None:
                est.fit(X)
            else:
                est.fit(X, y)
        best = min(best, t.seconds)
    return best
