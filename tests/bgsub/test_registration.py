"""The stabiliser's shift estimate (bgsub.pipeline.registration) and ``stabilise="match"``."""

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.augment import translate
from bgsub.pipeline.registration import (COARSE_WIDTH, KEEP_BACKOFF, KEEP_BACKOFF_MAX, ShiftEstimator,
                                        gradient_magnitude, gradient_region, ncc_map)


def _texture(H, W, seed=0, sigma=1.5):
    rng = np.random.default_rng(seed)
    t = cv2.GaussianBlur(rng.uniform(0, 1, (H, W)).astype(np.float32), (0, 0), sigma)
    return cv2.normalize(t, None, 20, 230, cv2.NORM_MINMAX).astype(np.uint8)


def _with_cars(img, rng, n=6):
    """``img`` with ``n`` flat bright rectangles at random places (moving objects)."""
    out = img.copy()
    H, W = img.shape
    for _ in range(n):
        h, w = rng.integers(H // 10, H // 4), rng.integers(W // 10, W // 4)
        y, x = rng.integers(0, H - h), rng.integers(0, W - w)
        out[y:y + h, x:x + w] = rng.integers(0, 256)
    return out


def test_gradient_is_the_l1_norm_of_opencvs_sobel_over_any_region():
    img = np.random.default_rng(2).integers(0, 256, (30, 40), dtype=np.uint8)
    gx = cv2.Sobel(img, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REPLICATE)
    gy = cv2.Sobel(img, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REPLICATE)
    full = np.abs(gx) + np.abs(gy)
    np.testing.assert_array_equal(gradient_magnitude(img), full)
    for y0, y1, x0, x1 in ((0, 30, 0, 40), (3, 20, 0, 7), (29, 30, 39, 40), (10, 11, 5, 35)):
        np.testing.assert_array_equal(gradient_region(img, y0, y1, x0, x1), full[y0:y1, x0:x1])


@pytest.mark.parametrize("H, W", [(1, 1), (1, 6), (5, 1), (2, 2), (3, 9), (24, 32)])
def test_gradient_of_uint8_and_float32_frames_is_opencvs_up_to_every_border(H, W):
    # uint8 frames take the jitted pass, float32 ones OpenCV's Sobel: both the whole image's gradient, its
    # replicated border included, over any region, written into a given buffer where one is passed
    rng = np.random.default_rng(10 * H + W)
    img = rng.integers(0, 256, (H, W), dtype=np.uint8)
    f = img.astype(np.float32)
    full = (np.abs(cv2.Sobel(f, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REPLICATE))
            + np.abs(cv2.Sobel(f, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REPLICATE)))
    regions = [(y0, y1, x0, x1) for y0 in range(H) for y1 in range(y0 + 1, H + 1)
               for x0 in range(W) for x1 in range(x0 + 1, W + 1)]
    if len(regions) > 300:
        regions = [regions[i] for i in rng.choice(len(regions), 300, replace=False)] + [(0, H, 0, W)]
    for y0, y1, x0, x1 in regions:
        want = full[y0:y1, x0:x1]
        for src in (img, f):
            np.testing.assert_array_equal(gradient_region(src, y0, y1, x0, x1), want)
            out = np.full((y1 - y0, x1 - x0), np.nan, np.float32)
            assert gradient_region(src, y0, y1, x0, x1, out) is out
            np.testing.assert_array_equal(out, want)


def test_ncc_map_is_opencvs_normalised_cross_correlation():
    rng = np.random.default_rng(3)
    img = rng.random((60, 70)).astype(np.float32)
    tpl = rng.random((45, 56)).astype(np.float32)
    tpl[:10] = img[5:15, 4:60]  # a partial match somewhere
    out = np.empty((11, 11))
    ncc_map(img, tpl, out)
    np.testing.assert_allclose(out, cv2.matchTemplate(img[:55, :66], tpl, cv2.TM_CCORR_NORMED), atol=1e-6)
    ncc_map(np.zeros_like(img), tpl, out)
    assert not out.any()  # a flat frame correlates with nothing


@pytest.mark.parametrize("H, W", [(120, 160), (360, 2 * COARSE_WIDTH + 40)])  # one level; coarse to fine
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_the_estimators_correlations_are_ncc_maps_of_the_frames_gradient(H, W, dtype):
    # the estimator keeps its templates' energies and reuses gradient buffers: the values stay ncc_map's, at
    # every level (the coarsest one's nine shifts are the check of the last shift)
    ref = _texture(H, W, seed=5).astype(dtype)
    est = ShiftEstimator(ref, 6)
    frame = np.ascontiguousarray(translate(_with_cars(ref, np.random.default_rng(5)), 3, -2, cv2.BORDER_REPLICATE, 0))
    levels = [frame]
    for _ in range(est.levels - 1):
        levels.append(cv2.pyrDown(levels[-1]))
    assert est.estimate(frame) == est.estimate(frame)  # the search, then the check of the shift it found
    for level in range(est.levels):
        m = est._margin(level)
        (y0, y1, x0, x1), tpl, _ = est._regions[level]
        for dx, dy in ((0, 0), (m - 1, 1 - m), (2 * m, -2 * m)):  # the last kept inside the margin
            cx, cy, res = est._around(level, levels[level], dx, dy)
            assert (cx, cy) == (min(max(dx, 1 - m), m - 1), min(max(dy, 1 - m), m - 1))
            want = np.empty((3, 3))
            ncc_map(gradient_region(levels[level], y0 + m + cy - 1, y1 - m + cy + 1, x0 + m + cx - 1, x1 - m + cx + 1),
                    tpl, want)
            np.testing.assert_array_equal(res, want)


@pytest.mark.parametrize("H, W", [(120, 160), (360, 2 * COARSE_WIDTH + 40)])  # one level; coarse to fine
def test_recovers_every_shift_despite_moving_objects(H, W):
    rng = np.random.default_rng(1)
    ref = _texture(H, W)
    est = ShiftEstimator(ref, 6)
    assert est.usable and (est.levels == 1) == (W <= COARSE_WIDTH)
    for dx in range(-6, 7, 3):
        for dy in (-6, -1, 0, 4, 6):
            frame = translate(_with_cars(ref, rng), dx, dy, cv2.BORDER_REPLICATE, 0)
            assert est.estimate(frame) == (dx, dy)


@pytest.mark.parametrize("H, W", [(120, 160), (360, 2 * COARSE_WIDTH + 40)])
def test_a_still_camera_keeps_its_shift_without_a_search_and_a_jump_is_found_at_once(H, W):
    rng = np.random.default_rng(4)
    ref = _texture(H, W, seed=4)
    est = ShiftEstimator(ref, 6)
    plan = [(2, -1)] * 12 + [(3, -1)] * 6 + [(-2, 4)] * 6 + [(-2, 4)] * 6  # still, a one-pixel step, a jump
    for k, (dx, dy) in enumerate(plan):
        frame = translate(_with_cars(ref, rng, n=3), dx, dy, cv2.BORDER_REPLICATE, 0)
        full = est._search(np.ascontiguousarray(frame))
        kept = est.kept
        assert est.estimate(frame) == full == (dx, dy), k
        if k in (12, 18):  # the frame that moved is searched, not kept
            assert est.kept == kept
    # every still frame after the first of each stretch keeps the shift, but for the back-off after a move
    assert est.kept >= len(plan) - 3 - 2 * KEEP_BACKOFF


def test_the_check_backs_off_on_a_shaking_camera():
    rng = np.random.default_rng(6)
    ref = _texture(120, 160, seed=6)
    est = ShiftEstimator(ref, 6)
    checks = []
    keeps_last = est._keeps_last
    est._keeps_last = lambda grey: checks.append(len(checks)) or keeps_last(grey)
    last = None
    for k in range(300):
        shift = last
        while shift == last:  # a new shift every frame
            shift = tuple(int(v) for v in rng.integers(-4, 5, 2))
        last = shift
        assert est.estimate(translate(ref, *shift, cv2.BORDER_REPLICATE, 0)) == shift
    assert est.kept == 0
    # checks after 0, 8, 16, 32, 64, 64, ... frames: a handful, not one a frame
    assert 4 <= len(checks) <= 4 + 300 // KEEP_BACKOFF_MAX
    assert est._backoff == KEEP_BACKOFF_MAX


def test_shifts_beyond_the_search_are_not_reported_as_larger():
    ref = _texture(100, 120, seed=3)
    est = ShiftEstimator(ref, 3)
    dx, dy = est.estimate(translate(ref, 7, -7, cv2.BORDER_REPLICATE, 0))
    assert max(abs(dx), abs(dy)) <= 3


def test_frames_too_small_are_left_alone():
    ref = _texture(20, 20)
    est = ShiftEstimator(ref, 8)
    assert not est.usable
    assert est.estimate(translate(ref, 2, 1, cv2.BORDER_REPLICATE, 0)) == (0, 0)


def test_bad_arguments_say_what_was_wrong():
    with pytest.raises(ValueError, match="max_shift must be >= 1, got 0"):
        ShiftEstimator(_texture(50, 50), 0)
    with pytest.raises(ValueError, match="2-D grey image"):
        ShiftEstimator(np.zeros((50, 50, 3), np.uint8), 3)
    with pytest.raises(ValueError, match=r"frame of shape \(40, 50\) against a reference of shape \(50, 50\)"):
        ShiftEstimator(_texture(50, 50), 3).estimate(_texture(40, 50))


def _shaken_stream(T=40, H=96, W=128, seed=5):
    rng = np.random.default_rng(seed)
    tex = _texture(H, W, seed)
    frames = np.clip(tex[None, :, :, None] + rng.normal(0, 2, (T, H, W, 3)), 0, 255).astype(np.uint8)  # grey-ish
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-3, 4, 2)) for _ in range(T - 1)]
    return [np.ascontiguousarray(translate(fr, dx, dy, cv2.BORDER_REPLICATE, 0)) for fr, (dx, dy) in
            zip(frames, shifts)], shifts


def test_match_stabilisation_finds_every_shift():
    shaken, shifts = _shaken_stream()
    sub = bgsub.create("olkn", stabilise="match")
    found = []
    for fr in shaken:
        sub.apply(fr)
        found.append(sub._shift)
    assert found == shifts



def test_a_pan_beyond_the_search_re_anchors_the_reference(monkeypatch):
    # a camera panning one pixel a frame: shifts 1..3 against the first frame; from the fourth on the shift
    # reaches the search range (4 here) and no shift is applied; the tenth such frame in a row becomes the
    # reference and counting starts again from it
    from bgsub.pipeline import stages
    from bgsub.pipeline.stages import REANCHOR_FRAMES

    assert stages.STABILISE_MAX == 8
    monkeypatch.setattr(stages, "STABILISE_MAX", 4)

    rng = np.random.default_rng(7)
    scene = np.stack([_texture(80, 200, seed=7, sigma=8)] * 3, -1)  # smooth: no false peaks past the search
    frames = [np.ascontiguousarray(scene[:, 60 - k:140 - k]) for k in range(20)]  # content moves right
    sub = bgsub.create("olkn", stabilise="match")
    found = []
    for fr in frames:
        sub.apply(np.clip(fr + rng.normal(0, 1, fr.shape), 0, 255).astype(np.uint8))
        found.append(sub._shift[0])
    assert REANCHOR_FRAMES == 10
    assert found == [0, 1, 2, 3] + [0] * 10 + [1, 2, 3] + [0] * 3
