"""``bgsub-gui`` as a user runs it: a real process, offscreen, writing a screenshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from bgsub_gui.app import build_parser

REPO = Path(__file__).resolve().parents[2]


def run_gui(args, tmp_path, timeout=240):
    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "offscreen"
    # Recent sources go to a settings file of the test's own.
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["HOME"] = str(tmp_path / "home")
    code = "import sys; from bgsub_gui.app import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )


def test_screenshot_of_a_sequence_then_exit_0(tmp_path, tiny_sequence):
    shot = tmp_path / "shots" / "gui.png"
    masks = tmp_path / "masks"
    proc = run_gui([tiny_sequence, "--algo", "knn", "--set", "history=50", "--frames", "12",
                    "--screenshot", shot, "--size", "900x600", "--save-masks", masks], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "after 12 frames" in proc.stdout
    assert shot.stat().st_size > 10_000
    image = QImage(str(shot))
    assert not image.isNull()
    assert (image.width(), image.height()) == (900, 600)
    assert not list(shot.parent.glob(".*"))  # no temporary file left
    assert (tmp_path / "config").is_dir()  # the recent list went there, not to the user's
    assert sorted(p.name for p in masks.iterdir()) == [f"bin{n:06d}.png" for n in range(1, 13)]


def test_roi_scale_and_min_area_from_the_command_line(tmp_path, tiny_sequence):
    import cv2
    import numpy as np

    first = cv2.imread(str(sorted((tiny_sequence / "input").iterdir())[0]))
    h, w = first.shape[:2]
    roi = np.zeros((h, w), np.uint8)
    roi[:, w // 2:] = 255
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    masks = tmp_path / "masks"
    proc = run_gui([tiny_sequence, "--algo", "knn", "--frames", "6", "--screenshot", tmp_path / "s.png",
                    "--roi", tmp_path / "roi.png", "--scale", "0.5", "--min-area", "4", "--save-masks", masks],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    saved = [cv2.imread(str(p), cv2.IMREAD_GRAYSCALE) for p in sorted(masks.iterdir())]
    assert len(saved) == 6 and all(m.shape == (h, w) and not m[:, : w // 2].any() for m in saved)
    assert saved[0][:, w // 2:].all()  # KNN's first frame: foreground everywhere inside the ROI


def test_boxes_overlay_video_and_objects_from_the_command_line(tmp_path, tiny_sequence):
    import json

    from tests.bgsub.test_sources import read_video

    proc = run_gui([tiny_sequence, "--algo", "knn", "--frames", "10", "--screenshot", tmp_path / "s.png",
                    "--boxes", "--min-area", "20", "--overlay", tmp_path / "o.avi", "--objects",
                    tmp_path / "objects.jsonl"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(read_video(tmp_path / "o.avi")) == 10
    rows = [json.loads(line) for line in (tmp_path / "objects.jsonl").read_text().splitlines()]
    assert rows and all(r["area"] >= 20 and r["track"] >= 1 for r in rows)
    assert not list(tmp_path.glob(".*"))


def test_screenshot_of_a_broken_file_shows_the_error_and_exits_1(tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"")
    shot = tmp_path / "error.png"
    proc = run_gui([bad, "--algo", "knn", "--frames", "5", "--screenshot", shot], tmp_path)
    assert proc.returncode == 1
    assert "broken.mp4" in proc.stderr and "empty" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert shot.stat().st_size > 0


def test_a_worker_that_does_not_stop_in_time_is_left_without_an_abort(tmp_path, tiny_sequence):
    """A worker inside a call that cannot be interrupted (here: a frame that takes 60 s, as numba's first compile
    can) when the screenshot run gives up: the process says so and exits 1, instead of Qt aborting it for
    destroying a running thread."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               HOME=str(tmp_path / "home"))
    code = ("import sys, time\n"
            "import bgsub_gui.model as model\n"
            "step = model.Session.step\n"
            "def slow(self, *a, **k):\n"
            "    time.sleep(60)\n"
            "    return step(self, *a, **k)\n"
            "model.Session.step = slow\n"
            "from bgsub_gui.app import main\n"
            "sys.exit(main(sys.argv[1:]))")
    shot = tmp_path / "stuck.png"
    args = [tiny_sequence, "--algo", "knn", "--frames", "3", "--timeout", "2", "--screenshot", shot]
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=55)  # well before the frame would end
    assert proc.returncode == 1, proc.stderr
    assert "gave up after 2 s" in proc.stderr and "still busy" in proc.stderr
    assert "Destroyed while thread" not in proc.stderr
    assert shot.stat().st_size > 0


def test_bad_arguments_are_refused_with_a_message(tmp_path, capsys):
    from bgsub_gui.app import main

    for argv, message in (
        (["--algo", "nope"], "unknown algorithm 'nope'"),
        (["--algo", "knn", "--set", "history=-3"], "history must be >= 1"),
        (["--algo", "knn", "--set", "history"], "--set takes key=value"),
        (["--frames", "0"], "--frames must be >= 1"),
        (["--algo", "knn", "--preset", "nope"], "unknown preset 'nope' for knn"),
        (["--algo", "knn", "--threshold", "3"], "--threshold must lie in the score range [-1, 1] of knn"),
        (["--size", "big"], "--size takes WIDTHxHEIGHT"),
        (["--scale", "0"], "--scale must be in (0, 1], got 0"),
        (["--roi", str(tmp_path / "none.png")], "none.png: no such file"),
        (["--overlay", str(tmp_path / "o.gif")], "--overlay o.gif: end the name in .mp4 or .avi or .mkv"),
        (["--objects", str(tmp_path / "o.txt")], "--objects o.txt: end the name in .jsonl or .csv"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--screenshot", str(tmp_path / "x.png")])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_without_a_display_it_says_so_instead_of_aborting(monkeypatch, capsys):
    from bgsub_gui.app import main

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert main(["--algo", "knn"]) == 2
    err = capsys.readouterr().err
    assert "no display" in err and "--screenshot" in err


def test_parser_defaults_to_the_bundled_sample():
    args = build_parser().parse_args([])
    assert args.source == "sample" and args.screenshot is None


def test_console_script_is_installed():
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    if "bgsub-gui" not in scripts:
        pytest.skip("the project is not pip-installed here")
    assert scripts["bgsub-gui"] == "bgsub_gui.app:main"
