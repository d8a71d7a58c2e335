"""The stages a frame goes through around a background model.

Every subtractor (olkn, norma, svmd, oem) runs its model behind the same stages::

    frame -> prepare (8 bits, process_scale, colour) -> Stabiliser -> IlluminationGain
          -> model (score, raw mask, learning from the mask)
          -> MaskFilter (median and its clutter rule, fill_holes, min_area) -> Stabiliser.unshift -> full_size

Contracts:

* :func:`prepare` turns a frame (any type :func:`bgsub.models.opencv_api.frame_as_8bit` reads) into a
  C-contiguous ``(H, W, C)`` uint8 array at the model's scale and colour.
* :class:`Stabiliser` registers a prepared frame to its reference frame (an integer shift) and moves masks and
  maps back with :meth:`Stabiliser.unshift`. Its state (``reference_``, ``saturated_``) is checkpointed with
  the model.
* :class:`IlluminationGain` divides a prepared frame by its global gain against the model; the model supplies
  the estimate (a callable returning the gain, or None where the frame cannot tell), the stage the policy
  (dead band, release towards 1). State: ``gain_``.
* :class:`MaskFilter` filters a raw 0/255 mask: the median (a larger aperture while the mask is cluttered),
  hole filling and the removal of small blobs. State: ``blobs_``.
* :func:`full_size` returns a mask or map at the input's size.

A stage reads the parameters it needs from the subtractor's parameter dict at each call (so live parameter
changes take effect at the next frame) and holds only its own state.
"""

from __future__ import annotations

import functools
from typing import Callable

import cv2
import numpy as np

from bgsub.pipeline import masks
from bgsub.pipeline.registration import ShiftEstimator, translate

__all__ = ["prepare", "full_size", "StageState", "Stabiliser", "IlluminationGain", "MaskFilter", "REANCHOR_FRAMES",
           "STABILISE_MAX", "CLUTTER_BLOBS", "CLUTTER_RATE", "DEADBAND", "RELEASE", "gain_against"]

#: Downscaling of ``process_scale``: bilinear (measured at 1920x1080 -> 480x270: 0.4 ms vs 3.2 ms for
#: area averaging, and dev mean F of the fast preset 0.494 vs 0.498; docs/performance.md).
DOWNSCALE = cv2.INTER_LINEAR

#: ``stabilise="match"``: the largest shift the stabiliser corrects, in pixels (of the frame the model sees).
STABILISE_MAX = 8
#: ``stabilise="match"``: frames in a row whose shift reaches :data:`STABILISE_MAX` before the reference is
#: renewed.
REANCHOR_FRAMES = 10
#: ``median_max``: the running mean number of blobs in the median's output from which the larger aperture is
#: used, and the rate of that running mean per frame.
CLUTTER_BLOBS = 10.0
CLUTTER_RATE = 0.05

#: Gains within this of 1 are not applied (no resampling of the frame for a change below a grey level).
DEADBAND = 0.003
#: A frame without an estimate that counts keeps the last one, moved this fraction of the way back to 1 per frame
#: (the model keeps learning the compensated frames meanwhile, and a wrong estimate does not stay).
RELEASE = 0.2


def prepare(img: np.ndarray, scale: float, color: str) -> np.ndarray:
    """An 8-bit frame (``(H, W)`` or ``(H, W, C)``) at ``scale`` of its size (bilinear) and in ``color``
    (``"gray"`` converts BGR to grey), as a C-contiguous ``(H, W, C)`` array."""
    if scale < 1.0:
        H, W = img.shape[:2]
        img = cv2.resize(img, (max(1, round(W * scale)), max(1, round(H * scale))), interpolation=DOWNSCALE)
    if color == "gray" and img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    if img.ndim == 2:
        img = img[:, :, None]
    return np.ascontiguousarray(img)


def full_size(image: np.ndarray, input_shape: tuple[int, int] | None, interpolation: int,
              copy: bool = True) -> np.ndarray:
    """``image`` (at the model's size) at ``input_shape`` (``process_scale``); a copy unless ``copy`` is False
    and the sizes agree."""
    if input_shape is None or image.shape[:2] == tuple(input_shape):
        return image.copy() if copy else image
    H, W = input_shape
    return cv2.resize(image, (W, H), interpolation=interpolation)


class StageState:
    """A stage's state value as an attribute of the object that holds the stage (``stage``: the attribute
    holding it, ``name``: the value's name in the stage), so that checkpoints read and write it by the
    holder's name (``stabilise_reference_`` is ``_stabiliser.reference_``)."""

    def __init__(self, stage: str, name: str) -> None:
        self.stage, self.name = stage, name

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(getattr(obj, self.stage), self.name)

    def __set__(self, obj, value) -> None:
        setattr(getattr(obj, self.stage), self.name, value)


class Stabiliser:
    """Camera-jitter compensation (``stabilise="match"``): each frame registered to a reference frame.

    The reference is the stream's first frame. A frame whose shift reaches :data:`STABILISE_MAX` is taken
    unshifted, and after :data:`REANCHOR_FRAMES` such frames in a row (a camera that panned or was moved, not
    one that shakes) the last becomes the reference of the frames after it.

    Attributes
    ----------
    reference_ : ndarray (H, W) of uint8 or None
        The reference frame (grey); None while off or before the first frame.
    saturated_ : int
        Frames in a row whose shift reached :data:`STABILISE_MAX`.
    shift : (int, int)
        ``(dx, dy)`` applied to the last frame.
    """

    def __init__(self) -> None:
        self._reference: np.ndarray | None = None
        self._estimator: ShiftEstimator | None = None
        self.saturated_ = 0
        self.shift = (0, 0)

    @property
    def reference_(self) -> np.ndarray | None:
        return self._reference

    @reference_.setter
    def reference_(self, value: np.ndarray | None) -> None:
        self._reference = value
        self._estimator = None  # built anew on the new reference

    def apply(self, img: np.ndarray, params: dict) -> np.ndarray:
        """``img`` (prepared, ``(H, W, C)``) moved onto the reference; remembers the shift."""
        self.shift = (0, 0)
        if params["stabilise"] == "off":
            return img
        grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY) if img.shape[2] == 3 else np.ascontiguousarray(img[..., 0])
        ref = self.reference_
        if ref is None or ref.dtype != grey.dtype or ref.shape != grey.shape:
            self._renew(grey)
            return img
        if self._estimator is None:  # built on first use
            self._estimator = ShiftEstimator(self.reference_, STABILISE_MAX)
        dx, dy = self._estimator.estimate(grey)
        if max(abs(dx), abs(dy)) >= STABILISE_MAX:
            # as far as the search reaches: no shift is trusted (an object can pull the estimate there);
            # a camera that stays there panned or was moved, and its frame becomes the new reference
            self.saturated_ += 1
            if self.saturated_ >= REANCHOR_FRAMES:
                self._renew(grey)
            return img
        self.saturated_ = 0
        if dx == 0 and dy == 0:
            return img
        self.shift = (dx, dy)
        return np.ascontiguousarray(translate(img, -dx, -dy, cv2.BORDER_REPLICATE, 0).reshape(img.shape))

    def _renew(self, grey: np.ndarray) -> None:
        self.reference_ = grey
        self.saturated_ = 0

    def unshift(self, a: np.ndarray, fill: float) -> np.ndarray:
        """``a`` (the model's coordinates) moved back to the input frame's coordinates."""
        dx, dy = self.shift
        if dx == 0 and dy == 0:
            return a
        return translate(a, dx, dy, cv2.BORDER_CONSTANT, fill)


class IlluminationGain:
    """Global illumination compensation (``illumination="gain"``): frames divided by their gain against the
    model, so a light switched on does not flood the mask.

    The model estimates the gain (:func:`bgsub.models._illumination.estimate_gain` for the kernel models,
    :func:`gain_against` for another model); an estimate that does not count (None)
    keeps the last gain, moved :data:`RELEASE` of the way back to 1. Gains within :data:`DEADBAND` of 1 are not
    applied.

    Attributes
    ----------
    gain_ : float
        The gain of the last frame (1.0 while off).
    """

    def __init__(self) -> None:
        self.gain_ = 1.0

    def apply(self, img: np.ndarray, params: dict, estimate: Callable[[np.ndarray], float | None] | None
              ) -> np.ndarray:
        """``img`` divided by its gain; ``estimate`` None: the model has nothing to compare with yet."""
        if params["illumination"] == "off" or estimate is None:
            self.gain_ = 1.0
            return img
        g = estimate(img)
        if g is not None:
            self.gain_ = g
        else:  # the grid did not tell: the last gain that counted, let go towards 1
            self.gain_ = 1.0 + (self.gain_ - 1.0) * (1.0 - RELEASE)
        if abs(self.gain_ - 1.0) <= DEADBAND:
            return img
        return cv2.convertScaleAbs(img, alpha=1.0 / self.gain_).reshape(img.shape)


class MaskFilter:
    """Filters of a raw 0/255 mask: ``median`` (with ``median_max`` while the running mean number of blobs
    reaches :data:`CLUTTER_BLOBS`, at rate :data:`CLUTTER_RATE`), ``fill_holes`` and ``min_area``; each off at 0
    (a parameter a model does not have is off).

    The filters write into buffers the filter keeps from frame to frame, the component filters in place once
    the mask is one of them (no fresh array and no copy a frame, docs/performance.md), so the mask :meth:`apply`
    returns may be one of them: it holds until the next call, and a caller that keeps it copies it (the
    subtractors' ``apply`` returns a copy).

    Attributes
    ----------
    blobs_ : float
        Running mean number of 8-connected blobs after the ``median`` aperture (-1 before its first frame).
    """

    def __init__(self) -> None:
        self.blobs_ = -1.0
        self._buffers: dict[str, np.ndarray] = {}

    def _buffer(self, name: str, like: np.ndarray) -> np.ndarray:
        """The kept buffer ``name``, of ``like``'s shape and type (made anew when they change)."""
        b = self._buffers.get(name)
        if b is None or b.shape != like.shape or b.dtype != like.dtype:
            b = self._buffers[name] = np.empty(like.shape, like.dtype)
        return b

    def _out(self, mask: np.ndarray) -> np.ndarray:
        """Where a component filter writes: in place into a buffer of this filter's, else into its own buffer
        (never into the raw mask or an array another engine handed over)."""
        if any(mask is b for b in self._buffers.values()):
            return mask
        return self._buffer("components", mask)

    def apply(self, raw: np.ndarray, params: dict,
              median_of: Callable[[np.ndarray, int], np.ndarray] | None = None) -> np.ndarray:
        """The filtered mask; ``median_of(raw, k)``: the binary median (None: :func:`masks.binary_median` into
        this filter's buffers, looked up at each call; or another engine's of the same result, e.g. the GPU's)."""
        mask = raw
        median = params.get("median", 0)
        if median >= 3:
            if median_of is None:
                median_of = self._median
            filtered = median_of(mask, median)
            if params.get("median_max", 0) > median:
                # the clutter is counted at the base aperture, so the choice does not feed back into it
                n = masks.count_blobs(filtered)
                self.blobs_ = float(n) if self.blobs_ < 0 else self.blobs_ + CLUTTER_RATE * (n - self.blobs_)
                if self.blobs_ >= CLUTTER_BLOBS:
                    filtered = median_of(mask, params["median_max"])
            mask = filtered
        if params.get("fill_holes", 0) > 0:
            mask = masks.fill_holes(mask, params["fill_holes"], self._out(mask))
        if params.get("min_area", 0) > 0:
            mask = masks.remove_small(mask, params["min_area"], self._out(mask))
        return mask

    def _median(self, mask: np.ndarray, k: int) -> np.ndarray:
        """:func:`masks.binary_median` into this filter's buffer for aperture ``k``."""
        return masks.binary_median(mask, k, self._buffer(f"median{k}", mask))


@functools.lru_cache(maxsize=8)
def _grid(H: int, W: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The illumination grid of an ``H x W`` frame: its rows and columns (index arrays of one shape) and the
    block of each point (:func:`bgsub.models._illumination.grid_ratios`)."""
    from bgsub.models import _illumination as il

    s = il.grid_step(H, W)
    ii, jj = np.meshgrid(np.arange(s // 2, H, s), np.arange(s // 2, W, s), indexing="ij")
    cells = ((il.BLOCKS * ii // H) * il.BLOCKS + il.BLOCKS * jj // W).astype(np.int64)
    for a in (ii, jj, cells):
        a.flags.writeable = False
    return ii, jj, cells


def gain_against(frame: np.ndarray, background_at: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 mask: np.ndarray) -> float | None:
    """The gain of ``frame`` (``(H, W, C)`` uint8) against a model's background, by the rule of
    :func:`bgsub.models._illumination.estimate_gain`: the agreed median of the ratios of the grid pixels that
    ``mask`` (the previous raw mask) classified background; None where the grid cannot tell.

    ``background_at(ii, jj)`` gives the background's values (float, ``(..., C)``) at the grid's rows ``ii``
    and columns ``jj`` (index arrays of one shape), so a model computes them only there."""
    from bgsub.models import _illumination as il

    ii, jj, cells = _grid(*frame.shape[:2])
    x = frame[ii, jj]
    b = np.asarray(background_at(ii, jj), np.float64)
    usable = (mask[ii, jj] == 0) & (b > il.DARK).all(-1) & (x > il.DARK_INPUT).all(-1) & (x < il.BRIGHT).all(-1)
    ratios = x[usable].sum(-1, dtype=np.float64) / b[usable].sum(-1)
    n = ratios.size
    if n < il.MIN_POINTS:
        return None
    blocks = cells[usable]
    g = il.agreed_median(ratios, blocks, n, np.empty(n, np.float64))
    if g < 0.0:
        return None
    return min(il.MAX_GAIN, max(il.MIN_GAIN, g))
