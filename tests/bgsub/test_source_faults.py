"""Bad frames and hung reads: one policy for every source, and a close() that never waits on a read."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from bgsub.sources import BadFrameError, SourceError, open_source
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence
from tests.bgsub.test_sources import write_test_video


class HungCapture:
    """A capture whose read() blocks until released by the test (a hung camera or stream)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.unblock = threading.Event()
        self.released = False

    def read(self):
        self.entered.set()
        self.unblock.wait()
        return True, np.zeros((72, 96, 3), np.uint8)

    def release(self):
        self.released = True


def test_close_returns_while_a_read_is_blocked(tmp_path):
    source = open_source(write_test_video(tmp_path / "v.avi", frames=5))
    hung = HungCapture()
    source._cap.release()
    source._cap = hung  # after the probe frame, every read hangs
    frames = iter(source)
    next(frames)  # the probe frame
    reader = threading.Thread(target=lambda: list(frames), daemon=True)
    reader.start()
    assert hung.entered.wait(5)
    t0 = time.perf_counter()
    source.close()
    assert time.perf_counter() - t0 < 0.5
    assert not hung.released  # released by the reader, once its read returns
    hung.unblock.set()
    reader.join(5)
    assert not reader.is_alive() and hung.released


def _folder(tmp_path, images):
    d = tmp_path / "frames"
    d.mkdir()
    for i, img in enumerate(images, start=1):
        cv2.imwrite(str(d / f"f{i:03d}.png"), img)
    return d


def test_size_change_stops_with_the_frame_number(tmp_path):
    a = np.full((24, 32, 3), 90, np.uint8)
    b = np.full((20, 32, 3), 90, np.uint8)
    with open_source(_folder(tmp_path, [a, a, b, a])) as source:
        got = []
        with pytest.raises(BadFrameError) as info:
            for frame in source:
                got.append(frame.index)
    assert got == [1, 2]
    assert info.value.index == 3 and info.value.size == (32, 20) and info.value.expected == (32, 24)
    assert isinstance(info.value, SourceError) and "frame 3 of image folder" in str(info.value)


def test_grey_colour_alpha_and_16_bit_frames_are_all_bgr(tmp_path):
    grey = np.full((24, 32), 200, np.uint8)
    colour = np.full((24, 32, 3), 100, np.uint8)
    bgra = np.full((24, 32, 4), 50, np.uint8)
    deep = np.full((24, 32), 40000, np.uint16)
    with open_source(_folder(tmp_path, [grey, colour, bgra, deep, grey])) as source:
        frames = list(source)
    assert [f.image.shape for f in frames] == [(24, 32, 3)] * 5
    assert all(f.image.dtype == np.uint8 for f in frames)
    assert frames[3].image[0, 0, 0] == 40000 >> 8 and source.decode_errors == 0


def test_undecodable_frames_are_skipped_and_counted(tmp_path):
    img = np.full((24, 32, 3), 90, np.uint8)
    d = _folder(tmp_path, [img] * 4)
    (d / "f002.png").write_bytes(b"\x89PNG broken")
    (d / "f003.png").write_bytes(b"")
    with open_source(d) as source:
        assert [f.index for f in source] == [1, 4]
    assert source.decode_errors == 2 and source.incomplete and "2 could not be decoded" in source.summary()


def test_cdnet_size_change_is_a_bad_frame(tmp_path):
    cfg = SceneConfig(width=64, height=48, frames=6, seed=1, objects=1, first_object=1, warmup=2)
    seq = write_sequence(SyntheticScene(cfg), tmp_path / "seq")
    seq = tmp_path / "seq"
    cv2.imwrite(str(seq / "input" / "in000004.jpg"), np.zeros((40, 64, 3), np.uint8))
    with open_source(seq) as source:
        with pytest.raises(BadFrameError) as info:
            list(source)
    assert info.value.index == 4
