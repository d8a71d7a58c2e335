"""``bgsub demo``: the bundled sample, processed and scored, with no arguments needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgsub.cli import main as cli
from bgsub.commands.demo import gui_available
from bgsub.writers import list_masks

REPO = Path(__file__).resolve().parents[2]


def test_demo_headless_writes_masks_and_prints_scores(tmp_path, capsys):
    out = tmp_path / "demo"
    assert cli(["demo", "--no-gui", "--algo", "knn", "--out", str(out), "--quiet"]) == 0
    assert list(list_masks(out)) == list(range(1, 301))
    printed = capsys.readouterr()
    assert f"masks: {out.resolve()} (300 files" in printed.out
    assert "CDnet scores on the sample (200 scored frames):" in printed.out
    line = next(l for l in printed.out.splitlines() if l.strip().startswith("knn"))
    f = float(line.split("F=")[1].split()[0])
    assert 0.5 < f <= 1.0  # OpenCV KNN finds the cars and people


def test_demo_picture_shows_input_truth_and_mask(tmp_path, capsys):
    import cv2

    pic = tmp_path / "pics" / "sample.png"
    assert cli(["demo", "--no-gui", "--algo", "knn", "--out", str(tmp_path / "m"), "--quiet",
                "--picture", str(pic), "--picture-frame", "120"]) == 0
    img = cv2.imread(str(pic))
    assert img is not None and img.shape[1] == 3 * 320 + 2 * 4 and 240 < img.shape[0] < 280
    assert f"picture: {pic}" in capsys.readouterr().out
    assert cli(["demo", "--no-gui", "--algo", "knn", "--out", str(tmp_path / "m"), "--quiet",
                "--picture", str(pic), "--picture-frame", "999"]) == 2


def test_demo_default_output_folder_is_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli(["demo", "--no-gui", "--algo", "mog2", "--quiet"]) == 0
    out = tmp_path / "bgsub-output" / "demo"
    assert len(list_masks(out)) == 300
    assert f"masks: {out}" in capsys.readouterr().out


def test_demo_says_why_it_stays_in_the_terminal(tmp_path, monkeypatch, capsys):
    for var in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    if sys.platform in ("win32", "darwin"):
        pytest.skip("always has a display")
    assert cli(["demo", "--algo", "mog2", "--out", str(tmp_path / "m"), "--quiet"]) == 0
    assert "staying in the terminal: no display ($DISPLAY and $WAYLAND_DISPLAY are not set)" in \
        capsys.readouterr().err


def test_gui_is_used_only_with_a_display(monkeypatch):
    for var in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    if sys.platform not in ("win32", "darwin"):
        assert not gui_available()
    pytest.importorskip("PySide6")
    pytest.importorskip("pyqtgraph")
    monkeypatch.setenv("DISPLAY", ":99")
    assert gui_available()


def test_demo_opens_the_desktop_app_when_it_can(tmp_path):
    pytest.importorskip("PySide6")
    pytest.importorskip("pyqtgraph")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DISPLAY": ":99", "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([sys.executable, "-m", "bgsub.cli", "demo", "--algo", "knn"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for _ in range(50):  # (warnings of imported libraries may come first)
            line = proc.stderr.readline()
            lines.append(line)
            if not line or "opening the desktop app" in line:
                break
        assert "opening the desktop app on the bundled sample" in lines[-1], "".join(lines)
        time.sleep(4.0)
        # It is the app, not the terminal demo: it keeps running and writes no masks.
        assert proc.poll() is None
        assert not (tmp_path / "bgsub-output" / "demo").exists()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
