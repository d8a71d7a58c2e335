"""The Qt-free session model: real sources, real subtractors, real metrics."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from bgsub import registry
from bgsub.metrics import StreamingROC, frame_counts
from bgsub.sources import Frame, SourceError, open_source
from bgsub_gui.model import LatestFrameReader, Session, default_algorithm
from tests.bgsub.test_sources import read_video


def run_all(session: Session) -> list:
    results = []
    while True:
        try:
            results.append(session.step())
        except StopIteration:
            return results


def test_default_algorithm_prefers_the_kernel_subtractors():
    names = registry.algorithms()
    expected = next(n for n in ("olkn", "norma", "knn", "mog2") if n in names)
    assert default_algorithm() == expected


def test_session_scores_like_frame_counts_and_streaming_roc(tiny_sequence):
    session = Session(algo="knn")
    info = session.open(tiny_sequence)
    assert info.kind == "cdnet" and info.has_groundtruth and info.temporal_roi == (4, 24)
    results = run_all(session)
    assert [r.index for r in results] == list(range(1, 25))
    assert [r.scored for r in results] == [n >= 4 for n in range(1, 25)]

    # The same masks and scores, scored independently with bgsub.metrics.
    expected = None
    roc = StreamingROC(*session.score_range)
    with open_source(tiny_sequence) as source:
        for frame, r in zip(source, results):
            assert np.array_equal(frame.image, r.image)
            if frame.index >= 4:
                c = frame_counts(r.mask, frame.groundtruth, frame.roi)
                expected = c if expected is None else expected + c
                roc.update(r.score, frame.groundtruth, frame.roi)
    last = results[-1]
    assert last.counts == expected
    assert last.scored_frames == 21
    assert last.metrics["F"] == pytest.approx(expected.metrics()["F"])
    assert last.roc.auc == pytest.approx(roc.auc())
    assert 0.0 <= last.roc.auc <= 1.0
    assert last.roc.operating_point == pytest.approx(roc.operating_point(0.0))
    assert last.foreground_fraction == pytest.approx(np.count_nonzero(last.mask) / last.mask.size)
    session.close()


def test_no_roc_before_the_temporal_roi(tiny_sequence):
    session = Session(algo="knn")
    session.open(tiny_sequence)
    first = [session.step() for _ in range(3)]
    assert all(r.roc is None and r.counts is None and not r.scored for r in first)
    session.close()


def test_threshold_makes_the_mask_from_the_score(tiny_sequence):
    session = Session(algo="knn", threshold=-0.5)
    session.open(tiny_sequence)
    results = run_all(session)
    for r in results:
        assert np.array_equal(r.mask, np.where(r.score > -0.5, 255, 0).astype(np.uint8))
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        session.set_threshold(float("nan"))


def stepped(tiny_sequence, algo: str, frames: int) -> Session:
    """A session on ``tiny_sequence`` that processed ``frames`` frames."""
    session = Session(algo=algo)
    session.open(tiny_sequence)
    for _ in range(frames):
        session.step()
    return session


def test_parameter_needing_reset_rebuilds_and_clears_metrics(tiny_sequence):
    session = stepped(tiny_sequence, "knn", 6)
    old = session.subtractor
    change = session.set_param("history", 30)
    assert not change.live and "reset" in change.message
    assert session.subtractor is not old and session.subtractor.impl.getHistory() == 30
    assert session.processed == 0
    r = session.step()
    assert r.index == 7 and r.processed == 1 and r.scored_frames == 1


def test_bad_parameter_values_are_refused_and_the_old_value_kept():
    session = Session(algo="knn")
    with pytest.raises(ValueError, match="history must be >= 1"):
        session.set_param("history", 0)
    assert session.params["history"] == 500
    with pytest.raises(ValueError, match="knn has no parameter 'width'"):
        session.set_param("width", 3.0)


def test_live_parameter_keeps_the_learned_model(tiny_sequence):
    session = Session(algo="olkn", params={"budget": 4})
    session.open(tiny_sequence)
    for _ in range(5):
        session.step()
    sub = session.subtractor
    spec = {p.name: p for p in registry.param_specs("olkn")}
    assert spec["width"].live
    change = session.set_param("width", 12.5)
    assert change.live and session.subtractor is sub
    assert sub.get_params()["width"] == 12.5
    assert session.processed == 5
    assert not spec["budget"].live
    change = session.set_param("budget", 6)
    assert not change.live and session.subtractor is not sub
    assert session.subtractor.get_params()["budget"] == 6


def test_value_refused_by_the_subtractor_keeps_the_old_one():
    session = Session(algo="olkn")
    nu = session.params["nu"]
    with pytest.raises(ValueError, match="C must be > nu"):
        session.set_param("C", nu / 2)
    assert session.params["C"] > nu
    assert session.subtractor.get_params()["C"] == session.params["C"]


def test_restart_goes_back_to_the_first_frame(tiny_sequence):
    session = stepped(tiny_sequence, "mog2", 10)
    old = session.subtractor
    session.restart()
    r = session.step()
    assert r.index == 1 and r.processed == 1 and session.subtractor is not old


def test_switching_algorithm(tiny_sequence):
    session = Session(algo="knn")
    session.open(tiny_sequence)
    session.step()
    session.set_algorithm("mog2", {"varThreshold": 25.0})
    assert session.algo == "mog2" and session.params["varThreshold"] == 25.0
    assert session.subtractor.impl.getVarThreshold() == 25.0
    with pytest.raises(ValueError, match="unknown algorithm"):
        session.set_algorithm("nope")
    assert session.algo == "mog2"


def test_load_model_installs_the_checkpoint_and_a_bad_file_changes_nothing(tiny_sequence, tmp_path):
    import bgsub

    session = stepped(tiny_sequence, "olkn", 4)
    path = session.subtractor.save(tmp_path / "olkn.npz")
    session.set_algorithm("norma")
    assert session.load_model(path) == "olkn"
    assert session.algo == "olkn" and session.params == bgsub.load(path).get_params()
    assert session.subtractor.n_frames_ == 4 and session.processed == 0
    r = session.step()
    assert r.processed == 1 and session.subtractor.n_frames_ == 5

    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(path.read_bytes()[:200])
    before = session.subtractor
    with pytest.raises(bgsub.CheckpointError):
        session.load_model(damaged)
    assert session.subtractor is before and session.algo == "olkn"


def test_errors_for_bad_sources(tmp_path):
    session = Session(algo="knn")
    with pytest.raises(SourceError, match="no source is open"):
        session.step()
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(SourceError, match="empty"):
        session.open(empty)
    assert session.source is None
    with pytest.raises(SourceError, match="does not exist"):
        session.open(tmp_path / "missing.avi")


def test_video_file_without_ground_truth(tmp_path):
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (48, 32))
    assert writer.isOpened()
    for n in range(8):
        frame = np.full((32, 48, 3), 90, np.uint8)
        frame[8:16, 4 * n:4 * n + 8] = 250
        writer.write(frame)
    writer.release()
    session = Session(algo="knn")
    info = session.open(path)
    assert info.kind == "video" and not info.has_groundtruth and info.fps == pytest.approx(10.0)
    results = run_all(session)
    assert len(results) == 8
    assert all(r.roc is None and r.metrics is None for r in results)


def test_session_saves_masks_through_the_pipelines_writer(tiny_sequence, tmp_path):
    session = Session(algo="knn")
    session.open(tiny_sequence)
    folder = tmp_path / "out" / "masks"
    session.set_save_folder(folder)
    results = [session.step() for _ in range(3)]
    assert session.save_folder == folder and session.masks_saved == 3
    assert sorted(p.name for p in folder.iterdir()) == ["bin000001.png", "bin000002.png", "bin000003.png"]
    for r in results:  # exactly the masks the window shows, no temporary left
        saved = cv2.imread(str(folder / f"bin{r.index:06d}.png"), cv2.IMREAD_GRAYSCALE)
        assert np.array_equal(saved, r.mask)
    session.set_save_folder(None)
    session.step()
    assert len(list(folder.iterdir())) == 3
    session.close()


def test_mask_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    session = Session(algo="knn")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        session.set_save_folder(blocker / "masks")


def test_outputs_onto_or_inside_the_source_are_refused_and_write_nothing(tiny_sequence, tmp_path):
    before = {p: p.read_bytes() for p in tiny_sequence.rglob("*") if p.is_file()}
    session = Session(algo="olkn")
    session.open(tiny_sequence)
    for folder in (tiny_sequence, tiny_sequence / "input", tiny_sequence / "masks", tmp_path.parent):
        with pytest.raises(ValueError, match="the masks output"):
            session.set_save_folder(folder)
    frame = next(p for p in sorted(before) if p.suffix in (".jpg", ".png"))
    with pytest.raises(ValueError, match="lies inside the input folder"):
        session.set_overlay_video(frame)
    with pytest.raises(ValueError, match="inside"):
        session.set_objects_file(tiny_sequence / "objects.jsonl")
    session.step()
    with pytest.raises(ValueError, match="inside"):
        session.save_model(tiny_sequence / "model.npz")
    assert session.save_folder is None and session.output("overlay") is None
    assert {p: p.read_bytes() for p in tiny_sequence.rglob("*") if p.is_file()} == before
    saved = session.save_model(tmp_path / "model.npz")
    assert saved.exists()
    session.close()


def test_a_mask_folder_holding_other_masks_is_refused(tiny_sequence, tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    cv2.imwrite(str(folder / "bin000001.png"), np.zeros((48, 64), np.uint8))
    session = Session(algo="knn")
    session.open(tiny_sequence)
    with pytest.raises(ValueError, match="did not write"):
        session.set_save_folder(folder)
    session.close()


def test_latest_frame_reader_drops_frames_instead_of_lagging():
    produced = []

    def camera(n=40, period=0.002):
        for i in range(1, n + 1):
            time.sleep(period)
            produced.append(i)
            yield Frame(i, np.full((4, 4, 3), i, np.uint8))

    reader = LatestFrameReader(camera())
    taken = []
    while True:
        try:
            frame = reader.get(timeout=1.0)
        except StopIteration:
            break
        if frame is None:
            continue
        taken.append(frame.index)
        time.sleep(0.01)  # a consumer five times slower than the camera
    assert taken == sorted(taken) and taken[-1] == 40
    assert len(taken) < 40
    assert reader.dropped == 40 - len(taken)
    assert reader.dropped > 0


def test_latest_frame_reader_reports_the_source_error():
    def failing():
        yield Frame(1, np.zeros((2, 2, 3), np.uint8))
        raise SourceError("camera 0 was unplugged")

    reader = LatestFrameReader(failing())
    got = []
    with pytest.raises(SourceError, match="unplugged"):
        for _ in range(50):
            frame = reader.get(timeout=0.5)
            if frame is not None:
                got.append(frame.index)
    # The frame read before the failure is still handed out, then the error.
    assert got == [1]


def test_latest_frame_reader_stops_its_thread():
    stop = threading.Event()

    def endless():
        i = 0
        while not stop.is_set():
            i += 1
            time.sleep(0.001)
            yield Frame(i, np.zeros((2, 2, 3), np.uint8))

    reader = LatestFrameReader(endless())
    assert reader.get(timeout=1.0) is not None
    reader.stop(timeout=2.0)
    assert not reader.running
    stop.set()


@pytest.mark.parametrize("algo", registry.algorithms())
def test_every_registered_algorithm_runs_in_a_session(algo, tiny_sequence):
    session = Session(algo=algo)
    session.open(tiny_sequence)
    results = [session.step() for _ in range(8)]
    last = results[-1]
    lo, hi = session.score_range
    assert lo < hi
    assert last.score is not None and last.score.shape == (48, 64) and last.score.dtype == np.float32
    assert last.mask.dtype == np.uint8 and set(np.unique(last.mask)) <= {0, 255}
    assert last.roc is not None and 0.0 <= last.roc.auc <= 1.0
    assert last.scored_frames == 5
    session.close()


@pytest.mark.parametrize("algo", registry.algorithms())
def test_warm_up_runs_each_algorithm_on_tiny_frames(algo, monkeypatch):
    import bgsub_gui.model
    from bgsub_gui.model import warm_up

    made = []
    real = registry.create

    def create(name, **params):
        sub = real(name, **params)
        made.append((name, sub))
        return sub

    monkeypatch.setattr(bgsub_gui.model.registry, "create", create)
    seconds = warm_up(algo, registry.default_params(algo), frames=3)
    assert seconds > 0.0 and [name for name, _ in made] == [algo]
    score = made[0][1].getScoreMap()  # it really processed frames of the warm-up size
    assert score is not None and score.shape == bgsub_gui.model.WARM_UP_SIZE


def test_warm_up_says_before_it_compiles(monkeypatch):
    """Before numba compiles the kernels (about a minute the first time), the window gets a sentence to show."""
    import bgsub.models.base as base
    from bgsub_gui.model import warm_up

    notes = []
    warm_up("olkn", registry.default_params("olkn"), frames=1)  # compiles them if numba's cache did not hold them
    warm_up("olkn", registry.default_params("olkn"), frames=1, on_compile=notes.append)
    assert notes == []  # in the cache now: nothing to wait for
    monkeypatch.setattr(base, "is_cached", lambda dispatcher: False)
    warm_up("olkn", registry.default_params("olkn"), frames=1, on_compile=notes.append)
    assert len(notes) == 1 and "numba is compiling the frame kernels (olkn_frame_bounded" in notes[0]
    warm_up("knn", registry.default_params("knn"), frames=1, on_compile=notes.append)
    assert len(notes) == 1  # OpenCV's subtractors compile nothing


def test_warm_up_refuses_bad_parameters():
    from bgsub_gui.model import warm_up

    with pytest.raises(ValueError, match="history must be >= 1"):
        warm_up("knn", {"history": 0})


def test_session_roi_scale_and_min_area_go_through_the_pipeline(tiny_sequence):
    with open_source(tiny_sequence) as source:
        h, w = next(iter(source)).image.shape[:2]
    roi = np.zeros((h, w), bool)
    roi[h // 4:, : w // 2] = True
    session = Session(algo="knn", roi=roi, scale=0.5, min_area=3)
    session.open(tiny_sequence)
    results = run_all(session)
    assert all(r.mask.shape == (h, w) and not r.mask[~roi].any() for r in results)
    assert results[0].mask[roi].all()  # KNN's first frame: all foreground, inside the ROI only
    assert results[-1].score.shape == (h, w)
    for r in results:  # no blob under 3 pixels survives
        n, _, stats, _ = cv2.connectedComponentsWithStats((r.mask > 0).astype(np.uint8), connectivity=8)
        assert all(stats[k, cv2.CC_STAT_AREA] >= 3 for k in range(1, n))
    session.close()
    with pytest.raises(ValueError, match="--scale must be in"):
        Session(algo="knn", scale=0)


def test_objects_are_found_when_shown_and_keep_their_track(tiny_sequence):
    session = Session(algo="knn", min_area=0)
    session.open(tiny_sequence)
    assert session.step().objects is None  # nobody asked
    session.set_show_objects(True)
    session.set_min_area(20)
    results = run_all(session)
    tracked = [r for r in results if r.objects]
    assert len(tracked) > 10
    for r in tracked:
        assert all(o.area >= 20 and o.track >= 1 and o.frame == r.index for o in r.objects)
        # every box covers foreground of the final mask
        for o in r.objects:
            assert r.mask[o.y:o.y + o.height, o.x:o.x + o.width].any()
    # The moving square (10x10, 3 pixels a frame) keeps one track id until it wraps around (frame 18).
    square = [o for r in results if 8 <= r.index <= 17 for o in r.objects]
    assert len(square) == 10 and {o.area for o in square} == {100} and len({o.track for o in square}) == 1
    with pytest.raises(ValueError, match="min area must be a whole number >= 0"):
        session.set_min_area(-1)
    session.close()


def test_overlay_video_and_objects_file_are_written_by_the_pipeline_sinks(tiny_sequence, tmp_path):
    from bgsub.pipeline import draw_overlay

    session = Session(algo="knn")
    session.open(tiny_sequence)
    for _ in range(3):
        session.step()
    session.set_overlay_video(tmp_path / "rec" / "overlay.mkv")
    session.set_objects_file(tmp_path / "objects.csv")
    assert session.output("overlay").path == tmp_path / "rec" / "overlay.mkv"
    recorded = [session.step() for _ in range(10)]
    # Nothing under the final names until the recording stops.
    assert not (tmp_path / "rec" / "overlay.mkv").exists() and not (tmp_path / "objects.csv").exists()
    finished = session.set_overlay_video(None)
    assert finished.count == 10 and session.output("overlay") is None
    frames = read_video(tmp_path / "rec" / "overlay.mkv")  # FFV1: lossless
    assert len(frames) == 10
    for frame, r in zip(frames, recorded):
        assert np.array_equal(frame, draw_overlay(r.image, r.mask, r.objects))
    session.step()  # still written to the objects file
    [objects] = session.finish_outputs()
    rows = (tmp_path / "objects.csv").read_text().splitlines()
    assert rows[0] == "frame,track,x,y,width,height,area,cx,cy"
    assert objects.count == len(rows) - 1 > 0
    assert {int(r.split(",")[0]) for r in rows[1:]} <= set(range(4, 15))
    # Opening another source finishes a running recording.
    session.set_objects_file(tmp_path / "again.jsonl")
    session.step()
    session.open(tiny_sequence)
    assert (tmp_path / "again.jsonl").exists() and session.output("objects") is None
    with pytest.raises(ValueError, match="end the name in .jsonl or .csv"):
        session.set_objects_file(tmp_path / "objects.txt")
    session.close()
