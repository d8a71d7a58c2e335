"""The window's three views show the same pixels, its score scale is the stated score range, and no label of the
control panel is cut: checked on pictures of the real window, offscreen."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QLabel

from bgsub import registry
from bgsub_gui.model import FrameResult
from bgsub_gui.views import SCORE_COLORMAP, range_ticks

H, W, EDGE = 48, 64, 4
#: Marks at the frame's edges, RGB as shown (the frame itself is BGR).
MARKS = {"left": (230, 20, 20), "right": (20, 200, 20), "top": (20, 20, 230), "bottom": (230, 230, 20)}
INSIDE = (128, 128, 128)


def _marked_result(score_range) -> FrameResult:
    """A frame with a coloured band on each edge; the mask and the score map foreground on the bands only."""
    rgb = np.empty((H, W, 3), np.uint8)
    rgb[:] = INSIDE
    rgb[:, :EDGE] = MARKS["left"]
    rgb[:, -EDGE:] = MARKS["right"]
    rgb[:EDGE, EDGE:-EDGE] = MARKS["top"]
    rgb[-EDGE:, EDGE:-EDGE] = MARKS["bottom"]
    mask = np.zeros((H, W), np.uint8)
    mask[:, :EDGE] = mask[:, -EDGE:] = mask[:EDGE] = mask[-EDGE:] = 255
    lo, hi = score_range
    score = np.where(mask > 0, hi, lo).astype(np.float32)
    return FrameResult(index=1, processed=1, image=np.ascontiguousarray(rgb[..., ::-1]), mask=mask, score=score,
                       score_range=score_range, threshold=0.0, foreground_fraction=float((mask > 0).mean()), fps=0.0,
                       dropped=0, decode_errors=0, scored=False, counts=None, metrics=None, scored_frames=0,
                       roc=None)


def _score_range(algo: str) -> tuple[float, float]:
    return tuple(getattr(registry.create(algo), "score_range", (-1.0, 1.0)))


def _mark_points() -> dict[str, QPointF]:
    """The middle of each edge band, in image coordinates (x right, y down)."""
    c = EDGE / 2
    return {"left": QPointF(c, H / 2), "right": QPointF(W - c, H / 2),
            "top": QPointF(W / 2, c), "bottom": QPointF(W / 2, H - c)}


def _close(rgb, expected, tol=45) -> bool:
    return all(abs(int(a) - int(b)) <= tol for a, b in zip(rgb, expected))


@pytest.mark.parametrize("size", [(1100, 700), (1400, 880), (820, 640)])
def test_the_three_views_show_the_same_pixels_up_to_the_edges(make_window, qtbot, size):
    """A frame with marks on its four edges, through the real window: every mark is inside each view's
    rectangle and shows its colour in a picture of the window (input: the mark's colour; mask: white; score
    map: the colour map's foreground end), and the three views are equally wide."""
    window = make_window("knn")
    window.resize(*size)
    result = _marked_result(_score_range("knn"))
    views = window.views
    views.show_result(result)
    qtbot.wait(50)
    picture = views.canvas.grab().toImage()
    cmap = pg.colormap.get(SCORE_COLORMAP)
    fg_end = tuple(int(v) for v in cmap.map(1.0, mode="byte")[:3])
    bg_end = tuple(int(v) for v in cmap.map(0.0, mode="byte")[:3])
    boxes = {"input": views.frame_box, "mask": views.mask_box, "score": views.score_box}
    widths = {name: box.sceneBoundingRect().width() for name, box in boxes.items()}
    assert max(widths.values()) - min(widths.values()) < 1.0, widths
    expected = {"input": MARKS, "mask": dict.fromkeys(MARKS, (255, 255, 255)), "score": dict.fromkeys(MARKS, fg_end)}
    inside = {"input": INSIDE, "mask": (0, 0, 0), "score": bg_end}
    for name, box in boxes.items():
        rect = box.sceneBoundingRect()
        for edge, point in _mark_points().items():
            scene = box.mapViewToScene(point)
            assert rect.contains(scene), f"{name} view: the {edge} mark is outside the view ({size})"
            at = views.canvas.mapFromScene(scene)
            rgb = picture.pixelColor(at.x(), at.y()).getRgb()[:3]
            assert _close(rgb, expected[name][edge]), f"{name} view, {edge} mark: {rgb} ({size})"
        at = views.canvas.mapFromScene(box.mapViewToScene(QPointF(W / 2, H / 2)))
        rgb = picture.pixelColor(at.x(), at.y()).getRgb()[:3]
        assert _close(rgb, inside[name]), f"{name} view, the middle: {rgb}"


@pytest.mark.parametrize("algo", ["knn", "olkn"])
def test_the_score_scale_is_the_stated_score_range(make_window, qtbot, algo):
    """The colour bar's scale runs over exactly the range the controls state ("scores lie in [lo, hi]"),
    its ends labelled, before and after a frame."""
    window = make_window(algo)
    lo, hi = _score_range(algo)
    histogram = window.views.histogram

    def check():
        assert histogram.vb.viewRange()[1] == pytest.approx([lo, hi])
        labels = [text for _, text in histogram.axis._tickLevels[0]]
        assert f"{lo:g}" in labels and f"{hi:g}" in labels
        assert window.controls.threshold_range.text() == f"scores lie in [{lo:g}, {hi:g}]"

    check()
    window.views.show_result(_marked_result((lo, hi)))
    qtbot.wait(20)
    check()


def test_range_ticks():
    assert range_ticks(-9.0, 9.0) == [-9.0, -4.5, 0.0, 4.5, 9.0]
    assert range_ticks(0.0, 1.0) == [0.0, 0.5, 1.0]


def _cut_labels(controls) -> list:
    """The visible labels of ``controls`` shorter (or, unwrapped, narrower) than their text needs."""
    cut = []
    for label in controls.findChildren(QLabel):
        if not label.isVisible() or not label.text():
            continue
        need_h = label.heightForWidth(label.width()) if label.wordWrap() else label.sizeHint().height()
        need_w = 0 if label.wordWrap() else label.sizeHint().width()
        if need_h > label.height() + 1 or need_w > label.width() + 1:
            cut.append((label.text()[:40], label.size().toTuple(), (need_w, need_h)))
    return cut


@pytest.mark.parametrize("size", [(1400, 880), (820, 640)])
def test_no_label_of_the_controls_is_cut(make_window, qtbot, size):
    """For every algorithm's parameter form, once laid out: each visible label gets the height (and, unwrapped,
    the width) its text needs."""
    window = make_window("knn")
    window.resize(*size)
    for algo in registry.algorithms():
        window.controls.show_algorithm(algo)
        try:
            qtbot.waitUntil(lambda: not _cut_labels(window.controls), timeout=10_000)
        except qtbot.TimeoutError:
            pass
        assert not _cut_labels(window.controls), f"{algo} at {size}: {_cut_labels(window.controls)}"


def test_the_app_does_not_import_the_command_line():
    """The app imports the library's public modules, never the ``bgsub`` command modules."""
    code = ("import sys, bgsub_gui.app, bgsub_gui.main_window, bgsub_gui.model\n"
            "bad = sorted(m for m in sys.modules if m.startswith('bgsub.commands'))\n"
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
