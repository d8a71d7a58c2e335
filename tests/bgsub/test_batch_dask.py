"""``bgsub batch --scheduler``: the same jobs on a Dask LocalCluster of 2 worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgsub.cli import main as cli
from bgsub.writers import list_masks
from tests.bgsub.test_sources import read_video, write_test_video

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]


def _masks(folder: Path) -> dict[int, bytes]:
    return {i: p.read_bytes() for i, p in list_masks(folder).items()}


def test_local_cluster_gives_the_same_masks_as_the_process_pool(tmp_path, capsys):
    root = tmp_path / "in"
    (root / "d").mkdir(parents=True)
    write_test_video(root / "a.avi", frames=16, seed=1)
    write_test_video(root / "d" / "a.mp4", frames=12, seed=2)
    pool, dask = tmp_path / "pool", tmp_path / "dask"
    assert cli(["batch", str(root), str(pool), "--workers", "2", "--quiet"]) == 0
    assert cli(["batch", str(root), str(dask), "--scheduler", "local:2", "--quiet"]) == 0
    mp_items = json.loads((pool / "manifest.json").read_text())["items"]
    dk = json.loads((dask / "manifest.json").read_text())
    assert sorted(mp_items) == sorted(dk["items"]) == ["a.avi", "d/a.mp4"]
    assert dk["runs"][-1]["scheduler"] == "local:2" and dk["runs"][-1]["workers"] == 2
    for key, item in dk["items"].items():
        assert item["status"] == "done"
        rel = Path(item["output"]).relative_to(dask.resolve())
        assert _masks(dask / rel) == _masks(pool / rel) and len(_masks(dask / rel)) == item["frames"]
    # resume: nothing to do, no cluster started
    capsys.readouterr()
    assert cli(["batch", str(root), str(dask), "--scheduler", "local:2", "--quiet"]) == 0
    assert "2 finished earlier, 0 to do" in capsys.readouterr().err


def test_local_cluster_makes_the_same_objects_and_overlays_and_compares_settings(tmp_path, capsys):
    import cv2
    import numpy as np

    root = tmp_path / "in"
    root.mkdir()
    write_test_video(root / "a.avi", frames=12, seed=3)
    roi = np.zeros((72, 96), np.uint8)
    roi[4:68, 8:88] = 255
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    stages = ["--roi", str(tmp_path / "roi.png"), "--scale", "0.5", "--min-area", "5", "--quiet"]  # olkn: deterministic
    opts = [*stages, "--objects", "csv", "--overlay", "mkv"]
    pool, dask = tmp_path / "pool", tmp_path / "dask"
    assert cli(["batch", str(root), str(pool), "--workers", "1", *opts]) == 0
    assert cli(["batch", str(root), str(dask), "--scheduler", "local:2", *opts]) == 0
    assert _masks(dask / "a") == _masks(pool / "a") and len(_masks(dask / "a")) == 12
    assert (dask / "a" / "objects.csv").read_bytes() == (pool / "a" / "objects.csv").read_bytes()
    # FFV1 is lossless: the same pictures (the container itself carries random ids).
    frames = [read_video(folder / "a" / "overlay.mkv") for folder in (dask, pool)]
    assert len(frames[0]) == 12 and all(np.array_equal(x, y) for x, y in zip(*frames))
    item = json.loads((dask / "manifest.json").read_text())["items"]["a.avi"]
    assert item["settings"]["min_area"] == 5 and item["settings"]["overlay"] == ".mkv"
    capsys.readouterr()
    assert cli(["batch", str(root), str(dask), "--scheduler", "local:2", *stages]) == 2
    err = capsys.readouterr().err
    assert "objects .csv there, none now; overlay .mkv there, none now" in err and "min_area" not in err


def test_bad_scheduler_options(tmp_path, capsys):
    root = tmp_path / "in"
    root.mkdir()
    write_test_video(root / "a.avi", frames=4)
    for args, msg in ((["--scheduler", "nowhere"], "--scheduler must be local, local:N or tcp://"),
                      (["--scheduler", "local:0"], "local:N needs N >= 1"),
                      (["--tls-cert", "x.pem"], "need --scheduler tls://"),
                      (["--scheduler", "local:2", "--workers", "2"], "--workers is for the local process pool")):
        assert cli(["batch", str(root), str(tmp_path / "o"), *args, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_worker_killed_mid_job_is_redone_elsewhere(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    write_test_video(root / "a_short.avi", frames=8, seed=1)
    write_test_video(root / "b_long.avi", frames=400, seed=2)
    write_test_video(root / "c_long.avi", frames=400, seed=3)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "bgsub.cli", "batch", str(root), str(out), "--algo", "olkn",
                             "--scheduler", "local:2", "--quiet"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    victim = None  # the long job killed: the first under way once the short one is done (a worker that warmed up
    # first may run one long job to its end before the other worker finishes the short one)
    finished_before = {}
    try:
        deadline = time.monotonic() + 480  # an empty numba cache compiles the kernels first, minutes under load
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if not (out / "a_short" / "result.json").is_file():
                continue
            for tmp in sorted(out.glob(".*_long.partial-*")):
                if len(list_masks(tmp)) >= 20:
                    finished_before = {p.parent.name: p.read_text() for p in out.glob("*/result.json")
                                       if not p.parent.name.startswith(".")}  # finished ones, not temporaries
                    victim = tmp.name[1:].split(".partial-")[0]
                    killed = int(tmp.name.split("-")[-2])
                    os.kill(killed, signal.SIGKILL)
                    break
        assert killed is not None, "the long job never got under way"
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    items = json.loads((out / "manifest.json").read_text())["items"]
    assert {k: v["status"] for k, v in items.items()} == {"a_short.avi": "done", "b_long.avi": "done",
                                                          "c_long.avi": "done"}
    redone = json.loads((out / victim / "result.json").read_text())
    assert redone["worker_pid"] != killed and redone["frames"] == 400
    assert list(list_masks(out / victim)) == list(range(1, 401))
    # nothing finished was redone, nothing partial remains
    for name, text in finished_before.items():
        assert (out / name / "result.json").read_text() == text
    assert not [p for p in out.rglob(".*")]
