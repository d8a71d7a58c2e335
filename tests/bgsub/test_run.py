"""``bgsub run``: one mask per frame, mask videos, configs, errors, Ctrl-C, --show."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.cli import main as cli
from bgsub.settings import ConfigError, resolve_algorithm
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence
from bgsub.writers import MaskWriter, list_masks
from tests.bgsub.test_sources import write_test_video

REPO = Path(__file__).resolve().parents[2]


def assert_masks(folder: Path, numbers, shape) -> None:
    """Exactly these bin%06d.png files, each a whole 0/255 mask of ``shape``."""
    masks = list_masks(folder)
    assert list(masks) == list(numbers)
    for p in masks.values():
        m = cv2.imread(str(p), cv2.IMREAD_UNCHANGED)
        assert m is not None and m.shape == shape and m.dtype == np.uint8
        assert set(np.unique(m).tolist()) <= {0, 255}
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert leftovers == []


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    return write_test_video(tmp_path_factory.mktemp("run") / "clip.avi", frames=25)


def test_run_writes_exactly_one_mask_per_frame(tmp_path, clip, capsys):
    out = tmp_path / "masks"
    rc = cli(["run", str(clip), "--algo", "knn", "--out", str(out), "--quiet"])
    assert rc == 0
    assert_masks(out, range(1, 26), (72, 96))
    printed = capsys.readouterr().out
    assert "bin000001.png .. bin000025.png (25 files)" in printed


def test_run_with_olkn_on_a_sequence_prints_cdnet_scores(tmp_path, capsys):
    assert "olkn" in bgsub.algorithms()
    cfg = SceneConfig(width=80, height=60, frames=20, seed=3, objects=3, first_object=2, warmup=8)
    seq = write_sequence(SyntheticScene(cfg), tmp_path / "seq")
    out = tmp_path / "masks"
    rc = cli(["run", str(seq), "--out", str(out), "--quiet"])  # default algo: olkn
    assert rc == 0
    assert_masks(out, range(1, 21), (60, 80))
    printed = capsys.readouterr()
    assert "-> olkn" not in printed.err  # --quiet: no parameter line
    assert "CDnet scores over 12 scored frames: F=" in printed.out


def test_run_image_folder_keeps_positions_and_replaces_stale_masks(tmp_path, capsys):
    folder = tmp_path / "frames"
    folder.mkdir()
    scene = SyntheticScene(SceneConfig(width=64, height=48, frames=6, seed=1, warmup=2))
    for t in range(1, 7):
        cv2.imwrite(str(folder / f"shot_{t}.png"), scene.render(t)[0])
    out = tmp_path / "masks"
    earlier = MaskWriter(out)
    for n in (1, 7, 99):  # an earlier, longer run's masks
        earlier.write(n, np.zeros((48, 64), np.uint8))
    assert cli(["run", str(folder), "--algo", "mog2", "--out", str(out), "--quiet"]) == 0
    assert_masks(out, range(1, 7), (48, 64))
    assert "removed 3 masks of an earlier run" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".mkv", ".avi", ".mp4"])
def test_run_mask_video_has_one_frame_per_input_frame(tmp_path, clip, suffix):
    video = tmp_path / f"masks{suffix}"
    assert cli(["run", str(clip), "--algo", "knn", "--mask-video", str(video), "--quiet",
                "--max-frames", "12"]) == 0
    cap = cv2.VideoCapture(str(video))
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    assert n == 12
    assert [p.name for p in tmp_path.iterdir()] == [video.name]
    if suffix == ".mkv":  # FFV1 is lossless: the masks stay 0/255 exactly
        cap = cv2.VideoCapture(str(video))
        ok, frame = cap.read()
        assert ok and set(np.unique(frame).tolist()) <= {0, 255}


def test_config_file_and_set_precedence(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('algo = "knn"\n[params]\nhistory = 50\ndist2Threshold = 300.0\n')
    algo, params = resolve_algorithm(None, ["history=70"], cfg)
    assert algo == "knn" and params["history"] == 70 and params["dist2Threshold"] == 300.0
    # --algo beats the file's algo; the table named after the algorithm applies.
    per_algo = tmp_path / "per_algo.toml"
    per_algo.write_text('algo = "knn"\n[mog2]\nvarThreshold = 9.0\n[knn]\nhistory = 3\n')
    algo, params = resolve_algorithm("mog2", [], per_algo)
    assert algo == "mog2" and params["varThreshold"] == 9.0 and "dist2Threshold" not in params
    bad = tmp_path / "bad.toml"
    bad.write_text("[params]\nhistory = -4\n")
    with pytest.raises(ConfigError, match="bad.toml: history must be >= 1"):
        resolve_algorithm("knn", [], bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("algo = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve_algorithm(None, [], broken)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_algorithm(None, [], tmp_path / "missing.toml")


def test_config_file_on_the_command_line(tmp_path, clip, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('algo = "mog2"\n[params]\nvarThreshold = 25.0\n')
    out = tmp_path / "masks"
    assert cli(["run", str(clip), "--config", str(cfg), "--out", str(out), "--max-frames", "3"]) == 0
    assert "-> mog2 varThreshold=25.0 (others default)" in capsys.readouterr().err
    assert len(list_masks(out)) == 3


@pytest.mark.parametrize("argv,message", [
    (["--algo", "nope"], "unknown algorithm 'nope'"),
    (["--algo", "knn", "--set", "history=-3"], "history must be >= 1"),
    (["--algo", "knn", "--set", "colour=2"], "knn has no parameter 'colour'"),
    (["--algo", "knn", "--set", "history"], "--set takes key=value"),
])
def test_bad_parameters_exit_2_with_the_reason(clip, argv, message, capsys):
    assert cli(["run", str(clip), *argv, "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_bad_source_exits_1_with_the_reason(tmp_path, capsys):
    empty = tmp_path / "empty.avi"
    empty.touch()
    assert cli(["run", str(empty), "--algo", "knn"]) == 1
    assert "empty (0 bytes)" in capsys.readouterr().err
    assert cli(["run", "7", "--algo", "knn"]) == 1
    assert "camera 7 could not be opened" in capsys.readouterr().err


def test_truncated_video_processes_what_decodes(tmp_path, clip, capsys):
    from tests.bgsub.test_sources import truncate

    cut = truncate(clip, tmp_path / "cut.avi", 0.5)
    out = tmp_path / "masks"
    assert cli(["run", str(cut), "--algo", "knn", "--out", str(out), "--quiet"]) == 0
    n = len(list_masks(out))
    assert 0 < n < 25
    err = capsys.readouterr().err
    assert f"warning: {n} frames read" in err and "expected 25" in err


def test_ctrl_c_stops_cleanly_with_complete_outputs(tmp_path):
    src = write_test_video(tmp_path / "long.avi", frames=400, size=(160, 120))
    out = tmp_path / "masks"
    video = tmp_path / "masks.avi"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bgsub.cli", "run", str(src), "--algo", "knn", "--out", str(out),
         "--mask-video", str(video), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list_masks(out)) < 10 and proc.poll() is None:
            time.sleep(0.01)
        assert proc.poll() is None, "finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    masks = list_masks(out)
    k = len(masks)
    assert 10 <= k < 400
    assert_masks(out, range(1, k + 1), (120, 160))
    assert f"stopped: {k} frames" in stderr
    # The mask video was finalised: it plays and holds the same frames.
    cap = cv2.VideoCapture(str(video))
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    assert n == k
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.avi", "masks", "masks.avi"]


def test_show_opens_a_window_offscreen(tmp_path, clip, monkeypatch, capsys):
    pytest.importorskip("PySide6")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    out = tmp_path / "masks"
    assert cli(["run", str(clip), "--algo", "knn", "--show", "--out", str(out), "--quiet",
                "--max-frames", "8"]) == 0
    assert len(list_masks(out)) == 8


def test_show_without_a_display_says_so(clip, monkeypatch, capsys):
    pytest.importorskip("PySide6")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    if sys.platform in ("win32", "darwin"):
        pytest.skip("always has a display")
    assert cli(["run", str(clip), "--algo", "knn", "--show", "--quiet"]) == 2
    assert "--show needs a display" in capsys.readouterr().err


def test_list_cameras(capsys):
    assert cli(["run", "--list-cameras"]) == 0
    assert capsys.readouterr().out.startswith("cameras: ")


def test_a_bad_frame_mid_run_stops_with_the_reason_and_keeps_earlier_masks(tmp_path, capsys):
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in (1, 2):
        cv2.imwrite(str(folder / f"{i}.png"), np.full((24, 32, 3), 60 * i, np.uint8))
    cv2.imwrite(str(folder / "3.png"), np.zeros((30, 32, 3), np.uint8))
    out = tmp_path / "masks"
    assert cli(["run", str(folder), "--algo", "knn", "--out", str(out), "--quiet"]) == 1
    assert "stopped at frame 3" in capsys.readouterr().err
    assert_masks(out, [1, 2], (24, 32))


def test_camera_status_line_reports_fps(clip):
    import io

    from bgsub.commands.run import _CameraStatus
    from bgsub.pipeline import FrameOutput
    from bgsub.sources import open_source

    stream = io.StringIO()
    status = _CameraStatus("camera 0", stream=stream)
    with open_source(clip) as src:
        for frame in src:
            status(FrameOutput(frame.index, frame.image, np.zeros(frame.image.shape[:2], np.uint8)))
            time.sleep(0.03)
    status.close()
    text = stream.getvalue()
    assert "camera 0: " in text and " fps, foreground  0.0 %" in text and "(Ctrl-C stops)" in text


def test_out_that_is_a_file_is_refused(tmp_path, clip, capsys):
    f = tmp_path / "taken"
    f.write_text("x")
    assert cli(["run", str(clip), "--algo", "knn", "--out", str(f), "--quiet"]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    assert f.read_text() == "x"


def test_run_says_when_the_first_frame_waits_for_numba(tmp_path, capsys, monkeypatch):
    """The first run after an install or an upgrade compiles the frame kernels (about a minute): it says so,
    naming the kernels its parameters run; with them in numba's cache it says nothing."""
    import bgsub
    import bgsub.models.base as base
    from bgsub.commands._common import compile_note

    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(1, 4):
        cv2.imwrite(str(frames / f"in{i:06d}.png"), np.full((48, 64, 3), 90 + i, np.uint8))
    args = ["run", str(frames), "--algo", "olkn", "--out", str(tmp_path / "out")]
    assert cli(args) == 0  # compiles them now if numba's cache did not hold them (and says so)
    capsys.readouterr()
    assert cli(args) == 0
    assert "numba is compiling" not in capsys.readouterr().err

    monkeypatch.setattr(base, "is_cached", lambda dispatcher: False)  # as with an empty cache
    assert cli(args + ["--set", "score_map=exact"]) == 0
    err = capsys.readouterr().err
    assert "numba is compiling the frame kernels (olkn_frame, olkn_bootstrap) before the first frame" in err
    assert cli(args + ["--quiet"]) == 0
    assert "numba is compiling" not in capsys.readouterr().err

    assert "(olkn_frame_bounded, olkn_bootstrap)" in compile_note(bgsub.create("olkn"))
    assert "kernels (olkn_frame) before" in compile_note(bgsub.create("olkn", score_map="exact", init="empty"))
    assert ("(norma_score_planes, build_planes, norma_update, push_bootstrap, norma_quantile_offsets)"
            in compile_note(bgsub.create("norma")))
    assert compile_note(bgsub.create("knn")) is None  # OpenCV's: nothing to compile
