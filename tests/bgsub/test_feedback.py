"""Per-pixel decision feedback (blinking pixels), neighbour matching and hole filling."""

from __future__ import annotations

import cv2
import numba
import numpy as np
import pytest

import bgsub
from bgsub.pipeline.components import count_components
from bgsub.pipeline.masks import binary_median, fill_holes, remove_small
from learners import steps
from tests.bgsub._params import WIDE_KERNEL

QUIET = dict(median=0)


# ----------------------------------------------------------------- the rules against their transcription


def _blink_reference(v, flipped, up, down):
    """SuBSENSE's blinking accumulator (St-Charles et al. 2015, sec. III-C), kept in [0, 1]:
    ``v <- v + up`` where the decision flipped since the last frame, else ``v <- v - down``."""
    v = v + up if flipped else v - down
    return min(max(v, 0.0), 1.0)


def _level_reference(level, v, gain):
    """The decision level ``f < L`` of a pixel with accumulator ``v``: ``L (1 - gain v)`` for ``L > 0``,
    ``L (1 + gain v)`` for ``L < 0`` (the level moves away from explaining less)."""
    return level * (1.0 - gain * v) if level >= 0 else level * (1.0 + gain * v)


def test_blink_accumulator_matches_reference():
    rng = np.random.default_rng(0)
    v_ref = v = 0.0
    for _ in range(2000):
        flipped = bool(rng.random() < 0.3)
        up, down = rng.choice([0.0, 0.05, 0.2, 1.0]), rng.choice([0.0, 0.01, 0.1])
        v_ref = _blink_reference(v_ref, flipped, up, down)
        v = steps.blink_accumulate(v, flipped, up, down)
        assert v == pytest.approx(v_ref, abs=1e-12)
        assert 0.0 <= v <= 1.0


@pytest.mark.parametrize("level", [1.0, 0.7, 0.013, 0.0, -0.004])
def test_feedback_level_matches_reference(level):
    for v in (0.0, 0.25, 1.0):
        for gain in (0.0, 0.3, 0.9):
            got = steps.feedback_level(level, v, gain)
            assert got == pytest.approx(_level_reference(level, v, gain), abs=1e-15)
            assert got <= level and (level <= 0 or got > 0)  # lower, never past zero


# ----------------------------------------------------------------- subtractor behaviour


def _flicker_scene(T, H=32, W=40, seed=0):
    """Background whose right half flickers between three colours (water, leaves), a static left half
    with a little noise, and a red square crossing the left half from frame T // 2 on. Returns frames
    and the square's masks."""
    rng = np.random.default_rng(seed)
    frames = np.empty((T, H, W, 3), np.uint8)
    truth = np.zeros((T, H, W), bool)
    palette = np.array([[40, 120, 60], [70, 160, 90], [30, 90, 140]], float)
    for t in range(T):
        img = np.full((H, W, 3), 110.0) + rng.normal(0, 2, (H, W, 3))
        img[:, W // 2:] = palette[rng.integers(0, 3, (H, W - W // 2))] + rng.normal(0, 12, (H, W - W // 2, 3))
        if t >= T // 2:
            x0 = 2 + (t - T // 2) % (W // 2 - 10)
            img[10:18, x0:x0 + 8] = (20, 20, 230)
            truth[t, 10:18, x0:x0 + 8] = True
        frames[t] = np.clip(img, 0, 255)
    return frames, truth


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_blink_feedback_quiets_flickering_pixels(algo):
    frames, truth = _flicker_scene(160)
    W = frames.shape[2]
    result = {}
    for gain in (0.0, 0.6):
        kernel = WIDE_KERNEL if algo == "olkn" else {}  # the median keeps objects' output clean: their edges
        sub = bgsub.create(algo, blink_gain=gain, **kernel)
        fp = rec = 0.0  # do not count as blinks
        for t, fr in enumerate(frames):
            m = sub.apply(fr) > 0
            if t >= 120:
                fp += m[:, W // 2:].mean()
                rec += m[truth[t]].mean()
        result[gain] = (fp / 40, rec / 40)
        if gain > 0:
            assert sub.blink_[:, W // 2:].mean() > 1.5 * sub.blink_[:, : W // 4].mean()  # v builds up where it flickers
    assert result[0.6][0] <= 0.2 * result[0.0][0], result
    if algo == "olkn":  # (nu-NORMA, whose median already removes the flicker here, loses more of the object)
        assert result[0.0][0] > 0.2 and result[0.6][1] > 0.75 * result[0.0][1], result


@pytest.mark.parametrize("algo, update_mask", [("olkn", None), ("norma", "raw"), ("norma", "post")])
def test_frames_do_not_depend_on_threads(algo, update_mask):
    """One fused pass (olkn; norma raw), or the score pass and the update pass (norma post)."""
    frames, _ = _flicker_scene(30)
    masks = []
    for n in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(n)
        try:
            extra = {} if update_mask is None else {"update_mask": update_mask}
            sub = bgsub.create(algo, blink_gain=0.5, **extra, **QUIET)
            masks.append([sub.apply(fr) for fr in frames] + [sub.blink_.copy()])
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for a, b in zip(*masks):
        assert np.array_equal(a, b)


def test_learning_rate_zero_freezes_the_blink_accumulators():
    frames, _ = _flicker_scene(40)
    sub = bgsub.create("olkn", blink_gain=0.5, **WIDE_KERNEL)
    for fr in frames[:30]:
        sub.apply(fr)
    before = sub.blink_.copy()
    for fr in frames[30:]:
        sub.apply(fr, learningRate=0)
    assert before.any() and np.array_equal(before, sub.blink_)


def test_fill_holes_fills_small_holes_only():
    mask = np.zeros((30, 40), np.uint8)
    mask[5:20, 5:20] = 255
    mask[10:13, 10:13] = 0  # a 9-pixel hole
    mask[5:20, 25:38] = 255
    mask[8:18, 28:35] = 0  # a 70-pixel hole
    out = fill_holes(mask, 20)
    assert out[10:13, 10:13].all() and not out[8:18, 28:35].any()
    assert (out[mask > 0] == 255).all() and out.sum() == mask.sum() + 9 * 255
    assert fill_holes(np.zeros((5, 5), np.uint8), 10).sum() == 0  # a frame of background is not a hole
    sub = bgsub.create("olkn", fill_holes=20, **QUIET)
    assert sub._postprocess(mask)[10:13, 10:13].all()


def _components(on, connectivity):
    """Plain-Python transcription: the components of the True pixels of ``on`` (lists of (i, j)), by flood fill
    over 4 or 8 neighbours."""
    H, W = on.shape
    steps = [(-1, 0), (1, 0), (0, -1), (0, 1)] + ([(-1, -1), (-1, 1), (1, -1), (1, 1)] if connectivity == 8 else [])
    seen = np.zeros_like(on, bool)
    out = []
    for i in range(H):
        for j in range(W):
            if on[i, j] and not seen[i, j]:
                seen[i, j] = True
                stack, comp = [(i, j)], []
                while stack:
                    a, b = stack.pop()
                    comp.append((a, b))
                    for da, db in steps:
                        y, x = a + da, b + db
                        if 0 <= y < H and 0 <= x < W and on[y, x] and not seen[y, x]:
                            seen[y, x] = True
                            stack.append((y, x))
                out.append(comp)
    return out


def test_component_filters_match_a_flood_fill_transcription():
    """min_area drops the 8-connected foreground components under its area, fill_holes fills the 4-connected
    background components under its area (those touching the border included): against flood fills in
    Python on random masks of every density, speckled and blocky (long runs, which the filters skip eight
    bytes at a time), and on a strided view."""
    rng = np.random.default_rng(4)
    for k in range(90):
        H, W = rng.integers(1, 25 if k < 60 else 60, 2)
        mask = np.where(rng.random((H, W)) < rng.random(), 255, 0).astype(np.uint8)
        if k >= 60:  # blocks of 1-12 pixels a side
            mask = cv2.resize(mask[: max(1, H // rng.integers(1, 13)), : max(1, W // rng.integers(1, 13))],
                              (int(W), int(H)), interpolation=cv2.INTER_NEAREST)
        if k % 10 == 9:
            mask = np.repeat(mask, 2, axis=1)[:, ::2]  # not contiguous
        for area in (1, 2, 4, 9, 30):
            removed = mask.copy()
            for comp in _components(mask > 0, 8):
                if len(comp) < area:
                    for a, b in comp:
                        removed[a, b] = 0
            filled = mask.copy()
            for comp in _components(mask == 0, 4):
                if len(comp) < area:
                    for a, b in comp:
                        filled[a, b] = 255
            assert np.array_equal(remove_small(mask, area), removed), (k, area)
            assert np.array_equal(fill_holes(mask, area), filled), (k, area)
            # into a buffer of the last frame's bytes, and in place; the mask itself where nothing changes
            for f, want in ((remove_small, removed), (fill_holes, filled)):
                out = rng.integers(0, 256, mask.shape, dtype=np.uint8)
                got = f(mask, area, out)
                assert np.array_equal(got, want) and (got is out or np.array_equal(want, mask)), (k, area)
                own = np.ascontiguousarray(mask).copy()
                assert np.array_equal(f(own, area, own), want), (k, area)
        assert count_components(np.ascontiguousarray(mask)) == len(_components(mask > 0, 8)), k


def test_mask_filter_reuses_its_buffers_and_leaves_its_inputs_alone():
    """MaskFilter writes the median and the component filters into buffers it keeps between frames (no fresh
    arrays a frame), in place once the mask is its own; the raw mask and an array another engine's median handed
    over (the GPU engine keeps its download to recognise it) are never written; the masks are those of the
    filters as functions."""
    from bgsub.pipeline.stages import MaskFilter

    rng = np.random.default_rng(11)
    params = {"median": 3, "median_max": 5, "fill_holes": 6, "min_area": 4}

    def reference(raw, k):
        return remove_small(fill_holes(binary_median(raw, k), 6), 4)

    mf = MaskFilter()
    outs = []
    for t in range(6):
        raw = np.where(rng.random((40, 50)) < 0.3 + 0.1 * t, np.uint8(255), np.uint8(0))
        raw[5:25, 10:30] = 255
        raw[12:16, 15:19] = 0  # a hole
        kept = raw.copy()
        n = count_components(binary_median(raw, 3))
        k = 5 if (n if mf.blobs_ < 0 else mf.blobs_ + 0.05 * (n - mf.blobs_)) >= 10 else 3
        got = mf.apply(raw, params)
        assert np.array_equal(raw, kept)  # the raw mask is read only
        assert np.array_equal(got, reference(raw, k)), t
        assert any(got is b for b in mf._buffers.values())  # one of the filter's own arrays
        outs.append(got)
    assert len({id(b) for b in mf._buffers.values()}) == len(mf._buffers) <= 3  # median3, median5, components
    assert outs[-1] is outs[-3] or outs[-1] is outs[-2]  # the same buffers frame after frame

    handed = []

    def foreign_median(mask, k):  # another engine's median: a fresh download it keeps a reference to
        handed.append(binary_median(mask, k))
        return handed[-1]

    raw = np.zeros((40, 50), np.uint8)
    raw[5:25, 10:30] = 255
    raw[12:16, 15:19] = 0
    got = MaskFilter().apply(raw, {"median": 3, "fill_holes": 20}, foreign_median)
    assert np.array_equal(handed[0], binary_median(raw, 3))  # not filled in place
    assert got is not handed[0] and np.array_equal(got, fill_holes(binary_median(raw, 3), 20))
    assert got[12:16, 15:19].all()
    # nothing to change: the engine's own array comes back (the GPU engine then reuses its device copy)
    clean = np.zeros((40, 50), np.uint8)
    clean[5:25, 10:30] = 255
    handed.clear()
    assert MaskFilter().apply(clean, {"median": 3, "fill_holes": 20}, foreign_median) is handed[0]


def test_a_cluttered_mask_gets_the_larger_median(tmp_path, monkeypatch):
    """median_max: while the running mean number of blobs after the base median reaches CLUTTER_BLOBS, the raw
    mask is filtered with the larger aperture; the mean is counted at the base aperture (no feedback from the
    choice), starts at the first frame's count, and is kept in checkpoints (blobs_)."""
    rng = np.random.default_rng(7)
    clutter = np.zeros((60, 80), np.uint8)
    for _ in range(30):  # 30 separate 4x4 squares: 30 blobs at median 3, gone at median 9
        y, x = rng.integers(0, 14) * 4, rng.integers(0, 19) * 4
        clutter[y:y + 4, x:x + 4] = 255
    clutter[::8] = 0  # keep them apart
    clutter[:, ::8] = 0
    clean = np.zeros((60, 80), np.uint8)
    clean[20:40, 30:50] = 255  # one object
    from bgsub.pipeline import stages

    assert (stages.CLUTTER_BLOBS, stages.CLUTTER_RATE) == (10.0, 0.05)  # the constants; smaller here: few frames
    monkeypatch.setattr(stages, "CLUTTER_BLOBS", 5.0)
    monkeypatch.setattr(stages, "CLUTTER_RATE", 0.5)
    base = dict(QUIET, median=3, median_max=9, min_area=0, fill_holes=0)
    sub = bgsub.create("olkn", **base)
    n = count_components(binary_median(clutter, 3))
    assert n >= 9
    assert np.array_equal(sub._postprocess(clutter), binary_median(clutter, 9))  # the first frame's count: n
    assert sub.blobs_ == n
    assert np.array_equal(sub._postprocess(clean), binary_median(clean, 9))  # the mean (n + 1) / 2 still >= 5
    assert sub.blobs_ == pytest.approx((n + 1) / 2)
    for _ in range(6):
        out = sub._postprocess(clean)
    assert sub.blobs_ < 5 and np.array_equal(out, binary_median(clean, 3))  # the mean fell: the base aperture
    live = bgsub.create("olkn", **base)
    for frame in (clutter, clean, clutter):
        live.apply(np.dstack([frame] * 3))
    live.save(tmp_path / "model.npz")
    assert live.blobs_ >= 0 and bgsub.load(tmp_path / "model.npz").blobs_ == live.blobs_
    off = bgsub.create("olkn", **dict(base, median_max=0))
    assert np.array_equal(off._postprocess(clutter), binary_median(clutter, 3)) and off.blobs_ == -1.0
    assert bgsub.create("olkn").get_params()["median_max"] == 9  # olkn's default
    assert bgsub.create("norma").get_params()["median_max"] == 0  # norma loses with it
    with pytest.raises(ValueError, match="median_max must be 0 or an odd aperture, got 8"):
        bgsub.create("olkn", median_max=8).apply(np.zeros((8, 8, 3), np.uint8))
