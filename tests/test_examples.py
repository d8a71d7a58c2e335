"""Every script of examples/ runs, as a user runs it (a subprocess from the checkout), on small data."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

from tests.bgsub.test_sources import write_test_video

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def run_example(name: str, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):  # no window, whatever the machine has
        env.pop(var, None)
    return subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def write_video(path: Path, frames: int = 12, size=(64, 48), seed: int = 3) -> Path:
    """A tiny MJPG video of the synthetic street scene."""
    return write_test_video(path, frames, size, "MJPG", seed, objects=1, first_object=2, warmup=2)


def count_frames(path: Path) -> int:
    cap = cv2.VideoCapture(str(path))
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    return n


def test_every_example_is_tested():
    tested = {"webcam.py", "cluster_folder.py", "river_pipeline.py", "sklearn_pipeline.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_webcam_on_a_video_file(tmp_path):
    video = write_video(tmp_path / "clip.avi", frames=12)
    masks = tmp_path / "masks.avi"
    done = run_example("webcam.py", "--video", video, "--no-window", "--mask-video", masks, "--max-frames", 10)
    assert done.returncode == 0, done.stderr
    assert "10 frames in" in done.stdout
    assert count_frames(masks) == 10


def test_webcam_says_when_the_source_does_not_open(tmp_path):
    done = run_example("webcam.py", "--video", tmp_path / "missing.avi", "--no-window")
    assert done.returncode == 1
    assert done.stderr.startswith("webcam.py: error:") and "Traceback" not in done.stderr


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs dask.distributed")
def test_cluster_folder_on_a_local_cluster(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for k in range(2):
        write_video(folder / f"clip{k}.avi", frames=8, seed=k)
    (folder / "notes.txt").write_text("not a video")
    out = tmp_path / "masks"
    done = run_example("cluster_folder.py", folder, out, "--workers", 1, "--algo", "knn")
    assert done.returncode == 0, done.stderr
    assert "2 of 2 videos done" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["clip0_mask.mkv", "clip1_mask.mkv"]
    assert all(count_frames(p) == 8 for p in out.iterdir())


def test_cluster_folder_without_videos_exits_2(tmp_path):
    done = run_example("cluster_folder.py", tmp_path, tmp_path / "out")
    assert done.returncode == 2 and "no video" in done.stderr


@pytest.mark.skipif(importlib.util.find_spec("river") is None, reason="needs river")
def test_river_pipeline_on_the_first_rows():
    done = run_example("river_pipeline.py", "--rows", 150)
    assert done.returncode == 0, done.stderr
    accuracy = float(re.search(r"prequential accuracy on Phishing: ([0-9.]+)", done.stdout).group(1))
    assert 0.6 < accuracy <= 1.0


def test_sklearn_pipeline_quick():
    done = run_example("sklearn_pipeline.py", "--quick")
    assert done.returncode == 0, done.stderr
    found = [float(v) for v in re.findall(r"accuracy ([0-9.]+)", done.stdout)]
    assert len(found) == 3 and all(0.85 < a <= 1.0 for a in found), done.stdout
