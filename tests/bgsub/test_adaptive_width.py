"""olkn's per-pixel kernel width (``adapt_width``, ``width_blink``): SuBSENSE's R(x) in kernel terms."""

from __future__ import annotations

import glob

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.checkpoint import CheckpointError
from learners import steps
from learners._persist import read_checkpoint, write_checkpoint
from tests.bgsub._params import ROUND7
from tests.bgsub.test_feedback import _flicker_scene

# ----------------------------------------------------------------- the rules against their transcription


def _misfit_reference(m, k_near, rate):
    """SuBSENSE's moving average of the normalised minimal distance, ``D <- (1 - a) D + a d``, with the
    distance of the nearest sample in kernel terms, ``d = 1 - k(x, nearest)``."""
    return (1.0 - rate) * m + rate * (1.0 - k_near)


def _width_reference(m, v, gain, blink, lo, hi):
    """The width factor ``lo + gain m + blink v``, clipped to ``[lo, hi]``."""
    return min(max(lo + gain * m + blink * v, lo), hi)


def test_misfit_average_and_width_factor_match_reference():
    rng = np.random.default_rng(0)
    m_ref = m = 0.0
    for _ in range(500):
        k, rate = float(rng.random()), float(rng.choice([0.0, 0.01, 0.3, 1.0]))
        m_ref = _misfit_reference(m_ref, k, rate)
        m = steps.misfit_average(m, k, rate)
        assert m == pytest.approx(m_ref, abs=1e-12) and 0.0 <= m <= 1.0
        v = float(rng.random())
        gain, blink, lo, hi = 10 * rng.random(), 2 * rng.random(), 0.5 + rng.random(), 1.5 + 2 * rng.random()
        assert steps.width_factor(m, v, gain, blink, lo, hi) == pytest.approx(
            _width_reference(m, v, gain, blink, lo, hi), abs=1e-12)


# ----------------------------------------------------------------- the subtractor


def test_width_factor_one_gives_the_engine_without_per_pixel_widths(highway):
    """Per-pixel widths pinned to 1 read the very table entries of the plain kernel: the same masks."""
    files = sorted(glob.glob(str(highway / "input" / "*.jpg")))[600:640]
    frames = [cv2.imread(f) for f in files]
    off = bgsub.create("olkn")
    on = bgsub.create("olkn", adapt_width=5.0, width_blink=1.0, width_min=1.0, width_max=1.0)
    for fr in frames:
        np.testing.assert_array_equal(on.apply(fr), off.apply(fr))
    assert np.all(on.width_ == 1.0) and on.misfit_.max() > 0.0  # on: the misfit moved, the width was pinned
    assert np.all(off.misfit_ == 0.0) and np.all(off.width_ == 1.0)  # off: untouched
    np.testing.assert_allclose(on.rho_, off.rho_, atol=1e-9)


@pytest.mark.parametrize("params", [{"adapt_width": 20.0, "width_rate": 0.05}, {"width_blink": 1.0}])
def test_widths_rise_where_the_background_flickers_and_stay_where_it_is_static(params):
    frames, _ = _flicker_scene(120)
    W = frames.shape[2]
    sub = bgsub.create("olkn", **params, **ROUND7)
    for fr in frames:
        sub.apply(fr)
    static, flicker = sub.width_[:, 2:W // 2 - 2], sub.width_[:, W // 2 + 2:]
    assert static.mean() < 1.05 and static.min() >= 1.0
    assert flicker.mean() > 1.2 and flicker.max() <= 3.0


def test_narrow_static_pixels_detect_what_the_wider_kernel_misses():
    """width_min < 1: a static pixel's kernel narrows, so a faint object (8 levels a channel) is detected."""
    rng = np.random.default_rng(1)
    base = np.full((24, 32, 3), 100.0)
    got = {}
    for wmin in (1.0, 0.5):
        sub = bgsub.create("olkn", **dict(ROUND7, width=20.0), width_blink=0.01, width_min=wmin, median=0)
        for t in range(60):
            fr = base + rng.normal(0, 1.0, base.shape)
            if t >= 50:
                fr[8:16, 8:16] += 8
            m = sub.apply(np.clip(fr, 0, 255).astype(np.uint8))
        got[wmin] = (m[8:16, 8:16] > 0).mean()
    assert got[0.5] > 0.9 > 0.2 > got[1.0], got


def test_live_switch_keeps_the_model():
    frames, _ = _flicker_scene(30)
    sub = bgsub.create("olkn")
    for fr in frames[:10]:
        sub.apply(fr)
    assert sub._bounded()
    assert sub.set_params(adapt_width=10.0, width_rate=0.1) is False  # live: no reset
    assert not sub._bounded()  # per-pixel slopes: the exact engine
    for fr in frames[10:20]:
        sub.apply(fr)
    assert sub.n_frames_ == 20 and sub.misfit_.max() > 0.0
    assert sub.set_params(adapt_width=0.0) is False and sub._bounded()
    for fr in frames[20:]:
        sub.apply(fr)


def test_parameter_validation():
    with pytest.raises(ValueError, match="width_max must be >= width_min, got width_max=1.0 and width_min=1.5"):
        bgsub.create("olkn", width_min=1.5, width_max=1.0)
    with pytest.raises(ValueError, match="adapt_width"):
        bgsub.create("olkn", adapt_width=-1.0)
    sub = bgsub.create("olkn")
    with pytest.raises(ValueError, match="width_max must be >= width_min"):
        sub.set_params(width_min=4.0)
    assert sub.params["width_min"] == 1.0  # refused: nothing changed


def test_checkpoint_round_trip_keeps_the_widths(tmp_path):
    frames, _ = _flicker_scene(40)
    params = dict(adapt_width=10.0, width_rate=0.1, width_blink=0.5, width_min=0.8)
    whole = bgsub.create("olkn", **params)
    expected = [whole.apply(f) for f in frames]
    first = bgsub.create("olkn", **params)
    for f in frames[:20]:
        first.apply(f)
    resumed = bgsub.load(first.save(tmp_path / "w.npz"))
    np.testing.assert_array_equal(resumed.misfit_, first.misfit_)
    np.testing.assert_array_equal(resumed.width_, first.width_)
    assert resumed.width_.max() > 0.8
    got = [resumed.apply(f) for f in frames[20:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected[20:], got))
    np.testing.assert_array_equal(resumed.width_, whole.width_)


def test_a_checkpoint_from_before_the_widths_continues_without_them(tmp_path):
    frames, _ = _flicker_scene(30)
    old = dict(warmup_frames=0, stabilise="off")  # neither existed before the widths
    whole = bgsub.create("olkn", **old)
    first = bgsub.create("olkn", **old)
    for f in frames[:10]:
        first.apply(f)
    meta, arrays = read_checkpoint(first.save(tmp_path / "new.npz"))
    assert meta["state_layout"] == 5
    # as the version before the widths wrote it: layout 2, no width parameters or arrays
    params = {k: v for k, v in meta.pop("params").items() if k not in
              ("adapt_width", "width_rate", "width_min", "width_max", "width_blink")}
    arrays = {k: v for k, v in arrays.items() if k not in ("misfit_", "width_")}
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    write_checkpoint(tmp_path / "old.npz", "olkn", params, arrays, **dict(extra, state_layout=2))
    resumed = bgsub.load(tmp_path / "old.npz")
    assert resumed.params["adapt_width"] == 0.0 and resumed.n_frames_ == 10
    expected = [whole.apply(f) for f in frames][10:]
    got = [resumed.apply(f) for f in frames[10:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    # without its arrays a layout-3 checkpoint is damaged, not silently restarted
    write_checkpoint(tmp_path / "bad.npz", "olkn", params, arrays, **dict(extra, state_layout=3))
    with pytest.raises(CheckpointError, match="lacks the state array 'misfit_'"):
        bgsub.load(tmp_path / "bad.npz")
