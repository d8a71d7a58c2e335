"""Headless runs: play a number of frames, save a picture of the window, quit.

Used by ``bgsub-gui SOURCE --frames N --screenshot FILE.png`` for documentation
and checks, with ``QT_QPA_PLATFORM=offscreen``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Slot, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QWidget

from .worker import PlayState

__all__ = ["ScreenshotRun", "save_png", "quiet_offscreen_warnings"]

#: Harmless messages of Qt's offscreen platform, dropped in headless runs.
_OFFSCREEN_NOISE = ("This plugin does not support propagateSizeHints()",)

#: Time given to the last result and the layout to reach the window before grabbing.
SETTLE_MS = 300


def quiet_offscreen_warnings() -> None:
    """Drop the offscreen platform's harmless warnings; pass every other Qt message on."""

    def handler(_mode, _context, message: str) -> None:
        if message not in _OFFSCREEN_NOISE:
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def _default_file_mode() -> int:
    """Permissions of a new file under the current umask (mkstemp makes it 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def save_png(widget: QWidget, path: str | os.PathLike) -> Path:
    """Grab ``widget`` into ``path`` as PNG (a temporary file, then a rename)."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    pixmap = widget.grab()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        if not pixmap.save(tmp, "PNG"):
            raise OSError(f"cannot write the screenshot {path}")
        os.chmod(tmp, _default_file_mode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


class ScreenshotRun(QObject):
    """Wait for the frame limit (or the end, or an error), grab the window, quit.

    Lives in the GUI thread: the worker's signals reach its slots queued.

    Parameters
    ----------
    app : QApplication
    window : bgsub_gui.main_window.MainWindow
        Its worker must have a frame limit set.
    path : path
        Where the PNG goes.
    timeout_s : float
        Give up (exit status 1) after this many seconds.

    Attributes
    ----------
    exit_code : int
        0 when the picture was written after the frames played; 1 when the source
        failed, the time ran out or the picture could not be written.
    """

    def __init__(self, app: QApplication, window, path: str | os.PathLike, timeout_s: float) -> None:
        super().__init__(window)
        self.app = app
        self.window = window
        self.path = Path(path)
        self.exit_code = 0
        self._done = False
        worker = window.controller.worker
        worker.frameLimitReached.connect(self._on_limit)
        worker.stateChanged.connect(self._on_state)
        worker.error.connect(self._on_error)
        self._timeout = QTimer(self)
        self._timeout.setSingleShot(True)
        self._timeout.timeout.connect(self._on_timeout)
        self._timeout.start(int(timeout_s * 1000))
        self._timeout_s = timeout_s

    def finish(self, code: int) -> None:
        """Grab the window shortly (once) and quit with ``code``."""
        if self._done:
            return
        self._done = True
        self.exit_code = code
        self._timeout.stop()
        QTimer.singleShot(SETTLE_MS, self._take)

    @Slot(int)
    def _on_limit(self, _frames: int) -> None:
        self.finish(0)

    @Slot(str)
    def _on_state(self, state: str) -> None:
        if state == PlayState.ENDED:
            self.finish(0)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        print(f"bgsub-gui: {message}", file=sys.stderr)
        if self.window.state in (PlayState.FAILED, PlayState.IDLE):
            self.finish(1)

    @Slot()
    def _on_timeout(self) -> None:
        print(f"bgsub-gui: gave up after {self._timeout_s:g} s", file=sys.stderr)
        self.finish(1)

    @Slot()
    def _take(self) -> None:
        window = self.window
        window.refresh()
        self.app.processEvents()
        try:
            save_png(window, self.path)
            name = window.source_info.name if window.source_info else "the window"
            frames = window.last_result.processed if window.last_result else 0
            print(f"screenshot of {name} after {frames} frames: {self.path}")
        except OSError as exc:
            print(f"bgsub-gui: {exc}", file=sys.stderr)
            self.exit_code = 1
        window.close()
        self.app.quit()
