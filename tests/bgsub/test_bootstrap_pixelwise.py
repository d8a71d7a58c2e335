"""The first-frame bootstrap run pixel by pixel (``_bootstrap_pixelwise``) leaves the state the frame-by-frame
bootstrap leaves, bit for bit, and so the same masks after it."""

from __future__ import annotations


import cv2
import numpy as np
import pytest

import bgsub
from bgsub.models._bootstrap import bootstrap_scales

STATE = ("samples_", "coef_", "ring_", "rho_", "blink_", "prev_mask_", "post_mask_")


def _stream(T=12, H=29, W=37, grey=False, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(30, 220, (H, W, 3)).astype(np.float64)
    frames = []
    for t in range(T):
        fr = base + rng.normal(0, 4, base.shape)
        fr[3:9, 3:9] += 50 * np.sin(t / 2)  # a dynamic background
        fr[12:18, (2 * t) % W:(2 * t) % W + 6] = (230, 40, 40)  # an object
        frames.append(np.clip(fr, 0, 255).astype(np.uint8))
    frames = np.array(frames)
    return frames.mean(axis=3).astype(np.uint8) if grey else frames


def _run(algo, frames, pixelwise, **params):
    sub = bgsub.create(algo, **params)
    if not pixelwise:
        sub._can_bootstrap_pixelwise = lambda: False  # the frame-by-frame bootstrap
    masks = [sub.apply(f) for f in frames]
    return sub, masks


def _assert_same(algo, frames, state=STATE, **params):
    a, ma = _run(algo, frames, False, **params)
    b, mb = _run(algo, frames, True, **params)
    assert b._can_bootstrap_pixelwise()
    for t, (x, y) in enumerate(zip(ma, mb)):
        np.testing.assert_array_equal(x, y, err_msg=f"frame {t}")
    for name in state:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.scale_ == b.scale_
    assert a.n_steps_ == b.n_steps_


@pytest.mark.parametrize("params", [
    {},
    {"score_map": "exact"},
    {"rho_rule": "paper"},
    {"blink_gain": 0.5, "blink_up": 0.3},
    {"budget": 7, "init_radius": 16, "seed": 5},
    {"stabilise": "off", "warmup_frames": 0},
])
def test_olkn_pixelwise_bootstrap_is_the_frames(params):
    _assert_same("olkn", _stream(), **params)


def _flat_stream(T=6, H=21, W=35, seed=1):
    """Frames of a few flat colours with a little noise: most of the bootstrap's blocks of pixels stop their sums
    early (their neighbours explain each other), the blocks along the colours' borders do not."""
    rng = np.random.default_rng(seed)
    base = np.empty((H, W, 3))
    base[:, : W // 3] = (60, 120, 180)
    base[:, W // 3:] = (200, 190, 30)
    base[H // 2:, W // 2:] = (90, 90, 90)
    noise = rng.normal(0, 2, (T, H, W, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("params", [{}, {"rho_rule": "paper"}, {"grey": True}, {"budget": 30, "init_radius": 2}])
def test_olkn_bootstrap_sums_that_stop_early_leave_the_model_of_full_sums(params):
    params = dict(params)
    frames = _flat_stream()
    if params.pop("grey", False):
        frames = frames.mean(axis=3).astype(np.uint8)
    _assert_same("olkn", frames, **params)


@pytest.mark.parametrize("grey", [False, True])
def test_pixelwise_bootstrap_on_grey_and_colour(grey):
    _assert_same("olkn", _stream(grey=grey, H=17, W=23))
    _assert_same("norma", _stream(grey=grey, H=17, W=23))


@pytest.mark.parametrize("params", [{}, {"budget": 9, "init_radius": 5, "eta": 0.3}])
def test_norma_pixelwise_bootstrap_is_the_frames(params):
    _assert_same("norma", _stream(), **params)


SVMD_STATE = ("samples_", "alpha_", "beta_", "ring_", "state_", "offset_", "prev_mask_")


@pytest.mark.parametrize("grey", [False, True])
def test_svmd_pixelwise_bootstrap_is_the_frames(grey):
    _assert_same("svmd", _stream(T=6, grey=grey, H=13, W=19), state=SVMD_STATE)
    _assert_same("svmd", _stream(T=4, grey=grey, H=11, W=9), state=SVMD_STATE, budget=6, init_radius=4, seed=2)


def test_frames_where_pixelwise_does_not_apply():
    # texture keeps the frame-by-frame bootstrap; so does norma's step bootstrap
    assert not bgsub.create("olkn", texture=20)._can_bootstrap_pixelwise()
    assert not bgsub.create("norma", init_rho="steps")._can_bootstrap_pixelwise()


def test_a_bootstrap_that_would_renormalise_runs_frame_by_frame():
    sub = bgsub.create("olkn")
    sub.apply(_stream(T=1)[0])
    sub.scale_ = 2e-10  # a few decays from the lower limit
    sub._decay_value = 0.5
    assert bootstrap_scales(sub, 20) is None
    sub.scale_ = 1.0
    scales, last = bootstrap_scales(sub, 3)
    np.testing.assert_array_equal(scales, [1.0, 0.5, 0.25])
    assert last == 0.125


def test_pixelwise_bootstrap_on_real_frames(highway):
    files = sorted((highway / "input").glob("*.jpg"))[:8]
    frames = [cv2.resize(cv2.imread(str(f)), (160, 120), interpolation=cv2.INTER_AREA) for f in files]
    _assert_same("olkn", frames)
    _assert_same("norma", frames)


@pytest.mark.parametrize("radius", [1, 3, 8])
def test_bootstrap_draws_are_uniform_neighbours_fixed_by_the_seed(radius):
    from bgsub.models._frame_kernels import bootstrap_sources

    H, W = 40, 50
    rows, cols = np.empty((H, W), np.int64), np.empty((H, W), np.int64)
    bootstrap_sources((0, radius), 0, rows, cols)  # step 0: the pixel itself
    np.testing.assert_array_equal(rows, np.repeat(np.arange(H)[:, None], W, 1))
    np.testing.assert_array_equal(cols, np.repeat(np.arange(W)[None, :], H, 0))
    inner = (slice(radius, H - radius), slice(radius, W - radius))  # no clamping at the border
    counts = np.zeros(2 * radius + 1)
    draws = {}
    for b in range(1, 20):
        bootstrap_sources((0, radius), b, rows, cols)
        assert rows.min() >= 0 and rows.max() < H and cols.min() >= 0 and cols.max() < W
        dy = rows[inner] - np.arange(H)[inner[0], None]
        dx = cols[inner] - np.arange(W)[None, inner[1]]
        assert np.abs(dy).max() <= radius and np.abs(dx).max() <= radius
        counts += np.bincount((dy + radius).ravel(), minlength=2 * radius + 1)
        counts += np.bincount((dx + radius).ravel(), minlength=2 * radius + 1)
        assert np.mean(dy == dx) < 0.5  # the two axes are drawn apart
        draws[b] = (rows.copy(), cols.copy())
    expected = counts.sum() / counts.size
    assert np.abs(counts / expected - 1).max() < 0.1  # every offset about equally often
    assert not np.array_equal(draws[1][0], draws[2][0])  # a new draw at each step
    again = (np.empty((H, W), np.int64), np.empty((H, W), np.int64))
    bootstrap_sources((0, radius), 5, *again)
    np.testing.assert_array_equal(again[0], draws[5][0])  # the same seed, the same draws
    bootstrap_sources((1, radius), 5, *again)
    assert not np.array_equal(again[0], draws[5][0])  # another seed, other draws
