"""Online calibration of a decision value ``f`` into a probability (Platt scaling, learnt by the stream).

``P(y = 1 | f) = 1 / (1 + exp(-(A f + B)))``. Every row's ``f_t(x)``, the score the
model gave it *before* learning from it, moves ``(A, B)`` by one AdaGrad step on
the log-loss ``-t log p - (1 - t) log(1 - p)`` (gradient ``(p - t) (f, 1)``), so
the calibration only ever sees out-of-sample scores and follows a drifting stream.
Start: ``A = 1, B = 0``; step ``LEARNING_RATE / sqrt(sum of squared gradients)``.

A calibrator is a float64 array ``[A, B, GA, GB]`` (``GA``, ``GB``: the sums of
squared gradients); a classifier keeps one per binary decision (one for two
classes, one per class for one-vs-rest).

This module imports only numpy and numba.
"""

import math

import numpy as np
from numba import njit

LEARNING_RATE = 0.5
_EPS = 1e-8


def new_platt(n):
    """``n`` fresh calibrators, shape (n, 4)."""
    out = np.zeros((n, 4), dtype=np.float64)
    out[:, 0] = 1.0
    return out


@njit(cache=True)
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True)
def platt_learn(f, targets, platt):
    """One AdaGrad step per row: ``platt[k]`` learns from ``f[i, k]`` and ``targets[i, k]`` in {0, 1}."""
    for i in range(f.shape[0]):
        for k in range(f.shape[1]):
            c = platt[k]
            g = _sigmoid(c[0] * f[i, k] + c[1]) - targets[i, k]
            ga = g * f[i, k]
            c[2] += ga * ga
            c[3] += g * g
            c[0] -= LEARNING_RATE * ga / math.sqrt(c[2] + _EPS)
            c[1] -= LEARNING_RATE * g / math.sqrt(c[3] + _EPS)


def platt_probability(f, calibrator):
    """``P(y = 1 | f)`` for an array of decision values."""
    z = calibrator[0] * np.asarray(f, dtype=np.float64) + calibrator[1]
    return 0.5 * (1.0 + np.tanh(0.5 * z))
