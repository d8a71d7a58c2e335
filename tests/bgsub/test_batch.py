"""``bgsub batch``: parallel, mirrored, reported, resumable, and safe to kill."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from bgsub.cli import main as cli
from bgsub.batch import RESULT_FILE, find_inputs, plan_jobs
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence
from bgsub.writers import list_masks
from tests.bgsub.test_sources import read_video, write_test_video

REPO = Path(__file__).resolve().parents[2]


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def assert_complete(folder: Path, frames: int, shape) -> None:
    """A finished output folder: its marker, every mask 1..frames, each one whole."""
    assert (folder / RESULT_FILE).is_file()
    result = json.loads((folder / RESULT_FILE).read_text())
    assert result["status"] == "done" and result["frames"] == frames
    masks = list_masks(folder)
    assert list(masks) == list(range(1, frames + 1))
    for p in masks.values():
        m = cv2.imread(str(p), cv2.IMREAD_UNCHANGED)
        assert m is not None and m.shape == shape


@pytest.fixture()
def tree(tmp_path) -> Path:
    """Two good videos, one corrupt file, a CDnet sequence and an ignored text file."""
    root = tmp_path / "in"
    (root / "day").mkdir(parents=True)
    (root / "night" / "cam2").mkdir(parents=True)
    write_test_video(root / "day" / "a.avi", frames=20, seed=1)
    write_test_video(root / "night" / "cam2" / "b.mp4", frames=15, seed=2)
    (root / "night" / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 300)
    (root / "notes.txt").write_text("not a video")
    cfg = SceneConfig(width=64, height=48, frames=24, seed=4, objects=4, first_object=1, warmup=6)
    write_sequence(SyntheticScene(cfg), root / "cdnet" / "street")
    return root


def test_inputs_are_found_and_mirrored(tree, tmp_path):
    inputs = find_inputs(tree)
    rel = [(p.relative_to(tree).as_posix(), k) for p, k in inputs]
    assert rel == [("cdnet/street", "cdnet"), ("day/a.avi", "video"),
                   ("night/broken.mp4", "video"), ("night/cam2/b.mp4", "video")]
    jobs = plan_jobs(tree, tmp_path / "out", inputs)
    outs = {j.key: Path(j.output).relative_to((tmp_path / "out").resolve()).as_posix() for j in jobs}
    assert outs == {"cdnet/street": "cdnet/street", "day/a.avi": "day/a",
                    "night/broken.mp4": "night/broken", "night/cam2/b.mp4": "night/cam2/b"}
    assert [p.name for p, _ in find_inputs(tree, "*.mp4")] == ["broken.mp4", "b.mp4"]
    assert [p.name for p, _ in find_inputs(tree, "night/cam2/*")] == ["b.mp4"]
    # Same stem in one folder: each keeps its suffix.
    shutil.copy(tree / "day" / "a.avi", tree / "day" / "a.mp4")
    jobs = plan_jobs(tree, tmp_path / "out", find_inputs(tree, "day/*"))
    assert sorted(Path(j.output).name for j in jobs) == ["a_avi", "a_mp4"]


def test_batch_good_videos_finish_bad_one_is_reported(tree, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli(["batch", str(tree), str(out), "--algo", "knn", "--workers", "2", "--quiet"])
    assert rc == 1
    assert_complete(out / "day" / "a", 20, (72, 96))
    assert_complete(out / "night" / "cam2" / "b", 15, (72, 96))
    assert_complete(out / "cdnet" / "street", 24, (48, 64))
    assert not (out / "night" / "broken").exists()
    m = manifest(out)
    items = m["items"]
    assert {k: v["status"] for k, v in items.items()} == {
        "cdnet/street": "done", "day/a.avi": "done", "night/broken.mp4": "failed", "night/cam2/b.mp4": "done"}
    assert "could not be opened as a video" in items["night/broken.mp4"]["error"]
    assert items["day/a.avi"]["frames"] == 20 and items["day/a.avi"]["fps"] > 0
    # Scored against its ground truth (frames 7-24).
    assert items["cdnet/street"]["scored_frames"] == 18
    assert 0 < items["cdnet/street"]["metrics"]["recall"] <= 1
    assert m["config"]["algo"] == "knn" and m["config"]["params"]["history"] == 500
    assert m["runs"][0]["workers"] == 2 and m["runs"][0]["counts"] == {"done": 3, "failed": 1}
    assert m["runs"][0]["frames"] == 20 + 15 + 24 and m["runs"][0]["fps"] > 0
    captured = capsys.readouterr()
    assert "3 done, 1 failed" in captured.out
    assert "  cdnet/street: F=" in captured.out
    assert "failed: night/broken.mp4" in captured.err
    # Nothing temporary is left anywhere.
    assert [p for p in out.rglob(".*")] == []


def test_rerun_skips_finished_and_redoes_the_rest(tree, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--workers", "1", "--quiet"]) == 1
    marker = out / "day" / "a" / RESULT_FILE
    before = marker.stat().st_mtime_ns, json.loads(marker.read_text())["worker_pid"]
    # The broken file is repaired; an unfinished output folder of b is simulated
    # by removing its marker... which makes it look unfinished, so it is redone.
    write_test_video(tree / "night" / "broken.mp4", frames=10, seed=4)
    (out / "night" / "cam2" / "b" / RESULT_FILE).unlink()
    capsys.readouterr()
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--workers", "2", "--quiet"]) == 0
    assert "2 finished earlier, 2 to do" in capsys.readouterr().err
    assert (marker.stat().st_mtime_ns, json.loads(marker.read_text())["worker_pid"]) == before
    assert_complete(out / "night" / "broken", 10, (72, 96))
    assert_complete(out / "night" / "cam2" / "b", 15, (72, 96))
    m = manifest(out)
    assert len(m["runs"]) == 2 and m["runs"][1]["skipped"] == 2
    assert all(v["status"] == "done" for v in m["items"].values())


def test_other_settings_on_the_same_output_are_refused(tree, tmp_path, capsys):
    out = tmp_path / "out"
    cli(["batch", str(tree), str(out), "--algo", "knn", "--quiet", "--pattern", "day/*"])
    capsys.readouterr()
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--set", "history=20", "--quiet",
                "--pattern", "day/*"]) == 2
    assert "holds results made with other settings" in capsys.readouterr().err
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--set", "history=20", "--quiet",
                "--pattern", "day/*", "--overwrite"]) == 0
    assert json.loads((out / "day" / "a" / RESULT_FILE).read_text())["params"]["history"] == 20


def test_batch_mask_videos_and_max_frames(tree, tmp_path):
    out = tmp_path / "out"
    assert cli(["batch", str(tree), str(out), "--algo", "mog2", "--quiet", "--pattern", "*.avi",
                "--mask-video", ".mkv", "--max-frames", "7", "--workers", "1"]) == 0
    assert_complete(out / "day" / "a", 7, (72, 96))
    cap = cv2.VideoCapture(str(out / "day" / "a" / "masks.mkv"))
    n = 0
    while cap.read()[0]:
        n += 1
    assert n == 7


def _objects(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_outputs_and_stages_like_run(tree, tmp_path, capsys):
    """--roi/--scale/--min-area/--objects/--overlay per input, recorded, and compared on resume."""
    roi = np.zeros((72, 96), np.uint8)
    roi[8:64, 16:80] = 255
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    out = tmp_path / "out"
    opts = ["--roi", str(tmp_path / "roi.png"), "--scale", "0.5", "--min-area", "6", "--objects", "--overlay"]
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--quiet", "--pattern", "day/*", "--workers", "1",
                "--max-frames", "10", *opts]) == 0
    folder = out / "day" / "a"
    assert_complete(folder, 10, (72, 96))
    result = json.loads((folder / RESULT_FILE).read_text())
    settings = result["settings"]
    assert settings["scale"] == 0.5 and settings["min_area"] == 6 and settings["objects"] == ".jsonl"
    assert settings["overlay"] == ".mp4" and settings["roi"].startswith("96x72 sha256:")
    # Nothing outside the ROI is ever foreground.
    for p in list_masks(folder).values():
        assert not cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)[roi == 0].any()
    # One object file per input, with track ids, every object at least --min-area pixels.
    objs = _objects(folder / "objects.jsonl")
    assert objs and result["objects_count"] == len(objs)
    assert {o["frame"] for o in objs} <= set(range(1, 11))
    assert all(o["area"] >= 6 and o["track"] >= 1 for o in objs)
    assert result["overlay"] == str((folder / "overlay.mp4").resolve())
    assert [f.shape for f in read_video(folder / "overlay.mp4")] == [(72, 96, 3)] * 10
    # The same settings resume (nothing to do); others are refused, naming only what differs.
    capsys.readouterr()
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--quiet", "--pattern", "day/*",
                "--max-frames", "10", *opts]) == 0
    assert "finished earlier, 0 to do" in capsys.readouterr().err
    changed = ["--roi", str(tmp_path / "roi.png"), "--scale", "0.5", "--min-area", "9", "--objects", "csv"]
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--quiet", "--pattern", "day/*",
                "--max-frames", "10", *changed]) == 2
    err = capsys.readouterr().err
    assert "min_area 6 there, 9 now; objects .jsonl there, .csv now; overlay .mp4 there, none now" in err
    assert "scale" not in err and "roi" not in err and "history" not in err
    # A changed ROI file is a changed setting too.
    roi[8:64, 16:40] = 0
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    assert cli(["batch", str(tree), str(out), "--algo", "knn", "--quiet", "--pattern", "day/*",
                "--max-frames", "10", *opts]) == 2
    err = capsys.readouterr().err
    assert "roi 96x72 sha256:" in err and "min_area" not in err


def test_batch_frame_option_errors(tree, tmp_path, capsys):
    cv2.imwrite(str(tmp_path / "small.png"), np.full((10, 10), 255, np.uint8))
    for args, msg in ((["--scale", "0"], "--scale must be in (0, 1]"),
                      (["--min-area", "-1"], "--min-area must be >= 0"),
                      (["--roi", str(tmp_path / "nope.png")], "no such file"),
                      (["--overlay", "webm"], "--overlay takes one of mp4, avi, mkv")):
        try:
            rc = cli(["batch", str(tree), str(tmp_path / "o"), "--quiet", *args])
        except SystemExit as exc:  # argparse's own check
            rc = exc.code
        assert rc == 2
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
    # An ROI of another frame size: that input fails with a one-line reason, nothing half-written.
    assert cli(["batch", str(tree), str(tmp_path / "o"), "--quiet", "--algo", "knn", "--pattern", "day/*",
                "--roi", str(tmp_path / "small.png")]) == 1
    item = manifest(tmp_path / "o")["items"]["day/a.avi"]
    assert item["status"] == "failed" and "the ROI mask is 10x10 but the frames are 96x72" in item["error"]
    assert not (tmp_path / "o" / "day" / "a").exists()


def test_batch_errors(tmp_path, capsys):
    assert cli(["batch", str(tmp_path / "missing"), str(tmp_path / "out"), "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["batch", str(tmp_path / "empty"), str(tmp_path / "out"), "--quiet"]) == 2
    assert "no video files" in capsys.readouterr().err
    assert cli(["batch", str(tmp_path / "empty"), str(tmp_path / "out"), "--workers", "0"]) == 2


def _copies_of_one_video(root, names, seed):
    """A new folder ``root`` holding one 40-frame 320x240 test video under each of ``names``."""
    root.mkdir()
    first = write_test_video(root / names[0], frames=40, size=(320, 240), seed=seed)
    for name in names[1:]:
        shutil.copy(first, root / name)


def test_batch_killed_mid_run_then_restarted(tmp_path):
    """SIGKILL the whole batch while it works; nothing half-written survives,
    and the restart redoes only what was not finished."""
    root = tmp_path / "in"
    names = [f"v{i:02d}.avi" for i in range(1, 7)]
    _copies_of_one_video(root, names, seed=7)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bgsub.cli", "batch", str(root), str(out), "--algo", "knn",
           "--workers", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if any((out / n[:-4] / RESULT_FILE).is_file() for n in names):
                break
            time.sleep(0.005)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(0.2)
    # After the kill: every output folder in place is complete; the rest are
    # temporary (dot) names or absent.
    finished = {}
    for name in names:
        folder = out / name[:-4]
        if folder.exists():
            assert_complete(folder, 40, (240, 320))
            finished[name] = (folder / RESULT_FILE).stat().st_mtime_ns
    assert 1 <= len(finished) < len(names)
    visible = [p.name for p in out.iterdir() if not p.name.startswith(".")]
    assert sorted(visible) == sorted([n[:-4] for n in finished] + ["manifest.json"])
    # A kill can also land while the manifest is being written: its temporary file
    # stays behind (this run's kill may or may not have hit that moment; make sure).
    (out / ".manifest.partial-1-0dead.json").write_text('{"items": {')
    # Restart: finishes the rest, leaves the finished ones alone, removes leftovers.
    rc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rc.returncode == 0, rc.stderr
    assert f"{len(finished)} finished earlier, {len(names) - len(finished)} to do" in rc.stderr
    for name in names:
        assert_complete(out / name[:-4], 40, (240, 320))
    for name, mtime in finished.items():
        assert (out / name[:-4] / RESULT_FILE).stat().st_mtime_ns == mtime
    assert [p.name for p in out.rglob(".*")] == []
    m = manifest(out)
    assert all(v["status"] == "done" for v in m["items"].values()) and len(m["items"]) == len(names)
    assert len(m["runs"]) == 2 and m["runs"][1]["skipped"] == len(finished)


@pytest.mark.parametrize("inherited", ["SIG_DFL", "SIG_IGN"])
def test_batch_ctrl_c_stops_workers_and_discards_unfinished_folders(tmp_path, inherited):
    root = tmp_path / "in"
    # enough work after the first video that the batch cannot finish before the signal arrives on a busy machine
    names = [f"v{i:02d}.avi" for i in range(1, 41)]
    _copies_of_one_video(root, names, seed=8)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # The batch starts with SIGINT at its default, or ignored, as a shell starts a command that a script puts in
    # the background (and as the tests themselves may have been started): either way Ctrl-C stops it cleanly.
    argv = [sys.executable, "-m", "bgsub.cli", "batch", str(root), str(out), "--algo", "knn", "--workers", "1",
            "--quiet"]
    launcher = (f"import os, signal, sys; signal.signal(signal.SIGINT, signal.{inherited}); "
                f"os.execv(sys.executable, {argv!r})")
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and not (out / "v01" / RESULT_FILE).is_file():
            time.sleep(0.005)
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "interrupted: stopping the workers" in stderr
    m = manifest(out)
    statuses = {k: v["status"] for k, v in m["items"].items()}
    assert statuses["v01.avi"] == "done"
    assert set(statuses.values()) <= {"done", "interrupted"} and "interrupted" in statuses.values()
    assert m["runs"][-1]["interrupted"] is True
    for key, status in statuses.items():
        folder = out / key[:-4]
        assert folder.exists() == (status == "done")
        if status == "done":
            assert_complete(folder, 40, (240, 320))
    assert [p.name for p in out.rglob(".*")] == []


def test_batch_compiles_uncached_kernels_once_before_the_workers(tree, tmp_path, capsys, monkeypatch):
    """With the frame kernels not in numba's cache, the batch says so and compiles them itself on small frames
    before any worker starts (they then load them); with them cached it says nothing."""
    from bgsub.batch.engine import compile_here
    from bgsub.models.olkn import OLKNSubtractor

    applied = []
    real_apply = OLKNSubtractor.apply

    def apply(self, image, *args, **kwargs):
        applied.append(image.shape)
        return real_apply(self, image, *args, **kwargs)

    monkeypatch.setattr(OLKNSubtractor, "apply", apply)
    monkeypatch.setattr(OLKNSubtractor, "uncompiled_kernels", lambda self: ["olkn_frame_bounded"])
    compile_here("olkn", {}, sys.stderr)
    err = capsys.readouterr().err
    assert "numba is compiling the frame kernels (olkn_frame_bounded)" in err and "before the workers start" in err
    assert applied == [(16, 16, 3), (16, 16, 3)]
    monkeypatch.setattr(OLKNSubtractor, "uncompiled_kernels", lambda self: [])
    compile_here("olkn", {}, sys.stderr)
    assert capsys.readouterr().err == "" and len(applied) == 2
    # a batch prints it once, on its log, before the workers' progress
    monkeypatch.setattr(OLKNSubtractor, "uncompiled_kernels", lambda self: ["olkn_frame_bounded"])
    rc = cli(["batch", str(tree / "day"), str(tmp_path / "out"), "--algo", "olkn", "--workers", "1", "--quiet",
              "--max-frames", "3"])
    assert rc == 0
    assert capsys.readouterr().err.count("numba is compiling the frame kernels") == 1
    # OpenCV's subtractors compile nothing
    compile_here("knn", {}, sys.stderr)
    assert capsys.readouterr().err == ""
