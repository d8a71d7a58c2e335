"""Shared machinery of the per-pixel kernel subtractors.

:class:`PixelKernelSubtractor` runs a per-pixel model behind the pipeline's stages
(:mod:`bgsub.pipeline.stages`: preparation, stabiliser, illumination gain, mask filters, output geometry) and
owns what every kernel model shares: the per-pixel state, the global coefficient scale and its
renormalisation, the update policy's random selection, the first frame's bootstrap, the background image, and
``set_params`` for live parameter changes. Subclasses say how to score (offset of the score) and how to update
(which jitted frame update, which decay).
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from bgsub.models import _frame_kernels as fk
from bgsub.models import _illumination, _state, _texture
from bgsub.models._bootstrap import init_from_neighbours
from bgsub.models._restore import (check_kernel_state, upgrade_feedback_layout, upgrade_kernel_layout,
                                   without_removed_params)
from bgsub.models.params import (BLINK_DOWN, COMMON_PARAMS, FEEDBACK_PARAMS, REMOVED_CHOICES, REMOVED_PARAMS,  # noqa: F401
                                 TEXTURE_PARAMS, from_preset, on_device, with_defaults)
from bgsub.models.staged import StagedSubtractor
from learners._numba_cache import is_cached
from learners.expansion import needs_renormalise
from learners.kernels import gaussian_lut

__all__ = ["PixelKernelSubtractor", "COMMON_PARAMS", "FEEDBACK_PARAMS", "TEXTURE_PARAMS", "with_defaults",
           "from_preset"]

_PROB_ONE = fk.PROB_ONE

#: The inter-frame descriptor's arguments of a model with the intra-frame one
#: (:meth:`PixelKernelSubtractor._texture_args`).
_NO_PATTERNS = (False, np.zeros((1, 1, 1, 16), np.uint8), np.zeros(256, np.uint8))

#: Neighbourhood of the previous output's foreground in which decision flips do not count as blinking: the
#: side of the square by which the output mask is dilated (:meth:`PixelKernelSubtractor._remember_output`).
BLINK_MARGIN = 5
_BLINK_SQUARE = np.ones((BLINK_MARGIN, BLINK_MARGIN), np.uint8)


def _prob(p: float) -> int:
    return int(round(min(max(p, 0.0), 1.0) * _PROB_ONE))


class PixelKernelSubtractor(StagedSubtractor):
    """Base class: a tiny online novelty detector per pixel, all stepped at once.

    Subclasses define ``_SPECS`` (tuple of ParamSpec), ``_score_offset``,
    ``_frame(img, p_bg, p_fg, p_diff, mask_out, nbr_mask)`` (the fused jitted
    frame step), ``_update`` (the step after post-processing) and ``_decay()``;
    optionally ``_bootstrap_step``/``_bootstrap_done`` (first-frame warm-up).

    Attributes
    ----------
    score_range : (float, float)
        Range of :meth:`getScoreMap` values (for ROC histograms).
    samples_ : ndarray (H, W, B, C) of uint8
        Support vectors of every pixel.
    coef_ : ndarray (H, W, B) of float32
        Stored coefficients; the true ones are ``scale_ * coef_``.
    ring_ : ndarray (H, W, 2) of int64
        ``[start, count]`` of each pixel's ring buffer.
    rho_ : ndarray (H, W) of float64
        Offsets.
    prev_mask_ : ndarray (H, W) of uint8
        Raw mask of the previous frame (neighbour diffusion and the blink feedback read it).
    blink_ : ndarray (H, W) of float32
        Blinking accumulators ``v`` in [0, 1] (``blink_gain``; stays 0 when off).
    post_mask_ : ndarray (H, W) of uint8
        Output mask of the previous frame dilated 5x5, at the model's size (``blink_gain``: flips
        inside it are an object's edges, not blinking; stays 0 when off).
    scale_ : float
        Global coefficient scale.
    n_steps_ : int
        Pixel steps taken since the last reset (one per pixel per update).

    The stages' attributes (``params``, ``frame_shape_``, ``input_shape_``, ``channels_``, ``n_frames_``,
    ``stabilise_reference_``, ``stabilise_saturated_``, ``gain_``, ``blobs_``) are
    :class:`bgsub.models.staged.StagedSubtractor`'s.
    """

    _score_offset = 0.0
    #: State saved by :meth:`save` (see :mod:`bgsub.checkpoint`): every per-pixel state array, and scalars.
    _STATE_ARRAYS: tuple[str, ...] = ("samples_", "coef_", "ring_", "rho_", "prev_mask_", "blink_", "post_mask_",
                                      "stabilise_reference_")
    _STATE_SCALARS: tuple[str, ...] = ("scale_", "n_frames_", "n_steps_", "stabilise_saturated_",
                                       "gain_", "blobs_")
    #: Scalars that joined the state after checkpoints of the current layout were first written: a checkpoint
    #: without one continues from its initial value.
    _ADDED_SCALARS: tuple[str, ...] = ("gain_", "blobs_")
    #: Parameters that joined after checkpoints of the current layout were first written, with the value that
    #: behaves as the versions before them (a checkpoint without the parameter continues with it).
    _ADDED_PARAMS: dict[str, Any] = {"illumination": "off", "median_max": 0}
    #: 2: ``blink_`` and ``post_mask_`` (the blink feedback) joined the state; 3: the stabiliser's reference
    #: and counter.
    _STATE_LAYOUT = 3

    #: The first layout whose state held the texture features' descriptors (olkn, norma; their older layouts
    #: upgrade through :func:`bgsub.models._restore.upgrade_kernel_layout`), None for a class without them.
    _TEXTURE_LAYOUT: int | None = None

    @classmethod
    def _upgrade_checkpoint(cls, layout: int, params: dict, arrays: dict) -> tuple[dict, dict] | None:
        """An older layout as the current one (:func:`bgsub.models._restore.upgrade_kernel_layout` for a class
        with texture features, else :func:`bgsub.models._restore.upgrade_feedback_layout`; only for classes
        whose state holds the feedback's arrays, not SVMD's own layout)."""
        if cls._TEXTURE_LAYOUT is not None:
            return upgrade_kernel_layout(layout, params, arrays, cls._STATE_LAYOUT, cls._TEXTURE_LAYOUT)
        return upgrade_feedback_layout(layout, params, arrays) if "blink_" in cls._STATE_ARRAYS else None

    def _check_restored_state(self) -> None:
        """Raise ValueError unless a checkpoint restored a state the frame kernels can run on
        (:func:`bgsub.models._restore.check_kernel_state`)."""
        check_kernel_state(self)

    #: ``(name, low, high)`` of the float state arrays :meth:`_check_restored_state` checks (finite, in range).
    _RESTORED_RANGES: tuple[tuple[str, float, float], ...] = (
        ("coef_", -math.inf, math.inf), ("rho_", -math.inf, math.inf), ("blink_", 0.0, 1.0))

    #: The removed parameters of this class and their neutral values (:data:`REMOVED_PARAMS`).
    _REMOVED_PARAMS: dict[str, Any] = REMOVED_PARAMS

    #: Values of parameters that were removed (:data:`REMOVED_CHOICES`).
    _REMOVED_CHOICES: dict[str, tuple] = REMOVED_CHOICES
    #: State values that were removed, with their value while the feature was off (a checkpoint that carries
    #: one at another value is refused, :func:`bgsub.checkpoint.load`).
    _REMOVED_SCALARS: dict[str, Any] = {"relearn_left_": 0}

    @classmethod
    def without_removed_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` (a checkpoint's) without the removed parameters it carries at their neutral value
        (:func:`bgsub.models._restore.without_removed_params`)."""
        return without_removed_params(cls._SPECS, cls._REMOVED_PARAMS, cls._REMOVED_CHOICES, params)

    def set_params(self, **params: Any) -> bool:
        """Change parameters; returns True when the model had to be reset.

        Parameters marked ``live`` in the registry take effect from the next frame;
        changing any other (e.g. ``budget``, ``color``) resets the model.
        """
        needs_reset = self._changed_params(params)
        self._lut = None
        self._decay_value = None
        self._on_params_changed()
        if needs_reset:
            self.reset()
        elif self.samples_ is not None:
            # texture on in a model whose samples have no descriptors: a new model; off: drop them
            if not self._texture_on():
                self.texture_ = None
            elif self.texture_ is None:
                self.reset()
                return True
        return needs_reset

    def _on_params_changed(self) -> None:
        pass

    def _on_renormalise(self, factor: float) -> None:
        """Hook after the stored coefficients were multiplied by ``factor`` (and the scale reset to 1)."""

    def _state_changed(self) -> None:
        """Hook after the per-pixel state changed other than by the model's own frames (a move between the CPU and
        GPU engines): a model that keeps a copy derived from it (norma's row planes) writes the copy anew."""

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the model; the next frame may have any size."""
        super().reset()
        self.samples_ = None
        self.coef_ = None
        self.ring_ = None
        self.rho_ = None
        self.scale_ = 1.0
        self.prev_mask_ = None
        self.blink_ = None
        self.post_mask_ = None
        self.n_steps_ = 0
        self._score = None
        self._img = None
        # derived tables depend on the channel count of the next stream (grey frames,
        # reset(), then colour frames must not keep the grey Gaussian table)
        self._lut = None
        self._decay_value = None
        self.texture_ = None
        self._descriptors = self._frame_descriptors = None
        self._patterns = self._frame_patterns = None
        self._thresholds = None

    def _allocate(self, H: int, W: int, C: int) -> None:
        B = self.params["budget"]
        self.frame_shape_ = (H, W)
        self.channels_ = C
        self.samples_ = np.zeros((H, W, B, C), dtype=np.uint8)
        self.coef_ = np.zeros((H, W, B), dtype=np.float32)
        self.ring_ = np.zeros((H, W, 2), dtype=np.int64)
        self.rho_ = np.zeros((H, W), dtype=np.float64)
        self.scale_ = 1.0
        self._score = np.zeros((H, W), dtype=np.float32)
        self._f = np.zeros((H, W), dtype=np.float64)
        self._oldest = np.zeros((H, W), dtype=np.float64)
        self._rawmask = np.zeros((H, W), dtype=np.uint8)
        self._own = np.zeros((H, W), dtype=np.uint8)
        self.prev_mask_ = np.zeros((H, W), dtype=np.uint8)
        self.blink_ = np.zeros((H, W), dtype=np.float32)
        self.post_mask_ = np.zeros((H, W), dtype=np.uint8)
        self._stepped = np.zeros(H, dtype=np.int64)
        n = _illumination.grid_size(H, W)  # the illumination estimate's ratios, their blocks, room to sort
        self._gain_scratch = (np.empty(n, dtype=np.float64), np.empty(n, dtype=np.int64),
                              np.empty(n, dtype=np.float64))
        self._buffers_full = False  # :meth:`_all_full`
        if self._texture_on():
            self.texture_ = np.zeros((H, W, B, C), dtype=np.uint16)

    def _all_full(self) -> bool:
        """Whether every pixel's buffer holds ``budget`` samples. The frames never lower a count (no pruning), so
        once true it stays true until the next allocation (a new model, a checkpoint's load); the counts are read
        until then."""
        if not self._buffers_full:
            B = self.samples_.shape[2]
            # the first pixel alone first: while buffers fill, that spares the scan of every count
            self._buffers_full = bool(self.ring_[0, 0, 1] >= B and (self.ring_[..., 1] >= B).all())
        return self._buffers_full

    def lut(self) -> np.ndarray:
        """The Gaussian table for the current width and channel count."""
        if self._lut is None:
            C = self.channels_ or (1 if self.params["color"] == "gray" else 3)
            self._lut = gaussian_lut(self.params["width"], C * 255 * 255)
        return self._lut

    # ------------------------------------------------------------------ input
    def _model_ready(self) -> bool:
        return self.samples_ is not None and self.n_frames_ > 0

    def _estimate_gain(self, img: np.ndarray) -> float | None:
        """The frame's gain against the model (:func:`_illumination.estimate_gain`), read on the previous frame's
        raw mask as the model learnt from it (saved state: a resumed model gets the same)."""
        return _illumination.estimate_gain(img, self.samples_, self.coef_, self.ring_, self.prev_mask_,
                                           self._gain_scratch)

    # ------------------------------------------------------------------ the model
    def _model_step(self, img: np.ndarray, lr: float) -> np.ndarray:
        """Score ``img``, learn (``lr`` -1: ``update_prob`` and ``fg_update_prob``; 0: no learning; in (0, 1): the
        probability that a background pixel steps, for ``update_prob``), and return the filtered mask.

        With ``update_mask="raw"`` (the default) score, raw mask and learning are one fused pass
        (:meth:`_frame`) and the filters only filter the output; with ``"post"`` the update reads the filtered
        mask. The filtered mask (dilated) tells the blink feedback where objects are."""
        self._img = img
        self._describe(img)
        if self.samples_ is None:
            self._allocate(img.shape[0], img.shape[1], img.shape[2])
            if self.params["init"] == "neighbours":
                self._init_from_neighbours(img)
        if lr == 0.0:
            self._stepped[:] = 0
            self._score_pass(img, learn=False)
        mask = None
        if lr != 0.0:
            p_bg = _prob(self.params["update_prob"] if lr == -1 else lr)
            p_fg = _prob(self.params["fg_update_prob"])
            p_diff = _prob(self.params["diffuse_prob"])
            if lr == -1 and 0 < self.n_frames_ <= self.params["warmup_frames"]:
                p_bg = _PROB_ONE
            if self._fused():
                # score, raw mask and update in one pass; post-processing only filters the output.
                # Diffusion reads the previous frame's raw mask (other rows are being written).
                self._frame(img, p_bg, p_fg, p_diff, self._rawmask, self.prev_mask_)
            else:
                # two passes: the update reads the post-processed mask
                self._score_pass(img, learn=True)
                if self.params.get("update_mask", "raw") == "raw":
                    self._update(img, self._own, p_bg, p_fg, p_diff)
                else:
                    mask = self._postprocess(self._rawmask)
                    self._update(img, mask, p_bg, p_fg, p_diff)
            self._remember_raw()
            self.n_steps_ += int(self._stepped.sum())
            self._advance_scale()
        if mask is None:
            mask = self._postprocess(self._rawmask)
        if self.params.get("blink_gain", 0.0) > 0:
            self._remember_output(mask)
        return mask

    def _remember_raw(self) -> None:
        """After a learning frame: its raw mask is the next frame's previous mask (diffusion reads it)."""
        self.prev_mask_[...] = self._rawmask

    def _remember_output(self, mask: np.ndarray) -> None:
        """The blink feedback's margin of the output ``mask``: where the last output was foreground, or next to it,
        flips are an object's edges, not blinking (``post_mask_``, the dilation by :data:`BLINK_MARGIN`)."""
        cv2.dilate(mask, _BLINK_SQUARE, dst=self.post_mask_)

    def _blink_args(self, learn: bool = True) -> tuple:
        """``(post, gain, up, down)`` of the blink feedback (``post``: the previous output mask); a frame
        that does not learn leaves ``v`` alone."""
        p = self.params
        gain = p.get("blink_gain", 0.0)
        if not learn:
            return self.post_mask_, gain, 0.0, 0.0
        return self.post_mask_, gain, p.get("blink_up", 0.0), BLINK_DOWN

    def _score_pass(self, img: np.ndarray, learn: bool) -> None:
        """Score ``img`` without learning (:func:`fk.score_frame`), with the blink feedback; ``learn`` moves the
        blink accumulators."""
        fk.score_frame(img, _state.pixel_state(self), float(self.scale_), self.lut(), float(self._score_offset),
                       self._score, self._f, self._oldest, self._rawmask, self._own,
                       _state.feedback(self.blink_, self.prev_mask_, self._blink_args(learn)), self._texture_args())

    def _texture_on(self) -> bool:
        """Whether values carry texture descriptors (``texture`` > 0; subclasses with ``TEXTURE_PARAMS``)."""
        return self.params.get("texture", 0.0) > 0.0

    def _texture_args(self) -> tuple | None:
        """``(lam, descriptors, sample_descriptors, inter, patterns, thresholds)`` of the frame kernels' texture
        features (:func:`fk._sum_at`), None while ``texture`` is off (the kernels compiled without them);
        ``inter`` with ``texture_mode="inter"`` (the frame's pattern points and the thresholds by centre value)."""
        if not self._texture_on():
            return None
        if self.params.get("texture_mode", "intra") == "inter":
            return (float(self.params["texture"]), self._descriptors, self.texture_, True, self._patterns,
                    self._thresholds)
        return (float(self.params["texture"]), self._descriptors, self.texture_, *_NO_PATTERNS)

    def _describe(self, img: np.ndarray) -> None:
        """Hook on every prepared frame before it is scored: its LBSP descriptors (:func:`_texture.lbsp`), while
        ``texture`` is on."""
        if self._texture_on():
            out = self._frame_descriptors
            if out is None or out.shape != img.shape:  # the frame's buffer, kept from frame to frame
                out = np.empty(img.shape, np.uint16)
            _texture.lbsp(img, self.params["texture_threshold"], _texture.LBSP_FLOOR, out)
            self._frame_descriptors = self._descriptors = out
            if self.params.get("texture_mode", "intra") == "inter":
                pat = self._frame_patterns
                if pat is None or pat.shape[:3] != img.shape:
                    pat = np.empty((*img.shape, 16), np.uint8)
                _texture.patterns(img, pat)
                self._frame_patterns = self._patterns = pat
                self._thresholds = _texture.thresholds(self.params["texture_threshold"])

    def _bootstrap_values(self, img: np.ndarray, rows: np.ndarray | None, cols: np.ndarray | None) -> np.ndarray:
        """The first frame's values at ``(rows, cols)`` (None: ``img`` itself), C-contiguous, for a bootstrap
        step; with texture on, each value's descriptor moves along (the frame kernels read ``_descriptors``)."""
        if self._texture_on():
            d = self._frame_descriptors
            self._descriptors = d if rows is None else np.ascontiguousarray(d[rows, cols])
            if self._frame_patterns is not None and self.params.get("texture_mode", "intra") == "inter":
                pat = self._frame_patterns
                self._patterns = pat if rows is None else np.ascontiguousarray(pat[rows, cols])
        return img if rows is None else np.ascontiguousarray(img[rows, cols])

    def _decay_factor(self) -> float:
        """:meth:`_decay` as a float, computed once per parameter set (it changes only with them)."""
        if self._decay_value is None:
            self._decay_value = float(self._decay())
        return self._decay_value

    def _advance_scale(self) -> None:
        self.scale_ *= self._decay_factor()
        if needs_renormalise(self.scale_):
            fk.renormalise(self.coef_, self.scale_)
            self._on_renormalise(self.scale_)
            self.scale_ = 1.0

    def _init_from_neighbours(self, img: np.ndarray) -> None:
        """Fill every buffer with ``budget`` learner steps on random neighbours of ``img``
        (:func:`bgsub.models._bootstrap.init_from_neighbours`)."""
        init_from_neighbours(self, img)

    def _can_bootstrap_pixelwise(self) -> bool:
        """Whether :meth:`_bootstrap_pixelwise` runs the bootstrap with the current parameters (default: no,
        it runs frame by frame, :meth:`_bootstrap_step`)."""
        return False

    def _bootstrap_pixelwise(self, img: np.ndarray, draws: tuple[int, int], scales: np.ndarray,
                             scratch: np.ndarray) -> None:
        """Every bootstrap step in one pass, pixel by pixel: step ``b`` of each pixel on the value of ``img`` at
        the neighbour drawn by ``draws = (seed, radius)`` (:func:`bgsub.models._frame_kernels._bootstrap_source`)
        under the global scale ``scales[b]``; the state must end as :meth:`_bootstrap_step` on each of those frames
        leaves it (only called where :meth:`_can_bootstrap_pixelwise`)."""
        raise NotImplementedError

    def _bootstrap_step(self, x: np.ndarray, scratch: np.ndarray) -> None:
        """One bootstrap step on the values ``x``: by default an ordinary learner step of every pixel."""
        self._frame(x, _PROB_ONE, _PROB_ONE, 0, scratch, scratch)
        self.n_steps_ += int(self._stepped.sum())

    def _bootstrap_done(self) -> None:
        """Hook after the bootstrap (e.g. set the offsets)."""

    def _fused(self) -> bool:
        """Whether a learning frame is one pass (:meth:`_frame`) rather than a score pass and an update pass."""
        return self.params.get("update_mask", "raw") == "raw"

    def _frame_kernels(self) -> tuple:
        """The jitted functions the next frames run with the current parameters (the large ones, whose
        compilation a user waits for; default: none listed)."""
        return ()

    def uncompiled_kernels(self) -> list[str]:
        """Names of :meth:`_frame_kernels` that numba's cache does not hold for the current sources: the first
        frame compiles them (about a minute for olkn's on a 2-core machine), later runs load them."""
        return [k.__name__ for k in self._frame_kernels() if not is_cached(k)]

    def getScoreMap(self) -> np.ndarray | None:
        """float32 (H, W) novelty score of the last frame; ``> 0`` is the raw foreground.

        Post-processing (``median``, ``fill_holes``, ``min_area``) acts on the
        mask only, so with it on the mask returned by :meth:`apply` may differ from
        ``score > 0``. None before the first frame. Under olkn's ``score_map="bounded"``
        (its default) a pixel whose decisions a bound settled reports a score within
        that bound of the exact one, of the same sign (with texture features: a pixel
        whose sum stopped once it decided, a score of the same sign and no lower);
        set ``score_map="exact"`` before the frame for exact values
        (:func:`bgsub.pipeline.core.exact_scores`).
        """
        return self._output(self._score, -1.0)

    def getBackgroundImage(self) -> np.ndarray | None:
        """Coefficient-weighted mean of each pixel's samples: (H, W) grey or (H, W, 3) BGR uint8."""
        if self.samples_ is None:
            return None
        H, W = self.frame_shape_
        out = np.zeros((H, W, self.channels_), dtype=np.uint8)
        fk.background_image(self.samples_, self.coef_, self.ring_, out)
        return self._full_size(out[:, :, 0] if self.channels_ == 1 else out, cv2.INTER_LINEAR, copy=False)

    def getRawMask(self) -> np.ndarray | None:
        """uint8 (H, W) mask of the last frame before post-processing (``score > 0``)."""
        return None if self._score is None else self._output(self._rawmask, 0)

    # subclass hooks
    def _update(self, img: np.ndarray, mask: np.ndarray, p_bg: int, p_fg: int, p_diff: int) -> None:
        """Step the pixels ``mask`` selects, after :func:`score_frame` (``update_mask="post"``)."""
        raise NotImplementedError

    def _frame(self, img: np.ndarray, p_bg: int, p_fg: int, p_diff: int, mask_out: np.ndarray,
               nbr_mask: np.ndarray) -> None:
        """Score ``img`` into ``self._score``/``mask_out`` and step the selected pixels (one jitted pass);
        pixels not selected learn a neighbour's value with probability ``p_diff`` (``nbr_mask``: which
        neighbours are background)."""
        raise NotImplementedError

    def _decay(self) -> float:
        raise NotImplementedError
