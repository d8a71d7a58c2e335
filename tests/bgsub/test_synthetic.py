"""The synthetic scene generator: determinism, exact labels, files, the bundled clip."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bgsub.cdnet import load_sequence
from bgsub.sample import SAMPLE_CONFIG, repo_videos_dir
from bgsub.synthetic import SceneConfig, SyntheticScene, main, write_sequence, write_video

SMALL = SceneConfig(width=128, height=96, frames=60, seed=11, objects=5, first_object=5, warmup=10)


def test_same_seed_same_frames_any_order():
    a, b = SyntheticScene(SMALL), SyntheticScene(SMALL)
    for t in (40, 3, 60, 17):  # out of order on purpose
        ia, la = a.render(t)
        ib, lb = b.render(t)
        assert np.array_equal(ia, ib) and np.array_equal(la, lb)
    # Rendering other frames first does not change a frame.
    fresh = SyntheticScene(SMALL)
    assert np.array_equal(fresh.render(17)[0], a.render(17)[0])
    assert [o for o in a.objects] == [o for o in b.objects]


def test_other_seed_other_scene():
    a = SyntheticScene(SMALL)
    b = SyntheticScene(SMALL, seed=12)
    assert not np.array_equal(a.render(30)[0], b.render(30)[0])
    assert a.objects != b.objects


def test_noise_is_fresh_every_frame_but_the_background_is_not():
    scene = SyntheticScene(SMALL, objects=0, water=False, foliage=False, illumination=0.0, timestamp=False)
    f1, f2 = scene.render(1)[0].astype(int), scene.render(2)[0].astype(int)
    diff = f1 - f2
    assert 0 < np.abs(diff).mean() < 6  # only sensor noise between the two
    assert abs(diff.std() / np.sqrt(2) - SMALL.noise_sigma) < 0.6


def test_labels_are_cdnet_values_and_roi_matches():
    scene = SyntheticScene(SMALL)
    seen = set()
    for t in range(1, SMALL.frames + 1, 3):
        img, lab = scene.render(t)
        assert img.shape == (96, 128, 3) and img.dtype == np.uint8
        assert lab.shape == (96, 128) and lab.dtype == np.uint8
        assert np.all((lab == 85) == ~scene.roi)
        seen |= set(np.unique(lab).tolist())
    assert seen == {0, 50, 85, 170, 255}
    # No object before the first one enters: a clean start.
    _, lab1 = scene.render(1)
    assert set(np.unique(lab1).tolist()) == {0, 85}


def test_ground_truth_is_exact():
    """Every pixel labelled static is exactly the empty scene's pixel."""
    full = SyntheticScene(SMALL)
    empty = SyntheticScene(SMALL, objects=0)
    moving = 0
    for t in (15, 30, 45, 60):
        a, lab = full.render(t)
        b, _ = empty.render(t)
        static = lab == 0
        assert np.array_equal(a[static], b[static])
        # Where an object is, the picture did change.
        obj = lab == 255
        moving += obj.sum()
        if obj.any():
            assert np.abs(a[obj].astype(int) - b[obj].astype(int)).max() > 20
        # Shadows darken.
        sh = lab == 50
        if sh.any():
            assert a[sh].astype(int).mean() < b[sh].astype(int).mean() - 3
    assert moving > 0


def test_dynamic_background_defeats_frame_difference_but_not_a_learnt_model():
    import bgsub

    cfg = SceneConfig(width=160, height=120, frames=120, seed=2, objects=0)
    scene = SyntheticScene(cfg)
    dyn = np.zeros((120, 160), bool)
    dyn[scene.water_top:] = True
    fd_fp = knn_fp = total = 0
    knn = bgsub.create("knn")
    prev = None
    for t in range(1, cfg.frames + 1):
        img, lab = scene.render(t)
        mask = knn.apply(img)
        cur = img.astype(np.int16)
        if t > 60:
            fd = np.abs(cur - prev).max(axis=2) > 25
            fd_fp += (fd & dyn).sum()
            knn_fp += ((mask == 255) & dyn).sum()
            total += dyn.sum()
        prev = cur
    assert fd_fp / total > 0.05           # frame difference flags the water
    assert knn_fp / total < fd_fp / total / 2


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="at least 64x48"):
        SyntheticScene(width=10, height=10)
    with pytest.raises(ValueError, match="warmup"):
        SyntheticScene(frames=10, warmup=10)
    with pytest.raises(IndexError, match="outside 1..60"):
        SyntheticScene(SMALL).render(61)


def test_write_sequence_and_video_round_trip(tmp_path):
    cfg = SceneConfig(width=96, height=72, frames=20, seed=4, objects=2, first_object=2, warmup=5)
    scene = SyntheticScene(cfg)
    seq_dir = write_sequence(scene, tmp_path / "seq", image_format="png")
    seq = load_sequence(seq_dir)
    assert seq.frames == list(range(1, 21)) and seq.temporal_roi == (6, 20)
    assert np.array_equal(seq.roi((72, 96)), scene.roi)
    for t in (1, 12, 20):
        img, lab = scene.render(t)
        assert np.array_equal(seq.read_frame(t), img)  # PNG: lossless
        assert np.array_equal(seq.read_groundtruth(t), lab)
    # No temporary folder left beside it.
    assert [p.name for p in tmp_path.iterdir()] == ["seq"]
    video = write_video(scene, tmp_path / "clip.avi")
    cap = cv2.VideoCapture(str(video))
    n = 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        n += 1
        if n == 10:
            assert cv2.PSNR(frame, scene.render(10)[0]) > 28
    cap.release()
    assert n == 20


def test_command_line_writes_the_files(tmp_path, capsys):
    rc = main(["--out", str(tmp_path / "s"), "--video", str(tmp_path / "s.mp4"),
               "--width", "64", "--height", "48", "--frames", "8", "--warmup", "2", "--objects", "1"])
    assert rc == 0
    assert len(list((tmp_path / "s" / "input").glob("in*.jpg"))) == 8
    assert (tmp_path / "s" / "temporalROI.txt").read_text().split() == ["3", "8"]
    assert (tmp_path / "s.mp4").stat().st_size > 0


def test_bundled_clip_is_what_the_generator_makes():
    videos = repo_videos_dir()
    seq_dir = videos / "sample"  # part of the repository: its absence is a failure, not a skip
    seq = load_sequence(seq_dir)
    assert len(seq) == SAMPLE_CONFIG.frames == 300
    assert seq.temporal_roi == (SAMPLE_CONFIG.warmup + 1, 300)
    scene = SyntheticScene(SAMPLE_CONFIG)
    for t in (1, 150, 300):
        img, lab = scene.render(t)
        assert np.array_equal(seq.read_groundtruth(t), lab)
        assert cv2.PSNR(seq.read_frame(t), img) > 28  # JPEG of the same frame
    cap = cv2.VideoCapture(str(videos / "sample.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 300
    assert (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))) == (320, 240)
    cap.release()
    total = sum(p.stat().st_size for p in Path(videos).rglob("*") if p.is_file())
    assert total < 10_000_000


def test_sample_is_rebuilt_into_the_cache_when_the_checkout_has_none(tmp_path, monkeypatch):
    import bgsub.sample as sample

    monkeypatch.setattr(sample, "repo_videos_dir", lambda: tmp_path / "no-videos-here")
    monkeypatch.setenv("BGSUB_CACHE_DIR", str(tmp_path / "cache"))
    small = SceneConfig(width=64, height=48, frames=12, seed=0, objects=1, first_object=2, warmup=3)
    monkeypatch.setattr(sample, "SAMPLE_CONFIG", small)
    seq = sample.sample_sequence()
    assert seq.is_relative_to(tmp_path / "cache")
    assert load_sequence(seq).frames == list(range(1, 13))
    video = sample.sample_video()
    assert video.is_file() and video.is_relative_to(tmp_path / "cache")
    # Second call: found, not re-rendered.
    mtime = (seq / "temporalROI.txt").stat().st_mtime_ns
    assert sample.sample_sequence() == seq
    assert (seq / "temporalROI.txt").stat().st_mtime_ns == mtime
