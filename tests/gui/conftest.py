"""Fixtures of the GUI tests: offscreen Qt, a tiny CDnet-layout sequence, a window."""

from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from pathlib import Path

# Before anything imports Qt: no display here, and none needed.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bgsub_gui.qt_check import none_refcount_leak  # noqa: E402

# A binding that loses references to None aborts the whole pytest process after a
# few thousand Qt calls (every other test's result lost): then collect only
# test_qt_check.py, which fails saying what to install.
if none_refcount_leak() > 0:
    collect_ignore = sorted(
        p.name for p in Path(__file__).parent.glob("test_*.py") if p.name != "test_qt_check.py"
    )


def make_cdnet_sequence(root: Path, n_frames: int = 24, width: int = 64, height: int = 48,
                        first_scored: int = 4) -> Path:
    """Write a CDnet-layout sequence: a textured static background, a bright square
    moving right, its ground truth, ``temporalROI.txt``. Returns ``root``."""
    (root / "input").mkdir(parents=True, exist_ok=True)
    (root / "groundtruth").mkdir(exist_ok=True)
    rng = np.random.default_rng(7)
    background = rng.integers(40, 200, (height, width, 3), dtype=np.uint8)
    for n in range(1, n_frames + 1):
        noise = rng.integers(-3, 4, background.shape)
        image = np.clip(background.astype(np.int16) + noise, 0, 255).astype(np.uint8)
        gt = np.zeros((height, width), np.uint8)
        x = (3 * n) % (width - 10)
        image[18:28, x:x + 10] = (250, 250, 20)
        gt[18:28, x:x + 10] = 255
        cv2.imwrite(str(root / "input" / f"in{n:06d}.png"), image)
        cv2.imwrite(str(root / "groundtruth" / f"gt{n:06d}.png"), gt)
    (root / "temporalROI.txt").write_text(f"{first_scored} {n_frames}\n")
    return root


@pytest.fixture(scope="module", autouse=True)
def _collect_in_gui_thread(qapp):
    """Cycles are collected only in this (the GUI) thread while a GUI test module runs, and once more
    after it (once per module: a full collection takes about half a second here).

    Otherwise a worker or reader thread may collect an earlier test's closed window,
    leaving its timers to fire on freed memory (see :mod:`bgsub_gui.gc_thread`).
    """
    from bgsub_gui.gc_thread import collect_in_gui_thread

    with collect_in_gui_thread():
        yield


@pytest.fixture(scope="session")
def tiny_sequence(tmp_path_factory) -> Path:
    """A 24-frame 64x48 CDnet-layout sequence with ground truth (frames 4-24 scored)."""
    return make_cdnet_sequence(tmp_path_factory.mktemp("gui") / "tiny")


@pytest.fixture
def settings(tmp_path):
    """QSettings in a file of the test's own, so no test touches the user's."""
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "bgsub-gui.ini"), QSettings.Format.IniFormat)


@contextmanager
def heard_signal(qtbot, signal, timeout: int = 30000):
    """``with heard_signal(qtbot, signal) as heard: ...`` waits after the block until ``signal`` was emitted
    (``timeout`` milliseconds at most, else it fails) and gives its arguments as ``heard.args``.

    For the worker thread's signals, instead of ``qtbot.waitSignal``: pytest-qt's blocker is not a QObject, so
    it hears a signal in the thread that emits it, and a worker that emits between the blocker's last check and
    its event loop's start quits the loop before it runs; the loop then waits forever (it hung a test run).
    Here a QObject of the GUI thread records the emission, queued, and ``qtbot.waitUntil`` polls for it.
    """
    from PySide6.QtCore import QObject

    class Heard(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.args: list | None = None

        def record(self, *args) -> None:
            if self.args is None:
                self.args = list(args)

    heard = Heard()
    signal.connect(heard.record)
    try:
        yield heard
        qtbot.waitUntil(lambda: heard.args is not None, timeout=timeout)
    finally:
        signal.disconnect(heard.record)


@pytest.fixture
def hear(qtbot):
    """:func:`heard_signal` with the test's ``qtbot``: ``with hear(worker.error) as heard: ...``."""
    return functools.partial(heard_signal, qtbot)


@pytest.fixture
def make_window(qtbot, settings):
    """Build a MainWindow on a fresh Session; closed (worker stopped) after the test."""
    from bgsub_gui.main_window import MainWindow
    from bgsub_gui.model import Session

    windows = []

    def build(algo: str = "knn", **kwargs):
        window = MainWindow(Session(algo=algo), settings=settings, **kwargs)
        qtbot.addWidget(window)
        window.resize(1100, 700)
        window.show()
        windows.append(window)
        return window

    yield build
    for window in windows:
        window.close()
        window.shutdown()
