"""A background model behind the pipeline's stages, with OpenCV's face.

:class:`StagedSubtractor` is what every subtractor of this package (olkn, norma, svmd, oem) shares: it runs the
stages of :mod:`bgsub.pipeline.stages` around its model in ``apply`` and offers OpenCV's
``cv::BackgroundSubtractor`` interface. A model subclass says only what the model does with a prepared frame
(:meth:`StagedSubtractor._model_step`: score, raw mask, learning, filtered mask) and how it estimates the
illumination gain (:meth:`StagedSubtractor._estimate_gain`).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from bgsub.checkpoint import Checkpointable
from bgsub.models.opencv_api import OpenCVSubtractorAPI
from bgsub.models.params import checked_params
from bgsub.pipeline import stages
from bgsub.registry import ParamSpec

__all__ = ["StagedSubtractor"]


class StagedSubtractor(OpenCVSubtractorAPI, Checkpointable):
    """Base class of the subtractors: a model behind the stages, with OpenCV's face.

    ``apply`` runs: :func:`stages.prepare` (8 bits, ``process_scale``, ``color``; a frame of another size or
    channel count starts a new model), :class:`stages.Stabiliser` (``stabilise``),
    :class:`stages.IlluminationGain` (``illumination``), the model (:meth:`_model_step`, which filters its raw
    mask with :meth:`_postprocess`, :class:`stages.MaskFilter`), then the stabiliser's shift undone and the
    mask returned at the input's size. A stage whose parameter a model lacks is off.

    Subclasses define ``_SPECS``, ``_model_step``, ``_model_ready``, ``_estimate_gain``, ``getBackgroundImage``
    and ``score_range``, and call ``super().reset()`` from their ``reset``.

    Attributes
    ----------
    params : dict
        Current parameter values.
    frame_shape_ : tuple or None
        ``(H, W)`` of the frames being modelled (the input's size times ``process_scale``).
    input_shape_ : tuple or None
        ``(H, W)`` of the input frames; masks and maps are returned at this size.
    channels_ : int or None
        Channels of the model (1 grey, 3 colour).
    n_frames_ : int
        Frames applied since the last reset.
    stabilise_reference_ : ndarray (H, W) of uint8 or None
        The stabiliser's reference frame; None while ``stabilise`` is off or before the first frame.
    stabilise_saturated_ : int
        Frames in a row whose shift reached :data:`stages.STABILISE_MAX` (:data:`stages.REANCHOR_FRAMES` of them renew the
        reference).
    gain_ : float
        Global gain of the last frame against the model (``illumination="gain"``; 1.0 while off).
    blobs_ : float
        Running mean number of blobs after the ``median`` aperture (``median_max``; -1 before its first frame).
    """

    _SPECS: tuple[ParamSpec, ...] = ()

    def __init__(self, **params: Any) -> None:
        specs = {p.name: p for p in self._SPECS}
        values = checked_params(type(self).__name__, specs, {p.name: p.default for p in self._SPECS}, params)
        self._check(values)
        self.params = values
        self.reset()

    def _check(self, values: dict[str, Any]) -> None:
        for name in ("median", "median_max"):
            v = values.get(name, 0)
            if v and v % 2 == 0:
                raise ValueError(f"{name} must be 0 or an odd aperture, got {v}")

    def _changed_params(self, params: dict[str, Any]) -> bool:
        """Check and take ``params``; whether a parameter that is not ``live`` changed (the model must reset)."""
        specs = {p.name: p for p in self._SPECS}
        new = checked_params(type(self).__name__, specs, self.params, params)
        self._check(new)
        needs_reset = any(not specs[k].live and new[k] != self.params[k] for k in params)
        self.params = new
        return needs_reset

    def set_params(self, **params: Any) -> bool:
        """Change parameters; returns True when the model had to be reset (a parameter not marked ``live`` in
        the registry changed, e.g. ``color``); live ones take effect from the next frame."""
        needs_reset = self._changed_params(params)
        if needs_reset:
            self.reset()
        return needs_reset

    def reset(self) -> None:
        """Forget the model and the stages' state; the next frame may have any size."""
        self.frame_shape_: tuple[int, int] | None = None
        self.input_shape_: tuple[int, int] | None = None
        self.channels_: int | None = None
        self.n_frames_ = 0
        self._stabiliser = stages.Stabiliser()
        self._illumination = stages.IlluminationGain()
        self._filters = stages.MaskFilter()

    # the stages' state, saved with the model under these names
    stabilise_reference_ = stages.StageState("_stabiliser", "reference_")
    stabilise_saturated_ = stages.StageState("_stabiliser", "saturated_")
    gain_ = stages.StageState("_illumination", "gain_")
    blobs_ = stages.StageState("_filters", "blobs_")

    @property
    def _shift(self) -> tuple[int, int]:
        """``(dx, dy)`` the stabiliser applied to the last frame."""
        return self._stabiliser.shift

    @property
    def score_range(self) -> tuple[float, float]:
        raise NotImplementedError

    # ------------------------------------------------------------------ stages
    def _prepare(self, frame: Any) -> np.ndarray:
        """``frame`` read as 8 bits, at the model's scale and colour (:func:`stages.prepare`); a frame of another
        size or channel count than the model's drops the model (:meth:`_new_model`), as OpenCV's subtractors
        do."""
        img = self._read_frame(frame)
        size = img.shape[:2]
        img = stages.prepare(img, self.params.get("process_scale", 1.0), self.params["color"])
        C = img.shape[2]
        if self.input_shape_ is not None and size != self.input_shape_:
            H, W = self.input_shape_
            self._new_model(f"frame size changed from {W}x{H} to {size[1]}x{size[0]}")
        elif self.frame_shape_ is not None and img.shape[:2] != self.frame_shape_:  # a loaded model's first frame
            H, W = self.frame_shape_
            self._new_model(f"frame size {size[1]}x{size[0]} (modelled at {img.shape[1]}x{img.shape[0]}) does "
                            f"not fit the model's {W}x{H}")
        elif self.channels_ is not None and C != self.channels_:
            self._new_model(f"frame has {C} channel(s) but the model was built from {self.channels_}")
        self.input_shape_ = size
        return img

    def _input_stages(self, frame: Any) -> np.ndarray:
        """``frame`` through the stages before the model: prepared, stabilised, divided by its gain."""
        img = self._stabiliser.apply(self._prepare(frame), self.params)
        return self._illumination.apply(img, self.params, self._estimate_gain if self._model_ready() else None)

    def _postprocess(self, raw: np.ndarray) -> np.ndarray:
        """The mask filters (:class:`stages.MaskFilter`) on a raw mask."""
        return self._filters.apply(raw, self.params)

    def _full_size(self, image: np.ndarray, interpolation: int, copy: bool = True) -> np.ndarray:
        """``image`` (at the model's size) at the input's size."""
        return stages.full_size(image, self.input_shape_, interpolation, copy)

    def _output(self, a: np.ndarray | None, fill: float) -> np.ndarray | None:
        """A map or mask of the model (its coordinates) in the input's coordinates and size; None stays None."""
        if a is None:
            return None
        return self._full_size(self._stabiliser.unshift(a, fill), cv2.INTER_NEAREST)

    # ------------------------------------------------------------------ API
    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        """Classify ``image`` and update the model (OpenCV's ``apply(image[, fgmask[, learningRate]])``).

        Parameters
        ----------
        image : ndarray (H, W), (H, W, 1), (H, W, 3) or (H, W, 4)
            Grey, BGR or BGRA (alpha dropped) frame of uint8, uint16 (read as ``v >> 8``) or float32/float64
            (the 0-255 scale of 8-bit frames, as OpenCV's MOG2 reads them; rounded and saturated), see
            :func:`bgsub.models.opencv_api.frame_as_8bit`. A frame of another size or channel count than the
            model's starts a new model, with one :class:`bgsub.NewModelWarning`, as OpenCV's subtractors do.
        fgmask : ndarray (H, W) of uint8, optional
            Written with the mask and returned, as OpenCV does; None, or an array of another shape or type
            (left alone, as OpenCV's output arrays): a new array.
        learningRate : float
            Negative (-1): the model's own schedule; 0: do not update the model; in (0, 1): this frame's rate
            (see the model's ``_model_step``); 1 or more: a new model from this frame (OpenCV: "completely
            reinitialized from the last frame").

        Returns
        -------
        ndarray (H, W) of uint8
            255 foreground, 0 background (after the mask filters).
        """
        lr = self._check_learning_rate(learningRate)
        if lr >= 1.0:  # OpenCV: 1 (or more) reinitialises the model from this frame
            self.reset()
            lr = -1.0
        img = self._input_stages(image)
        if not self._fits(fgmask, self.input_shape_):
            fgmask = None
        mask = self._stabiliser.unshift(self._model_step(img, lr), 0)
        self.n_frames_ += 1
        if fgmask is not None:
            if mask.shape[:2] != self.input_shape_:
                H, W = self.input_shape_
                cv2.resize(mask, (W, H), dst=fgmask, interpolation=cv2.INTER_NEAREST)
            else:
                fgmask[...] = mask
            return fgmask
        return self._full_size(mask, cv2.INTER_NEAREST)

    # ------------------------------------------------------------------ the model's part
    def _model_step(self, img: np.ndarray, lr: float) -> np.ndarray:
        """Score the prepared frame ``img`` (allocating the model on the first frame), learn from it at rate
        ``lr`` (-1: the model's own schedule; 0: not at all), and return the filtered mask at the model's size
        (:meth:`_postprocess` of the raw mask)."""
        raise NotImplementedError

    def _model_ready(self) -> bool:
        """Whether the model has learnt a frame (the illumination gain is estimated against it)."""
        raise NotImplementedError

    def _estimate_gain(self, img: np.ndarray) -> float | None:
        """The frame's global gain against the model, None where it cannot tell."""
        raise NotImplementedError

    def getBackgroundImage(self) -> np.ndarray | None:
        raise NotImplementedError

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items()
                   if v != next(p.default for p in self._SPECS if p.name == k)}
        args = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}({args})"
