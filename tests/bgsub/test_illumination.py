"""Global illumination compensation (``illumination="gain"``, :mod:`bgsub.models._illumination`)."""

from __future__ import annotations

import numpy as np
import pytest

import bgsub
from bgsub.checkpoint import read_checkpoint, write_checkpoint
from bgsub.models import _illumination as il
from bgsub.pipeline import stages

QUIET = dict(median=0)


def _scene(T, H=48, W=64, seed=0, channels=3):
    """A textured static background with sensor noise, uint8 (T, H, W, channels) (no objects)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([60 + 2 * xx, 90 + 2 * yy, 140 + 30 * np.sin(xx / 3.0)], -1)[..., :channels].astype(float)
    base += rng.uniform(-6, 6, base.shape)
    return np.clip(base[None] + rng.normal(0, 2, (T,) + base.shape), 0, 255).astype(np.uint8)


def _plain_ratios(frame, samples, coef, ring, mask, step):
    """The grid's ratios transcribed from the module docstring, one pixel at a time in plain Python."""
    H, W, C = frame.shape
    B = samples.shape[2]
    out = []
    for i in range(step // 2, H, step):
        for j in range(step // 2, W, step):
            if mask[i, j]:
                continue
            start, count = int(ring[i, j, 0]), int(ring[i, j, 1])
            slots = [(start + k) % B for k in range(count)]
            wsum = sum(abs(float(coef[i, j, s])) for s in slots)
            if wsum <= 0:
                continue
            bg = [sum(abs(float(coef[i, j, s])) * float(samples[i, j, s, c]) for s in slots) / wsum
                  for c in range(C)]
            x = [float(v) for v in frame[i, j]]
            if min(bg) <= il.DARK or min(x) <= il.DARK_INPUT or max(x) >= il.BRIGHT:
                continue
            out.append((sum(x) / sum(bg), (il.BLOCKS * i // H) * il.BLOCKS + il.BLOCKS * j // W))
    return out


@pytest.mark.parametrize("C", [1, 3])
def test_grid_ratios_match_a_plain_transcription(C):
    rng = np.random.default_rng(C)
    H, W, B = 37, 53, 6
    samples = rng.integers(0, 256, (H, W, B, C), dtype=np.uint8)
    coef = rng.uniform(0.0, 1.0, (H, W, B)).astype(np.float32)
    ring = np.stack([rng.integers(0, B, (H, W)), rng.integers(0, B + 1, (H, W))], -1).astype(np.int64)
    frame = rng.integers(0, 256, (H, W, C), dtype=np.uint8)
    frame[0, :, 0] = 255  # saturated and dark values are left out
    frame[1, :, 0] = 3
    mask = np.where(rng.random((H, W)) < 0.3, 255, 0).astype(np.uint8)
    for step in (1, 2, 5):
        out = np.empty(H * W)
        block = np.empty(H * W, dtype=np.int64)
        n = il.grid_ratios(frame, samples, coef, ring, mask, step, out, block)
        expected = _plain_ratios(frame, samples, coef, ring, mask, step)
        assert n == len(expected) > 0
        assert out[:n].tolist() == [r for r, _ in expected]  # the same sums in the same order: the same bits
        assert block[:n].tolist() == [b for _, b in expected]


def test_grid_size_and_step_cover_about_the_documented_number_of_pixels():
    for H, W in ((240, 320), (1080, 1920), (48, 64), (7, 5), (100, 13)):
        s = il.grid_step(H, W)
        mask = np.zeros((H, W), np.uint8)
        out, block = np.empty(H * W), np.empty(H * W, dtype=np.int64)
        frame = np.full((H, W, 1), 100, np.uint8)
        samples = np.full((H, W, 1, 1), 100, np.uint8)
        n = il.grid_ratios(frame, samples, np.ones((H, W, 1), np.float32), np.ones((H, W, 2), np.int64), mask, s,
                           out, block)
        assert il.grid_size(H, W) == n  # every grid pixel usable here
        assert il.grid_size(H, W) <= max(4 * il.GRID_POINTS, H * W)
        if H * W >= 4 * il.GRID_POINTS:
            assert il.GRID_POINTS / 2 <= il.grid_size(H, W) <= 2 * il.GRID_POINTS


@pytest.mark.parametrize("algo", ["olkn", "norma"])
@pytest.mark.parametrize("channels", [3, 1])
def test_a_global_gain_step_is_divided_out_instead_of_flooding_the_mask(algo, channels):
    steady = _scene(70, channels=channels)
    dimmed = steady.copy()
    dimmed[40:] = np.clip(dimmed[40:] * 0.7 + 0.5, 0, 255).astype(np.uint8)  # the lights dimmed
    after, gains = {}, {}
    for name, frames, mode in (("control", steady, "gain"), ("off", dimmed, "off"), ("gain", dimmed, "gain")):
        sub = bgsub.create(algo, illumination=mode, stabilise="off", **QUIET)
        masks, g = [], []
        for fr in frames:
            masks.append(sub.apply(fr[..., 0] if channels == 1 else fr))
            g.append(sub.gain_)
        after[name] = np.array(masks)[40:50].mean() / 255
        gains[name] = np.array(g)
    assert after["off"] > 0.5  # every pixel changed at once
    assert after["gain"] < after["control"] + 0.03  # as if the lights had stayed on
    assert np.all(gains["off"] == 1.0)
    assert gains["gain"][0] == 1.0  # no model yet
    assert np.all(np.abs(gains["gain"][40:] - 0.7) < 0.02)
    assert np.all(np.abs(gains["gain"][5:40] - 1.0) < 0.01)


def test_the_gain_ignores_an_object_covering_a_third_of_the_frame():
    frames = _scene(41)
    sub = bgsub.create("olkn", illumination="gain", stabilise="off", **QUIET)
    for fr in frames[:40]:
        sub.apply(fr)
    frame = np.clip(frames[40] * 1.25, 0, 255).astype(np.uint8)
    rng = np.random.default_rng(3)
    frame[:, :21] = rng.integers(0, 256, frame[:, :21].shape)  # the previous mask did not see it coming
    mask = sub.apply(frame)
    assert sub.gain_ == pytest.approx(1.25, abs=0.03)
    assert mask[:, 24:].mean() / 255 < 0.05
    assert mask[:, :21].mean() / 255 > 0.8


def _ratios(n_blocks=9, seed=0):
    """Ratios and blocks as :func:`il.grid_ratios` leaves them: 100 per block around 1, sensor-noise spread."""
    rng = np.random.default_rng(seed)
    ratios = rng.normal(1.0, 0.02, 100 * n_blocks)
    blocks = np.repeat(np.arange(n_blocks), 100)
    return ratios, blocks


def _estimate_from(ratios, blocks, monkeypatch):
    """:func:`il.estimate_gain` on given ratios (its grid pass replaced)."""
    def fake(frame, samples, coef, ring, mask, step, out, block):
        out[:ratios.size] = ratios
        block[:ratios.size] = blocks
        return ratios.size
    monkeypatch.setattr(il, "grid_ratios", fake)
    scratch = (np.empty(ratios.size), np.empty(ratios.size, dtype=np.int64), np.empty(ratios.size))
    return il.estimate_gain(np.zeros((60, 90, 3), np.uint8), None, None, None, None, scratch)


def test_the_estimate_counts_only_when_the_frame_agrees(monkeypatch):
    ratios, blocks = _ratios()
    assert _estimate_from(ratios * 0.7, blocks, monkeypatch) == pytest.approx(0.7, abs=0.005)
    # sensor noise alone (a dim grey scene): ratios spread 5 %, blocks still agree
    noisy = np.random.default_rng(1).normal(0.7, 0.05, ratios.size)
    assert _estimate_from(noisy, blocks, monkeypatch) == pytest.approx(0.7, abs=0.01)
    # an object in four of the nine blocks, which the previous mask did not see: the blocks disagree
    covered = ratios.copy()
    covered[blocks < 4] *= 0.5
    assert _estimate_from(covered, blocks, monkeypatch) is None
    # leaves all over the frame: every block half covered, the median between the two groups
    leaves = ratios.copy()
    leaves[::2] *= 0.5
    assert _estimate_from(leaves, blocks, monkeypatch) is None
    # too few pixels to tell
    assert _estimate_from(ratios[:il.MIN_POINTS - 1], blocks[:il.MIN_POINTS - 1], monkeypatch) is None
    # clipped to the plausible range
    assert _estimate_from(ratios * 3.0, blocks, monkeypatch) == il.MAX_GAIN


def test_without_an_estimate_the_last_gain_is_kept_and_let_go_towards_one():
    frames = _scene(26)
    sub = bgsub.create("olkn", illumination="gain", stabilise="off", **QUIET)
    for fr in frames[:20]:
        sub.apply(fr)
    dim = [np.clip(f * 0.8, 0, 255).astype(np.uint8) for f in frames[20:]]
    sub.apply(dim[0])
    assert sub.gain_ == pytest.approx(0.8, abs=0.02)
    held = sub.gain_
    for k, fr in enumerate(dim[1:4], 1):
        sub.prev_mask_[...] = 255  # the previous frame was all foreground: nothing to compare
        sub.apply(fr)
        assert sub.gain_ == pytest.approx(1.0 + (held - 1.0) * (1.0 - stages.RELEASE) ** k, rel=1e-12)


def test_the_gain_is_live_and_off_leaves_the_frames_alone():
    frames = _scene(60)
    frames[30:] = np.clip(frames[30:] * 1.3, 0, 255).astype(np.uint8)
    a = bgsub.create("olkn", illumination="off", **QUIET)
    b = bgsub.create("olkn", illumination="off", **QUIET)
    for fr in frames[:30]:
        assert np.array_equal(a.apply(fr), b.apply(fr))
    b.set_params(illumination="gain")
    b.apply(frames[30])
    assert b.gain_ == pytest.approx(1.3, abs=0.03)
    a.apply(frames[30])
    assert a.gain_ == 1.0


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_a_checkpoint_saved_before_the_option_continues_without_it(tmp_path, algo):
    frames = _scene(50)
    frames[30:] = np.clip(frames[30:] * 0.7, 0, 255).astype(np.uint8)
    off = bgsub.create(algo, illumination="off", **QUIET)
    first = bgsub.create(algo, illumination="gain", **QUIET)
    for fr in frames[:20]:
        off.apply(fr)
        first.apply(fr)
    meta, arrays = read_checkpoint(first.save(tmp_path / "new.npz"))
    assert bgsub.load(tmp_path / "new.npz").params["illumination"] == "gain"
    # as the version before the option wrote it: the same layout, no such parameter
    params = {k: v for k, v in meta.pop("params").items() if k != "illumination"}
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    write_checkpoint(tmp_path / "old.npz", algo, params, arrays, **extra)
    resumed = bgsub.load(tmp_path / "old.npz")
    assert resumed.params["illumination"] == "off"
    assert all(np.array_equal(off.apply(fr), resumed.apply(fr)) for fr in frames[20:])
