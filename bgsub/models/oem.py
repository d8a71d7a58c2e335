"""Online-EM background subtractor: a Gaussian mixture per pixel, learnt by online EM.

Each pixel owns a mixture of ``K`` Gaussians over its values (grey or BGR, 0-255)
held as sufficient statistics and moved, every frame, by one stochastic E step
``S <- (1 - eta_n) S + eta_n E[S(x_n) | theta(S)]`` with ``eta_n = max(1/n,
learning_floor)`` (lecture seed 002; :func:`learners.online_em.gaussian_step`,
the same jitted step :class:`learners.mixture.OnlineGaussianMixture` takes per
sample). A value farther than ``birth`` standard deviations from every component
restarts the lightest component there. The background is the set of heaviest
components carrying ``bg_ratio`` of the weight; a pixel is foreground when it is
farther than ``threshold`` standard deviations (Mahalanobis) from all of them.

It is the principled counterpart of OpenCV's MOG2 (Zivkovic 2004), whose
per-component updates approximate this stochastic EM with hard ownership.

Frame 1 bootstraps every pixel's mixture as one component at its value (so short
clips work); ``eta_2 = 1/2``, ``eta_3 = 1/3``, ... average the first frames until
the floor is reached.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from bgsub.models import _oem_frame
from bgsub.models._restore import check_mask, check_state_array, without_removed_params
from bgsub.models.params import COMMON_PARAMS, from_preset, with_defaults
from bgsub.models.staged import StagedSubtractor
from bgsub.pipeline.stages import gain_against
from bgsub.registry import AlgorithmInfo, ParamSpec, register
from learners.online_em import learning_rate

__all__ = ["OEMSubtractor", "createOEM", "OEM_PARAMS", "OEM_PRESETS"]

OEM_PARAMS = (
    ParamSpec("n_components", int, 2, "Gaussian components per pixel (K)", "components", 1, 8, live=False),
    ParamSpec("covariance", str, "spherical", "one variance per component, or one per channel", "",
              choices=("spherical", "diag"), live=False),
    ParamSpec("learning_floor", float, 0.005,
              "floor of the step size eta_n = max(1/n, floor): forgetting time constant 1/floor frames",
              "per frame", 0.0, 1.0),
    ParamSpec("threshold", float, 3.0,
              "Mahalanobis distance to the nearest background component beyond which a pixel is foreground",
              "standard deviations", 0.1, 50.0),
    ParamSpec("birth", float, 4.0,
              "a value farther than this from every component restarts the lightest component there",
              "standard deviations", 0.1, 50.0),
    ParamSpec("bg_ratio", float, 0.9, "weight share of the heaviest components that model the background", "",
              0.01, 1.0),
    ParamSpec("var_init", float, 100.0, "variance of a newly born component", "(pixel value)^2", 1.0, 10000.0),
    ParamSpec("min_var", float, 16.0, "added to every variance (regularisation)", "(pixel value)^2", 0.01, 1000.0),
    ParamSpec("color", str, "bgr", "use the three colour channels, or convert to grey first", "",
              choices=("bgr", "gray"), live=False),
    ParamSpec("median", int, 5, "median filter of the mask, aperture (0: off; odd)", "pixels", 0, 15),
    # the stages every subtractor runs behind (bgsub.pipeline.stages); their defaults by leave-one-group-out
    # cross-validation (docs/oem.md)
    *with_defaults(tuple(p for p in COMMON_PARAMS if p.name in ("stabilise", "illumination")),
                   stabilise="match", illumination="gain"),
)

#: Named parameter sets: "fast", without the stabiliser and the illumination gain (their fixed cost per frame
#: is most of oem's at small frames; docs/oem.md).
OEM_PRESETS = {"fast": {"stabilise": "off", "illumination": "off"}}


class OEMSubtractor(StagedSubtractor):
    """Per-pixel online-EM Gaussian mixture (OpenCV-style background subtractor).

    Parameters
    ----------
    n_components, covariance, learning_floor, threshold, birth, bg_ratio, var_init, min_var, color, median
        See :data:`OEM_PARAMS` (``bgsub run --algo oem --help-params``) and ``docs/oem.md``.
    stabilise, illumination
        The stabiliser and the illumination gain (:mod:`bgsub.pipeline.stages`; on by default, off in the
        ``fast`` preset); the gain is estimated against the mean of each pixel's heaviest component
        (:func:`bgsub.pipeline.stages.gain_against`).

    Attributes
    ----------
    score_range : (float, float)
        Range of :meth:`getScoreMap` values.
    s0_ : ndarray (H, K, W) of float32
        Per-pixel component weights ``E[r_k]`` (sufficient statistic 0); pixel
        ``(i, j)``'s component ``k`` is ``s0_[i, k, j]`` (row by row, component-major
        within a row: the layout of :func:`learners.online_em.gaussian_step_batch`).
    s1_ : ndarray (H, K, C, W) of float32
        ``E[r_k x]``.
    s2_ : ndarray (H, K, C, W) or (H, K, 1, W) of float32
        ``E[r_k x^2]`` per channel (diag) or ``E[r_k ||x||^2]`` (spherical). The M
        step's parameters (means, variances) are computed from these every frame.
    n_updates_ : int
        Frames that updated the model (the ``n`` of ``eta_n = 1/n``).

    The stages' attributes (``params``, ``frame_shape_``, ``input_shape_``, ``channels_``, ``n_frames_``,
    ``stabilise_reference_``, ``stabilise_saturated_``, ``gain_``) are
    :class:`bgsub.models.staged.StagedSubtractor`'s.
    """

    _SPECS = OEM_PARAMS

    #: State that checkpoints save (:class:`bgsub.checkpoint.Checkpointable`).
    _STATE_ARRAYS = ("s0_", "s1_", "s2_", "prev_mask_", "stabilise_reference_")
    _STATE_SCALARS = ("n_frames_", "n_updates_", "stabilise_saturated_", "gain_")
    #: The stages' parameters and state joined since checkpoints of layout 2 were first written: off.
    _ADDED_PARAMS: dict[str, Any] = {"stabilise": "off", "illumination": "off"}
    _ADDED_SCALARS = ("stabilise_saturated_", "gain_")
    #: ... and the previous raw mask the gain is estimated on (a checkpoint without it: an empty mask).
    _ADDED_ARRAYS = ("prev_mask_",)
    #: 2: statistics only, (H, K, ., W) (1: (H, W, K, .) with the M-step caches, before November 2026).
    _STATE_LAYOUT = 2
    _ALGORITHM = "oem"

    def _check_restored_state(self) -> None:
        """Raise ValueError unless the statistics a checkpoint restored (:func:`bgsub.checkpoint.load`) are
        finite and where an online-EM step keeps them: weights ``E[r_k]`` in [0, 1], ``E[r_k x]`` and
        ``E[r_k x^2]`` of pixel values 0-255 (a float32 rounding's margin above), and no more updates than
        frames."""
        if self.n_updates_ > self.n_frames_:
            raise ValueError(f"state value n_updates_ = {self.n_updates_} is more than n_frames_ = {self.n_frames_}")
        if self.s0_ is None:
            return
        margin = 1.01
        check_mask("prev_mask_", self._rawmask)
        if self.stabilise_reference_ is not None:
            check_state_array("stabilise_reference_", self.stabilise_reference_, 0.0, 255.0)
        check_state_array("s0_", self.s0_, 0.0, margin)
        check_state_array("s1_", self.s1_, 0.0, 255.0 * margin)
        check_state_array("s2_", self.s2_, 0.0, 3 * 255.0**2 * margin)

    @classmethod
    def without_removed_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint's ``params`` without ``blur`` (removed; read only at 0, off) and ``stabilise_max`` (a
        constant since: read only at 8)."""
        return without_removed_params(cls._SPECS, {"blur": 0.0, "stabilise_max": 8}, {}, params)

    @property
    def score_range(self) -> tuple[float, float]:
        t2 = self.params["threshold"] ** 2
        return (-3.0 * t2, 3.0 * t2)

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the model; the next frame may have any size."""
        super().reset()
        self.s0_ = self.s1_ = self.s2_ = None
        self.n_updates_ = 0
        self._score = None
        self._rawmask = None

    def _allocate(self, H: int, W: int, C: int) -> None:
        K = self.params["n_components"]
        V = C if self.params["covariance"] == "diag" else 1
        self.frame_shape_ = (H, W)
        self.channels_ = C
        self.s0_ = np.zeros((H, K, W), np.float32)
        self.s1_ = np.zeros((H, K, C, W), np.float32)
        self.s2_ = np.zeros((H, K, V, W), np.float32)
        self._score = np.zeros((H, W), np.float32)
        self._rawmask = np.zeros((H, W), np.uint8)

    @property
    def prev_mask_(self) -> np.ndarray | None:
        """The last frame's raw mask (the next frame's illumination gain is estimated where it is background)."""
        return self._rawmask

    @prev_mask_.setter
    def prev_mask_(self, value: np.ndarray | None) -> None:
        self._rawmask = value

    def _model_ready(self) -> bool:
        return self.s0_ is not None and self.n_frames_ > 0

    def _estimate_gain(self, img: np.ndarray) -> float | None:
        """The gain against the mean of each grid pixel's heaviest component (:func:`gain_against`), on the
        pixels the previous frame's raw mask left background."""
        return gain_against(img, self._background_at, self._rawmask)

    def _background_at(self, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
        """The mean of the heaviest component of the pixels ``(ii, jj)``, float ``(..., C)`` (0 where empty)."""
        s0 = self.s0_[ii, :, jj]  # (..., K)
        k = s0.argmax(-1)
        w = np.take_along_axis(s0, k[..., None], -1).astype(np.float64)
        s1 = self.s1_[ii[..., None], k[..., None], np.arange(self.channels_), jj[..., None]]  # (..., C)
        return np.divide(s1, w, out=np.zeros(s1.shape), where=w > 0)

    def _model_step(self, img: np.ndarray, lr: float) -> np.ndarray:
        """One online-EM step of every pixel (``lr`` -1: ``eta_n = max(1/n, learning_floor)``; 0: none; in
        (0, 1): this frame's step size; the first frame always learns, ``eta = 1``) and the filtered mask."""
        first = self.s0_ is None
        if first:
            self._allocate(img.shape[0], img.shape[1], img.shape[2])
        p = self.params
        learn = lr != 0.0 or first
        if first:
            eta = 1.0
        elif lr == -1:
            eta = float(learning_rate(self.n_updates_ + 1, p["learning_floor"]))
        else:
            eta = lr
        t2 = p["threshold"] ** 2
        _oem_frame.oem_frame(img, self.s0_, self.s1_, self.s2_, eta, learn, p["covariance"] == "spherical",
                             p["min_var"], p["birth"] ** 2, p["var_init"], p["bg_ratio"], t2, 3.0 * t2,
                             self._score, self._rawmask)
        if learn:
            self.n_updates_ += 1
        return self._postprocess(self._rawmask)

    def getScoreMap(self) -> np.ndarray | None:
        """float32 (H, W): squared Mahalanobis distance to the nearest background component minus
        ``threshold^2``; ``> 0`` is the raw foreground. None before the first frame."""
        return None if self._score is None else self._output(self._score, -1.0)

    def getRawMask(self) -> np.ndarray | None:
        """uint8 (H, W) mask of the last frame before the median filter."""
        return None if self._rawmask is None else self._output(self._rawmask, 0)

    def getBackgroundImage(self) -> np.ndarray | None:
        """Mean of each pixel's heaviest component: (H, W) grey or (H, W, 3) BGR uint8."""
        if self.s0_ is None:
            return None
        H, W = self.frame_shape_
        out = np.zeros((H, W, self.channels_), np.uint8)
        _oem_frame.oem_background(self.s0_, self.s1_, out)
        return self._full_size(out[:, :, 0] if self.channels_ == 1 else out, cv2.INTER_LINEAR, copy=False)


def createOEM(preset: str | None = None, **params) -> OEMSubtractor:
    """Build an online-EM subtractor; ``preset="fast"`` runs it without the stabiliser and the illumination
    gain."""
    return from_preset(OEMSubtractor, "oem", OEM_PRESETS, preset, params)


register(AlgorithmInfo(name="oem", factory=createOEM, params=OEM_PARAMS,
                       doc="per-pixel Gaussian mixture learnt by online EM (lecture seed 002)",
                       presets=OEM_PRESETS))
