"""Pipeline.run's reader and writer threads: same outputs as one thread, same frame policy, no threads left."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.pipeline import Checkpoints, MaskFiles, ObjectsFile, Pipeline, Scores, Sink
from bgsub.sources import open_source
from bgsub.writers import list_masks

from tests.bgsub.test_pipeline import square_frames


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("threads") / "frames"
    d.mkdir()
    for t, img in enumerate(square_frames(24), 1):
        cv2.imwrite(str(d / f"f{t:03d}.png"), img)
    return d


def _pipeline_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in ("bgsub-reader", "bgsub-writer")]


def _run(folder: Path, out: Path, threads: bool, extra=()):
    sinks = [MaskFiles(out), ObjectsFile(out / "objects.jsonl"), Scores(roc=False), *extra]
    with open_source(str(folder)) as source:
        result = Pipeline(bgsub.create("olkn"), min_area=4, sinks=sinks).run(source, threads=threads)
    return result


def test_threaded_run_writes_exactly_what_a_single_thread_writes(folder, tmp_path):
    one = _run(folder, tmp_path / "one", threads=False)
    two = _run(folder, tmp_path / "two", threads=True)
    assert one.error is None and two.error is None
    assert one.frames == two.frames == 24
    assert sorted(list_masks(tmp_path / "one")) == sorted(list_masks(tmp_path / "two")) == list(range(1, 25))
    for n in range(1, 25):
        a = cv2.imread(str(tmp_path / "one" / f"bin{n:06d}.png"), cv2.IMREAD_GRAYSCALE)
        b = cv2.imread(str(tmp_path / "two" / f"bin{n:06d}.png"), cv2.IMREAD_GRAYSCALE)
        assert np.array_equal(a, b), n
    assert (tmp_path / "one" / "objects.jsonl").read_text() == (tmp_path / "two" / "objects.jsonl").read_text()
    assert _pipeline_threads() == []


class _FailsAt(Sink):
    background = True

    def __init__(self, at: int) -> None:
        self.at = at
        self.seen: list[int] = []

    def write(self, out):
        if out.index == self.at:
            raise OSError(28, "No space left on device")
        self.seen.append(out.index)


def test_a_write_failing_on_the_writer_thread_stops_the_run_at_that_frame(folder, tmp_path):
    failing = _FailsAt(7)
    result = _run(folder, tmp_path / "m", threads=True, extra=[failing])
    assert result.error is not None and result.error.startswith("frame 7: ")
    assert "No space left on device" in result.error
    assert failing.seen == list(range(1, 7))  # nothing after the failed frame
    assert _pipeline_threads() == []


class _Stopper(Sink):
    """Stops the run from the writer thread (as a closed window would)."""

    background = True

    def write(self, out):
        return out.index < 5


def test_a_background_sink_can_stop_the_run(folder, tmp_path):
    result = _run(folder, tmp_path / "m", threads=True, extra=[_Stopper()])
    assert result.interrupted and result.error is None
    assert 5 <= result.frames < 24
    assert _pipeline_threads() == []


class _CountingCheckpoints(Checkpoints):
    """Records how many masks were on disk when each checkpoint was saved."""

    def __init__(self, subtractor, path, every, masks: Path) -> None:
        super().__init__(subtractor, path, every)
        self.masks = masks
        self.on_disk: list[tuple[int, int]] = []
        self.frame = 0

    def write(self, out):
        self.frame = out.index
        super().write(out)

    def _save(self):
        super()._save()
        self.on_disk.append((self.frame, len(list_masks(self.masks))))


def test_a_checkpoint_is_saved_only_after_the_masks_up_to_it_are_written(folder, tmp_path):
    sub = bgsub.create("olkn")
    out = tmp_path / "m"
    ck = _CountingCheckpoints(sub, tmp_path / "ck.npz", 5, out)
    with open_source(str(folder)) as source:
        result = Pipeline(sub, sinks=[MaskFiles(out), ck]).run(source, threads=True)
    assert result.error is None
    assert ck.on_disk[:4] == [(5, 5), (10, 10), (15, 15), (20, 20)]
    assert ck.on_disk[-1] == (24, 24)  # the final save, after the writer finished


def test_a_source_error_mid_stream_is_reported_from_the_reader_thread(tmp_path):
    d = tmp_path / "frames"
    d.mkdir()
    for t, img in enumerate(square_frames(12), 1):
        cv2.imwrite(str(d / f"f{t:03d}.png"), img)
    small = np.zeros((30, 40, 3), np.uint8)  # another size: the pipeline stops there
    cv2.imwrite(str(d / "f013.png"), small)
    with open_source(str(d)) as source:
        result = Pipeline(bgsub.create("knn"), sinks=[MaskFiles(tmp_path / "m")]).run(source, threads=True)
    assert result.error is not None and result.error.startswith("frame 13")
    assert len(list_masks(tmp_path / "m")) == 12
    assert _pipeline_threads() == []
