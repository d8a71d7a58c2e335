"""Shared machinery of the per-pixel kernel subtractors.

:class:`PixelKernelSubtractor` owns everything that does not depend on the
update rule: input validation, colour conversion, the
structure-of-arrays state, the global coefficient scale and its
renormalisation, the update policy's random selection, mask post-processing,
the background image, and ``set_params`` for live parameter changes. Subclasses
say how to score (offset of the score) and how to update (which jitted frame
update, which decay).
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from typing import Any

import cv2
import numpy as np

from bgsub.checkpoint import Checkpointable
from bgsub.models import _frame_kernels as fk
from bgsub.models import _components, _illumination, _texture
from bgsub.models._registration import ShiftEstimator, translate
from bgsub.registry import ParamSpec
from learners._numba_cache import is_cached
from learners.expansion import SCALE_MAX, SCALE_MIN, needs_renormalise
from learners.kernels import gaussian_lut

__all__ = ["PixelKernelSubtractor", "COMMON_PARAMS", "FEEDBACK_PARAMS", "with_defaults", "binary_median",
           "fill_holes", "remove_small", "frame_as_8bit", "NewModelWarning", "check_checkpoint_name"]

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
              "stabilise_max pixels) before the model, and the mask shifted back; 'match' finds the shift by "
              "correlating gradient images (right on 99 % of the jittered dev frames)", "",
              choices=("off", "match")),
    ParamSpec("stabilise_max", int, 8, "largest shift the stabiliser corrects", "pixels", 1, 64),
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
              "value of a random neighbour classified background (ViBe/SuBSENSE spatial propagation; 0: off)",
              "", 0.0, 1.0),
    ParamSpec("diffuse_radius", int, 1, "neighbourhood of the diffusion: a (2r+1)x(2r+1) square", "pixels", 1, 5),
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
              "(8-connected) in the median's output reaches median_blobs, the raw mask is filtered with this "
              "aperture instead (0: off; odd; acts only where larger than median)", "pixels", 0, 15),
    ParamSpec("median_blobs", float, 10.0, "median_max: the running mean number of blobs a frame from which the "
              "larger aperture is used", "blobs", 0.0, 1e6),
    ParamSpec("median_rate", float, 0.05, "median_max: rate of the running mean number of blobs", "per frame",
              0.0, 1.0),
    ParamSpec("min_area", int, 0, "remove foreground blobs smaller than this (0: off)", "pixels", 0, 100000),
    ParamSpec("fill_holes", int, 0,
              "fill background holes smaller than this inside foreground blobs, after the median (0: off)",
              "pixels", 0, 100000),
    ParamSpec("seed", int, 0, "seed of the update policy's random selection", "", 0, 2**31 - 1),
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
    ParamSpec("blink_down", float, 0.02, "fall of the blink accumulator v on a steady frame", "", 0.0, 1.0),
)

#: Texture features (olkn and norma): LBSP descriptors in a product kernel with colour
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

_PROB_ONE = fk.PROB_ONE
#: ``stabilise="match"``: frames in a row whose shift reaches ``stabilise_max`` before the reference is renewed.
REANCHOR_FRAMES = 10

#: The texture argument of a model without texture features (:meth:`PixelKernelSubtractor._texture_args`).
_NO_TEXTURE = (0.0, np.zeros((1, 1, 1), np.uint16), np.zeros((1, 1, 1, 1), np.uint16), False,
               np.zeros((1, 1, 1, 16), np.uint8), np.zeros(256, np.uint8))

#: Neighbourhood of the previous output's foreground in which decision flips do not count as blinking.
_BLINK_MARGIN = np.ones((5, 5), np.uint8)

#: Downscaling of ``process_scale``: bilinear (measured at 1920x1080 -> 480x270: 0.4 ms vs 3.2 ms for
#: area averaging, and dev mean F of the fast preset 0.494 vs 0.498; docs/performance.md).
_DOWNSCALE = cv2.INTER_LINEAR


def with_defaults(specs: tuple[ParamSpec, ...], **defaults) -> tuple[ParamSpec, ...]:
    """``specs`` with the defaults of the named parameters replaced."""
    unknown = set(defaults) - {p.name for p in specs}
    if unknown:
        raise KeyError(f"no such parameters: {sorted(unknown)}")
    return tuple(dataclasses.replace(p, default=defaults[p.name]) if p.name in defaults else p for p in specs)


def binary_median(mask: np.ndarray, k: int) -> np.ndarray:
    """Median filter of a 0/255 mask with a ``k x k`` window (replicated border).

    On a binary image the median is a majority vote, so it is computed as a box
    mean and a comparison: identical to ``cv2.medianBlur(mask, k)`` for 0/255
    masks, and ~30x faster at k = 7 (0.09 ms vs 2.7 ms at 320x240, measured). The
    8-bit mean of ``n`` set pixels among ``k * k`` is ``round(255 n / k^2)``, above 127
    exactly when ``n > k^2 / 2`` for every odd ``k`` up to 15 (the nearest means are
    1.6 and 0.6 apart from 127.5 at k = 15; tested for every ``n``), and the 8-bit
    filter is faster than a 16-bit count (0.73 against 0.99 ms at 1280x720).
    """
    if mask.size < SPARSE_MEDIAN_PIXELS:
        return _box_majority(mask, k)
    # A window needs more than k^2 / 2 set pixels, so an output row whose k input rows hold fewer in all is
    # background: only the bands of rows that can hold foreground are filtered (their k // 2 rows of context
    # with them, so that every window reads the rows it reads in the whole mask; at the mask's edges the
    # band's edge is the mask's, replicated alike). Foreground is sparse in most frames: about half of a
    # highway frame's rows are filtered, 1.38 -> 0.80 ms at 1920x1080 (docs/performance.md).
    H = mask.shape[0]
    r = k // 2
    # each row's sum, with its edge values as often again as the replicated border repeats them in a window
    rows = cv2.reduce(mask, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S)[:, 0].astype(np.int64)
    rows += r * (mask[:, 0].astype(np.int64) + mask[:, -1])
    cum = np.concatenate(([0], np.cumsum(np.concatenate((np.full(r, rows[0]), rows, np.full(r, rows[-1]))))))
    # rows i - r .. i + r sum to at least what any window of output row i does, and a mean that rounds above
    # 127 needs a window sum of at least 127.5 k^2 (exact for 0/255 masks, safe for any other values)
    live = (cum[k:] - cum[:-k]) >= 127 * k * k
    if live.all():
        return _box_majority(mask, k)
    out = np.zeros_like(mask)
    edges = np.flatnonzero(np.diff(live.view(np.int8), prepend=np.int8(0), append=np.int8(0)))
    for a, b in zip(edges[::2], edges[1::2]):
        lo, hi = max(0, a - r), min(H, b + r)
        mean = cv2.blur(mask[lo:hi], (k, k), borderType=cv2.BORDER_REPLICATE)
        cv2.threshold(mean[a - lo:b - lo], 127, 255, cv2.THRESH_BINARY, dst=out[a:b])
    return out


#: Masks of at least this many pixels are median-filtered only in the bands of rows that can hold foreground
#: (:func:`binary_median`); below it the whole mask costs less than finding the bands.
SPARSE_MEDIAN_PIXELS = 1 << 17


def _box_majority(mask: np.ndarray, k: int) -> np.ndarray:
    """:func:`binary_median` over the whole mask: the 8-bit box mean above 127."""
    mean = cv2.blur(mask, (k, k), borderType=cv2.BORDER_REPLICATE)
    return cv2.threshold(mean, 127, 255, cv2.THRESH_BINARY)[1]


def fill_holes(mask: np.ndarray, max_area: int) -> np.ndarray:
    """``mask`` (0/255) with its background components smaller than ``max_area`` pixels set to 255.

    Background is 4-connected (so foreground blobs are 8-connected, as ``min_area``
    counts them); a component touching the border counts as a hole too when small.
    """
    return _set_small_components(mask, True, max_area, 255)


def remove_small(mask: np.ndarray, min_area: int) -> np.ndarray:
    """``mask`` (0/255) without its foreground components (8-connected) smaller than ``min_area`` pixels."""
    return _set_small_components(mask, False, min_area, 0)


def _set_small_components(mask: np.ndarray, background: bool, area: int, value: int) -> np.ndarray:
    """``mask`` with ``value`` on its background (or foreground) components of fewer than ``area`` pixels;
    ``mask`` itself when there is none, else a copy (``bgsub.models._components``)."""
    mask = np.ascontiguousarray(mask)
    starts, ends, first, small, count = _components.small_runs(mask, background, area)
    if count == 0:
        return mask
    out = mask.copy()
    _components.set_runs(out, starts, ends, first, small, value)
    return out


#: Parameters that were removed, each with the value at which the code behaved as it does without it (the
#: feature off): a checkpoint that carries one at that value loads without it, another value is refused
#: (:meth:`PixelKernelSubtractor.without_removed_params`; subclasses add their own).
REMOVED_PARAMS: dict[str, Any] = {"blur": 0.0, "open": 0, "close": 0, "relearn_fraction": 0.0, "relearn_frames": 10,
                                  "shadow_low": 0.0, "shadow_chroma": 0.1, "match_radius": 0, "match_tries": 8}
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


class NewModelWarning(UserWarning):
    """A frame of another size, or with another number of channels, than the model's: the model was dropped and
    a new one starts from this frame, as OpenCV's subtractors do (one warning per change; use one subtractor per
    stream to keep each model)."""


#: What :func:`frame_as_8bit` accepts, for messages.
FRAME_TYPES = ("uint8 (0-255), uint16 (0-65535, read as v >> 8) or float32/float64 (the 0-255 scale of 8-bit "
               "frames, as OpenCV's MOG2 reads them), (H, W) grey, (H, W, 3) BGR or (H, W, 4) BGRA")


def frame_as_8bit(frame: Any) -> np.ndarray:
    """``frame`` as the 8-bit grey or BGR image the subtractors model, by OpenCV's conventions.

    * uint8: as it is (no copy);
    * uint16: the high byte, ``v >> 8`` (0-65535 onto 0-255, as :mod:`bgsub.sources` reads 16-bit images; a
      frame scaled up from 8 bits by ``v * 257`` or ``v << 8`` gives back its 8-bit values);
    * float32, float64 (float16): values on the 0-255 scale of 8-bit frames, which is how OpenCV's MOG2 reads
      a float frame (it converts 8-bit frames to float without scaling, and its thresholds are in 8-bit units;
      OpenCV's KNN reads a float frame's bytes as 8-bit values, which is no convention at all), rounded to the
      nearest integer and saturated to 0-255 as OpenCV's ``convertTo`` does (NaN and infinities read as 0). A
      frame on a 0-1 scale must be multiplied by 255 first (:meth:`OpenCVSubtractorAPI._read_frame` warns on a
      model's first frame when it looks like one);
    * (H, W, 4) BGRA: the alpha channel is dropped (BGR).

    Shapes: (H, W) or (H, W, 1) grey, (H, W, 3) BGR, (H, W, 4) BGRA; any other type or shape is a ValueError
    naming what is accepted (a non-array a TypeError).
    """
    if not isinstance(frame, np.ndarray):
        raise TypeError(f"frame must be a numpy array, got {type(frame).__name__}")
    if not (frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] in (1, 3, 4))):
        raise ValueError(f"frame must be (H, W) grey, (H, W, 3) BGR or (H, W, 4) BGRA, got shape {frame.shape}")
    if frame.shape[0] < 1 or frame.shape[1] < 1:
        raise ValueError(f"frame is empty, shape {frame.shape}")
    if frame.ndim == 3 and frame.shape[2] == 4:
        frame = frame[:, :, :3]  # BGRA: alpha dropped (a view; converted or made contiguous below)
    kind, size = frame.dtype.kind, frame.dtype.itemsize
    if kind == "u" and size == 1:
        return np.ascontiguousarray(frame)  # no copy unless BGRA
    if kind == "u" and size == 2:
        return (frame >> 8).astype(np.uint8)
    if kind == "f":
        if size not in (4, 8):
            frame = frame.astype(np.float32)
        # OpenCV's saturate_cast: round half to even, clamp to 0-255, NaN -> 0
        out = cv2.add(frame, 0.0, dtype=cv2.CV_8U)
        return out.reshape(frame.shape)  # cv2 returns (H, W) for (H, W, 1)
    raise ValueError(f"frame dtype {frame.dtype} is not read; frames are {FRAME_TYPES}")


def _warn_if_unit_scale(frame: np.ndarray) -> None:
    """Warn when a float frame's values all lie in (0, 1]: on the 0-255 scale it reads as black."""
    if frame.dtype.kind == "f" and frame.size:
        top = float(np.nanmax(frame)) if not np.isnan(frame).all() else 0.0
        if 0.0 < top <= 1.0:
            warnings.warn("float frames are read on the 0-255 scale of 8-bit frames (as OpenCV's MOG2 reads "
                          f"them), and this one's values lie in [0, {top:g}], so it reads as black: pass "
                          "frame * 255 if it is on a 0-1 scale", UserWarning, stacklevel=4)


#: File names that announce a format :meth:`OpenCVSubtractorAPI.save` does not write: OpenCV's
#: ``Algorithm.save`` and ``FileStorage`` formats.
_OPENCV_STORAGE = (".yml", ".yaml", ".xml", ".json", ".gz")


def check_checkpoint_name(path: Any, writing: bool) -> None:
    """Refuse a checkpoint name that promises another format than the ``.npz`` checkpoints are.

    Writing, the name must end in ``.npz`` (any case): the file is an ``.npz`` (numpy's zip of arrays,
    :mod:`bgsub.checkpoint`), never OpenCV's YAML/XML of ``Algorithm.save``, and nothing is appended to the
    name given. Reading, a name in one of OpenCV's storage formats (``.yml``, ``.yaml``, ``.xml``, ``.json``,
    ``.gz``) is refused; any other name is read by its content (a file that is not a checkpoint gets
    :class:`bgsub.CheckpointError` saying so), so checkpoints saved under other names still load.
    """
    from learners._persist import CheckpointError

    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    lower = name.lower()
    if writing and not lower.endswith(".npz"):
        raise CheckpointError(
            f"save writes an .npz checkpoint (numpy's zip of arrays), not OpenCV's YAML/XML; give the file a "
            f".npz name, got {name!r}")
    if not writing and lower.endswith(_OPENCV_STORAGE):
        raise CheckpointError(
            f"load reads the .npz checkpoints that save writes, not OpenCV's YAML/XML/JSON storage; got {name!r}")


class OpenCVSubtractorAPI:
    """What every subtractor shares of OpenCV's cv::Algorithm / cv::BackgroundSubtractor API:
    ``clear``/``empty``/``getDefaultName``, ``get_params``, the reading of frames (:func:`frame_as_8bit`) and
    the checks of ``apply``'s arguments, and ``save``/``load`` names (``.npz``).

    It is not a subclass of ``cv2.BackgroundSubtractor`` (``isinstance(sub, cv2.BackgroundSubtractor)`` is
    False): in OpenCV 5.0.0 a Python subclass of it crashes the interpreter (segmentation fault) once a second
    instance is made after the first is freed, and at the first call of a method it inherits (``empty``,
    ``write``); code written for OpenCV that calls the methods works unchanged (duck typing).
    """

    params: dict[str, Any]

    def reset(self) -> None:
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        """A copy of the current parameters."""
        return dict(self.params)

    def clear(self) -> None:
        """Forget the model, as OpenCV's ``clear()`` (same as :meth:`reset`)."""
        self.reset()

    def empty(self) -> bool:
        """False: the subtractor is usable (OpenCV's ``Algorithm.empty``)."""
        return False

    def getDefaultName(self) -> str:
        """``"BackgroundSubtractor_<ClassName>"``, after OpenCV's ``BackgroundSubtractor_MOG2``."""
        return f"BackgroundSubtractor_{type(self).__name__}"

    def save(self, path):
        """Write the parameters and model to ``path``, an ``.npz`` checkpoint (atomic; :mod:`bgsub.checkpoint`).

        The name must end in ``.npz``: the file is numpy's zip of arrays, not the YAML/XML that OpenCV's
        ``Algorithm.save`` writes, and another name is a :class:`bgsub.CheckpointError`
        (:func:`check_checkpoint_name`). Returns the path written."""
        check_checkpoint_name(path, writing=True)
        return super().save(path)

    @classmethod
    def load(cls, path):
        """The subtractor saved in ``path`` by :meth:`save` (an ``.npz`` checkpoint; a ``.yml``/``.xml`` name is
        refused, :func:`check_checkpoint_name`); refuses a checkpoint of another algorithm."""
        check_checkpoint_name(path, writing=False)
        return super().load(path)

    def _read_frame(self, frame: Any) -> np.ndarray:
        """``frame`` as the 8-bit image the model reads (:func:`frame_as_8bit`); on a model's first frame, a
        warning when a float frame looks like a 0-1 scale."""
        img = frame_as_8bit(frame)
        if getattr(self, "n_frames_", 0) == 0 and frame.dtype.kind == "f":
            _warn_if_unit_scale(frame)
        return img

    def _new_model(self, why: str) -> None:
        """Drop the model (:meth:`reset`) with one :class:`NewModelWarning` saying ``why``, as OpenCV's
        subtractors start a new model on a frame of another size or type."""
        warnings.warn(f"{why}: a new model starts from this frame, as OpenCV's subtractors do (use one "
                      "subtractor per stream to keep each model)", NewModelWarning, stacklevel=4)
        self.reset()

    @staticmethod
    def _check_learning_rate(learningRate: float) -> float:
        """``learningRate`` as OpenCV reads it: negative -> -1 (the model's own schedule), 0 (no learning), a
        rate in (0, 1), and 1 or more -> 1 (a new model from this frame); NaN is refused."""
        try:
            lr = float(learningRate)
        except (TypeError, ValueError):
            raise ValueError(f"learningRate must be a number (negative: automatic, 0: no learning, 1 or more: "
                             f"a new model from this frame), got {learningRate!r}") from None
        if math.isnan(lr):
            raise ValueError("learningRate must be a number (negative: automatic, 0: no learning, 1 or more: "
                             "a new model from this frame), got nan")
        if lr < 0:
            return -1.0
        return min(lr, 1.0)

    @staticmethod
    def _fits(fgmask: Any, shape: tuple[int, int]) -> bool:
        """Whether ``apply`` writes its mask into ``fgmask``: a uint8 array of the mask's shape. As OpenCV's
        output arrays, any other array is left alone and a new mask returned; None likewise; what is not an
        array is a TypeError."""
        if fgmask is None:
            return False
        if not isinstance(fgmask, np.ndarray):
            raise TypeError(f"fgmask must be None or a numpy array, got {type(fgmask).__name__}")
        return fgmask.dtype == np.uint8 and fgmask.shape == tuple(shape) and fgmask.flags.writeable


def _prob(p: float) -> int:
    return int(round(min(max(p, 0.0), 1.0) * _PROB_ONE))


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


class PixelKernelSubtractor(OpenCVSubtractorAPI, Checkpointable):
    """Base class: a tiny online novelty detector per pixel, all stepped at once.

    Subclasses define ``_SPECS`` (tuple of ParamSpec), ``_score_offset``,
    ``_frame(img, p_bg, p_fg, p_diff, mask_out, nbr_mask)`` (the fused jitted
    frame step), ``_update`` (the step after post-processing) and ``_decay()``;
    optionally ``_bootstrap_step``/``_bootstrap_done`` (first-frame warm-up).

    Attributes
    ----------
    params : dict
        Current parameter values.
    score_range : (float, float)
        Range of :meth:`getScoreMap` values (for ROC histograms).
    frame_shape_ : tuple or None
        ``(H, W)`` of the frames being modelled (the input's size times
        ``process_scale``); None before the first frame.
    input_shape_ : tuple or None
        ``(H, W)`` of the input frames; masks and maps are returned at this size.
    channels_ : int or None
        Channels of the model's samples (1 grey, 3 colour).
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
    stabilise_reference_ : ndarray (H, W) or None
        The stabiliser's reference frame (grey, uint8); None
        while ``stabilise`` is off or before the first frame.
    stabilise_saturated_ : int
        Frames in a row whose shift reached ``stabilise_max`` (``REANCHOR_FRAMES`` of them renew the reference).
    scale_ : float
        Global coefficient scale.
    n_frames_ : int
        Frames applied since the last reset.
    n_steps_ : int
        Pixel steps taken since the last reset (one per pixel per update).
    gain_ : float
        Global gain of the last frame against the model (``illumination="gain"``; 1.0 while off): the last
        estimate that counted. Frames are divided by it when it differs from 1 by more than 0.003.
    blobs_ : float
        Running mean number of blobs (8-connected) in the mask after the ``median`` aperture (``median_max``;
        -1 before its first frame): from ``median_blobs`` on, the larger aperture filters the mask.
    """

    _SPECS: tuple[ParamSpec, ...] = ()
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

    @classmethod
    def _upgrade_checkpoint(cls, layout: int, params: dict, arrays: dict) -> tuple[dict, dict] | None:
        """A layout-1 checkpoint (before the blink feedback) or layout-2 one (before the stabiliser's state was
        saved) as layout 3: the feedback off where it did not exist, no warm-up (``warmup_frames`` did not
        exist), and a stabiliser that takes its reference at the next frame.

        Only for classes whose state holds the feedback's arrays (not SVMD's own layout).
        """
        if layout not in (1, 2) or "blink_" not in cls._STATE_ARRAYS:
            return None
        params = {"warmup_frames": 0, **params}
        if layout == 1:
            params = {**params, "blink_gain": 0.0}
            if "samples_" in arrays:
                H, W = arrays["samples_"].shape[:2]
                arrays = {"blink_": np.zeros((H, W), np.float32), "post_mask_": np.zeros((H, W), np.uint8),
                          **arrays}
        return params, arrays

    def _check_restored_state(self) -> None:
        """Raise ValueError unless the state a checkpoint restored (:func:`bgsub.checkpoint.load`) is one the
        frame kernels can run on: they index without bounds checks, so every ring position and count must lie
        within the budget; and every float must be finite and in its range, every mask 0 or 255, every
        counter in range, so that a model edited by hand cannot continue in a state no stream leads to."""
        check_state_value("scale_", self.scale_, SCALE_MIN, SCALE_MAX)
        check_state_value("gain_", self.gain_, _illumination.MIN_GAIN, _illumination.MAX_GAIN)
        if self.blobs_ != -1.0:
            check_state_value("blobs_", self.blobs_, 0.0, math.inf)
        check_state_value("stabilise_saturated_", self.stabilise_saturated_, 0, REANCHOR_FRAMES - 1)
        if self.samples_ is None:
            return
        check_ring(self.ring_, self.samples_.shape[2])
        for name, low, high in self._RESTORED_RANGES:
            check_state_array(name, getattr(self, name), low, high)
        for name in ("prev_mask_", "post_mask_"):
            check_mask(name, getattr(self, name, None))
        ref = self.stabilise_reference_
        if ref is not None:
            check_state_array("stabilise_reference_", ref, 0.0, 255.0)

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
        (:attr:`_REMOVED_PARAMS`); a ValueError naming one it carries at another value, or a removed value of
        a parameter (:attr:`_REMOVED_CHOICES`)."""
        for k, v in params.items():
            if v in cls._REMOVED_CHOICES.get(k, ()):
                raise ValueError(f"the option {k}={v!r} was removed; its other values are "
                                 f"{', '.join(map(repr, next(p for p in cls._SPECS if p.name == k).choices))}: "
                                 "start a new model with one of them")
            if k in cls._REMOVED_PARAMS and v != cls._REMOVED_PARAMS[k]:
                raise ValueError(f"the option {k} (here {v!r}) was removed; only its neutral value "
                                 f"{cls._REMOVED_PARAMS[k]!r} is read: start a new model without it")
        return {k: v for k, v in params.items() if k not in cls._REMOVED_PARAMS}

    def __init__(self, **params: Any) -> None:
        specs = {p.name: p for p in self._SPECS}
        values = checked_params(type(self).__name__, specs, {p.name: p.default for p in self._SPECS}, params)
        self._check(values)
        self.params = values
        self.reset()

    # ------------------------------------------------------------------ params
    def _check(self, values: dict[str, Any]) -> None:
        for name in ("median", "median_max"):
            v = values.get(name, 0)
            if v and v % 2 == 0:
                raise ValueError(f"{name} must be 0 or an odd aperture, got {v}")

    def set_params(self, **params: Any) -> bool:
        """Change parameters; returns True when the model had to be reset.

        Parameters marked ``live`` in the registry take effect from the next frame;
        changing any other (e.g. ``budget``, ``color``) resets the model.
        """
        specs = {p.name: p for p in self._SPECS}
        new = checked_params(type(self).__name__, specs, self.params, params)
        self._check(new)
        needs_reset = any(not specs[k].live and new[k] != self.params[k] for k in params)
        self.params = new
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

    @property
    def score_range(self) -> tuple[float, float]:
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the model; the next frame may have any size."""
        self.frame_shape_: tuple[int, int] | None = None
        self.blobs_ = -1.0
        self.input_shape_: tuple[int, int] | None = None
        self.channels_: int | None = None
        self.samples_ = None
        self.coef_ = None
        self.ring_ = None
        self.rho_ = None
        self.scale_ = 1.0
        self.prev_mask_ = None
        self.blink_ = None
        self.post_mask_ = None
        self.n_frames_ = 0
        self.n_steps_ = 0
        self._score = None
        self._mask = None
        self._img = None
        # derived tables depend on the channel count of the next stream (grey frames,
        # reset(), then colour frames must not keep the grey Gaussian table)
        self._lut = None
        self._decay_value = None
        self.stabilise_reference_ = None
        self._registrar = None  # (stabilise_max, its shift estimator)
        self.stabilise_saturated_ = 0
        self._shift = (0, 0)
        self.gain_ = 1.0
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
        self._mask = self._rawmask
        if self._texture_on():
            self.texture_ = np.zeros((H, W, B, C), dtype=np.uint16)

    def lut(self) -> np.ndarray:
        """The Gaussian table for the current width and channel count."""
        if self._lut is None:
            C = self.channels_ or (1 if self.params["color"] == "gray" else 3)
            self._lut = gaussian_lut(self.params["width"], C * 255 * 255)
        return self._lut

    # ------------------------------------------------------------------ input
    def _prepare(self, frame: np.ndarray) -> np.ndarray:
        """``frame`` read as 8 bits (:func:`frame_as_8bit`), at the model's scale and colour, as a
        contiguous (H, W, C) array; a frame of another size or channel count than the model's drops the model
        (:meth:`_new_model`), as OpenCV's subtractors do."""
        img = self._read_frame(frame)
        size = img.shape[:2]
        s = self.params["process_scale"]
        if s < 1.0:
            img = cv2.resize(img, (max(1, round(size[1] * s)), max(1, round(size[0] * s))),
                             interpolation=_DOWNSCALE)
        if self.params["color"] == "gray" and img.ndim == 3 and img.shape[2] == 3:
            img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        if img.ndim == 2:
            img = img[:, :, None]
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
        return np.ascontiguousarray(img)

    # ------------------------------------------------------------------ output
    def _postprocess(self, raw: np.ndarray) -> np.ndarray:
        p = self.params
        mask = raw
        if p["median"] >= 3:
            filtered = binary_median(mask, p["median"])
            if p["median_max"] > p["median"]:
                # the clutter is counted at the base aperture, so the choice does not feed back into it
                n = _components.count_components(filtered)
                self.blobs_ = float(n) if self.blobs_ < 0 else self.blobs_ + p["median_rate"] * (n - self.blobs_)
                if self.blobs_ >= p["median_blobs"]:
                    filtered = binary_median(mask, p["median_max"])
            mask = filtered
        if p["fill_holes"] > 0:
            mask = fill_holes(mask, p["fill_holes"])
        if p["min_area"] > 0:
            mask = remove_small(mask, p["min_area"])
        return mask

    # ------------------------------------------------------------------ API
    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        """Classify ``image`` and update the model (OpenCV's ``apply(image[, fgmask[, learningRate]])``).

        Parameters
        ----------
        image : ndarray (H, W), (H, W, 1), (H, W, 3) or (H, W, 4)
            Grey, BGR or BGRA (alpha dropped) frame of uint8, uint16 (read as ``v >> 8``) or float32/float64
            (the 0-255 scale of 8-bit frames, as OpenCV's MOG2 reads them; rounded and saturated), see
            :func:`frame_as_8bit`. A frame of another size or channel count than the model's starts a new
            model, with one :class:`NewModelWarning`, as OpenCV's subtractors do.
        fgmask : ndarray (H, W) of uint8, optional
            Written with the mask and returned, as OpenCV does; None, or an array of another shape or type
            (left alone, as OpenCV's output arrays): a new array.
        learningRate : float
            Negative (-1): the model's own policy (``update_prob``, ``fg_update_prob``);
            0: do not update the model; in (0, 1): probability that a background
            pixel steps this frame (overrides ``update_prob``); 1 or more: a new model
            from this frame (OpenCV: "completely reinitialized from the last frame").

        Returns
        -------
        ndarray (H, W) of uint8
            255 foreground, 0 background (after post-processing).
        """
        lr = self._check_learning_rate(learningRate)
        if lr >= 1.0:  # OpenCV: 1 (or more) reinitialises the model from this frame
            self.reset()
            lr = -1.0
        img = self._compensate_illumination(self._stabilise(self._prepare(image)))
        if not self._fits(fgmask, self.input_shape_):
            fgmask = None
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
                if self.params["update_mask"] == "raw":
                    self._update(img, self._own, p_bg, p_fg, p_diff)
                else:
                    mask = self._postprocess(self._rawmask)
                    self._update(img, mask, p_bg, p_fg, p_diff)
            self.prev_mask_[...] = self._rawmask
            self.n_steps_ += int(self._stepped.sum())
            self._advance_scale()
        if mask is None:
            mask = self._postprocess(self._rawmask)
        if self.params.get("blink_gain", 0.0) > 0:
            # where the last output was foreground, or next to it, flips are an object's edges, not blinking
            cv2.dilate(mask, _BLINK_MARGIN, dst=self.post_mask_)
        mask = self._unshift(mask, 0)
        self._mask = mask
        self.n_frames_ += 1
        if fgmask is not None:
            if self.input_shape_ is not None and mask.shape[:2] != self.input_shape_:
                H, W = self.input_shape_
                cv2.resize(mask, (W, H), dst=fgmask, interpolation=cv2.INTER_NEAREST)
            else:
                fgmask[...] = mask
            return fgmask
        return self._full_size(mask, cv2.INTER_NEAREST)

    def _blink_args(self, learn: bool = True) -> tuple:
        """``(post, gain, up, down)`` of the blink feedback (``post``: the previous output mask); a frame
        that does not learn leaves ``v`` alone."""
        p = self.params
        gain = p.get("blink_gain", 0.0)
        if not learn:
            return self.post_mask_, gain, 0.0, 0.0
        return self.post_mask_, gain, p.get("blink_up", 0.0), p.get("blink_down", 0.0)

    def _score_pass(self, img: np.ndarray, learn: bool) -> None:
        """Score ``img`` without learning (:func:`fk.score_frame`), with the blink feedback; ``learn`` moves the
        blink accumulators."""
        fk.score_frame(img, self.samples_, self.coef_, self.ring_, self.rho_, self.scale_, self.lut(),
                       self._score_offset, self._score, self._f, self._oldest, self._rawmask, self._own, self.blink_,
                       self.prev_mask_, *self._blink_args(learn), *self._texture_args())

    def _texture_on(self) -> bool:
        """Whether values carry texture descriptors (``texture`` > 0; subclasses with ``TEXTURE_PARAMS``)."""
        return self.params.get("texture", 0.0) > 0.0

    def _texture_args(self) -> tuple:
        """``(lam, descriptors, sample_descriptors, inter, patterns, thresholds)`` of the frame kernels' texture
        features (:func:`fk._sum_at`): ``lam = 0`` (none) while ``texture`` is off; ``inter`` with
        ``texture_mode="inter"`` (the frame's pattern points and the thresholds by centre value)."""
        if not self._texture_on():
            return _NO_TEXTURE
        if self.params.get("texture_mode", "intra") == "inter":
            return (float(self.params["texture"]), self._descriptors, self.texture_, True, self._patterns,
                    self._thresholds)
        return (float(self.params["texture"]), self._descriptors, self.texture_, *_NO_TEXTURE[3:])

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

    def _full_size(self, image: np.ndarray, interpolation: int, copy: bool = True) -> np.ndarray:
        """``image`` (at the processed size) at the input's size (``process_scale``); a copy."""
        if self.input_shape_ is None or image.shape[:2] == self.input_shape_:
            return image.copy() if copy else image
        H, W = self.input_shape_
        return cv2.resize(image, (W, H), interpolation=interpolation)

    def _stabilise(self, img: np.ndarray) -> np.ndarray:
        """Register ``img`` to the stream's first frame (``stabilise="match"``); remembers the
        shift. A frame whose shift reaches ``stabilise_max`` is taken unshifted, and after
        :data:`REANCHOR_FRAMES` such frames in a row (a camera that panned or was moved, not one that shakes)
        the last becomes the reference of the frames after it."""
        self._shift = (0, 0)
        if self.params["stabilise"] == "off":
            return img
        grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY) if img.shape[2] == 3 else np.ascontiguousarray(img[..., 0])
        ref = self.stabilise_reference_
        if ref is None or ref.dtype != grey.dtype or ref.shape != grey.shape:
            self.stabilise_reference_ = grey
            self._registrar = None
            self.stabilise_saturated_ = 0
            return img
        m = self.params["stabilise_max"]
        if self._registrar is None or self._registrar[0] != m:  # built on first use, and anew on a change
            self._registrar = (m, ShiftEstimator(self.stabilise_reference_, m))
        dx, dy = self._registrar[1].estimate(grey)
        if max(abs(dx), abs(dy)) >= m:
            # as far as the search reaches: no shift is trusted (an object can pull the estimate there);
            # a camera that stays there panned or was moved, and its frame becomes the new reference
            self.stabilise_saturated_ += 1
            if self.stabilise_saturated_ >= REANCHOR_FRAMES:
                self.stabilise_reference_ = grey
                self._registrar = None
                self.stabilise_saturated_ = 0
            return img
        self.stabilise_saturated_ = 0
        if dx == 0 and dy == 0:
            return img
        self._shift = (dx, dy)
        return np.ascontiguousarray(translate(img, -dx, -dy, cv2.BORDER_REPLICATE, 0).reshape(img.shape))

    def _compensate_illumination(self, img: np.ndarray) -> np.ndarray:
        """``img`` divided by its global gain against the model (``illumination="gain"``,
        :mod:`bgsub.models._illumination`); sets ``gain_``."""
        if self.params["illumination"] == "off" or self.samples_ is None or self.n_frames_ == 0:
            self.gain_ = 1.0
            return img
        # the previous frame's raw mask as the model learnt from it (saved state: a resumed model gets the same)
        g = _illumination.estimate_gain(img, self.samples_, self.coef_, self.ring_, self.prev_mask_,
                                        self._gain_scratch)
        if g is not None:
            self.gain_ = g
        else:  # the grid did not tell: the last gain that counted, let go towards 1
            self.gain_ = 1.0 + (self.gain_ - 1.0) * (1.0 - _illumination.RELEASE)
        if abs(self.gain_ - 1.0) <= _illumination.DEADBAND:
            return img
        return cv2.convertScaleAbs(img, alpha=1.0 / self.gain_).reshape(img.shape)

    def _unshift(self, a: np.ndarray, fill: float) -> np.ndarray:
        """``a`` (model coordinates) moved back to the input frame's coordinates."""
        dx, dy = getattr(self, "_shift", (0, 0))
        if dx == 0 and dy == 0:
            return a
        return translate(a, dx, dy, cv2.BORDER_CONSTANT, fill)

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
        """Fill every buffer with ``B`` learner steps on random neighbours of ``img``
        (``(2 init_radius + 1)^2`` square).

        Step ``b = 0`` uses the pixel itself; the others a neighbour drawn
        uniformly (replicated border). The steps are ordinary updates, so the
        coefficients and offsets are what the learner would have after seeing
        these values.
        """
        H, W = img.shape[:2]
        rng = np.random.default_rng(self.params["seed"])
        scratch = np.zeros((H, W), np.uint8)
        rad = self.params["init_radius"]
        B = self.params["budget"]
        scales = self._bootstrap_scales(B) if self._can_bootstrap_pixelwise() else None
        if scales is not None:
            # the same draws, all at once (offsets, not indices: |offset| <= init_radius fits a byte)
            dy = np.empty((B - 1, H, W), np.int8)
            dx = np.empty((B - 1, H, W), np.int8)
            for b in range(B - 1):
                dy[b] = rng.integers(-rad, rad + 1, size=(H, W))
                dx[b] = rng.integers(-rad, rad + 1, size=(H, W))
            self._bootstrap_pixelwise(img, dy, dx, scales[0], scratch)
            self.scale_ = scales[1]
            self.n_steps_ += H * W * B
        else:
            rows = np.arange(H)[:, None]
            cols = np.arange(W)[None, :]
            for b in range(B):
                if b == 0:
                    x = self._bootstrap_values(img, None, None)
                else:
                    yy = np.clip(rows + rng.integers(-rad, rad + 1, size=(H, W)), 0, H - 1)
                    xx = np.clip(cols + rng.integers(-rad, rad + 1, size=(H, W)), 0, W - 1)
                    x = self._bootstrap_values(img, yy, xx)
                self._bootstrap_step(x, scratch)
                self._advance_scale()
        self._bootstrap_values(img, None, None)  # the frame's own derived inputs again (its descriptors)
        self._bootstrap_done()
        self.blink_[...] = 0.0  # the bootstrap's decisions are not the stream's

    def _bootstrap_scales(self, steps: int) -> tuple[np.ndarray, float] | None:
        """The global scale at each of ``steps`` bootstrap steps and after them, as :meth:`_advance_scale`
        moves it; None when it would renormalise on the way (the frames handle that)."""
        scale = self.scale_
        scales = np.empty(steps, np.float64)
        for b in range(steps):
            scales[b] = scale
            scale *= self._decay_factor()
            if needs_renormalise(scale):
                return None
        return scales, scale

    def _can_bootstrap_pixelwise(self) -> bool:
        """Whether :meth:`_bootstrap_pixelwise` runs the bootstrap with the current parameters (default: no,
        it runs frame by frame, :meth:`_bootstrap_step`)."""
        return False

    def _bootstrap_pixelwise(self, img: np.ndarray, dy: np.ndarray, dx: np.ndarray, scales: np.ndarray,
                             scratch: np.ndarray) -> None:
        """Every bootstrap step in one pass, pixel by pixel: step ``b`` of pixel ``(i, j)`` on ``img`` at
        ``(i + dy[b - 1, i, j], j + dx[b - 1, i, j])`` (clamped; ``b = 0``: its own value) under the global
        scale ``scales[b]``; the state must end as :meth:`_bootstrap_step` on each of those frames leaves
        it (only called where :meth:`_can_bootstrap_pixelwise`)."""
        raise NotImplementedError

    def _bootstrap_step(self, x: np.ndarray, scratch: np.ndarray) -> None:
        """One bootstrap step on the values ``x``: by default an ordinary learner step of every pixel."""
        self._frame(x, _PROB_ONE, _PROB_ONE, 0, scratch, scratch)
        self.n_steps_ += int(self._stepped.sum())

    def _bootstrap_done(self) -> None:
        """Hook after the bootstrap (e.g. set the offsets)."""

    def _fused(self) -> bool:
        """Whether a learning frame is one pass (:meth:`_frame`) rather than a score pass and an update pass."""
        return self.params["update_mask"] == "raw"

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
        return None if self._score is None else self._full_size(self._unshift(self._score, -1.0),
                                                                cv2.INTER_NEAREST)

    def getBackgroundImage(self) -> np.ndarray | None:
        """Coefficient-weighted mean of each pixel's samples: (H, W) grey or (H, W, 3) BGR uint8."""
        if self.samples_ is None:
            return None
        H, W = self.frame_shape_
        out = np.zeros((H, W, self.channels_), dtype=np.uint8)
        fk.background_image(self.samples_, self.coef_, self.ring_, out)
        out = self._full_size(out[:, :, 0] if self.channels_ == 1 else out, cv2.INTER_LINEAR, copy=False)
        return out

    def getRawMask(self) -> np.ndarray | None:
        """uint8 (H, W) mask of the last frame before post-processing (``score > 0``)."""
        return None if self._score is None else self._full_size(self._unshift(self._rawmask, 0),
                                                                cv2.INTER_NEAREST)

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

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items()
                   if v != next(p.default for p in self._SPECS if p.name == k)}
        args = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}({args})"
