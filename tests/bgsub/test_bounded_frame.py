"""olkn's bounded engine (``score_map="bounded"``): the exact engine's masks and model, fewer sums."""

from __future__ import annotations

import glob
import math

import cv2
import numpy as np
import pytest

import bgsub
from bgsub import checkpoint
from bgsub.models import _bounded_frame as bf
from bgsub.pipeline import Pipeline
from learners.kernels import gaussian_lut
from tests._scripts import load_benchmark

STATE = ("samples_", "coef_", "ring_", "rho_", "blink_", "prev_mask_", "post_mask_")


def _stream(T=60, H=24, W=32, seed=0, grey=False):
    """A noisy, slowly brightening background with a waving patch and objects crossing, uint8."""
    rng = np.random.default_rng(seed)
    base = rng.integers(40, 200, (H, W, 3)).astype(np.float64)
    frames = []
    for t in range(T):
        fr = base + 0.3 * t + rng.normal(0, 3, base.shape)
        fr[2:8, 2:8] += 60 * math.sin(t / 2)  # a dynamic background
        c = (3 * t) % W
        fr[10:16, c:c + 5] = (240, 30, 30)  # an object
        if 30 <= t < 33:
            fr += 70  # a sudden global change
        frames.append(np.clip(fr, 0, 255).astype(np.uint8))
    frames = np.array(frames)
    if grey:
        frames = frames.mean(axis=3).astype(np.uint8)
    return frames


def _run_both(frames, learning_rates=None, **params):
    """(exact, bounded) subtractors after the same frames, and their masks and scores per frame."""
    out = []
    for score_map in ("exact", "bounded"):
        sub = bgsub.createOLKN(score_map=score_map, **params)
        masks, scores = [], []
        for t, fr in enumerate(frames):
            lr = -1 if learning_rates is None else learning_rates[t]
            masks.append(sub.apply(fr, learningRate=lr))
            scores.append(sub.getScoreMap())
        out.append((sub, np.array(masks), np.array(scores)))
    return out


def _assert_same(exact, bounded):
    (e, e_masks, e_scores), (b, b_masks, b_scores) = exact, bounded
    np.testing.assert_array_equal(b_masks, e_masks)
    np.testing.assert_array_equal(b.getRawMask(), e.getRawMask())
    np.testing.assert_array_equal(b_scores > 0, e_scores > 0)  # the score map keeps its sign
    for name in STATE:
        np.testing.assert_array_equal(getattr(b, name), getattr(e, name), err_msg=name)
    assert b.scale_ == e.scale_ and b.n_steps_ == e.n_steps_


@pytest.mark.parametrize("params", [
    {},  # the defaults: quantile offsets, diffusion, blink feedback, neighbour bootstrap
    {"rho_rule": "paper", "init": "empty", "blink_gain": 0.0, "diffuse_prob": 0.0},
    {"update_prob": 1.0, "fg_update_prob": 1.0, "diffuse_prob": 0.5},
    {"blink_gain": 0.6, "blink_up": 0.3, "update_prob": 0.1},
    {"r": 0.2, "width": 15.0, "C": 0.5},  # renormalises the global scale (caches rescaled)
    {"budget": 7, "nu": 0.3, "C": 0.4},
])
def test_bounded_engine_equals_the_exact_one(params):
    T = 150 if params.get("r", 0) > 0.1 else 60  # r = 0.2 renormalises the global scale at ~126 frames
    exact, bounded = _run_both(_stream(T=T), **params)
    _assert_same(exact, bounded)
    if T == 150:
        assert bounded[0].n_frames_ * math.log1p(params["r"]) > math.log(1e10)


def test_bounded_engine_grey_frames_and_frozen_frames():
    frames = _stream(grey=True)
    rates = [0.0 if 20 <= t < 25 else -1 for t in range(len(frames))]
    exact, bounded = _run_both(frames, rates, color="gray")
    _assert_same(exact, bounded)


def test_bounded_engine_equals_exact_on_highway(highway):
    files = sorted(glob.glob(str(highway / "input" / "*.jpg")))[600:640]
    frames = np.array([cv2.imread(f) for f in files])
    exact, bounded = _run_both(frames)
    _assert_same(exact, bounded)
    b = bounded[0]
    # it is the point: most pixels are settled by their bound
    assert b._summed.sum() < 0.3 * frames.shape[1] * frames.shape[2]


def test_parameter_change_mid_stream_invalidates_the_cache():
    frames = _stream()
    subs = [bgsub.createOLKN(score_map=m) for m in ("exact", "bounded")]
    for t, fr in enumerate(frames):
        if t == 25:
            for s in subs:
                s.set_params(width=25.0, rho_eta=0.05)  # a new kernel table: the cached sums are void
        masks = [s.apply(fr) for s in subs]
        np.testing.assert_array_equal(masks[1], masks[0])
    for name in STATE:
        np.testing.assert_array_equal(getattr(subs[1], name), getattr(subs[0], name))


def test_switching_engines_mid_stream_keeps_the_model_exact():
    frames = _stream()
    ref = bgsub.createOLKN(score_map="exact")
    sub = bgsub.createOLKN(score_map="bounded")
    for t, fr in enumerate(frames):
        if t in (15, 40):
            sub.set_params(score_map="exact" if t == 15 else "bounded")
        np.testing.assert_array_equal(sub.apply(fr), ref.apply(fr))
    np.testing.assert_array_equal(sub.coef_, ref.coef_)


def test_checkpoint_resume_equals_an_uninterrupted_run(tmp_path):
    frames = _stream()
    whole = bgsub.createOLKN()
    first = bgsub.createOLKN()
    for fr in frames[:30]:
        whole.apply(fr)
        first.apply(fr)
    checkpoint.save(first, tmp_path / "m.npz")
    resumed = checkpoint.load(tmp_path / "m.npz")  # the cache is not saved: rebuilt on the next frame
    for fr in frames[30:]:
        np.testing.assert_array_equal(resumed.apply(fr), whole.apply(fr))


def test_buffers_that_fill_after_a_checkpoint_keep_the_bounded_engine_exact(tmp_path):
    """The bounded engine skips each pixel's count once every buffer is full; a model saved while its buffers
    were still filling (an empty start, frames that did not learn) and loaded again must be checked anew."""
    frames = _stream()
    rates = [0.0 if 3 <= t < 6 else 0.3 for t in range(len(frames))]
    params = dict(init="empty", budget=12)
    ref = bgsub.createOLKN(score_map="exact", **params)
    sub = bgsub.createOLKN(**params)
    for t in range(8):
        np.testing.assert_array_equal(sub.apply(frames[t], learningRate=rates[t]),
                                      ref.apply(frames[t], learningRate=rates[t]))
    assert not sub._buffers_full and (sub.ring_[..., 1] < 12).any()
    checkpoint.save(sub, tmp_path / "m.npz")
    sub = checkpoint.load(tmp_path / "m.npz")
    for t in range(8, len(frames)):
        np.testing.assert_array_equal(sub.apply(frames[t], learningRate=rates[t]),
                                      ref.apply(frames[t], learningRate=rates[t]))
    assert sub._buffers_full
    for name in STATE:
        np.testing.assert_array_equal(getattr(sub, name), getattr(ref, name), err_msg=name)


def test_frame_ab_script_times_the_kernel_on_one_state(highway, tmp_path, capsys):
    """benchmarks/bounded_frame_ab.py runs the tree's kernel on one frame and state (a variant module, compiled
    afresh, would take most of a minute here); without the data it says where it looked."""
    ab = load_benchmark("bounded_frame_ab")
    assert ab.main(["--size", "64x48", "--reps", "2", "--data", str(highway.parents[2])]) == 0
    out = capsys.readouterr().out
    assert "64x48" in out and "same as the tree's: True" in out
    assert ab.main(["--data", str(tmp_path)]) == 2
    assert "CDnet highway not found" in capsys.readouterr().err


def test_the_bounded_engine_runs_unless_exact_scores_or_texture_are_asked_for():
    assert bgsub.createOLKN()._bounded()
    assert bgsub.createOLKN(rho_rule="paper")._bounded()
    assert not bgsub.createOLKN(score_map="exact")._bounded()
    assert not bgsub.createOLKN(texture=20.0)._bounded()


def test_gaussian_slope_bounds_the_table():
    # the bound's premise: |k(d1) - k(d2)| <= slope |d1 - d2| + (the table's float32 rounding, which
    # BOUND_SLACK covers) for the table's Gaussian, between neighbouring entries and hence any two
    for width in (5.0, 10.0, 40.0, 120.0):
        lut = gaussian_lut(width, 3 * 255 * 255).astype(np.float64)
        d = np.sqrt(np.arange(lut.size, dtype=np.float64))
        slope = bf.gaussian_slope(width)
        assert np.all(np.abs(np.diff(lut)) <= slope * np.diff(d) + 2 ** -23)
        assert 2 ** -23 < bf.BOUND_SLACK / 10
        exact = np.exp(-d ** 2 / width ** 2)
        assert np.max(np.abs(np.diff(exact)) / np.diff(d)) > 0.999 * slope  # and it is tight


def test_bounded_scores_lie_within_the_bound_of_the_exact_ones():
    frames = _stream()
    (e, _, e_scores), (b, _, b_scores) = _run_both(frames)
    # a skipped pixel's score is off by at most its bound: scale * mass * slope * 255 sqrt(3)
    worst = b.scale_ * float(b._ref_mass.max()) * (bf.gaussian_slope(b.params["width"]) * 255 * math.sqrt(3) + 1e-4)
    assert np.abs(b_scores - e_scores).max() <= worst
    assert np.abs(b_scores - e_scores).max() > 0  # and they are not all summed


def test_a_pipeline_that_needs_scores_asks_for_exact_ones():
    frames = _stream(T=3)
    sub = bgsub.createOLKN()
    pipe = Pipeline(sub)
    for t, fr in enumerate(frames):
        pipe.process(_frame(fr, t))
    assert sub.params["score_map"] == "bounded"  # masks only: the bounded engine runs
    pipe = Pipeline(sub, keep_score=True)
    pipe.process(_frame(frames[0], 3))
    assert sub.params["score_map"] == "exact"
    knn = bgsub.create("knn")
    Pipeline(knn, keep_score=True).process(_frame(frames[0], 0))  # no such parameter: left alone


def _frame(image, index):
    from bgsub.sources import Frame
    return Frame(index=index, image=image)
