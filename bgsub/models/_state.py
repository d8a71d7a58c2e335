"""The argument groups of the per-pixel frame kernels (:mod:`bgsub.models._frame_kernels`), built from a
subtractor's state and parameters.

Each group is one plain tuple (the kernels unpack it; see the kernels' module docstring for why not a
namedtuple), with the same element types on every call so that numba compiles each kernel once:

- :func:`pixel_state`: ``(samples, coef, ring, rho)``, the learners' per-pixel arrays;
- :func:`olkn_rule` / :func:`norma_rule`: the learning rule's constants;
- :func:`policy`: ``(p_bg, p_fg, p_diff, radius, seed, frame_no)``;
- :func:`feedback`: ``(blink, prev, post, gain, up, down)``;
- ``out``: ``(score, mask, stepped)``, the frame's outputs.

This module imports only the learners' constants.
"""

from __future__ import annotations

from typing import Any

from learners.steps import RHO_PAPER, RHO_QUANTILE

#: The quantile rule's highest offset (a value f >= 1 is never novel): a constant since it was last a parameter.
RHO_MAX = 0.0
#: The diffusion's neighbourhood radius (a 3x3 square).
DIFFUSE_RADIUS = 1

__all__ = ["OLKN_RHO_RULES", "feedback", "norma_rule", "olkn_rule", "pixel_state", "policy"]

#: Offset rules of the OLK_N subtractor: the paper's (eq. 69, the estimator's default), and the per-pixel
#: quantile rule.
OLKN_RHO_RULES = {"paper": RHO_PAPER, "quantile": RHO_QUANTILE}


def pixel_state(model: Any) -> tuple:
    """``(samples_, coef_, ring_, rho_)`` of a per-pixel kernel subtractor."""
    return (model.samples_, model.coef_, model.ring_, model.rho_)


def olkn_rule(p: dict[str, Any]) -> tuple:
    """OLK_N's ``(r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi)`` from the subtractor's parameters."""
    return (float(p["r"]), float(p["nu"]), float(p["C"]), int(OLKN_RHO_RULES[p["rho_rule"]]), float(p["rho_eta"]),
            float(p["rho_nu"]), float(p["rho_min"]), RHO_MAX)


def norma_rule(p: dict[str, Any]) -> tuple:
    """nu-NORMA's ``(eta, lam, nu)`` from the subtractor's parameters."""
    return (float(p["eta"]), float(p["lam"]), float(p["nu"]))


def policy(p_bg: int, p_fg: int, p_diff: int, p: dict[str, Any], frame_no: int) -> tuple:
    """``(p_bg, p_fg, p_diff, radius, seed, frame_no)``: the update policy's probabilities (out of
    :data:`bgsub.models._frame_kernels.PROB_ONE`), the diffusion's radius, the draws' seed and frame."""
    return (int(p_bg), int(p_fg), int(p_diff), DIFFUSE_RADIUS, int(p["seed"]), int(frame_no))


def feedback(blink, prev, blink_args: tuple) -> tuple:
    """``(blink, prev, post, gain, up, down)`` from the accumulators, the previous raw mask and
    ``blink_args = (post, gain, up, down)`` (the subtractor's ``_blink_args``)."""
    post, gain, up, down = blink_args
    return (blink, prev, post, float(gain), float(up), float(down))
