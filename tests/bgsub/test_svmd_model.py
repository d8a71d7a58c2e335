"""The per-pixel SVMD subtractor: the same SVMD novelty step as SVMDOneClass, per pixel, and its interface."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.augment import translate
from bgsub.models import SVMDSubtractor
from learners import SVMDOneClass
from learners import svmd_steps as S
from learners._persist import read_checkpoint, write_checkpoint
from tests.bgsub.test_models import RAW, _stream

PARAMS = dict(width=30.0, eta0=0.2, mu=0.2, decay=0.95, lam=0.05, nu=0.1, budget=8)


@pytest.mark.parametrize("update_mask", ["raw", "post"])
def test_pixel_equals_the_svmd_novelty_step_of_the_estimator(update_mask):
    frames = _stream(T=150)
    sub = bgsub.create("svmd", **dict(RAW, update_mask=update_mask), **PARAMS)
    scores = np.array([(sub.apply(fr), sub.getScoreMap())[1] for fr in frames])
    for (i, j) in [(0, 0), (1, 2), (3, 4)]:
        est = SVMDOneClass(kernel="gaussian", width=30.0, eta0=0.2, mu=0.2, decay=0.95, lam=0.05, nu=0.1,
                           budget=8, store_eta_trace=True)
        ref = -est.learn_stream(frames[:, i, j].astype(np.float64))  # eps - f before each step
        np.testing.assert_allclose(scores[:, i, j], ref.astype(np.float32), rtol=1e-6, atol=1e-6)
        assert sub.eta_[i, j] == pytest.approx(est.eta_, rel=1e-12)
        assert sub.rho_[i, j] == pytest.approx(est.margin_, rel=1e-12)
    # every pixel adapts its own step size
    assert len(np.unique(np.round(sub.eta_, 12))) > 5
    assert masks_flag_objects(frames, **PARAMS)


def masks_flag_objects(frames, **params):
    sub = bgsub.create("svmd", **dict(RAW, update_mask="raw"), **params)
    masks = np.array([sub.apply(fr) for fr in frames])
    return masks[[60, 61, 95, 96, 130, 131], 1, 2].mean() > masks[100:125, 0, 0].mean()


def test_state_arrays_interface_and_background_image():
    frames = _stream(T=30)
    sub = SVMDSubtractor(**PARAMS)
    for fr in frames:
        mask = sub.apply(fr)
    assert mask.shape == frames.shape[1:3] and mask.dtype == np.uint8
    assert sub.stabilise_reference_ is None  # the stabiliser is off
    for name in SVMDSubtractor._STATE_ARRAYS[:-1]:
        arr = getattr(sub, name)
        assert isinstance(arr, np.ndarray) and arr.shape[:2] == frames.shape[1:3] and arr.flags.c_contiguous
    assert sub.state_.shape[2] == S.STATE_SIZE
    bg = sub.getBackgroundImage()
    assert bg.shape == frames.shape[1:] and np.abs(bg.astype(int) - frames[:20].mean(0)).mean() < 20
    # learningRate=0 freezes the model
    before = sub.alpha_.copy()
    sub.apply(frames[0], learningRate=0)
    np.testing.assert_array_equal(sub.alpha_, before)
    # restoring the state arrays restores the model (coef_ and rho_ are views, never stale)
    copy = SVMDSubtractor(**PARAMS)
    copy.apply(frames[0], learningRate=0)
    for name in SVMDSubtractor._STATE_ARRAYS[:-1]:
        setattr(copy, name, getattr(sub, name).copy())
    copy.n_frames_ = sub.n_frames_
    a, b = sub.apply(frames[5]), copy.apply(frames[5])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sub.getScoreMap(), copy.getScoreMap())
    sub.reset()
    assert sub.alpha_ is None and sub.coef_ is None


def test_bad_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="nu"):
        SVMDSubtractor(nu=1.5)
    with pytest.raises(ValueError, match="no parameter 'r'"):
        SVMDSubtractor(r=0.1)
    assert "svmd" in bgsub.registry.algorithms()


def test_checkpoint_round_trip_continues_the_same_masks(tmp_path):
    frames = _stream(T=40)
    sub = SVMDSubtractor(**PARAMS)
    for fr in frames[:25]:
        sub.apply(fr)
    path = bgsub.checkpoint.save(sub, tmp_path / "svmd.npz")
    back = bgsub.checkpoint.load(path, algorithm="svmd")
    for fr in frames[25:]:
        np.testing.assert_array_equal(back.apply(fr), sub.apply(fr))
        np.testing.assert_array_equal(back.getScoreMap(), sub.getScoreMap())
    np.testing.assert_array_equal(back.eta_, sub.eta_)


def test_checkpoint_keeps_the_stabilisers_state_and_reads_the_layout_before_it(tmp_path):
    frames = _stream(T=40, H=70, W=80)
    frames = [translate(f, (k % 3) - 1, (k % 2), cv2.BORDER_REPLICATE, 0) for k, f in enumerate(frames)]
    sub = SVMDSubtractor(**PARAMS, stabilise="match")
    for fr in frames[:25]:
        sub.apply(fr)
    path = bgsub.checkpoint.save(sub, tmp_path / "svmd.npz")
    meta, arrays = read_checkpoint(path)
    assert meta["state_layout"] == 2 and "stabilise_reference_" in arrays
    back = bgsub.checkpoint.load(path, algorithm="svmd")
    np.testing.assert_array_equal(back.stabilise_reference_, sub.stabilise_reference_)
    for fr in frames[25:]:
        np.testing.assert_array_equal(back.apply(fr), sub.apply(fr))
    # as saved before the stabiliser's state was (layout 1): it takes its reference at the next frame
    params = meta.pop("params")
    arrays.pop("stabilise_reference_")
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    extra["scalars"] = {k: v for k, v in extra["scalars"].items() if k != "stabilise_saturated_"}
    write_checkpoint(tmp_path / "old.npz", "svmd", params, arrays, **dict(extra, state_layout=1))
    old = bgsub.checkpoint.load(tmp_path / "old.npz", algorithm="svmd")
    assert old.stabilise_reference_ is None and old.stabilise_saturated_ == 0 and old.n_frames_ == 25
    old.apply(frames[25])
    np.testing.assert_array_equal(old.stabilise_reference_, cv2.cvtColor(frames[25], cv2.COLOR_BGR2GRAY))
