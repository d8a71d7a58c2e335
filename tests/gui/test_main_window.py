"""The window, offscreen: real sources, real subtractors, the real worker thread."""

from __future__ import annotations

import json
import math

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from bgsub import registry
from bgsub.sources import list_cameras
from bgsub_gui.worker import PlayState
from tests.gui.conftest import heard_signal

TIMEOUT_MS = 30000


def open_and_wait(qtbot, window, spec) -> None:
    """Open ``spec`` and wait until the window shows it.

    (Waiting on the worker's own signals is not enough: pytest-qt may hear them
    in the worker thread, before the window's queued slots ran.)
    """
    window.open_source(spec)
    qtbot.waitUntil(lambda: window.source_info is not None and window.source_info.spec == str(spec),
                    timeout=TIMEOUT_MS)


def play_frames(qtbot, window, n: int) -> None:
    """Play until ``n`` frames are processed and the last one is drawn."""
    window.controller.set_frame_limit(n)
    with heard_signal(qtbot, window.controller.worker.frameLimitReached, timeout=TIMEOUT_MS):
        window.play()
    qtbot.waitUntil(lambda: window.last_result is not None and window.last_result.processed == n,
                    timeout=TIMEOUT_MS)


def test_processing_frames_draws_roc_with_auc(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    assert window.source_info.has_groundtruth
    play_frames(qtbot, window, 20)

    result = window.last_result
    assert result.index == 20
    assert result.mask.shape == (48, 64) and result.image.shape == (48, 64, 3)
    assert result.roc is not None and result.scored_frames == 17  # frames 4..20
    fpr, tpr = window.metrics.roc_curve.getData()
    assert fpr is not None and len(fpr) > 2 and len(fpr) == len(tpr)
    auc = float(window.metrics.auc_text())
    assert 0.0 <= auc <= 1.0
    assert math.isclose(auc, result.roc.auc, abs_tol=1e-4)
    # A moving bright square on a static background is easy: the curve is far above chance.
    assert auc > 0.8
    point = window.metrics.roc_point.getData()
    assert len(point[0]) == 1 and 0 <= point[0][0] <= 1 and 0 <= point[1][0] <= 1
    assert window.metrics.labels["F"].text() != "—"
    assert window.metrics.labels["frame"].text().startswith("20 ")
    # The three views show this frame.
    assert window.views.frame_item.image.shape[:2] == (48, 64)
    assert window.views.mask_item.image.shape == (48, 64)
    assert window.views.score_item.image.shape == (48, 64)


def test_parameter_needing_reset_rebuilds_the_subtractor(qtbot, make_window, tiny_sequence, hear):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    play_frames(qtbot, window, 5)
    old = window.controller.session.subtractor
    spin = window.controls.params.widget("history")
    with hear(window.controller.worker.paramChanged, timeout=TIMEOUT_MS) as blocker:
        spin.setValue(40)
    change = blocker.args[0]
    assert change.name == "history" and change.value == 40 and change.live is False
    session = window.controller.session
    assert session.subtractor is not old
    assert session.subtractor.impl.getHistory() == 40
    assert session.processed == 0
    qtbot.waitUntil(lambda: "reset" in window.statusBar().currentMessage(), timeout=TIMEOUT_MS)


def _live_param():
    """(algo, spec) of the first live numeric parameter of any registered algorithm."""
    for algo in registry.algorithms():
        for spec in registry.param_specs(algo):
            if spec.live and spec.type in (int, float):
                return algo, spec
    return None


@pytest.mark.skipif(_live_param() is None, reason="no registered algorithm has a live numeric parameter")
def test_live_parameter_reaches_the_running_subtractor(qtbot, make_window, tiny_sequence, hear):
    algo, spec = _live_param()
    window = make_window(algo)
    open_and_wait(qtbot, window, tiny_sequence)
    play_frames(qtbot, window, 3)
    sub = window.controller.session.subtractor
    lo = spec.low if spec.low is not None else spec.default - 1
    hi = spec.high if spec.high is not None else spec.default + 1
    new = spec.type((spec.default + hi) / 2 if spec.default < hi else (spec.default + lo) / 2)
    assert new != spec.default
    with hear(window.controller.worker.paramChanged, timeout=TIMEOUT_MS) as blocker:
        window.controls.params.widget(spec.name).setValue(new)
    change = blocker.args[0]
    assert change.live is True
    session = window.controller.session
    assert session.subtractor is sub  # not rebuilt: the learned model is kept
    assert session.processed == 3
    get = getattr(sub, "get_params", None)
    seen = get()[spec.name] if callable(get) else getattr(sub, spec.name)
    assert seen == pytest.approx(new)


def test_zero_byte_video_shows_an_error_without_crashing(qtbot, make_window, tmp_path, hear):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"")
    window = make_window("knn")
    with hear(window.controller.worker.error, timeout=TIMEOUT_MS):
        window.open_source(bad)
    qtbot.waitUntil(window.error_banner.isVisible, timeout=TIMEOUT_MS)
    assert "broken.mp4" in window.error_banner.text()
    assert "empty" in window.error_banner.text()
    assert window.state == PlayState.FAILED
    # The window still works: play says there is nothing to play, a good source opens.
    window.play()
    assert window.controller.thread.isRunning()


def test_bad_folder_shows_an_error_then_a_good_source_clears_it(qtbot, make_window, tmp_path, tiny_sequence, hear):
    empty = tmp_path / "nothing here"
    empty.mkdir()
    window = make_window("knn")
    with hear(window.controller.worker.error, timeout=TIMEOUT_MS):
        window.open_source(empty)
    qtbot.waitUntil(window.error_banner.isVisible, timeout=TIMEOUT_MS)
    assert "holds no images" in window.error_banner.text()
    open_and_wait(qtbot, window, tiny_sequence)
    assert not window.error_banner.isVisible()
    play_frames(qtbot, window, 2)


def test_closing_stops_the_worker_thread_while_playing(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    thread = window.controller.thread
    assert thread.isRunning()
    with qtbot.waitSignal(window.resultShown, timeout=TIMEOUT_MS):
        window.play()
    window.close()
    assert not thread.isRunning()
    assert window.controller.session.source is None  # the source was closed too


def test_switching_algorithm_rebuilds_the_parameter_form(qtbot, make_window, tiny_sequence, hear):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    window.controls.threshold_spin.setValue(0.5)
    with hear(window.controller.worker.modelReset, timeout=TIMEOUT_MS):
        window.controls.algo_combo.setCurrentText("mog2")
    assert window.controller.session.algo == "mog2"
    qtbot.waitUntil(lambda: window.controller.session.threshold == 0.0, timeout=TIMEOUT_MS)
    assert window.controls.threshold_spin.value() == 0.0
    assert set(window.controls.params.names()) == {p.name for p in registry.param_specs("mog2")}
    play_frames(qtbot, window, 4)
    assert window.last_result.processed == 4


def test_algorithm_list_comes_from_the_registry(make_window):
    window = make_window("knn")
    combo = window.controls.algo_combo
    assert [combo.itemText(i) for i in range(combo.count())] == list(registry.algorithms())


def test_threshold_moves_the_operating_point(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    play_frames(qtbot, window, 10)
    before = window.last_result.roc.operating_point
    window.controls.threshold_spin.setValue(1.0)  # knn scores are -1, 0, 1: nothing is above 1
    window.controller.set_frame_limit(12)
    window.controller.step()
    qtbot.waitUntil(lambda: window.last_result.processed == 11, timeout=TIMEOUT_MS)
    result = window.last_result
    assert result.threshold == pytest.approx(1.0)
    assert result.roc.operating_point == (0.0, 0.0)
    assert result.roc.operating_point != before
    assert result.foreground_fraction == 0.0
    assert result.scored_frames == 1  # F counts start again at a new threshold


def test_saving_masks_writes_cdnet_named_pngs(qtbot, make_window, tiny_sequence, tmp_path):
    window = make_window("knn")
    out = tmp_path / "masks"
    open_and_wait(qtbot, window, tiny_sequence)
    window.set_save_folder(out)
    play_frames(qtbot, window, 6)
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"bin{n:06d}.png" for n in range(1, 7)]
    import cv2

    mask = cv2.imread(str(out / "bin000006.png"), cv2.IMREAD_GRAYSCALE)
    assert mask.shape == (48, 64) and set(mask.ravel()) <= {0, 255}


def test_recent_sources_and_drag_and_drop(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tiny_sequence))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    qtbot.waitUntil(lambda: window.source_info is not None, timeout=TIMEOUT_MS)
    assert window.source_info.spec == str(tiny_sequence)
    assert window.recent.items()[0] == str(tiny_sequence)
    window._fill_recent_menu()
    assert str(tiny_sequence) in [a.text() for a in window.recent_menu.actions()]


def test_camera_menu_lists_the_cameras_that_open(make_window):
    window = make_window("knn")
    entries = window.camera_menu_entries()
    cameras = list_cameras()
    if cameras:
        assert entries == [f"Camera {i}" for i in cameras]
    else:
        assert len(entries) == 1 and entries[0].startswith("No camera found")


def test_overlay_tints_the_foreground(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    play_frames(qtbot, window, 8)
    plain = window.views.frame_item.image.copy()
    window.overlay_action.trigger()
    tinted = window.views.frame_item.image
    fg = window.last_result.mask > 0
    assert fg.any()
    assert (plain[fg] != tinted[fg]).any()
    assert (plain[~fg] == tinted[~fg]).all()


def test_bundled_sample_from_the_file_menu(qtbot, make_window):
    from bgsub.sample import sample_sequence

    window = make_window("knn")
    window.open_sample_action.trigger()
    qtbot.waitUntil(lambda: window.source_info is not None, timeout=120000)
    info = window.source_info
    assert info.spec == str(sample_sequence()) and info.has_groundtruth
    first, _last = info.temporal_roi
    play_frames(qtbot, window, first + 4)
    result = window.last_result
    assert result.image.shape == (240, 320, 3)
    assert result.scored_frames == 5
    fpr, tpr = window.metrics.roc_curve.getData()
    assert len(fpr) > 2
    assert 0.0 <= float(window.metrics.auc_text()) <= 1.0
    assert "sample" in window.windowTitle()


def test_keyboard_shortcuts_step_play_and_overlay(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=TIMEOUT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: window.last_result is not None and window.last_result.processed == 1,
                    timeout=TIMEOUT_MS)
    window.controller.set_frame_limit(5)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.last_result.processed == 5, timeout=TIMEOUT_MS)
    assert not window.views.overlay
    qtbot.keyClick(window, Qt.Key.Key_O)
    assert window.views.overlay and window.controls.overlay_check.isChecked()


def test_pacing_a_file_at_its_frame_rate(qtbot, make_window, tmp_path):
    import time

    import cv2
    import numpy as np

    path = tmp_path / "clip20fps.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 20.0, (48, 32))
    for n in range(12):
        frame = np.full((32, 48, 3), 80, np.uint8)
        frame[8:16, 3 * n:3 * n + 8] = 240
        writer.write(frame)
    writer.release()
    window = make_window("knn")
    open_and_wait(qtbot, window, path)
    assert window.source_info.fps == pytest.approx(20.0)
    window.controls.realtime_check.setChecked(True)
    start = time.perf_counter()
    play_frames(qtbot, window, 11)
    # Ten intervals of 1/20 s at least: the file is not raced through.
    assert time.perf_counter() - start >= 10 / 20.0 - 0.02


def test_single_key_shortcuts_do_not_steal_typing(qtbot, make_window):
    window = make_window("knn")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=TIMEOUT_MS)
    window.controls.threshold_spin.setValue(0.5)
    spin = window.controls.params.widget("history")
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=TIMEOUT_MS)
    spin.selectAll()
    qtbot.keyClicks(spin, "1000")
    assert "1000" in spin.lineEdit().text()
    assert window.controls.threshold_spin.value() == pytest.approx(0.5)  # "0" did not reset it
    assert not window.views.overlay


def test_truncated_video_says_frames_were_lost(qtbot, make_window, tmp_path):
    import cv2
    import numpy as np

    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 48))
    rng = np.random.default_rng(1)
    for _ in range(30):
        writer.write(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
    writer.release()
    data = path.read_bytes()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    window = make_window("knn")
    open_and_wait(qtbot, window, cut)
    window.play()
    qtbot.waitUntil(lambda: window.state == PlayState.ENDED, timeout=TIMEOUT_MS)
    qtbot.waitUntil(window.error_banner.isVisible, timeout=TIMEOUT_MS)
    text = window.error_banner.text()
    assert "cut.avi" in text and "expected 30" in text and "truncated" in text
    assert window.controller.thread.isRunning()


@pytest.fixture
def http_stream(tmp_path):
    """A 60-frame MJPG clip served over HTTP on the loopback address: a live source."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    import cv2
    import numpy as np

    writer = cv2.VideoWriter(str(tmp_path / "live.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (64, 48))
    for n in range(60):
        frame = np.full((48, 64, 3), 80, np.uint8)
        frame[10:20, n % 54:n % 54 + 10] = 250
        writer.write(frame)
    writer.release()

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/live.avi"
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_live_stream_that_ends_is_reported_like_an_unplugged_camera(qtbot, make_window, http_stream):
    window = make_window("knn")
    open_and_wait(qtbot, window, http_stream)
    assert window.source_info.is_live
    window.play()
    qtbot.waitUntil(lambda: window.state == PlayState.FAILED, timeout=TIMEOUT_MS)
    qtbot.waitUntil(window.error_banner.isVisible, timeout=TIMEOUT_MS)
    assert "stopped delivering frames" in window.error_banner.text()
    window.refresh()
    result = window.last_result
    assert result is not None and result.processed >= 1
    # Frames were either processed or dropped, never queued: at most the 60 sent.
    assert result.processed + result.dropped <= 60
    assert window.controller.thread.isRunning()


def test_objects_drawn_over_the_input_toggled_from_the_panel(qtbot, make_window, tiny_sequence):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    window.set_min_area(20)
    window.controls.boxes_check.click()  # as a user does
    assert window.boxes_action.isChecked() and window.views.show_objects
    play_frames(qtbot, window, 15)
    result = window.last_result
    assert result.objects, "the moving square (100 pixels) is an object at frame 15"
    assert window.views.boxes_shown == len(result.objects)
    rect = window.views.boxes_item.path().boundingRect()
    o = result.objects[0]
    assert rect.contains(o.x + o.width / 2, o.y + o.height / 2)
    assert window.views.labels_shown()[: len(result.objects)] == [str(o.track) for o in result.objects if o.track]
    assert all(o.area >= 20 for o in result.objects)
    # The key B (the View menu's action) hides them again.
    window.boxes_action.trigger()
    assert not window.controls.boxes_check.isChecked()
    assert window.views.boxes_shown == 0 and window.views.labels_shown() == []


def test_overlay_video_and_objects_saved_while_running(qtbot, make_window, tiny_sequence, tmp_path):
    from tests.bgsub.test_sources import read_video

    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    window.set_overlay_video(tmp_path / "overlay.mp4")
    window.set_objects_file(tmp_path / "objects.jsonl")
    qtbot.waitUntil(lambda: window.controls.objects_check.isChecked()
                    and window.controls.overlay_video_check.isChecked(), timeout=TIMEOUT_MS)
    assert window.overlay_video_action.isChecked() and window.objects_file_action.isChecked()
    assert "overlay.mp4" in window.controls.overlay_video_check.text()
    play_frames(qtbot, window, 12)
    window.set_overlay_video(None)
    qtbot.waitUntil(lambda: (tmp_path / "overlay.mp4").exists(), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not window.controls.overlay_video_check.isChecked(), timeout=TIMEOUT_MS)
    assert len(read_video(tmp_path / "overlay.mp4")) == 12
    # Unchecking the box stops the objects file (no dialog when stopping).
    window.controls.objects_check.click()
    qtbot.waitUntil(lambda: not window.objects_file_action.isChecked(), timeout=TIMEOUT_MS)
    frames = {json.loads(line)["frame"] for line in (tmp_path / "objects.jsonl").read_text().splitlines()}
    assert frames and frames <= set(range(1, 13))
    # A bad name is refused with a message, and the box is unchecked again.
    window.set_objects_file(tmp_path / "objects.txt")
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=TIMEOUT_MS)
    assert "end the name in .jsonl or .csv" in window.last_error
    assert not window.controls.objects_check.isChecked()


def test_closing_the_window_finishes_a_recording(qtbot, make_window, tiny_sequence, tmp_path):
    window = make_window("knn")
    open_and_wait(qtbot, window, tiny_sequence)
    window.set_objects_file(tmp_path / "objects.csv")
    qtbot.waitUntil(lambda: window.controls.objects_check.isChecked(), timeout=TIMEOUT_MS)
    play_frames(qtbot, window, 6)
    window.close()
    assert (tmp_path / "objects.csv").read_text().startswith("frame,track,")
