"""The image views: input frame, foreground mask and score map, side by side.

The three views share one zoom and pan (their view boxes are linked), so a
pixel sits at the same place in each. The score map has a diverging colour map
centred on 0 (the subtractor's decision) and a level control (a histogram with
draggable levels): the levels follow the scores (symmetric, 99th percentile of
``|score|``) until the user moves them. The input view can show the objects
(bounding boxes with their track ids) that the pipeline found. All images are
row-major ``(H, W[, 3])`` arrays, as OpenCV gives them.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem, QVBoxLayout, QWidget

from .model import FrameResult

__all__ = ["FrameViews", "overlay_mask", "range_ticks", "symmetric_levels", "SCORE_COLORMAP"]

#: Diverging colour map: blue background, white at the threshold, red foreground.
SCORE_COLORMAP = "CET-D1"
#: Colour of the mask drawn over the frame (RGB) and its opacity.
OVERLAY_RGB = (255, 40, 40)
OVERLAY_ALPHA = 0.5
#: Colour of the objects' boxes and track ids (RGB).
BOX_RGB = (40, 230, 60)
#: At most this many track ids are written (the largest objects'); every box is drawn.
MAX_LABELS = 40


def overlay_mask(rgb: np.ndarray, mask: np.ndarray, color=OVERLAY_RGB, alpha: float = OVERLAY_ALPHA) -> np.ndarray:
    """``rgb`` with the foreground of ``mask`` tinted by ``color``.

    Parameters
    ----------
    rgb : ndarray of uint8, shape (H, W, 3)
    mask : ndarray of uint8, shape (H, W)
        Foreground where 255.

    Returns
    -------
    ndarray of uint8, shape (H, W, 3)
        A new image; ``rgb`` is unchanged.
    """
    out = rgb.copy()
    fg = mask > 0
    if fg.any():
        tint = np.asarray(color, dtype=np.float32)
        out[fg] = (rgb[fg].astype(np.float32) * (1.0 - alpha) + tint * alpha).astype(np.uint8)
    return out


def symmetric_levels(score: np.ndarray, score_range: tuple[float, float],
                     quantile: float = 99.0) -> tuple[float, float]:
    """Levels ``(-q, q)`` with ``q`` the ``quantile`` percentile of ``|score|``.

    Symmetric levels keep 0, the decision threshold, at the centre (white) of the
    diverging colour map. ``q`` is clipped into the score range, and is never 0.
    """
    lo, hi = score_range
    step = max(1, int(np.sqrt(score.size / 65536.0)))  # about 64k pixels are enough
    sample = score[::step, ::step] if score.ndim == 2 else score
    finite = np.abs(sample[np.isfinite(sample)])
    q = float(np.percentile(finite, quantile)) if finite.size else 0.0
    limit = max(abs(lo), abs(hi))
    q = min(max(q, 1e-3 * limit, 1e-6), limit)
    return -q, q


def range_ticks(lo: float, hi: float) -> list[float]:
    """Tick values of the score scale ``[lo, hi]``: both ends, the middle, and 0 and the half-ends when 0 lies
    inside."""
    values = {lo, hi, (lo + hi) / 2.0}
    if lo < 0.0 < hi:
        values |= {0.0, lo / 2.0, hi / 2.0}
    return sorted(values)


class _Title(pg.LabelItem):
    """A view's title that asks for no minimum width (a plain LabelItem asks for its text's width)."""

    def text_width(self) -> float:
        return float(self.itemRect().width())

    def sizeHint(self, hint, constraint):
        size = super().sizeHint(hint, constraint)
        if hint == Qt.SizeHint.MinimumSize:
            size.setWidth(0.0)
        return size

    def updateMin(self) -> None:
        super().updateMin()
        self.setMinimumWidth(0.0)


class FrameViews(QWidget):
    """Input frame (optionally with the mask over it), mask and score map.

    Signals
    -------
    levelsChanged(float, float)
        The score map's levels moved.
    autoLevelsChanged(bool)
        The levels stopped (False) or started (True) following the scores.
    """

    levelsChanged = Signal(float, float)
    autoLevelsChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._overlay = False
        self._last: FrameResult | None = None
        self._levels_range: tuple[float, float] | None = None
        self._auto_levels = True
        self._setting_levels = False
        self._boxes_shown = 0

        self.canvas = pg.GraphicsLayoutWidget()
        self.canvas.setBackground("w")
        self._titles: list[pg.LabelItem] = []
        self.frame_box = self._add_view("Input frame", 0)
        self.mask_box = self._add_view("Foreground mask", 1)
        self.score_box = self._add_view("Score map (positive = foreground)", 2)
        self._equal_columns()
        for box in (self.mask_box, self.score_box):
            box.setXLink(self.frame_box)
            box.setYLink(self.frame_box)

        self.frame_item = pg.ImageItem(axisOrder="row-major")
        self.mask_item = pg.ImageItem(axisOrder="row-major")
        self.score_item = pg.ImageItem(axisOrder="row-major")
        self.frame_box.addItem(self.frame_item)
        self._show_objects = False
        self.boxes_item = QGraphicsPathItem()
        pen = pg.mkPen(BOX_RGB, width=2)
        pen.setCosmetic(True)  # the same width at any zoom
        self.boxes_item.setPen(pen)
        self.boxes_item.setZValue(10)
        self.frame_box.addItem(self.boxes_item)
        self._labels: list[pg.TextItem] = []
        self.mask_box.addItem(self.mask_item)
        self.score_box.addItem(self.score_item)

        self.histogram = pg.HistogramLUTItem(image=self.score_item, orientation="vertical")
        self.histogram.gradient.setColorMap(pg.colormap.get(SCORE_COLORMAP))
        self.histogram.sigLevelsChanged.connect(self._on_levels)
        self.histogram.sigLevelChangeFinished.connect(self._on_user_levels)
        self.canvas.addItem(self.histogram, row=1, col=3)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.canvas)

    def _add_view(self, title: str, col: int) -> pg.ViewBox:
        label = _Title(title, color="k")
        self.canvas.addItem(label, row=0, col=col)
        self._titles.append(label)
        box = self.canvas.addViewBox(row=1, col=col, lockAspect=True, invertY=True, enableMenu=False)
        box.setBackgroundColor((235, 235, 235))
        return box

    def _equal_columns(self) -> None:
        """Make the three views' columns equally wide.

        The views share one zoom and pan (linked), so a narrower view shows fewer of the same pixels: its sides
        are cropped. The layout sizes a column from its title's width, so every column gets the widest title's
        preferred width and the same stretch (and no minimum: a narrow window clips the titles, not the views).
        """
        layout = self.canvas.ci.layout
        widest = max(t.text_width() for t in self._titles)
        for col in range(len(self._titles)):
            layout.setColumnPreferredWidth(col, widest)
            layout.setColumnStretchFactor(col, 1)

    # ------------------------------------------------------------------

    @property
    def overlay(self) -> bool:
        """Whether the mask is drawn over the input frame."""
        return self._overlay

    def set_overlay(self, enabled: bool) -> None:
        self._overlay = bool(enabled)
        if self._last is not None:
            self._draw_frame(self._last)

    @property
    def show_objects(self) -> bool:
        """Whether the objects' boxes and track ids are drawn over the input frame."""
        return self._show_objects

    def set_show_objects(self, enabled: bool) -> None:
        self._show_objects = bool(enabled)
        self._draw_objects(self._last)

    @property
    def boxes_shown(self) -> int:
        """Boxes drawn now."""
        return self._boxes_shown if self._show_objects else 0

    def labels_shown(self) -> list[str]:
        """The track ids written now, largest object first."""
        return [t.textItem.toPlainText() for t in self._labels if t.isVisible()]

    def _draw_objects(self, result: FrameResult | None) -> None:
        objects = result.objects if (result is not None and self._show_objects) else None
        path = QPainterPath()
        for o in objects or ():
            path.addRect(QRectF(o.x, o.y, o.width, o.height))
        self.boxes_item.setPath(path)
        self._boxes_shown = len(objects or ())
        labelled = [o for o in (objects or ()) if o.track][:MAX_LABELS]
        while len(self._labels) < len(labelled):
            label = pg.TextItem("", color=BOX_RGB, anchor=(0, 1), fill=pg.mkBrush(0, 0, 0, 150))
            font = label.textItem.font()
            font.setBold(True)
            label.setFont(font)
            label.setZValue(11)
            self.frame_box.addItem(label)
            self._labels.append(label)
        for i, label in enumerate(self._labels):
            if i < len(labelled):
                o = labelled[i]
                label.setText(str(o.track))
                label.setPos(o.x, o.y)
                label.show()
            else:
                label.hide()

    def clear(self) -> None:
        """Forget the images (a new source or a new model); levels follow the scores again."""
        self._last = None
        self._levels_range = None
        if not self._auto_levels:
            self._auto_levels = True
            self.autoLevelsChanged.emit(True)
        for item in (self.frame_item, self.mask_item, self.score_item):
            item.clear()
        self._draw_objects(None)

    def show_result(self, result: FrameResult) -> None:
        """Draw one processed frame in the three views."""
        first = self._last is None or self._last.image.shape != result.image.shape
        self._last = result
        self._draw_frame(result)
        self.mask_item.setImage(result.mask, autoLevels=False, levels=(0, 255))
        if result.score is not None:
            self.score_item.setImage(result.score, autoLevels=False)
            if self._levels_range != result.score_range:
                self._levels_range = result.score_range
                self._set_levels(*result.score_range, histogram=True)
            if self._auto_levels:
                self._set_levels(*symmetric_levels(result.score, result.score_range))
        else:
            self.score_item.clear()
        if first:
            h, w = result.image.shape[:2]
            self.frame_box.setRange(xRange=(0, w), yRange=(0, h), padding=0)

    def _draw_frame(self, result: FrameResult) -> None:
        rgb = result.image[..., ::-1]
        if self._overlay:
            rgb = overlay_mask(rgb, result.mask)
        self.frame_item.setImage(np.ascontiguousarray(rgb), autoLevels=False, levels=(0, 255))
        self._draw_objects(result)

    def set_score_range(self, lo: float, hi: float) -> None:
        """Show the histogram over ``[lo, hi]`` before any score map arrives."""
        if self._last is None:
            self._set_levels(lo, hi, histogram=True)

    @property
    def auto_levels(self) -> bool:
        """True while the score levels follow the scores (until the user moves them)."""
        return self._auto_levels

    def set_auto_levels(self, enabled: bool) -> None:
        if bool(enabled) != self._auto_levels:
            self._auto_levels = bool(enabled)
            self.autoLevelsChanged.emit(self._auto_levels)
        if enabled and self._last is not None and self._last.score is not None:
            self._set_levels(*symmetric_levels(self._last.score, self._last.score_range))

    def _set_levels(self, lo: float, hi: float, histogram: bool = False) -> None:
        self._setting_levels = True
        try:
            if histogram:
                # exactly the score range (no padding), its ends labelled: the colour bar's scale is the
                # range the window states ("scores lie in [lo, hi]")
                self.histogram.setHistogramRange(lo, hi, padding=0.0)
                self.histogram.axis.setTicks([[(v, f"{v:g}") for v in range_ticks(lo, hi)], []])
            self.histogram.setLevels(lo, hi)
        finally:
            self._setting_levels = False

    def _on_user_levels(self, *_args) -> None:
        if not self._setting_levels and self._auto_levels:
            self._auto_levels = False
            self.autoLevelsChanged.emit(False)

    def _on_levels(self, *_args) -> None:
        lo, hi = self.histogram.getLevels()
        self.levelsChanged.emit(float(lo), float(hi))
