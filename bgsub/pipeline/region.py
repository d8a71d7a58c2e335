"""Pre-processing: a region of interest and a processing scale.

:class:`Region` maps a full input frame to what the subtractor sees (the
bounding box of the ROI, shrunk by ``scale``) and maps the subtractor's mask
and score map back to the input's size. Pixels outside the ROI are never
foreground, and pixels outside its bounding box are never computed.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from bgsub.pipeline import stages

__all__ = ["Region", "check_model_scale", "load_roi"]


def check_model_scale(algo: str, scale: float) -> None:
    """ValueError where ``algo`` scales its frames itself (``process_scale``) but not to ``scale``, checked before
    any work starts (:class:`bgsub.pipeline.Pipeline` hands the scale to such a model)."""
    from bgsub.registry import param_specs, validate_params

    if scale != 1.0 and any(p.name == "process_scale" for p in param_specs(algo)):
        try:
            validate_params(algo, {"process_scale": scale})
        except ValueError as e:
            raise ValueError(f"--scale {scale:g} does not suit {algo}: {e}") from None


def load_roi(path: str | os.PathLike) -> np.ndarray:
    """Read a region-of-interest image: non-zero pixels are inside.

    Raises
    ------
    ValueError
        When the file is missing, not an image, or has no pixel inside.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--roi {p}: no such file")
    data = np.fromfile(str(p), np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE) if data.size else None
    if img is None:
        raise ValueError(f"--roi {p}: not a readable image (give a PNG or BMP mask, white = inside)")
    roi = img > 0
    if not roi.any():
        raise ValueError(f"--roi {p}: the mask is all black, so nothing would be processed")
    return roi


class Region:
    """Where and at what resolution the subtractor works.

    Parameters
    ----------
    roi : ndarray of bool, shape (H, W), optional
        Inside pixels; the frames must have this size. None: the whole frame.
    scale : float
        Processing resolution relative to the input, in (0, 1], for any subtractor (OpenCV's too); masks come
        back at the input's size (nearest neighbour), score maps bilinearly. The resize is the one of the
        models' own ``process_scale`` (:mod:`bgsub.pipeline.stages`, bilinear); a
        :class:`bgsub.pipeline.Pipeline` hands the scale to a model that has ``process_scale`` instead
        (:meth:`cropping`), so a frame is never resized twice.

    Attributes
    ----------
    box : tuple of int or None
        ``(y0, y1, x0, x1)``, the bounding box of the ROI once bound to a frame size.
    work_size : tuple of int or None
        ``(width, height)`` of the frames the subtractor sees.
    """

    def __init__(self, roi: np.ndarray | None = None, scale: float = 1.0) -> None:
        scale = float(scale)
        if not (0.0 < scale <= 1.0):
            raise ValueError(f"--scale must be in (0, 1], got {scale:g}")
        if roi is not None:
            roi = np.asarray(roi, dtype=bool)
            if roi.ndim != 2 or not roi.any():
                raise ValueError("the ROI must be a 2-D mask with at least one pixel inside")
        self.roi = roi
        self.scale = scale
        self.box: tuple[int, int, int, int] | None = None
        self.work_size: tuple[int, int] | None = None
        self._shape: tuple[int, int] | None = None
        self._roi_box: np.ndarray | None = None

    def cropping(self) -> "Region":
        """The same region of interest at full resolution (the scale left to the subtractor)."""
        return Region(self.roi, 1.0)

    @property
    def identity(self) -> bool:
        """True when frames go to the subtractor unchanged."""
        return self.roi is None and self.scale == 1.0

    def _bind(self, shape: tuple[int, int]) -> None:
        H, W = shape
        if self.roi is not None:
            if self.roi.shape != (H, W):
                raise ValueError(f"the ROI mask is {self.roi.shape[1]}x{self.roi.shape[0]} but the frames are "
                                 f"{W}x{H}; give a mask of the frame size")
            ys, xs = np.nonzero(self.roi)
            self.box = (int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1)
        else:
            self.box = (0, H, 0, W)
        y0, y1, x0, x1 = self.box
        self._roi_box = None if self.roi is None else self.roi[y0:y1, x0:x1]
        self.work_size = (max(1, round((x1 - x0) * self.scale)), max(1, round((y1 - y0) * self.scale)))
        self._shape = (H, W)

    def prepare(self, image: np.ndarray) -> np.ndarray:
        """The part of ``image`` the subtractor sees."""
        if self.identity:
            return image
        shape = image.shape[:2]
        if shape != self._shape:
            if self._shape is not None:
                raise ValueError(f"the frame size changed from {self._shape[1]}x{self._shape[0]} to "
                                 f"{shape[1]}x{shape[0]}")
            self._bind(shape)
        y0, y1, x0, x1 = self.box
        crop = image[y0:y1, x0:x1]
        if self.scale != 1.0:  # the resize of the models' process_scale (bgsub.pipeline.stages)
            crop = cv2.resize(crop, self.work_size, interpolation=stages.DOWNSCALE)
        return np.ascontiguousarray(crop)

    def _paste(self, part: np.ndarray, fill, interpolation: int) -> np.ndarray:
        y0, y1, x0, x1 = self.box
        part = stages.full_size(part, (y1 - y0, x1 - x0), interpolation, copy=False)
        out = np.full(self._shape, fill, dtype=part.dtype)
        out[y0:y1, x0:x1] = part
        if self._roi_box is not None:
            out[y0:y1, x0:x1][~self._roi_box] = fill
        return out

    def restore_mask(self, mask: np.ndarray) -> np.ndarray:
        """The subtractor's mask at the input's size; 0 outside the ROI."""
        if self.identity:
            return mask
        return self._paste(mask, 0, cv2.INTER_NEAREST)

    def restore_score(self, score: np.ndarray, low: float) -> np.ndarray:
        """The score map at the input's size; ``low`` (surely background) outside the ROI."""
        if self.identity:
            return score
        return self._paste(score.astype(np.float32, copy=False), np.float32(low), cv2.INTER_LINEAR)
