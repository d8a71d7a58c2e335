"""Frame sources: every kind, and every error a user can run into (files made here)."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from bgsub.cdnet import LABEL_OUTSIDE_ROI
from bgsub.sources import (
    CDnetSource,
    Frame,
    FrameSource,
    ImageFolderSource,
    SourceError,
    VideoSource,
    list_cameras,
    natural_sort_key,
    open_source,
)
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence

SMALL = SceneConfig(width=96, height=72, frames=30, seed=5, objects=3, first_object=3, warmup=5)


def write_test_video(path: Path, frames: int = 30, size=(96, 72), fourcc: str | None = None, seed: int = 5, *,
                     objects: int = 3, first_object: int = 3, warmup: int | None = None) -> Path:
    """A small real video of the synthetic scene (MJPG .avi or mp4v .mp4); ``warmup`` defaults to
    ``min(5, frames - 1)``."""
    path = Path(path)
    fourcc = fourcc or ("mp4v" if path.suffix == ".mp4" else "MJPG")
    warmup = min(5, frames - 1) if warmup is None else warmup
    scene = SyntheticScene(SceneConfig(width=size[0], height=size[1], frames=frames, seed=seed,
                                       objects=objects, first_object=first_object, warmup=warmup))
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 25.0, size)
    assert w.isOpened()
    for t in range(1, frames + 1):
        w.write(scene.render(t)[0])
    w.release()
    return path


def read_video(path: Path) -> list:
    """Every frame OpenCV decodes from ``path`` (BGR arrays)."""
    cap = cv2.VideoCapture(str(path))
    frames = []
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                return frames
            frames.append(frame)
    finally:
        cap.release()


def truncate(src: Path, dst: Path, keep: float = 0.5) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * keep)])
    return dst


def corrupt_middle(src: Path, dst: Path, n: int = 1500, seed: int = 0) -> Path:
    data = bytearray(src.read_bytes())
    mid = len(data) // 2
    data[mid:mid + n] = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()
    dst.write_bytes(bytes(data))
    return dst


@pytest.fixture(scope="module")
def avi(tmp_path_factory) -> Path:
    return write_test_video(tmp_path_factory.mktemp("videos") / "clip.avi")


@pytest.fixture(scope="module")
def sequence(tmp_path_factory) -> Path:
    return write_sequence(SyntheticScene(SMALL), tmp_path_factory.mktemp("seq") / "street")


# ---------------------------------------------------------------- each kind


@pytest.mark.parametrize("suffix", [".avi", ".mp4"])
def test_video_file_delivers_every_frame_numbered_from_one(tmp_path, suffix):
    path = write_test_video(tmp_path / f"clip{suffix}", frames=24)
    with open_source(path) as src:
        assert isinstance(src, VideoSource)
        assert (src.kind, src.is_live, src.name) == ("video", False, "clip")
        assert src.frame_count == 24
        assert src.fps == pytest.approx(25.0)
        assert src.size == (96, 72)
        frames = list(src)
        assert [f.index for f in frames] == list(range(1, 25))
        assert all(f.image.shape == (72, 96, 3) and f.image.dtype == np.uint8 for f in frames)
        assert all(f.groundtruth is None and f.roi is None for f in frames)
        assert src.frames_read == 24 and src.decode_errors == 0 and not src.incomplete
        # A second pass starts again from the first frame, with the same pixels.
        again = list(src)
        assert [f.index for f in again] == list(range(1, 25))
        assert np.array_equal(again[5].image, frames[5].image)
    assert src.closed
    with pytest.raises(SourceError, match="closed"):
        list(src)


def test_video_start_and_max_frames(avi):
    with open_source(str(avi), start=5, max_frames=7) as src:
        assert src.frame_count == 7
        assert [f.index for f in src] == list(range(5, 12))


def test_image_folder_natural_order_and_formats(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    # Written out of order; natural order is 1, 2, 10 (not 1, 10, 2).
    values = {"img10.png": 30, "img2.jpg": 20, "img1.png": 10}
    for name, v in values.items():
        grey = np.full((20, 30), v, np.uint8)
        cv2.imwrite(str(folder / name), grey)
    rgba = np.zeros((20, 30, 4), np.uint8)
    rgba[..., :3] = 40
    rgba[..., 3] = 255
    cv2.imwrite(str(folder / "img11.png"), rgba)
    (folder / "notes.txt").write_text("not an image")
    with open_source(folder) as src:
        assert isinstance(src, ImageFolderSource)
        assert src.kind == "images" and not src.is_live and src.fps is None
        assert src.frame_count == 4 and src.size == (30, 20)
        frames = list(src)
    assert [f.index for f in frames] == [1, 2, 3, 4]
    assert [int(np.median(f.image)) for f in frames] == [10, 20, 30, 40]
    assert all(f.image.shape == (20, 30, 3) for f in frames)
    assert sorted(["a10", "a9", "A1"], key=natural_sort_key) == ["A1", "a9", "a10"]


def test_image_folder_skips_an_unreadable_image_and_keeps_numbering(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in (1, 2, 4):
        cv2.imwrite(str(folder / f"f{i:03d}.png"), np.full((10, 12, 3), i, np.uint8))
    (folder / "f003.png").write_bytes(b"\x89PNG broken")
    with open_source(folder) as src:
        frames = list(src)
        assert [f.index for f in frames] == [1, 2, 4]
        assert src.decode_errors == 1
        assert "could not be decoded" in src.summary()


def test_image_folder_rejects_a_frame_of_another_size(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "1.png"), np.zeros((10, 12), np.uint8))
    cv2.imwrite(str(folder / "2.png"), np.zeros((11, 12), np.uint8))
    with open_source(folder) as src:
        with pytest.raises(SourceError, match="same size"):
            list(src)


def test_cdnet_sequence_carries_groundtruth_and_roi(sequence):
    with open_source(sequence) as src:
        assert isinstance(src, CDnetSource)
        assert src.kind == "cdnet" and src.sequence is not None
        assert src.sequence.temporal_roi == (6, 30)
        assert src.frame_count == 30
        frames = list(src)
    assert [f.index for f in frames] == list(range(1, 31))
    f = frames[-1]
    assert f.groundtruth.shape == (72, 96) and f.groundtruth.dtype == np.uint8
    assert f.roi.dtype == bool and f.roi.shape == (72, 96)
    # The timestamp box is outside the ROI and labelled 85 there.
    assert not f.roi.all()
    assert np.all(f.groundtruth[~f.roi] == LABEL_OUTSIDE_ROI)
    assert set(np.unique(f.groundtruth)) <= {0, 50, 85, 170, 255}


def test_bundled_sample_opens_as_cdnet_and_as_video():
    from bgsub.sample import sample_sequence, sample_video

    with open_source(sample_sequence(), max_frames=3) as src:
        assert src.kind == "cdnet" and src.size == (320, 240)
        first = next(iter(src))
        assert first.groundtruth is not None
    with open_source(sample_video()) as src:
        assert src.kind == "video" and src.frame_count == 300 and src.size == (320, 240)


def test_frame_is_the_documented_record():
    f = Frame(3, np.zeros((2, 2, 3), np.uint8))
    assert (f.index, f.groundtruth, f.roi) == (3, None, None)
    assert issubclass(SourceError, ValueError)
    assert issubclass(VideoSource, FrameSource)


# ---------------------------------------------------------------- damaged videos


def test_truncated_video_yields_what_decodes_and_says_so(tmp_path, avi):
    bad = truncate(avi, tmp_path / "cut.avi", keep=0.5)
    with open_source(bad) as src:
        frames = list(src)
        assert 0 < len(frames) < 30
        assert [f.index for f in frames] == list(range(1, len(frames) + 1))
        assert src.frame_count == 30 and src.frames_read == len(frames)
        assert src.incomplete
        assert f"{len(frames)} frames read" in src.summary()
        assert "expected 30" in src.summary() and "truncated" in src.summary()


def test_partly_corrupt_video_keeps_going_after_the_damage(tmp_path, avi):
    bad = corrupt_middle(avi, tmp_path / "hole.avi", n=1200)
    with open_source(bad) as src:
        frames = list(src)
        assert src.decode_errors >= 1 or src.frames_read < 30
        assert src.incomplete
        # Frames after the damaged stretch still come out.
        assert frames[-1].index > 15
        assert len(frames) < 30


# ---------------------------------------------------------------- errors


def test_missing_path(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        open_source(tmp_path / "nope.mp4")
    with pytest.raises(SourceError, match="does not exist"):
        open_source(tmp_path / "no_folder" / "clip.avi")


def test_missing_path_suggests_similar_names(tmp_path, avi):
    (tmp_path / "clip_final.avi").write_bytes(avi.read_bytes())
    with pytest.raises(SourceError, match="clip_final.avi"):
        open_source(tmp_path / "clip_fnal.avi")


def test_zero_byte_file(tmp_path):
    empty = tmp_path / "empty.mp4"
    empty.touch()
    with pytest.raises(SourceError, match="empty"):
        open_source(empty)


@pytest.mark.parametrize("name,content", [
    ("notes.mp4", b"this is a text file, not a video\n" * 20),
    ("noise.avi", bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8))),
    ("README", b"plain text without a suffix\n"),
])
def test_non_video_file(tmp_path, name, content):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(SourceError, match="not a video file"):
        open_source(p)


def test_truncated_mp4_without_index_is_not_a_video(tmp_path):
    # OpenCV writes the mp4 index (moov) last: half a file cannot be opened.
    good = write_test_video(tmp_path / "clip.mp4", frames=20)
    bad = truncate(good, tmp_path / "cut.mp4", keep=0.5)
    with pytest.raises(SourceError, match="damaged"):
        open_source(bad)


def test_single_image_is_refused_with_a_hint(tmp_path):
    img = tmp_path / "frames" / "a.png"
    img.parent.mkdir()
    cv2.imwrite(str(img), np.zeros((8, 8), np.uint8))
    with pytest.raises(SourceError, match="single image"):
        open_source(img)


def test_folder_without_images(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(SourceError, match="holds no images.*sub-folders: sub"):
        open_source(tmp_path)


def test_folder_whose_images_are_all_unreadable(tmp_path):
    for i in range(3):
        (tmp_path / f"{i}.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(SourceError, match="none of the 3 image files"):
        open_source(tmp_path)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads folders regardless of permissions")
def test_unreadable_folder_by_permissions(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    cv2.imwrite(str(locked / "1.png"), np.zeros((8, 8), np.uint8))
    locked.chmod(0)
    try:
        with pytest.raises(SourceError, match="permission denied"):
            open_source(locked)
    finally:
        locked.chmod(0o755)


def test_unreadable_folder_reports_permission_denied(tmp_path, monkeypatch):
    # Runs as root too: the OS refusal is injected where the folder is listed.
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "1.png"), np.zeros((8, 8), np.uint8))
    real_scandir = os.scandir

    def refuse(path="."):
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(SourceError, match="cannot read the folder .* permission denied"):
        ImageFolderSource(folder)


def test_camera_that_does_not_open_says_how_to_pick_another():
    # No camera has index 7 here (nor, in CI, any other).
    with pytest.raises(SourceError, match=r"camera 7 could not be opened") as info:
        open_source(7)
    msg = str(info.value)
    assert ("bgsub run" in msg) or ("no camera opens" in msg)
    with pytest.raises(SourceError, match="camera 7"):
        open_source("7")
    assert isinstance(list_cameras(max_index=2), list)


def test_bad_options():
    with pytest.raises(SourceError, match="max_frames"):
        open_source(".", max_frames=0)
    with pytest.raises(SourceError, match="start"):
        open_source(".", start=0)
    with pytest.raises(TypeError, match="unknown options"):
        open_source(".", speed=2)
    with pytest.raises(SourceError, match="empty"):
        open_source("  ")


def test_close_from_another_thread_ends_iteration_cleanly(tmp_path):
    import threading

    path = write_test_video(tmp_path / "long.avi", frames=200, size=(64, 48))
    src = open_source(path)
    got, errors, started = [], [], threading.Event()

    def read():
        try:
            for frame in src:
                got.append(frame.index)
                started.set()
        except Exception as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(30)
    src.close()
    reader.join(30)
    assert not reader.is_alive() and errors == []
    assert got == list(range(1, len(got) + 1))
