"""OLK_N background subtractor: one online kernel novelty detector per pixel.

Each pixel learns ``f(x) = sum_i alpha_i k(x_i, x)`` over its own values in time
with the OLK_N rule (Li et al. 2013, eq. 65-69; ``learners.steps.olk_n_update``):
the old coefficients are divided by ``1 + r``, the new term gets
``a / (1 + r)`` with ``a = clip(1 + r - f(x), nu, C)``. The Gaussian kernel
``exp(-||x - y||^2 / width^2)`` over pixel values (0-255, one or three channels)
is read from a table over integer squared distances.

Score ``1 + rho - f(x)``; positive = novelty = foreground.
"""

from __future__ import annotations

import numpy as np

from bgsub.models import _bounded_frame as bf
from bgsub.models import _frame_kernels as fk
from bgsub.models import _state
from bgsub.models.base import (COMMON_PARAMS, FEEDBACK_PARAMS, TEXTURE_PARAMS, PixelKernelSubtractor,
                               from_preset, on_device, with_defaults)
from bgsub.registry import AlgorithmInfo, ParamSpec, register
from bgsub.models._state import OLKN_RHO_RULES
from learners.steps import olk_decay

__all__ = ["OLKNSubtractor", "createOLKN", "OLKN_PARAMS", "OLKN_PRESETS", "OLKN_RHO_RULES"]

#: Which engine runs the frames (:mod:`bgsub.models._bounded_frame`).
SCORE_MAP_PARAM = ParamSpec(
    "score_map", str, "bounded",
    "'bounded': a pixel sums its kernel expansion only where a bound from its last full sum does not settle its "
    "decisions (masks, offsets and learning exactly as with 'exact', faster; the score map elsewhere is within the "
    "bound, of the same sign); 'exact': every pixel's full sum every frame, for exact score maps (ROC curves, "
    "score thresholds)", "", choices=("bounded", "exact"))

OLKN_PARAMS = (
    ParamSpec("width", float, 18.0, "Gaussian kernel width p in k(x,y) = exp(-||x-y||^2/p^2)",
              "pixel value 0-255", 0.5, 255.0),
    ParamSpec("r", float, 0.001, "forgetting factor: old coefficients are divided by 1 + r every frame",
              "per frame", 0.0, 1.0),
    ParamSpec("nu", float, 0.2, "lower bound of the new term's multiplier a", "", 0.0, 10.0),
    ParamSpec("C", float, 0.4, "upper bound of the new term's multiplier a (C > nu)", "", 1e-6, 10.0),
    ParamSpec("rho_rule", str, "quantile",
              "offset rule: 'paper' (eq. 69) or 'quantile' (per-pixel nu-trick: "
              "each pixel lets a fraction rho_nu of its own values be novel)", "", choices=tuple(OLKN_RHO_RULES)),
    ParamSpec("rho_eta", float, 0.03, "quantile rule: step of the offset per frame", "", 0.0, 1.0),
    ParamSpec("rho_nu", float, 0.05, "quantile rule: target fraction of novel values per pixel", "", 0.0, 1.0),
    ParamSpec("rho_min", float, -0.3,
              "quantile rule: lowest offset (threshold f < 1 + rho_min; > -1 keeps unexplained values novel; the "
              "highest is 0)", "",
              -0.99, 0.0),
    *TEXTURE_PARAMS,
    SCORE_MAP_PARAM,
) + with_defaults(FEEDBACK_PARAMS, blink_gain=0.9, blink_up=0.1) + with_defaults(
    # olkn's update always reads the raw mask, in the fused pass (update_mask: norma's and svmd's choice)
    tuple(p for p in COMMON_PARAMS if p.name != "update_mask"), diffuse_prob=0.1, stabilise="match", warmup_frames=50, init_radius=8, illumination="gain",
    min_area=10, fill_holes=100, median_max=9)

#: Named parameter sets; "paper" is Li et al.'s setting with the unconditional update.
OLKN_PRESETS = {
    "paper": {"width": 10.0, "r": 0.001, "nu": 0.1, "C": 0.2, "budget": 20, "rho_rule": "paper",
              "color": "bgr", "init": "empty", "update_prob": 1.0, "fg_update_prob": 1.0,
              "median": 0, "min_area": 0, "fill_holes": 0, "median_max": 0, "init_radius": 1,
              "diffuse_prob": 0.0, "blink_gain": 0.0, "stabilise": "off", "warmup_frames": 0, "illumination": "off"},
    # The presets keep the parameters they were measured with where the defaults moved since (the illumination
    # compensation and diffuse_prob 0.1: the compensation's fixed cost is a large share of the fast preset's small
    # frames; the component filters, min_area 10 and fill_holes 100; the larger median while the mask is
    # cluttered, median_max 9).
    # HD at speed: the model at a quarter of the frame size, a 3x3 median there (docs/performance.md);
    # without the blink feedback, and with the wider kernel and offset of the earlier defaults: at a quarter of
    # the size the narrower kernel and the stabiliser lose on the jittered copies (docs/parameters.md,
    # "Presets"); the bootstrap's radius as measured then (3)
    "fast": {"process_scale": 0.25, "median": 3, "blink_gain": 0.0, "width": 40.0, "nu": 0.1, "C": 0.2,
             "rho_nu": 0.1, "stabilise": "off", "warmup_frames": 0, "init_radius": 3, "illumination": "off",
             "diffuse_prob": 0.2, "min_area": 0, "fill_holes": 0, "median_max": 0},
    # offline quality: LOBSTER's inter-frame LBSP in a product kernel with colour, with the stabiliser (docs/tuning.md:
    # dev mean F 0.567 plain, 0.564 jittered, in sample, with the bootstrap radius 3
    # of then) at about 0.06x KNN's speed (its textured sums stop once they decide: fk.olkn_frame's ``early``)
    "accurate": {"texture": 100.0, "texture_mode": "inter", "width": 30.0, "nu": 0.5, "C": 1.0, "rho_nu": 0.1,
                 "warmup_frames": 0, "init_radius": 3, "illumination": "off", "diffuse_prob": 0.2, "min_area": 0,
                 "fill_holes": 0, "median_max": 0},
}


class OLKNSubtractor(PixelKernelSubtractor):
    """Per-pixel OLK_N novelty detection (OpenCV-style background subtractor).

    Parameters
    ----------
    width : float
        Kernel width ``p`` in pixel values (0-255 per channel).
    r : float
        Forgetting factor per frame.
    nu, C : float
        Bounds ``nu <= a <= C`` of the new term's multiplier.
    rho_rule : {"paper", "quantile"}
        Offset update (eq. 69, or the per-pixel nu-trick
        :func:`learners.steps.olk_n_quantile_rho` with ``rho_eta``, ``rho_nu``
        and bounds ``rho_min`` and :data:`bgsub.models._state.RHO_MAX`).
    texture, texture_threshold : float
        Texture features: the weight ``lam`` of the descriptors' Hamming distance in the product kernel
        (:func:`learners.kernels.texture_lut_value`; 0: off) and the descriptor's relative threshold
        (:func:`bgsub.models._texture.lbsp`).
    budget, color, update_prob, fg_update_prob, median, min_area, seed
        See :data:`bgsub.models.base.COMMON_PARAMS` and ``docs/parameters.md``.

    Attributes
    ----------
    texture_ : ndarray (H, W, B, C) of uint16, or None
        The LBSP descriptor of every sample, slot for slot with ``samples_`` (None while ``texture`` is 0).

    See :class:`bgsub.models.base.PixelKernelSubtractor` for the others.
    """

    _SPECS = OLKN_PARAMS
    _REMOVED_CHOICES = {**PixelKernelSubtractor._REMOVED_CHOICES, "rho_rule": ("primal",)}
    _REMOVED_PARAMS = {**PixelKernelSubtractor._REMOVED_PARAMS, "init_rho": "zero", "rho_max": 0.0,
                       "update_mask": "raw", "adapt_update": 0.0,
                       "adapt_by": "offset", "adapt_width": 0.0, "width_rate": 0.01, "width_min": 1.0,
                       "width_max": 3.0, "width_blink": 0.0}
    #: The per-pixel widths' state arrays (``misfit_``, ``width_``): a checkpoint of layout 3 to 5 holds them,
    #: at their values while the widths were off (the parameters say so), and loads without them.
    _REMOVED_ARRAYS = ("misfit_", "width_")
    _score_offset = 1.0
    _STATE_ARRAYS = PixelKernelSubtractor._STATE_ARRAYS + ("texture_",)
    #: 3: the per-pixel kernel widths' arrays joined the state (removed since: :attr:`_REMOVED_ARRAYS`);
    #: 4: ``texture_`` (the samples' descriptors, present while ``texture`` > 0); 5: the stabiliser's reference
    #: and counter.
    _STATE_LAYOUT = 5
    _TEXTURE_LAYOUT = 4

    @property
    def score_range(self) -> tuple[float, float]:
        # f lies in [0, B*C] and rho in [0, B*C - 1], so 1 + rho - f is within
        # [1 - B*C, B*C]; a symmetric range keeps 0 on a histogram bin edge.
        R = max(self.params["budget"] * self.params["C"], 1.0) + 1.0 + _state.RHO_MAX
        return (-R, R)

    def _check(self, values):
        super()._check(values)
        if not values["C"] > values["nu"]:
            raise ValueError(f"C must be > nu, got C={values['C']} and nu={values['nu']}")

    def _allocate(self, H, W, C):
        super()._allocate(H, W, C)
        # the bounded engine's cache (bgsub.models._bounded_frame): derived state, not saved
        self._ref = np.zeros((H, W, C), dtype=np.uint8)
        self._ref_sum = np.zeros((H, W), dtype=np.float32)
        self._ref_mass = np.zeros((H, W), dtype=np.float32)
        self._summed = np.zeros(H, dtype=np.int64)
        self._cache_valid = False

    def _on_params_changed(self):
        self._cache_valid = False  # a new table, or rules the cached sums were not kept for

    def _on_renormalise(self, factor):
        if self._cache_valid:  # the cached sums are in the coefficients' units
            self._ref_sum *= np.float32(factor)
            self._ref_mass *= np.float32(factor)

    def _bounded(self) -> bool:
        """Whether frames run :func:`bf.olkn_frame_bounded` (``score_map="bounded"``; not with texture features,
        which its bound does not cover)."""
        return self.params["score_map"] == "bounded" and not self._texture_on()

    def _frame_kernels(self):
        frames = (bf.olkn_frame_bounded if self._bounded() else fk.olkn_frame,)
        boot = (fk.olkn_bootstrap,) if self.params["init"] == "neighbours" and self._can_bootstrap_pixelwise() else ()
        return frames + boot

    def _frame(self, img, p_bg, p_fg, p_diff, mask_out, nbr_mask):
        p = self.params
        args = (img, _state.pixel_state(self), float(self.scale_), self.lut(), _state.olkn_rule(p),
                _state.policy(p_bg, p_fg, p_diff, p, self.n_frames_),
                _state.feedback(self.blink_, nbr_mask, self._blink_args()), (self._score, mask_out, self._stepped))
        if self._bounded():
            bf.frame_bounded(*args, (self._ref, self._ref_sum, self._ref_mass, bf.gaussian_slope(p["width"]),
                                          not self._cache_valid, not self._all_full(), self._summed))
            self._cache_valid = True
            return
        self._cache_valid = False
        fk.olkn_frame(*args, self._texture_args(), self._early_stop())

    def _early_stop(self) -> bool:
        """Whether the exact engine's textured sums may stop once they decide (``score_map="bounded"`` with
        texture features at the table's width):
        decisions and model as with full sums, score maps exact in sign only (:func:`fk.olkn_frame`)."""
        return self.params["score_map"] == "bounded" and self._texture_on()

    def _can_bootstrap_pixelwise(self):
        return not self._texture_on()

    def _bootstrap_pixelwise(self, img, draws, scales, scratch):
        p = self.params
        fk.bootstrap_olkn(img, draws, _state.pixel_state(self), scales, self.lut(), _state.olkn_rule(p))
        self._cache_valid = False  # the bounded engine's cache was not kept: the next frame sums in full

    def _decay(self) -> float:
        return float(olk_decay(self.params["r"]))


def createOLKN(preset: str | None = None, device: str = "cpu", **params) -> OLKNSubtractor:
    """Build an OLK_N subtractor; ``preset="paper"`` starts from the paper's setting. ``device="cuda"`` runs its
    learners on an NVIDIA GPU (:mod:`bgsub.models._cuda_engine`)."""
    return on_device(from_preset(OLKNSubtractor, "olkn", OLKN_PRESETS, preset, params), device)


register(AlgorithmInfo(name="olkn", factory=createOLKN, params=OLKN_PARAMS,
                       doc="per-pixel OLK_N online kernel novelty detection", presets=OLKN_PRESETS))
