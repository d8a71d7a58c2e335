"""Exponential weights over experts (weighted majority / Hedge), jitted (lecture seed 002).

Per round with expert predictions ``y_m`` in [0, 1] and outcome ``t`` in {0, 1}:
the forecast is ``p = sum_m w_m y_m`` (its expected 0-1 loss ``|p - t|`` when an
expert is drawn from ``w``), each expert pays ``c_m = |y_m - t|``, and
``w_m <- w_m exp(-eta c_m) / sum_i w_i exp(-eta c_i)``.

The weights are kept as logarithms (shifted so the largest is 0) so that long
runs lose no expert to underflow; ``w`` is their normalised exponential.

This module imports only numpy and numba.
"""

import math

from numba import njit


@njit(cache=True)
def hedge_step(y, t, eta, log_w, w, expert_losses):
    """One round: returns the forecast ``p = sum_m w_m y_m`` made before the update.

    Parameters
    ----------
    y : float64 (M,)
        The experts' predictions, in [0, 1].
    t : float
        The outcome, 0 or 1.
    eta : float
        Learning rate (> 0).
    log_w, w : float64 (M,)
        Log-weights and weights, updated in place.
    expert_losses : float64 (M,)
        Cumulative costs ``sum_n c_nm``, updated in place.
    """
    M = y.shape[0]
    p = 0.0
    for m in range(M):
        p += w[m] * y[m]
    top = -math.inf
    for m in range(M):
        c = abs(y[m] - t)
        expert_losses[m] += c
        log_w[m] -= eta * c
        if log_w[m] > top:
            top = log_w[m]
    total = 0.0
    for m in range(M):
        log_w[m] -= top
        w[m] = math.exp(log_w[m])
        total += w[m]
    for m in range(M):
        w[m] /= total
    return p


@njit(cache=True)
def hedge_fit_stream(Y, t, eta, log_w, w, expert_losses, forecasts):
    """:func:`hedge_step` for every round (row of ``Y`` (N, M)); ``forecasts[n]`` receives ``p_n``."""
    for n in range(Y.shape[0]):
        forecasts[n] = hedge_step(Y[n], t[n], eta, log_w, w, expert_losses)


def hedge_eta(n_rounds, n_experts):
    """The standard Hedge tuning ``eta = sqrt(8 ln M / N)`` (Cesa-Bianchi & Lugosi 2006, Thm 2.2).

    With it, for any sequence of ``N`` rounds with costs in [0, 1],
    ``sum_n |p_n - t_n| - min_m sum_n c_nm <= sqrt(N ln M / 2)``.
    """
    if n_rounds < 1 or n_experts < 1:
        raise ValueError(f"n_rounds and n_experts must be >= 1, got {n_rounds} and {n_experts}")
    return math.sqrt(8.0 * math.log(max(n_experts, 2)) / n_rounds)


def hedge_regret_bound(n_rounds, n_experts):
    """``sqrt(N ln M / 2)``: the regret bound of :func:`hedge_eta`'s tuning."""
    return math.sqrt(n_rounds * math.log(max(n_experts, 2)) / 2.0)
