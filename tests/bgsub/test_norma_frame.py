"""nu-NORMA's serial frame kernels over bands of rows (:mod:`bgsub.models._norma_frame`).

That they give the learners' steps bit for bit is checked through the subtractor
(``tests/bgsub/test_models.py::test_norma_pixel_equals_scalar_step``, both update masks) and the default
masks by their hashes (``tests/bgsub/test_mask_hashes.py``); here: the bands do not change any result, the
score pass over the per-pixel state is :func:`bgsub.models._frame_kernels.score_frame`'s, the update pass keeps
the row planes, and the subtractor runs these kernels where it should. The score pass over the row planes:
``tests/bgsub/test_norma_planes.py``.
"""

import numpy as np
import pytest

import bgsub
from bgsub.models import _frame_kernels as fk
from bgsub.models import _norma_frame as nf
from bgsub.models import _state
from bgsub.models._norma_planes import planes_of
from bgsub.models.base import _prob

H, W = 24, 32
#: Band splits of the rows: one band, and three uneven ones.
SPLITS = ([(0, H)], [(0, 7), (7, 8), (8, H)])


def _stream(T, C=3, seed=0, square_from=0):
    """Noisy background with a bright square crossing it from frame ``square_from`` on."""
    rng = np.random.default_rng(seed)
    base = rng.integers(40, 200, (H, W, C))
    frames = []
    for t in range(T):
        fr = base + rng.normal(0, 4, base.shape)
        x = (3 * t) % W
        if t >= square_from:
            fr[6:14, x:x + 8] = 250
        frames.append(np.clip(fr, 0, 255).astype(np.uint8))
    return frames


def _model(frames, **params):
    sub = bgsub.create("norma", stabilise="off", illumination="off", **params)
    for fr in frames:
        sub.apply(fr)
    return sub


def _copy(sub):
    """The model's state and feedback arrays, copied."""
    return {k: getattr(sub, k).copy() for k in ("samples_", "coef_", "ring_", "rho_", "blink_", "prev_mask_",
                                                 "post_mask_")}


def _planes_of(w):
    """Row planes written from the copied state ``w`` (:func:`bgsub.models._norma_planes.planes_of`)."""
    return planes_of(w["samples_"], w["coef_"], w["ring_"])


def _args(sub, w):
    p = sub.params
    state = (w["samples_"], w["coef_"], w["ring_"], w["rho_"])
    feedback = _state.feedback(w["blink_"], w["prev_mask_"], (w["post_mask_"], *sub._blink_args()[1:]))
    policy = _state.policy(_prob(p["update_prob"]), _prob(p["fg_update_prob"]), _prob(p["diffuse_prob"]), p,
                           sub.n_frames_)
    return state, feedback, policy


CASES = [
    {},  # the defaults: full buffers after the bootstrap, blink feedback, the post-processed mask
    {"init": "empty", "diffuse_prob": 0.5, "fg_update_prob": 0.3},  # buffers filling; diffusion
    {"color": "gray", "diffuse_prob": 0.5, "blink_gain": 0.0, "budget": 5},
]


@pytest.mark.parametrize("params", CASES)
def test_bands_do_not_change_the_results(params):
    frames = _stream(6)
    sub = _model(frames[:5], **params)
    img = sub._input_stages(frames[5])
    start = _copy(sub)
    lut, scale, rule = sub.lut(), float(sub.scale_), _state.norma_rule(sub.params)
    post = np.zeros((H, W), np.uint8)
    post[5:15, 10:20] = 255  # a post-processed mask: the update's selection and the diffusion's neighbours
    results = []
    for split in SPLITS:
        # score pass, then update pass
        w = _copy(sub)
        state, feedback, policy = _args(sub, w)
        score, raw, own = np.zeros((H, W), np.float32), np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)
        f, stepped = np.zeros((H, W)), np.zeros(H, np.int64)
        for rows in split:
            nf.norma_score(img, state, scale, lut, (score, f, raw, own), feedback, sub._all_full(), rows)
        planes = _planes_of(w)  # the row planes the steps keep up to date (tests/bgsub/test_norma_planes.py)
        for rows in split:
            nf.norma_update(img, state, scale, lut, rule, f, post, policy, stepped, sub._all_full(), planes, rows)
        w["planes"] = planes
        # the fused pass
        w2 = {k: v.copy() for k, v in start.items()}
        state2, feedback2, policy2 = _args(sub, w2)
        score2, raw2, stepped2 = np.zeros((H, W), np.float32), np.zeros((H, W), np.uint8), np.zeros(H, np.int64)
        for rows in split:
            nf.norma_frame(img, state2, scale, lut, rule, policy2, feedback2, (score2, raw2, stepped2), rows)
        results.append((w, score, raw, own, stepped, f, w2, score2, raw2, stepped2))
    one, three = results
    for a, b in zip(one, three):
        if isinstance(a, dict):
            for k in a:
                np.testing.assert_equal(a[k], b[k], err_msg=k)
        else:
            np.testing.assert_array_equal(a, b)
    w, score, raw, own, stepped = one[:5]
    assert stepped.sum() > 0 and (raw == 0).any()
    assert not np.array_equal(w["rho_"], start["rho_"])  # the update pass stepped
    # the steps kept the row planes: they are the planes of the state they left
    for a, b in zip(w["planes"], _planes_of(w)):
        np.testing.assert_array_equal(a, b)
    # the pixel's own decision: rho - f > 0, its score without the feedback's lowering
    if sub.params["blink_gain"] == 0.0:
        np.testing.assert_array_equal(own, raw)


@pytest.mark.parametrize("params", CASES[:2])
def test_score_pass_is_score_frame(params):
    """The score pass without texture features: :func:`fk.score_frame`'s scores, ``f``, masks, own decisions and
    blink accumulators, bit for bit (the evicted shares it does not write), reading the rings or, once every
    buffer is full, not."""
    frames = _stream(6, seed=1)
    sub = _model(frames[:5], **params)
    assert sub._all_full() == (params.get("init", "neighbours") == "neighbours")  # the bootstrap fills them
    img = sub._input_stages(frames[5])
    lut, scale = sub.lut(), float(sub.scale_)
    outs = []
    for kernel in ("fk", "nf", "nf full") if sub._all_full() else ("fk", "nf"):
        w = _copy(sub)
        state, feedback, _ = _args(sub, w)
        score, raw, own = np.zeros((H, W), np.float32), np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)
        f = np.zeros((H, W))
        if kernel == "fk":
            fk.score_frame(img, state, scale, lut, 0.0, score, f, np.zeros((H, W)), raw, own, feedback, None)
        else:
            nf.score(img, state, scale, lut, (score, f, raw, own), feedback, kernel == "nf full")
        outs.append((score, f, raw, own, w["blink_"]))
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)


def test_buffers_full_once_every_count_reaches_the_budget():
    """``_all_full`` reads the counts until every buffer is full, then stays true (counts never fall) until the
    next allocation."""
    sub = _model(_stream(2), init="empty", budget=3)
    assert not sub._all_full()
    sub.ring_[..., 1] = 3
    sub.ring_[0, 0, 1] = 2  # the first pixel read alone first
    assert not sub._all_full()
    sub.ring_[0, 0, 1] = 3
    sub.ring_[-1, -1, 1] = 2
    assert not sub._all_full()
    sub.ring_[-1, -1, 1] = 3
    assert sub._all_full()
    sub._allocate(H, W, 3)
    assert not sub._all_full()


def test_the_subtractor_runs_the_banded_kernels():
    names = [k.__name__ for k in bgsub.create("norma")._frame_kernels()]
    assert names[:3] == ["norma_score_planes", "build_planes", "norma_update"]
    assert [k.__name__ for k in bgsub.create("norma", update_mask="raw")._frame_kernels()][:1] == ["norma_frame"]
    assert bgsub.create("norma", update_mask="raw")._frame_kernels()[0] is nf.norma_frame
    # the whole stream through the banded kernels: a moving object is found, the background learnt
    frames = _stream(20, seed=2, square_from=19)
    sub = bgsub.create("norma", stabilise="off", illumination="off")
    masks = [sub.apply(fr) for fr in frames]
    x = (3 * 19) % W
    assert masks[-1][6:14, x:x + 7].mean() > 200  # the square
    assert masks[-1][16:, :].mean() < 0.05 * 255  # the noisy background below it
    assert masks[-2].mean() < 0.05 * 255
    assert sub.n_steps_ > 0
