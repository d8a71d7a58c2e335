"""Per-pixel adaptivity, spatial diffusion, warm-up and frame-level options of the kernel subtractors."""

from __future__ import annotations

import numpy as np
import pytest

import bgsub
from bgsub.augment import translate
from tests.bgsub._params import WIDE_KERNEL

QUIET = dict(median=0)


def _scene(T, H=32, W=40, seed=0):
    """Smooth noisy background (uint8 (T, H, W, 3)), no objects."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([60 + 2 * xx, 90 + 2 * yy, 140 + 0 * xx], -1).astype(float)
    return np.clip(base[None] + rng.normal(0, 3, (T,) + base.shape), 0, 255).astype(np.uint8)


def test_reset_rebuilds_the_gaussian_table_for_a_new_channel_count():
    # grey frames, reset(), colour frames at width >= 64 used to keep the grey table
    # (25 790 entries sized for 1 channel), so colour distances fell off its end: kernel 0, all foreground
    grey = _scene(5)[..., 0]
    colour = _scene(30, seed=1)
    for algo in ("olkn", "norma"):
        sub = bgsub.create(algo, width=80.0)
        for fr in grey:
            sub.apply(fr)
        grey_table = sub.lut().shape[0]
        sub.reset()
        for fr in colour:
            mask = sub.apply(fr)
        fresh = bgsub.create(algo, width=80.0)
        fresh.apply(colour[0])
        assert sub.lut().shape == fresh.lut().shape and sub.lut().shape[0] > grey_table
        assert mask.mean() < 0.05 * 255, algo


def test_state_arrays_are_listed_for_checkpoints():
    for algo, params in (("olkn", {}), ("olkn", {"texture": 50.0}), ("norma", {})):
        sub = bgsub.create(algo, **params)
        sub.apply(_scene(1)[0])
        for name in type(sub)._STATE_ARRAYS:
            arr = getattr(sub, name)
            if arr is None:  # the samples' descriptors exist only while the texture features are on
                assert name == "texture_" and not sub.params["texture"]
                continue
            assert isinstance(arr, np.ndarray) and arr.shape[:2] == (32, 40), name
        listed = set(type(sub)._STATE_ARRAYS)
        per_pixel = {k for k, v in vars(sub).items()
                     if k.endswith("_") and isinstance(v, np.ndarray) and v.shape[:2] == (32, 40)}
        assert per_pixel <= listed


def test_apply_takes_opencvs_arguments():
    frames = _scene(4)
    a, b = bgsub.create("olkn"), bgsub.create("olkn")
    out = np.zeros((32, 40), np.uint8)
    for fr in frames:
        got = a.apply(fr, out, 0.5)
        assert got is out
        ref = b.apply(fr, learningRate=0.5)
        np.testing.assert_array_equal(out, ref)
    c = bgsub.create("olkn")
    small = np.full((3, 3), 7, np.uint8)  # not the frame's size: left alone and a new mask returned, as OpenCV
    assert c.apply(frames[1], small).shape == (32, 40) and (small == 7).all()


def test_quantile_offset_lowers_the_threshold_of_a_dynamic_pixel():
    # a background that moves over a wide range (water, leaves): each value is explained by few
    # past samples, so under the paper's rule 69 (rho stays 0) a third of its frames are flagged;
    # the per-pixel nu-trick lowers that pixel's threshold (to rho_min at most) and not the others'
    T = 300
    frames = _scene(T)
    rng = np.random.default_rng(3)
    wave = rng.integers(-35, 36, (T, 32, 20, 1))
    frames[:, :, :20] = np.clip(frames[:, :, :20].astype(int) + wave, 0, 255).astype(np.uint8)
    flagged = {}
    for rule in ("paper", "quantile"):
        sub = bgsub.create("olkn", rho_rule=rule, diffuse_prob=0.0, **QUIET, **WIDE_KERNEL)
        masks = np.array([sub.apply(fr) for fr in frames])
        flagged[rule] = masks[200:, :, :20].mean() / 255
        if rule == "quantile":
            assert sub.rho_[:, :20].mean() < -0.1  # the dynamic half learnt a lower threshold
            assert sub.rho_[:, 25:].mean() > sub.rho_[:, :20].mean() + 0.1
            assert sub.rho_.min() >= sub.params["rho_min"]
    assert flagged["paper"] > 0.3
    assert flagged["quantile"] < 0.5 * flagged["paper"]


def _ghost_stream(T=160):
    """An object present in the first frame that leaves at frame 1: its place is a ghost."""
    frames = _scene(T)
    frames[0, 8:24, 10:30] = (20, 200, 30)
    return frames


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_neighbour_diffusion_heals_ghosts_and_is_deterministic(algo):
    frames = _ghost_stream()
    left = {}
    for p in (0.0, 0.5):
        runs = []
        for _ in range(2):
            # a bootstrap radius well under the ghost's size (olkn's default 8 draws much of the 16x20 ghost's
            # bootstrap from the background around it, which heals most of it before any diffusion)
            sub = bgsub.create(algo, diffuse_prob=p, fg_update_prob=0.0, init_radius=3, **QUIET)
            runs.append(np.array([sub.apply(fr) for fr in frames]))
        np.testing.assert_array_equal(runs[0], runs[1])  # counter-based hash: same result every run
        left[p] = runs[0][-20:, 8:24, 10:30].mean() / 255
    assert left[0.0] > 0.5  # no diffusion, no foreground update: the ghost stays
    assert left[0.5] < 0.5 * left[0.0]  # background neighbours eat it from its border


def test_norma_bootstrap_works_on_a_short_clip():
    # from the first frame on; before the bootstrap nu-NORMA kept one or two of its B values
    frames = _scene(12)
    frames[6:, 10:20, 10:20] = (230, 30, 30)
    for init_rho, ok in (("quantile", True), ("steps", False)):
        sub = bgsub.create("norma", init_rho=init_rho, **QUIET)
        masks = np.array([sub.apply(fr) for fr in frames])
        recall = masks[6:, 10:20, 10:20].mean() / 255
        outside = masks[1:, 22:, 22:].mean() / 255
        good = recall > 0.9 and outside < 0.15
        assert good == ok, (init_rho, recall, outside)


def test_stabilisation_undoes_camera_shifts():
    import cv2

    rng = np.random.default_rng(5)
    H, W, T = 96, 128, 40
    texture = cv2.normalize(cv2.GaussianBlur(rng.uniform(0, 1, (H, W)), (0, 0), 1.5), None, 20, 230,
                            cv2.NORM_MINMAX)
    frames = np.clip(texture[None, :, :, None] + rng.normal(0, 2, (T, H, W, 3)), 0, 255).astype(np.uint8)
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-3, 4, 2)) for _ in range(T - 1)]
    shaken = [np.ascontiguousarray(translate(fr, dx, dy, cv2.BORDER_REPLICATE, 0))
              for fr, (dx, dy) in zip(frames, shifts)]
    fg = {}
    for mode in ("off", "match"):
        sub = bgsub.create("olkn", stabilise=mode, diffuse_prob=0.0, init_radius=1, blink_gain=0.0)
        found = []
        masks = []
        for fr in shaken:
            masks.append(sub.apply(fr))
            found.append(sub._shift)
        fg[mode] = np.array(masks)[20:, 4:-4, 4:-4].mean() / 255
        if mode == "match":
            assert found == shifts  # every shift recovered
            assert sub.getScoreMap().shape == (H, W)
    assert fg["off"] > 0.05  # textured background shaken by 3 pixels: flagged where it has edges
    assert fg["match"] < 0.3 * fg["off"]


def test_warmup_frames_step_every_background_pixel_then_hand_back_to_the_policy():
    # a background that drifts (exposure settling): in the warm-up every background pixel steps, so the
    # model follows the drift more closely than with update_prob 0.25
    frames = np.clip(_scene(30).astype(float) + 1.5 * np.arange(30)[:, None, None, None], 0, 255).astype(np.uint8)
    fg = {}
    per_frame = {}
    for warm in (0, 30):
        # (without the illumination compensation, which would divide the drift out)
        sub = bgsub.create("olkn", warmup_frames=warm, width=20.0, blink_gain=0.0, diffuse_prob=0.0,
                           illumination="off", **QUIET)
        steps = []
        masks = []
        for fr in frames:
            before = sub.n_steps_
            masks.append(sub.apply(fr))
            steps.append((sub.n_steps_ - before) / fr[..., 0].size)
        fg[warm] = np.array(masks)[5:15].mean() / 255
        per_frame[warm] = steps
    assert fg[30] < fg[0]
    assert min(per_frame[30][1:6]) > 0.95  # every (background) pixel steps
    assert max(per_frame[0][1:6]) < 0.4  # the policy's 0.25
    short = bgsub.create("olkn", warmup_frames=3, **QUIET)
    counts = []
    for fr in frames[:8]:
        before = short.n_steps_
        short.apply(fr)
        counts.append(short.n_steps_ - before)
    assert min(counts[1:4]) > 2 * max(counts[4:])  # frames 1-3 warm up, then the policy again
    frozen = bgsub.create("olkn", warmup_frames=8, **QUIET)
    frozen.apply(frames[0])
    before = frozen.n_steps_
    frozen.apply(frames[1], learningRate=0.0)  # an explicit learning rate wins over the warm-up
    assert frozen.n_steps_ == before
