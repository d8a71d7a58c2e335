"""The parameter catalogue the kernel subtractors share, and the helpers that build their parameter sets.

:data:`COMMON_PARAMS` (input, update policy, stages), :data:`FEEDBACK_PARAMS` (the blink feedback) and
:data:`TEXTURE_PARAMS` (LBSP features); :func:`with_defaults` gives a model its own defaults,
:func:`checked_params` checks values, :func:`from_preset` builds a model from a preset. The parameters that
were removed are listed with the value at which they were off (:data:`REMOVED_PARAMS`), so that old
checkpoints carrying them at that value still load.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bgsub.registry import ParamSpec

__all__ = ["BLINK_DOWN", "on_device", "COMMON_PARAMS", "FEEDBACK_PARAMS", "TEXTURE_PARAMS", "REMOVED_PARAMS", "REMOVED_CHOICES",
           "with_defaults", "checked_params", "from_preset"]

#: Parameters shared by every kernel subtractor (pre- and post-processing, policy).
COMMON_PARAMS = (
    ParamSpec("budget", int, 20, "samples kept per pixel (ring buffer size B)", "samples", 1, 255, live=False),
    ParamSpec("color", str, "bgr", "use the three colour channels, or convert to grey first", "",
              choices=("bgr", "gray"), live=False),
    ParamSpec("init", str, "neighbours",
              "model at the first frame: 'neighbours' fills each buffer with B steps on values of random "
              "neighbours of the first frame within init_radius (ViBe-style, usable at once); 'empty' starts empty "
              "(paper)",
              "", choices=("neighbours", "empty"), live=False),
    ParamSpec("init_radius", int, 3,
              "neighbourhood of the first-frame bootstrap: values are drawn from a (2r+1)x(2r+1) square", "pixels",
              1, 16, live=False),
    ParamSpec("stabilise", str, "off",
              "camera-jitter compensation: every frame is registered to the first (integer shift, at most "
              "STABILISE_MAX pixels, bgsub.pipeline.stages) before the model, and the mask shifted back; 'match' finds the shift by "
              "correlating gradient images (right on 99 % of the jittered dev frames)", "",
              choices=("off", "match")),
    ParamSpec("update_prob", float, 0.25,
              "probability that a pixel classified background steps its learner in a frame", "", 0.0, 1.0),
    ParamSpec("fg_update_prob", float, 0.02,
              "probability that a pixel classified foreground steps its learner in a frame (1: the paper's "
              "unconditional update; small: stopped objects are not absorbed)", "", 0.0, 1.0),
    ParamSpec("update_mask", str, "raw",
              "which mask the update policy reads: 'raw' (score > 0, one fused pass) or 'post' (after "
              "median/fill_holes/min_area: isolated false detections still update, objects do not)", "",
              choices=("raw", "post")),
    ParamSpec("diffuse_prob", float, 0.0,
              "neighbour diffusion: probability per frame that a pixel not stepping on its own value learns the "
              "value of a random 8-connected neighbour classified background (ViBe/SuBSENSE spatial propagation; 0: off)",
              "", 0.0, 1.0),
    ParamSpec("illumination", str, "off",
              "global illumination compensation: 'gain' divides each frame by its gain against the model (the "
              "median frame-to-background ratio over a grid of pixels the previous frame classified background), "
              "so a light switched on or an exposure change does not flood the mask; 'off' leaves frames as they "
              "are", "", choices=("off", "gain")),
    ParamSpec("warmup_frames", int, 0,
              "after the first frame, every pixel classified background steps in each of this many frames (as "
              "update_prob 1), so a short clip's model learns its background's motion quickly (0: off)", "frames",
              0, 10000),
    ParamSpec("median", int, 7, "median filter of the mask, aperture (0: off; odd)", "pixels", 0, 15),
    ParamSpec("median_max", int, 0,
              "larger median aperture used while the mask is cluttered: while the running mean number of blobs "
              "(8-connected) in the median's output reaches CLUTTER_BLOBS (bgsub.pipeline.stages), the raw mask is "
              "filtered with this "
              "aperture instead (0: off; odd; acts only where larger than median)", "pixels", 0, 15),
    ParamSpec("min_area", int, 0, "remove foreground blobs smaller than this (0: off)", "pixels", 0, 100000),
    ParamSpec("fill_holes", int, 0,
              "fill background holes smaller than this inside foreground blobs, after the median (0: off)",
              "pixels", 0, 100000),
    ParamSpec("seed", int, 0, "seed of the update policy's random selection and of the bootstrap's neighbours", "",
              0, 2**31 - 1),
    ParamSpec("process_scale", float, 1.0,
              "model the frames at this fraction of their size (bilinear); masks, scores and the "
              "background image come back at the input's size (1: full size)", "ratio", 0.1, 1.0, live=False),
)

#: Per-pixel feedback and spatial tolerance of the decision (olkn, norma; :func:`fk.score_frame`).
FEEDBACK_PARAMS = (
    ParamSpec("blink_gain", float, 0.0,
              "blinking-pixel feedback (SuBSENSE's v(x)): the decision level f < L becomes "
              "L - blink_gain * v * |L|, where v in [0, 1] rises where the pixel's decision flickers (0: off)",
              "", 0.0, 0.95),
    ParamSpec("blink_up", float, 0.2, "rise of the blink accumulator v when the decision flips", "", 0.0, 1.0),
)

#: Texture features (olkn): LBSP descriptors in a product kernel with colour
#: (:mod:`bgsub.models._texture`, :func:`learners.kernels.texture_lut_value`).
TEXTURE_PARAMS = (
    ParamSpec("texture", float, 0.0,
              "texture features: each value carries the LBSP binary descriptor of its 5x5 neighbourhood (16 bits "
              "per channel) and the kernel becomes the product exp(-(||x - y||^2 + texture * h) / width^2) of the "
              "colour Gaussian and a Gaussian of the descriptors' Hamming distance h (0: off; on, olkn's frames run "
              "its exact engine; turning it on in a running model resets it)", "grey levels^2 per bit", 0.0, 65025.0),
    ParamSpec("texture_threshold", float, 0.3,
              "texture: relative threshold t of the descriptor, bit set where |I(n) - I(c)| > max(t I(c), 4)",
              "ratio", 0.0, 10.0, live=False),
    ParamSpec("texture_mode", str, "intra",
              "texture: which descriptor of the value a sample's is compared with: 'intra' (the value's own, "
              "centred on the value) or 'inter' (LOBSTER's inter-LBSP: the value's neighbourhood seen from the "
              "sample's centre, so a changed centre alone does not change it; 16 comparisons more per sample "
              "and channel)", "", choices=("intra", "inter")),
)

def with_defaults(specs: tuple[ParamSpec, ...], **defaults) -> tuple[ParamSpec, ...]:
    """``specs`` with the defaults of the named parameters replaced."""
    unknown = set(defaults) - {p.name for p in specs}
    if unknown:
        raise KeyError(f"no such parameters: {sorted(unknown)}")
    return tuple(dataclasses.replace(p, default=defaults[p.name]) if p.name in defaults else p for p in specs)


#: Parameters that were removed, each with the value at which the code behaved as it does without it (the
#: feature off): a checkpoint that carries one at that value loads without it, another value is refused
#: (:meth:`PixelKernelSubtractor.without_removed_params`; subclasses add their own).
REMOVED_PARAMS: dict[str, Any] = {"blur": 0.0, "open": 0, "close": 0, "relearn_fraction": 0.0, "relearn_frames": 10,
                                  "shadow_low": 0.0, "shadow_chroma": 0.1, "match_radius": 0, "match_tries": 8,
                                  "stabilise_max": 8, "diffuse_radius": 1, "median_blobs": 10.0,
                                  "median_rate": 0.05, "blink_down": 0.02}

#: The blink accumulator's fall on a steady frame (a constant since it was last a parameter, at the value every
#: default and preset used).
BLINK_DOWN = 0.02
#: Values of parameters that were removed (a checkpoint that carries one is refused with a message).
REMOVED_CHOICES: dict[str, tuple] = {"stabilise": ("phase",)}


def checked_params(owner: str, specs: dict[str, ParamSpec], current: dict[str, Any],
                   changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``current`` with ``changes`` applied, each checked by its spec; an unknown name is an error."""
    new = dict(current)
    for k, v in changes.items():
        if k not in specs:
            raise ValueError(f"{owner} has no parameter {k!r}; its parameters are {', '.join(specs)}")
        new[k] = specs[k].check(v)
    return new


def from_preset(factory, algorithm: str, presets: dict[str, dict[str, Any]], preset: str | None,
                params: dict[str, Any]):
    """``factory(**values)``: the named preset's values (if any), overridden by ``params``."""
    values = {}
    if preset is not None:
        if preset not in presets:
            raise ValueError(f"unknown preset {preset!r} for {algorithm}; presets: {', '.join(presets)}")
        values.update(presets[preset])
    values.update(params)
    return factory(**values)


def on_device(sub, device: str):
    """``sub`` on ``device``: itself for ``"cpu"``, else moved to the GPU engine (:mod:`bgsub.models._cuda_engine`,
    imported only then: numba-cuda is an optional extra)."""
    if device == "cpu":
        return sub
    from bgsub.models._cuda_engine import check_device, to_device

    return to_device(sub, check_device(device))
