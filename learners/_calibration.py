"""Online calibration of decision values into probabilities (temperature scaling, learnt by the stream).

Two classes: ``P(classes_[1] | x) = 1 / (1 + exp(-A f(x)))``; more: ``P(k | x) =
softmax_k(A f_k(x))`` over the one-vs-rest scores. One temperature ``A >= 0`` and
no intercept, so the most probable class is always the one ``predict`` returns.
Every row's ``f_t(x)``, the score the model gave it *before* learning from it,
moves ``A`` by one AdaGrad step on the log-loss (gradient ``(p - t) f`` for two
classes, ``sum_k (p_k - t_k) f_k`` for more), so the calibration only ever sees
out-of-sample scores and follows a drifting stream. Start ``A = 1``; step
``LEARNING_RATE / sqrt(sum of squared gradients)``.

A calibrator is a float64 array ``[A, G]`` (``G``: the sum of squared gradients).

This module imports only numpy and numba.
"""

import math

import numpy as np
from numba import njit

LEARNING_RATE = 0.5
_EPS = 1e-12


def new_calibrator():
    """A fresh calibrator ``[A, G] = [1, 0]``."""
    return np.array([1.0, 0.0])


@njit(cache=True)
def _step(c, g):
    c[1] += g * g
    c[0] = max(0.0, c[0] - LEARNING_RATE * g / math.sqrt(c[1] + _EPS))


@njit(cache=True)
def calibrate_binary(f, positive, c):
    """One step per row: ``f[i]`` the score, ``positive[i]`` > 0 for ``classes_[1]``."""
    for i in range(f.shape[0]):
        z = c[0] * f[i]
        p = 1.0 / (1.0 + math.exp(-z)) if z >= 0.0 else math.exp(z) / (1.0 + math.exp(z))
        t = 1.0 if positive[i] > 0 else 0.0
        _step(c, (p - t) * f[i])


@njit(cache=True)
def calibrate_multiclass(f, codes, c):
    """One step per row: ``f[i]`` the one-vs-rest scores, ``codes[i]`` the class index."""
    K = f.shape[1]
    p = np.empty(K)
    for i in range(f.shape[0]):
        top = c[0] * f[i, 0]
        for k in range(1, K):
            top = max(top, c[0] * f[i, k])
        total = 0.0
        for k in range(K):
            p[k] = math.exp(c[0] * f[i, k] - top)
            total += p[k]
        g = 0.0
        for k in range(K):
            t = 1.0 if codes[i] == k else 0.0
            g += (p[k] / total - t) * f[i, k]
        _step(c, g)


def probabilities(f, c):
    """Class probabilities, shape (n, n_classes), from scores ``f`` of shape (n,) or (n, K)."""
    z = c[0] * np.asarray(f, dtype=np.float64)
    if z.ndim == 1:
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))
        return np.column_stack([1.0 - p1, p1])
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)
