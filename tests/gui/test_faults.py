"""The window under faults: a source whose read never returns, and saving / loading the model."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import bgsub
from bgsub.sources import Frame, FrameSource
from bgsub_gui.worker import PlayState

TIMEOUT_MS = 30000


class HangingSource(FrameSource):
    """Delivers two frames, then its read blocks until the test lets it go (a hung device or share)."""

    kind = "video"

    def __init__(self, live: bool, release: threading.Event, reading: threading.Event) -> None:
        super().__init__("hang")
        self.is_live = live
        self.fps = 25.0
        self.size = (32, 24)
        self._release = release
        self._reading = reading

    def _frames(self):
        for i in (1, 2):
            yield Frame(i, np.full((24, 32, 3), 80, np.uint8))
        self._reading.set()
        self._release.wait()  # never set while the window closes


@pytest.mark.parametrize("live", [False, True])
def test_closing_returns_within_3_s_while_a_read_blocks_forever(qtbot, settings, live):
    from bgsub_gui.main_window import MainWindow
    from bgsub_gui.model import Session

    release, reading = threading.Event(), threading.Event()
    session = Session(algo="knn", source_opener=lambda spec: HangingSource(live, release, reading))
    window = MainWindow(session, settings=settings)
    qtbot.addWidget(window)
    window.show()
    window.open_source("hang")
    qtbot.waitUntil(lambda: window.source_info is not None, timeout=TIMEOUT_MS)
    window.play()
    assert reading.wait(10)
    qtbot.wait(100)
    thread = window.controller.thread
    try:
        t0 = time.perf_counter()
        window.close()
        assert time.perf_counter() - t0 < 3.0
    finally:
        release.set()  # let the blocked read end, so the thread finishes
        if not thread.wait(10000):
            pytest.fail("the worker thread did not end after the read returned")


def test_save_and_load_model_from_the_window(qtbot, make_window, tiny_sequence, tmp_path, hear):
    from tests.gui.test_main_window import open_and_wait, play_frames

    window = make_window("olkn")
    open_and_wait(qtbot, window, tiny_sequence)
    play_frames(qtbot, window, 5)
    path = tmp_path / "model.npz"
    with hear(window.controller.worker.info, timeout=TIMEOUT_MS):
        window.save_model(path)
    saved = bgsub.load(path)
    assert saved.n_frames_ == 5 and saved.frame_shape_ == (48, 64)
    window.set_algorithm("norma")
    qtbot.waitUntil(lambda: window.algo == "norma", timeout=TIMEOUT_MS)
    with hear(window.controller.worker.modelLoaded, timeout=TIMEOUT_MS):
        window.load_model(path)
    qtbot.waitUntil(lambda: window.algo == "olkn", timeout=TIMEOUT_MS)
    assert window.controls.algo_combo.currentText() == "olkn"
    assert window.params == saved.get_params()


def test_saving_an_opencv_model_says_why_not(qtbot, make_window, tmp_path, hear):
    window = make_window("knn")
    with hear(window.controller.worker.error, timeout=TIMEOUT_MS) as blocker:
        window.save_model(tmp_path / "m.npz")
    assert "cannot be saved" in blocker.args[0] and not (tmp_path / "m.npz").exists()
    with hear(window.controller.worker.error, timeout=TIMEOUT_MS) as blocker:
        window.load_model(tmp_path / "missing.npz")
    assert "does not exist" in blocker.args[0]
    assert window.state in (PlayState.IDLE, PlayState.PAUSED)
