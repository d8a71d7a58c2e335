"""A live preview sink: a minimal Qt window with the frame and its mask side by side."""

from __future__ import annotations

import os
import sys

import numpy as np

from bgsub.pipeline.sinks import Sink, draw_overlay

__all__ = ["Preview", "display_available"]


def display_available() -> bool:
    """True when a window can be shown (a display, or Qt told where to draw)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") or sys.platform in ("win32", "darwin"))


class Preview(Sink):
    """Shows each frame (objects boxed) beside its mask; closing the window stops the run.

    Raises
    ------
    ValueError
        Without PySide6 or without a display, saying what to do.
    """

    needs_objects = True

    def __init__(self, title: str) -> None:
        try:
            from PySide6 import QtCore, QtGui, QtWidgets
        except ImportError:
            raise ValueError(
                "--show needs the desktop extra: pip install -e '.[gui]' (PySide6); "
                "or leave out --show and look at the written masks"
            ) from None
        if not display_available():
            raise ValueError("--show needs a display (no $DISPLAY or $WAYLAND_DISPLAY is set)")
        self._QtGui = QtGui
        self.app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
        self.label = QtWidgets.QLabel()
        self.label.setWindowTitle(f"bgsub - {title}  (close the window to stop)")
        self.label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.closed = False
        preview = self

        class _Filter(QtCore.QObject):
            def eventFilter(self, obj, event):  # noqa: N802 - Qt name
                if event.type() == QtCore.QEvent.Type.Close:
                    preview.closed = True
                return False

        self._filter = _Filter()
        self.label.installEventFilter(self._filter)
        self.label.show()
        self.shown = 0

    def write(self, out) -> bool:
        if self.closed:
            return False
        import cv2

        side = np.hstack([draw_overlay(out.image, out.mask, out.objects), cv2.cvtColor(out.mask, cv2.COLOR_GRAY2BGR)])
        rgb = np.ascontiguousarray(side[:, :, ::-1])
        h, w = rgb.shape[:2]
        img = self._QtGui.QImage(rgb.data, w, h, 3 * w, self._QtGui.QImage.Format.Format_RGB888).copy()
        self.label.setPixmap(self._QtGui.QPixmap.fromImage(img))
        self.app.processEvents()
        self.shown += 1
        return not self.closed

    def close(self, ok: bool = True) -> None:
        self.label.close()
        self.app.processEvents()
