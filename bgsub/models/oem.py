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

from bgsub.checkpoint import Checkpointable
from bgsub.models import _oem_frame
from bgsub.models.base import OpenCVSubtractorAPI, binary_median, check_state_array, checked_params
from bgsub.registry import AlgorithmInfo, ParamSpec, register
from learners.online_em import learning_rate

__all__ = ["OEMSubtractor", "createOEM", "OEM_PARAMS"]

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
    ParamSpec("blur", float, 0.0, "Gaussian smoothing of the input, standard deviation (0: off)", "pixels",
              0.0, 10.0),
    ParamSpec("median", int, 5, "median filter of the mask, aperture (0: off; odd)", "pixels", 0, 15),
)

_DEFAULTS = {p.name: p.default for p in OEM_PARAMS}
_SPECS = {p.name: p for p in OEM_PARAMS}


class OEMSubtractor(OpenCVSubtractorAPI, Checkpointable):
    """Per-pixel online-EM Gaussian mixture (OpenCV-style background subtractor).

    Parameters
    ----------
    n_components, covariance, learning_floor, threshold, birth, bg_ratio, var_init, min_var, color, blur, median
        See :data:`OEM_PARAMS` (``bgsub run --algo oem --help-params``) and ``docs/oem.md``.

    Attributes
    ----------
    params : dict
        Current parameter values.
    score_range : (float, float)
        Range of :meth:`getScoreMap` values.
    frame_shape_ : tuple or None
        ``(H, W)`` of the frames being processed; None before the first frame.
    channels_ : int or None
        Channels of the model (1 grey, 3 colour).
    s0_ : ndarray (H, K, W) of float32
        Per-pixel component weights ``E[r_k]`` (sufficient statistic 0); pixel
        ``(i, j)``'s component ``k`` is ``s0_[i, k, j]`` (row by row, component-major
        within a row: the layout of :func:`learners.online_em.gaussian_step_batch`).
    s1_ : ndarray (H, K, C, W) of float32
        ``E[r_k x]``.
    s2_ : ndarray (H, K, C, W) or (H, K, 1, W) of float32
        ``E[r_k x^2]`` per channel (diag) or ``E[r_k ||x||^2]`` (spherical). The M
        step's parameters (means, variances) are computed from these every frame.
    n_frames_ : int
        Frames applied since the last reset.
    n_updates_ : int
        Frames that updated the model (the ``n`` of ``eta_n = 1/n``).
    """

    #: State that checkpoints save (:class:`bgsub.checkpoint.Checkpointable`).
    _STATE_ARRAYS = ("s0_", "s1_", "s2_")
    _STATE_SCALARS = ("n_frames_", "n_updates_")
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
        check_state_array("s0_", self.s0_, 0.0, margin)
        check_state_array("s1_", self.s1_, 0.0, 255.0 * margin)
        check_state_array("s2_", self.s2_, 0.0, 3 * 255.0**2 * margin)

    def __init__(self, **params: Any) -> None:
        self.params = self._checked(dict(_DEFAULTS), params)
        self.reset()

    # ------------------------------------------------------------------ params
    @staticmethod
    def _checked(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        new = checked_params("OEMSubtractor", _SPECS, current, changes)
        if new["median"] and new["median"] % 2 == 0:
            raise ValueError(f"median must be 0 or an odd aperture, got {new['median']}")
        return new

    def set_params(self, **params: Any) -> bool:
        """Change parameters; returns True when the model had to be reset (a non-live parameter changed)."""
        new = self._checked(self.params, params)
        needs_reset = any(not _SPECS[k].live and new[k] != self.params[k] for k in params)
        self.params = new
        if needs_reset:
            self.reset()
        return needs_reset

    @property
    def score_range(self) -> tuple[float, float]:
        t2 = self.params["threshold"] ** 2
        return (-3.0 * t2, 3.0 * t2)

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the model; the next frame may have any size."""
        self.frame_shape_: tuple[int, int] | None = None
        self.channels_: int | None = None
        self.s0_ = self.s1_ = self.s2_ = None
        self.n_frames_ = 0
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

    def _prepare(self, frame: np.ndarray) -> np.ndarray:
        """``frame`` read as 8 bits (:func:`bgsub.models.base.frame_as_8bit`), in the model's colour and
        smoothing, as a contiguous (H, W, C) array; a frame of another size or channel count than the model's
        drops the model with one warning, as OpenCV's subtractors do."""
        img = self._read_frame(frame)
        if self.params["color"] == "gray" and img.ndim == 3 and img.shape[2] == 3:
            img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        if self.params["blur"] > 0:
            img = cv2.GaussianBlur(img, (0, 0), self.params["blur"], borderType=cv2.BORDER_REPLICATE)
        if img.ndim == 2:
            img = img[:, :, None]
        if self.frame_shape_ is not None and img.shape[:2] != self.frame_shape_:
            H, W = self.frame_shape_
            self._new_model(f"frame size changed from {W}x{H} to {img.shape[1]}x{img.shape[0]}")
        elif self.channels_ is not None and img.shape[2] != self.channels_:
            self._new_model(f"frame has {img.shape[2]} channel(s) but the model was built from {self.channels_}")
        return np.ascontiguousarray(img)

    # ------------------------------------------------------------------ API
    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        """Classify ``image`` and update the model.

        Parameters
        ----------
        image : ndarray (H, W), (H, W, 1), (H, W, 3) or (H, W, 4)
            Grey, BGR or BGRA (alpha dropped) frame of uint8, uint16 (read as ``v >> 8``) or float32/float64
            (the 0-255 scale of 8-bit frames, as OpenCV's MOG2 reads them), see
            :func:`bgsub.models.base.frame_as_8bit`. A frame of another size or channel count than the model's
            starts a new model, with one :class:`bgsub.NewModelWarning`, as OpenCV's subtractors do.
        fgmask : ndarray (H, W) of uint8, optional
            Written with the mask and returned, as OpenCV does; None, or an array of another shape or type
            (left alone, as OpenCV's output arrays): a new array.
        learningRate : float
            Negative (-1): the schedule ``eta_n = max(1/n, learning_floor)``; 0: do not
            update; in (0, 1): this frame's step size; 1 or more: a new model from this
            frame (OpenCV: "completely reinitialized from the last frame").

        Returns
        -------
        ndarray (H, W) of uint8
            255 foreground, 0 background (after the median filter).
        """
        lr = self._check_learning_rate(learningRate)
        if lr >= 1.0:  # OpenCV: 1 (or more) reinitialises the model from this frame
            self.reset()
        img = self._prepare(image)
        if not self._fits(fgmask, img.shape[:2]):
            fgmask = None
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
        self.n_frames_ += 1
        mask = binary_median(self._rawmask, p["median"]) if p["median"] >= 3 else self._rawmask.copy()
        if fgmask is not None:
            fgmask[...] = mask
            return fgmask
        return mask

    def getScoreMap(self) -> np.ndarray | None:
        """float32 (H, W): squared Mahalanobis distance to the nearest background component minus
        ``threshold^2``; ``> 0`` is the raw foreground. None before the first frame."""
        return None if self._score is None else self._score.copy()

    def getRawMask(self) -> np.ndarray | None:
        """uint8 (H, W) mask of the last frame before the median filter."""
        return None if self._rawmask is None else self._rawmask.copy()

    def getBackgroundImage(self) -> np.ndarray | None:
        """Mean of each pixel's heaviest component: (H, W) grey or (H, W, 3) BGR uint8."""
        if self.s0_ is None:
            return None
        H, W = self.frame_shape_
        out = np.zeros((H, W, self.channels_), np.uint8)
        _oem_frame.oem_background(self.s0_, self.s1_, out)
        return out[:, :, 0] if self.channels_ == 1 else out

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items() if v != _DEFAULTS[k]}
        return f"OEMSubtractor({', '.join(f'{k}={v!r}' for k, v in changed.items())})"


def createOEM(**params) -> OEMSubtractor:
    """Build an online-EM subtractor."""
    return OEMSubtractor(**params)


register(AlgorithmInfo(name="oem", factory=createOEM, params=OEM_PARAMS,
                       doc="per-pixel Gaussian mixture learnt by online EM (lecture seed 002)"))
