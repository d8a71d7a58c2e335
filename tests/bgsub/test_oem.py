"""The online-EM subtractor: the frame loop is the learners' step per pixel; OpenCV-style API."""

from __future__ import annotations

import numpy as np
import pytest

import bgsub
from bgsub.models.oem import OEM_PARAMS, OEMSubtractor, createOEM
from learners import online_em


def _frames(n=40, H=24, W=40, seed=0):
    rng = np.random.default_rng(seed)
    bg = rng.integers(40, 200, size=(H, W, 3)).astype(np.int16)
    out = []
    for t in range(n):
        f = bg + rng.normal(0, 3, size=bg.shape).round().astype(np.int16)
        if t >= 30:
            x = 3 * (t - 30)
            f[8:16, x:x + 6] = (250, 20, 20)  # a red block moving 3 pixels a frame
        out.append(np.clip(f, 0, 255).astype(np.uint8))
    return out


@pytest.mark.parametrize("covariance", ["spherical", "diag"])
def test_frame_loop_is_the_learners_batched_step_row_by_row(covariance):
    """Bit for bit: each row of the frame loop is learners.online_em.gaussian_step_batch on
    that row's state (float32), and the per-pixel step gives the same model to float32 rounding."""
    H, W, K = 5, 6, 3
    sub = OEMSubtractor(covariance=covariance, median=0, n_components=K)
    frames = _frames(12, H=H, W=W)
    sub.apply(frames[0])
    names = ("s0_", "s1_", "s2_")
    state = [getattr(sub, a).copy() for a in names]
    p = sub.params
    spherical = covariance == "spherical"
    # the per-pixel step on each pixel's state (with its M-step caches), in float64
    pix = []
    for i in range(H):
        pix.append([])
        for j in range(W):
            s0, s1, s2 = (a[i, ..., j].astype(np.float64) for a in state)
            caches = np.empty((K, 3)), np.empty(s2.shape), np.empty(K)
            online_em.gaussian_m_step_all(s0, s1, s2, spherical, p["min_var"], *caches)
            pix[i].append([s0, s1, s2, *caches])
    par = np.empty(online_em.N_PAR, np.float32)
    d2, resp, work = (np.empty((K, W), np.float32), np.empty((K, W), np.float32),
                      np.empty((online_em.N_WORK, W), np.float32))
    for n, f in enumerate(frames[1:], start=2):
        eta = online_em.learning_rate(n, p["learning_floor"])
        online_em.batch_constants(eta, p["min_var"], p["birth"] ** 2, p["var_init"], 3, par)
        for i in range(H):
            x = np.ascontiguousarray(f[i].T.astype(np.float32))
            online_em.gaussian_step_batch(x, *(a[i] for a in state), spherical, par, d2, resp, work)
            for j in range(W):
                online_em.gaussian_step(f[i, j].astype(np.float64), eta, *pix[i][j][:3], spherical, p["min_var"],
                                        *pix[i][j][3:], p["birth"] ** 2, p["var_init"], np.empty(K), np.empty(K))
        sub.apply(f)
        for name, want in zip(names, state):
            np.testing.assert_array_equal(getattr(sub, name), want)
    for i in range(H):  # float32 arithmetic: the variance s2/s0 - |mu|^2 cancels about four digits
        for j in range(W):
            for got, want in zip(state, pix[i][j][:3]):
                np.testing.assert_allclose(got[i, ..., j], want, rtol=1e-3, atol=1e-6)


def test_bootstraps_on_the_first_frame_and_detects_a_moving_object():
    frames = _frames()
    sub = bgsub.create("oem")
    first = sub.apply(frames[0])
    assert first.dtype == np.uint8 and first.shape == (24, 40) and not first.any()
    for f in frames[1:]:
        mask = sub.apply(f)
    block = np.zeros((24, 40), bool)
    block[8:16, 27:33] = True
    raw = sub.getRawMask()
    assert (raw[block] == 255).all()
    assert (raw[~block] == 0).mean() > 0.97
    assert (mask[~block] == 0).all() and mask[block].any()  # the median filter trims the block's corners
    bg = sub.getBackgroundImage()
    assert bg.shape == (24, 40, 3) and np.abs(bg.astype(int)[0:6] - frames[0].astype(int)[0:6]).mean() < 4
    score = sub.getScoreMap()
    lo, hi = sub.score_range
    assert score.dtype == np.float32 and lo <= score.min() and score.max() <= hi
    assert ((score > 0) == (sub.getRawMask() == 255)).all()


def test_learning_rate_zero_freezes_and_fgmask_is_written():
    frames = _frames(6)
    sub = OEMSubtractor()
    for f in frames[:3]:
        sub.apply(f)
    names = ("s0_", "s1_", "s2_")
    before = [getattr(sub, a).copy() for a in names]
    out = np.zeros((24, 40), np.uint8)
    mask = sub.apply(frames[3], out, 0)
    assert mask is out
    for name, b in zip(names, before):
        np.testing.assert_array_equal(getattr(sub, name), b)
    sub.apply(frames[4], learningRate=0.5)
    assert not np.array_equal(sub.s0_, before[0]) or not np.array_equal(sub.s1_, before[1])


def test_state_arrays_params_and_registry():
    sub = bgsub.create("oem", n_components=4, covariance="diag", color="gray")
    assert not sub.empty() and sub.getDefaultName() == "BackgroundSubtractor_OEMSubtractor"
    sub.apply(_frames(1)[0])
    shapes = {name: getattr(sub, name).shape for name in OEMSubtractor._STATE_ARRAYS}
    assert shapes == {"s0_": (24, 4, 40), "s1_": (24, 4, 1, 40), "s2_": (24, 4, 1, 40), "prev_mask_": (24, 40),
                      "stabilise_reference_": (24, 40)}
    assert "oem" in bgsub.algorithms()
    assert {p.name for p in bgsub.param_specs("oem")} == {p.name for p in OEM_PARAMS}
    assert sub.set_params(threshold=5.0) is False and sub.s0_ is not None
    assert sub.set_params(n_components=3) is True and sub.s0_ is None
    assert sub.get_params()["n_components"] == 3


def test_bad_input_gets_one_clear_line():
    sub = OEMSubtractor()
    with pytest.raises(ValueError, match="frame dtype int32 is not read"):
        sub.apply(np.zeros((4, 4), np.int32))
    with pytest.raises(ValueError, match="learningRate"):
        sub.apply(np.zeros((4, 4), np.uint8), learningRate=float("nan"))
    sub.apply(np.zeros((4, 4), np.uint8))
    with pytest.warns(bgsub.NewModelWarning, match="frame size changed"):
        sub.apply(np.zeros((5, 4), np.uint8))
    with pytest.raises(ValueError, match="no parameter 'width'"):
        OEMSubtractor(width=3)
    with pytest.raises(ValueError, match="median must be 0 or an odd"):
        OEMSubtractor(median=4)


def test_checkpoint_round_trip_and_old_layout_refused(tmp_path, monkeypatch):
    frames = _frames(8)
    sub = OEMSubtractor()
    for f in frames[:4]:
        sub.apply(f)
    sub.save(tmp_path / "m.npz")
    again = bgsub.load(tmp_path / "m.npz")
    for f in frames[4:]:
        np.testing.assert_array_equal(again.apply(f), sub.apply(f))
    monkeypatch.setattr(OEMSubtractor, "_STATE_LAYOUT", 1)  # as saved before the batched layout
    OEMSubtractor().save(tmp_path / "old.npz")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="state layout 1, from another version.*start a new model"):
        bgsub.load(tmp_path / "old.npz")


def test_oem_runs_behind_the_stabiliser_and_the_illumination_gain(tmp_path):
    """oem has the stages every subtractor has: with the light doubled, the gain follows and the mask does not
    flood; a shifted frame is registered back; the stages' state is saved and restored with the model."""
    rng = np.random.default_rng(1)
    bg = rng.integers(40, 110, (96, 128, 3)).astype(np.uint8)
    plain = createOEM(preset="fast")
    staged = OEMSubtractor()
    assert plain.params["stabilise"] == plain.params["illumination"] == "off"
    assert (staged.params["stabilise"], staged.params["illumination"]) == ("match", "gain")
    for _ in range(8):
        f = np.clip(bg.astype(int) + rng.integers(-2, 3, bg.shape), 0, 255).astype(np.uint8)
        plain.apply(f)
        staged.apply(f)
    bright = np.clip(bg.astype(np.float64) * 1.6, 0, 255).astype(np.uint8)
    flooded = plain.apply(bright).mean() / 255
    kept = staged.apply(bright).mean() / 255
    assert staged.gain_ == pytest.approx(1.6, abs=0.03)
    assert flooded > 0.9 and kept < 0.05
    staged.apply(np.roll(bg, (3, 2), axis=(0, 1)))
    assert staged._shift == (2, 3)
    path = staged.save(tmp_path / "oem.npz")
    back = OEMSubtractor.load(path)
    assert back.gain_ == staged.gain_
    np.testing.assert_array_equal(back.stabilise_reference_, staged.stabilise_reference_)
    assert "blur" not in back.params and back.params["illumination"] == "gain"


def test_oem_checkpoint_with_blur_off_still_loads_and_blur_on_is_refused(tmp_path):
    from bgsub.checkpoint import read_checkpoint, write_checkpoint

    sub = OEMSubtractor()
    for f in _frames(3):
        sub.apply(f)
    meta, arrays = read_checkpoint(sub.save(tmp_path / "m.npz"))
    # as the version before the stages wrote it: no stage parameters or state, blur
    params = {k: v for k, v in meta.pop("params").items() if k not in ("stabilise", "illumination")}
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    extra["scalars"] = {k: v for k, v in extra["scalars"].items() if k in ("n_frames_", "n_updates_")}
    for blur, ok in ((0.0, True), (1.5, False)):
        write_checkpoint(tmp_path / "old.npz", "oem", {**params, "blur": blur}, arrays, **extra)
        if ok:
            assert OEMSubtractor.load(tmp_path / "old.npz").params["illumination"] == "off"
        else:
            with pytest.raises(bgsub.CheckpointError, match="blur"):
                OEMSubtractor.load(tmp_path / "old.npz")
