"""``process_scale``: the model at a fraction of the frame size, every output at the input's size; the fast preset."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import bgsub
from tests.bgsub.test_pipeline import H, W, square_frames


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_outputs_come_back_at_the_input_size_and_the_model_is_smaller(algo):
    sub = bgsub.create(algo, process_scale=0.5, median=0)
    for f in square_frames(20):
        mask = sub.apply(f)
    assert mask.shape == (H, W) and mask.dtype == np.uint8
    assert sub.frame_shape_ == (H // 2, W // 2) and sub.input_shape_ == (H, W)
    assert sub.samples_.shape[:2] == (H // 2, W // 2)
    assert sub.getScoreMap().shape == (H, W)
    assert sub.getRawMask().shape == (H, W)
    assert sub.getBackgroundImage().shape == (H, W, 3)
    # the moving square (rows 20-31) is found (olkn: and the static background is clean)
    assert mask[22:30, :].mean() > mask[:12].mean()
    assert algo != "olkn" or not mask[:12].any()
    # the score map and the raw mask agree at the input size as they do at the model's
    assert np.array_equal(sub.getScoreMap() > 0, sub.getRawMask() > 0)


def test_scale_one_is_the_plain_model():
    a, b = bgsub.create("olkn"), bgsub.create("olkn", process_scale=1.0)
    for f in square_frames(12):
        assert np.array_equal(a.apply(f), b.apply(f))


def test_a_size_change_names_the_input_sizes():
    sub = bgsub.create("olkn", process_scale=0.5)
    sub.apply(square_frames(1)[0])
    with pytest.warns(bgsub.NewModelWarning, match=f"frame size changed from {W}x{H} to 40x30"):
        assert sub.apply(np.zeros((30, 40, 3), np.uint8)).shape == (30, 40)
    assert sub.frame_shape_ == (15, 20)


def test_checkpoint_round_trip_keeps_the_scaled_model(tmp_path):
    frames = square_frames(20)
    whole = bgsub.create("olkn", process_scale=0.5)
    first = bgsub.create("olkn", process_scale=0.5)
    for f in frames[:10]:
        whole.apply(f)
        first.apply(f)
    first.save(tmp_path / "ck.npz")
    resumed = bgsub.load(tmp_path / "ck.npz")
    for f in frames[10:]:
        assert np.array_equal(whole.apply(f), resumed.apply(f))


def test_fast_preset_models_a_quarter_of_the_frame():
    algo = "olkn"
    from bgsub.settings import resolve_algorithm

    name, params = resolve_algorithm(algo, [], None, "fast")
    sub = bgsub.create(name, **params)
    assert sub.params["process_scale"] == 0.25
    for f in square_frames(16):
        mask = sub.apply(f)
    assert mask.shape == (H, W)


_DATA = Path(os.environ.get("OLK_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
_HIGHWAY = _DATA / "bgs" / "cdnet2014" / "highway"


@pytest.mark.skipif(not _HIGHWAY.is_dir(), reason=f"CDnet highway not found at {_HIGHWAY} (set OLK_DATA_DIR)")
def test_fast_preset_scores_at_least_knn_on_highway():
    """Data test: 120 scored highway frames (after its 469 warm-up frames), F of olkn's fast preset >= KNN's."""
    import cv2

    from bgsub.cdnet import load_sequence
    from bgsub.metrics import SequenceScorer
    from bgsub.settings import resolve_algorithm

    seq = load_sequence(_HIGHWAY)
    numbers = [n for n in seq.frames if n <= seq.temporal_roi[0] + 119]
    name, params = resolve_algorithm("olkn", [], None, "fast")
    subs = {"fast": bgsub.create(name, **params), "knn": cv2.createBackgroundSubtractorKNN()}
    scorers = {k: SequenceScorer(keep_frames=False) for k in subs}
    roi = None
    for n in numbers:
        img = seq.read_frame(n)
        roi = seq.roi(img.shape[:2]) if roi is None else roi
        for k, sub in subs.items():
            mask = sub.apply(img)
            if seq.is_scored(n):
                scorers[k].add(n, mask, seq.read_groundtruth(n), roi)
    f_fast, f_knn = scorers["fast"].metrics()["F"], scorers["knn"].metrics()["F"]
    assert f_fast >= f_knn, (f_fast, f_knn)


def test_fgmask_is_filled_at_the_input_size():
    sub = bgsub.create("olkn", process_scale=0.5)
    out = np.full((H, W), 7, np.uint8)
    for f in square_frames(12):
        got = sub.apply(f, out)
    assert got is out and set(np.unique(out)) <= {0, 255}
    half = np.full((H // 2, W // 2), 7, np.uint8)  # not the input's size: left alone, as OpenCV does
    got = sub.apply(square_frames(1)[0], half)
    assert got is not half and got.shape == (H, W) and (half == 7).all()


def test_the_pipeline_scale_is_the_models_process_scale():
    """``--scale`` and ``process_scale`` are one knob: a pipeline hands its scale to a model that scales its
    frames itself, so the frame is resized once; its masks are the model's own at that scale."""
    from bgsub.pipeline import Pipeline, Region
    from bgsub.sources import Frame

    roi = np.zeros((H, W), bool)
    roi[4:, 8:] = True
    sub = bgsub.createOLKN(preset="fast")
    pipe = Pipeline(sub, region=Region(roi, scale=0.5))
    assert sub.params["process_scale"] == 0.5 and pipe.region.scale == 1.0 and pipe.region.roi is roi
    alone = bgsub.createOLKN(preset="fast", process_scale=0.5)
    for i, f in enumerate(square_frames(12)):
        mask = pipe.process(Frame(i, f)).mask
        assert mask.shape == (H, W) and not mask[:4].any() and not mask[:, :8].any()
        assert np.array_equal(mask[4:, 8:], alone.apply(np.ascontiguousarray(f[4:, 8:])))
    assert sub.frame_shape_ == ((H - 4) // 2, (W - 8) // 2)


def test_a_scale_the_model_refuses_names_the_option():
    from bgsub.pipeline import Pipeline, Region

    with pytest.raises(ValueError, match=r"^--scale 0.05 does not suit olkn: process_scale"):
        Pipeline(bgsub.create("olkn"), region=Region(scale=0.05))


def test_a_resumed_model_at_another_scale_is_refused_not_reset():
    from bgsub.pipeline import Pipeline, Region

    sub = bgsub.create("olkn", process_scale=0.5)
    for f in square_frames(3):
        sub.apply(f)
    Pipeline(sub, region=Region(scale=0.5))  # its own scale: kept
    assert sub.n_frames_ == 3
    with pytest.raises(ValueError, match=r"^--scale 0.25 does not match the model's process_scale 0.5"):
        Pipeline(sub, region=Region(scale=0.25))
    assert sub.n_frames_ == 3 and sub.params["process_scale"] == 0.5


@pytest.mark.parametrize("command", ["run", "batch", "eval"])
def test_the_commands_refuse_a_scale_the_model_refuses_before_any_work(command, tmp_path, capsys):
    from bgsub.cli import main as cli

    (tmp_path / "in").mkdir()
    args = {"run": ["run", str(tmp_path / "in"), "--out", str(tmp_path / "masks")],
            "batch": ["batch", str(tmp_path / "in"), str(tmp_path / "out")],
            "eval": ["eval", str(tmp_path / "in")]}[command]
    assert cli(args + ["--algo", "olkn", "--scale", "0.05"]) == 2
    err = capsys.readouterr().err
    assert f"bgsub {command}: error: --scale 0.05 does not suit olkn" in err, err
    assert not (tmp_path / "masks").exists() and not (tmp_path / "out").exists()
