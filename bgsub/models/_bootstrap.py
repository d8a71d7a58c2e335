"""The first frame's bootstrap of the kernel subtractors (``init="neighbours"``, ViBe-style).

Every pixel's buffer is filled with ``budget`` ordinary learner steps on values of random neighbours of the
first frame, so the model is usable at once. Where the subtractor can (:meth:`_can_bootstrap_pixelwise`), all
steps run in one pixel-by-pixel pass with the same draws; otherwise frame by frame.
"""

from __future__ import annotations

import numpy as np

from bgsub.models._frame_kernels import bootstrap_sources
from learners.expansion import needs_renormalise

__all__ = ["init_from_neighbours", "bootstrap_scales"]


def init_from_neighbours(sub, img: np.ndarray) -> None:
    """Fill every buffer of the kernel subtractor ``sub`` with ``B`` learner steps on random neighbours of
    ``img`` (``(2 init_radius + 1)^2`` square).

    Step ``b = 0`` uses the pixel itself; the others a neighbour drawn
    uniformly (replicated border). The steps are ordinary updates, so the
    coefficients and offsets are what the learner would have after seeing
    these values.
    """
    H, W = img.shape[:2]
    # counter-based draws (:func:`bgsub.models._frame_kernels.bootstrap_offset`), the same in both bootstraps and
    # computed where they are used: no arrays of 2 (budget - 1) draws a pixel
    draws = (int(sub.params["seed"]), int(sub.params["init_radius"]))
    scratch = np.zeros((H, W), np.uint8)
    B = sub.params["budget"]
    scales = bootstrap_scales(sub, B) if sub._can_bootstrap_pixelwise() else None
    if scales is not None:
        sub._bootstrap_pixelwise(img, draws, scales[0], scratch)
        sub.scale_ = scales[1]
        sub.n_steps_ += H * W * B
    else:
        rows = np.empty((H, W), np.int64)
        cols = np.empty((H, W), np.int64)
        for b in range(B):
            if b == 0:
                x = sub._bootstrap_values(img, None, None)
            else:
                bootstrap_sources(draws, b, rows, cols)
                x = sub._bootstrap_values(img, rows, cols)
            sub._bootstrap_step(x, scratch)
            sub._advance_scale()
    sub._bootstrap_values(img, None, None)  # the frame's own derived inputs again (its descriptors)
    sub._bootstrap_done()
    sub.blink_[...] = 0.0  # the bootstrap's decisions are not the stream's

def bootstrap_scales(sub, steps: int) -> tuple[np.ndarray, float] | None:
    """The global scale at each of ``steps`` bootstrap steps and after them, as ``sub._advance_scale``
    moves it; None when it would renormalise on the way (the frames handle that)."""
    scale = sub.scale_
    scales = np.empty(steps, np.float64)
    for b in range(steps):
        scales[b] = scale
        scale *= sub._decay_factor()
        if needs_renormalise(scale):
            return None
    return scales, scale
