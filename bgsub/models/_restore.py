"""Checks of the state a checkpoint restores, and the upgrades of older checkpoint layouts.

The frame kernels index without bounds checks, so a restored model must be one a stream can lead to: every
ring position and count within the budget, every float finite and in its range, every mask 0 or 255
(:meth:`PixelKernelSubtractor._check_restored_state`). A checkpoint of an older layout is read as the current
one by the class's ``_upgrade_checkpoint``; parameters that were removed load only at the value at which they
were off (:func:`without_removed_params`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bgsub.models._illumination import MAX_GAIN, MIN_GAIN
from bgsub.pipeline.stages import REANCHOR_FRAMES
from learners.expansion import SCALE_MAX, SCALE_MIN

__all__ = ["check_state_value", "check_state_array", "check_ring", "check_mask", "without_removed_params", "upgrade_kernel_layout",
           "upgrade_feedback_layout", "check_kernel_state"]


def check_state_value(name: str, value: float, low: float, high: float) -> None:
    """Raise ValueError unless the restored state value ``name`` is finite and within ``[low, high]``."""
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"state value {name} = {value!r} is out of range [{low:g}, {high:g}]")


def check_state_array(name: str, a: np.ndarray | None, low: float, high: float) -> None:
    """Raise ValueError unless every value of the restored state array ``name`` is finite and within
    ``[low, high]``."""
    if a is None or a.size == 0:
        return
    if not np.isfinite(a).all():
        raise ValueError(f"state {name!r} holds NaN or infinite values")
    lo, hi = float(a.min()), float(a.max())
    if lo < low or hi > high:
        raise ValueError(f"state {name!r} holds values in [{lo:g}, {hi:g}], outside [{low:g}, {high:g}]")


def check_ring(ring: np.ndarray, budget: int) -> None:
    """Raise ValueError unless every ``[start, count]`` of a restored ring has ``0 <= start < budget`` and
    ``0 <= count <= budget``."""
    start, count = ring[..., 0], ring[..., 1]
    if ring.size and (start.min() < 0 or start.max() >= budget or count.min() < 0 or count.max() > budget):
        raise ValueError(f"state 'ring_' holds positions in [{start.min()}, {start.max()}] and counts in "
                         f"[{count.min()}, {count.max()}]; with a budget of {budget} they lie in [0, {budget - 1}] "
                         f"and [0, {budget}]")


def check_mask(name: str, mask: np.ndarray | None) -> None:
    """Raise ValueError unless the restored mask ``name`` holds only 0 and 255."""
    if mask is not None and ((mask != 0) & (mask != 255)).any():
        raise ValueError(f"state {name!r} is a mask, but holds values other than 0 and 255")



def without_removed_params(specs: tuple, removed: dict[str, Any], removed_choices: dict[str, tuple],
                           params: dict[str, Any]) -> dict[str, Any]:
    """``params`` (a checkpoint's) without the removed parameters it carries at their neutral value
    (``removed``); a ValueError naming one it carries at another value, or a removed value of a parameter
    (``removed_choices``; ``specs`` give the values that remain)."""
    for k, v in params.items():
        if v in removed_choices.get(k, ()):
            raise ValueError(f"the option {k}={v!r} was removed; its other values are "
                             f"{', '.join(map(repr, next(p for p in specs if p.name == k).choices))}: "
                             "start a new model with one of them")
        if k in removed and v != removed[k]:
            raise ValueError(f"the option {k} (here {v!r}) was removed; only its neutral value "
                             f"{removed[k]!r} is read: start a new model without it")
    return {k: v for k, v in params.items() if k not in removed}


def upgrade_feedback_layout(layout: int, params: dict, arrays: dict) -> tuple[dict, dict] | None:
    """A kernel subtractor's layout-1 checkpoint (before the blink feedback) or layout-2 one (before the
    stabiliser's state was saved) as layout 3: the feedback off where it did not exist, no warm-up
    (``warmup_frames`` did not exist), and a stabiliser that takes its reference at the next frame."""
    if layout not in (1, 2):
        return None
    params = {"warmup_frames": 0, **params}
    if layout == 1:
        params = {**params, "blink_gain": 0.0}
        if "samples_" in arrays:
            H, W = arrays["samples_"].shape[:2]
            arrays = {"blink_": np.zeros((H, W), np.float32), "post_mask_": np.zeros((H, W), np.uint8),
                      **arrays}
    return params, arrays


def upgrade_kernel_layout(layout: int, params: dict, arrays: dict, current: int,
                          texture_layout: int) -> tuple[dict, dict] | None:
    """olkn's or norma's checkpoint of an older layout as layout ``current``: layout 1 through
    :func:`upgrade_feedback_layout`, layouts before ``texture_layout`` with the texture features off (as they
    were then); a layout before the stabiliser's state was saved takes its reference at the next frame, and
    none of them knew ``warmup_frames`` (0)."""
    if not 1 <= layout < current:
        return None
    if layout == 1:
        params, arrays = upgrade_feedback_layout(layout, params, arrays)
    if layout < texture_layout:
        params = {**params, "texture": 0.0}
    return {"warmup_frames": 0, **params}, arrays


def check_kernel_state(sub) -> None:
    """Raise ValueError unless the state a checkpoint restored into the kernel subtractor ``sub``
    (:func:`bgsub.checkpoint.load`) is one the frame kernels can run on: they index without bounds checks, so every ring position and count must lie
    within the budget; and every float must be finite and in its range, every mask 0 or 255, every
    counter in range, so that a model edited by hand cannot continue in a state no stream leads to."""
    check_state_value("scale_", sub.scale_, SCALE_MIN, SCALE_MAX)
    check_state_value("gain_", sub.gain_, MIN_GAIN, MAX_GAIN)
    if sub.blobs_ != -1.0:
        check_state_value("blobs_", sub.blobs_, 0.0, math.inf)
    check_state_value("stabilise_saturated_", sub.stabilise_saturated_, 0, REANCHOR_FRAMES - 1)
    if sub.samples_ is None:
        return
    check_ring(sub.ring_, sub.samples_.shape[2])
    for name, low, high in type(sub)._RESTORED_RANGES:
        check_state_array(name, getattr(sub, name), low, high)
    for name in ("prev_mask_", "post_mask_"):
        check_mask(name, getattr(sub, name, None))
    ref = sub.stabilise_reference_
    if ref is not None:
        check_state_array("stabilise_reference_", ref, 0.0, 255.0)
