"""What every subtractor shares of OpenCV's ``cv::BackgroundSubtractor`` interface.

:class:`OpenCVSubtractorAPI` (``clear``, ``empty``, ``getDefaultName``, ``save``/``load`` of ``.npz``
checkpoints, the checks of ``apply``'s arguments), :func:`frame_as_8bit` (the frame types read, by OpenCV's
conventions) and :class:`NewModelWarning`.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import cv2
import numpy as np

__all__ = ["OpenCVSubtractorAPI", "NewModelWarning", "frame_as_8bit", "check_checkpoint_name", "FRAME_TYPES"]


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
