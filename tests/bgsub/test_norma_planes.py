"""nu-NORMA's score pass over row planes (:mod:`bgsub.models._norma_planes`).

The planes are the per-pixel state transposed, kept up to date by the update pass's steps and written anew
after anything else changes the state; the score pass sums the Gaussian computed in float32 over them. Here:
the planes' layout, the score pass against the table's (the same decisions up to the Gaussian's rounding) and
under any split into bands, and that the planes the score pass reads are the state's through a stream with
every event that changes the state (filling buffers, renormalisation, a checkpoint, switching the update
mask, reset, a new size, GPU-less host use). The subtractor against a plain transcription of the learners'
step with this sum: ``tests/bgsub/test_models.py::test_norma_pixel_equals_scalar_step``.
"""

import numpy as np
import pytest
from numba import njit

import bgsub
from bgsub.models import _norma_frame as nf
from bgsub.models import _norma_planes as npl
from bgsub.models import _state
from learners.expansion import expansion_sum_f32
from learners.kernels import gaussian_f32_args
from tests.bgsub.test_norma_frame import H, W, _stream

def test_build_planes_transposes_and_zeroes_the_free_slots():
    rng = np.random.default_rng(1)
    B, C = 5, 3
    samples = rng.integers(0, 256, (4, 6, B, C)).astype(np.uint8)
    coef = rng.uniform(0.5, 1.5, (4, 6, B)).astype(np.float32)
    ring = np.stack([rng.integers(0, B, (4, 6)), rng.integers(0, B + 1, (4, 6))], axis=-1).astype(np.int64)
    ps, pc = npl.planes_of(samples, coef, ring)
    np.testing.assert_array_equal(ps, samples.transpose(0, 2, 3, 1))
    for i in range(4):
        for j in range(6):
            start, count = ring[i, j]
            live = [(start + k) % B for k in range(count)]
            for b in range(B):
                assert pc[i, b, j] == (coef[i, j, b] if b in live else 0.0)


def _model(frames, **params):
    sub = bgsub.create("norma", stabilise="off", illumination="off", **params)
    for fr in frames:
        sub.apply(fr)
    return sub


@pytest.mark.parametrize("params", [{}, {"init": "empty", "fg_update_prob": 0.3}, {"color": "gray", "budget": 5}])
def test_score_pass_against_the_table_and_under_bands(params):
    frames = _stream(8)
    sub = _model(frames[:7], **params)
    img = sub._input_stages(frames[7])
    planes = npl.planes_of(sub.samples_, sub.coef_, sub.ring_)
    gauss = gaussian_f32_args(float(sub.params["width"]), sub.lut())
    scale = float(sub.scale_)
    outs = []
    for split in ([(0, H)], [(0, 7), (7, 8), (8, H)], "table"):
        blink = sub.blink_.copy()
        feedback = _state.feedback(blink, sub.prev_mask_, sub._blink_args())
        out = (np.zeros((H, W), np.float32), np.zeros((H, W)), np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8))
        if split == "table":
            nf.score(img, _state.pixel_state(sub), scale, sub.lut(), out, feedback, sub._all_full())
        else:
            for rows in split:
                npl.norma_score_planes(img, planes, sub.rho_, scale, gauss, out, feedback, rows)
        outs.append((*out, blink))
    one, three, table = outs
    for a, b in zip(one, three):  # the bands change nothing
        np.testing.assert_array_equal(a, b)
    f, f_table = one[1], table[1]
    assert f.max() > 0
    # each pixel's sum is learners.expansion.expansion_sum_f32's (the GPU engine's), up to float32's rounding (the
    # vectorised and the scalar code may round a term's polynomial differently by one unit, which its eight
    # squarings multiply by 256: 1.5e-5)
    per_pixel = np.array([[_sum_f32(img[i, j], sub.samples_[i, j], sub.coef_[i, j], sub.ring_[i, j], *gauss)
                           for j in range(W)] for i in range(H)])
    np.testing.assert_allclose(f, scale * per_pixel, rtol=2e-5, atol=0)
    assert np.mean(np.abs(f - scale * per_pixel) <= 1e-6 * f) > 0.95
    # the Gaussian within 2e-5 (0 past the table's end, as the table) and float32 sums
    assert (np.abs(f - f_table) <= 3e-5 * f_table).all()
    # the same decisions wherever they are not within that rounding of the level
    clear = np.abs(sub.rho_ - f_table) > 1e-4 * np.abs(f_table)
    assert clear.mean() > 0.9
    for k in (0, 2, 3):  # score's sign, raw mask, own decision
        np.testing.assert_array_equal(np.sign(one[k])[clear] if k == 0 else one[k][clear],
                                      np.sign(table[k])[clear] if k == 0 else table[k][clear])


@njit
def _sum_f32(x, sv, coef, ring, factor, cutoff):
    return expansion_sum_f32(x, sv, coef, ring, factor, cutoff)


def _check_planes(sub, checked):
    """The planes the next score pass would read without writing them anew equal the state's."""
    if sub._planes is None or sub._planes_stale:
        return
    for a, b in zip(sub._planes, npl.planes_of(sub.samples_, sub.coef_, sub.ring_)):
        np.testing.assert_array_equal(a, b)
    checked.append(1)


def test_the_planes_follow_the_state_through_a_stream(tmp_path):
    frames = _stream(40, seed=3)
    checked = []
    # buffers filling from empty, pushes into free slots; a quick decay, so that the scale renormalises
    sub = bgsub.create("norma", stabilise="off", illumination="off", init="empty", eta=0.5, lam=1.8,
                       fg_update_prob=0.5)
    renormalised = 0
    for t, fr in enumerate(frames[:25]):
        before = sub.scale_
        sub.apply(fr, learningRate=0.0 if t == 12 else -1)
        renormalised += sub.scale_ > before
        _check_planes(sub, checked)
    assert renormalised >= 2 and len(checked) >= 20
    # a checkpoint: the loaded model's masks are the running one's
    path = sub.save(tmp_path / "norma.npz")
    loaded = bgsub.load(path)
    for fr in frames[25:30]:
        np.testing.assert_array_equal(loaded.apply(fr), sub.apply(fr))
        _check_planes(sub, checked)
        _check_planes(loaded, checked)
    # the fused frame (update_mask="raw") does not keep the planes: back to "post", they are written anew
    sub.set_params(update_mask="raw")
    for fr in frames[30:33]:
        sub.apply(fr)
    assert sub._planes is None
    sub.set_params(update_mask="post")
    for fr in frames[33:36]:
        sub.apply(fr)
        _check_planes(sub, checked)
    assert sub._planes is not None
    # reset, and a new size
    sub.reset()
    assert sub._planes is None
    small = [fr[:16, :20] for fr in frames[36:40]]
    for fr in small:
        sub.apply(fr)
        _check_planes(sub, checked)
    assert sub._planes[0].shape == (16, 20, 3, 20)
    assert len(checked) >= 30


@pytest.mark.parametrize("params", [{}, {"color": "gray", "budget": 5, "fg_update_prob": 0.5}])
def test_kept_planes_give_what_planes_written_every_frame_give(params):
    """The steps' copies into the planes against planes written anew from the state before every frame."""
    frames = _stream(30, seed=4)
    kept, fresh = (bgsub.create("norma", **params) for _ in range(2))
    for fr in frames:
        fresh._state_changed()
        np.testing.assert_array_equal(kept.apply(fr), fresh.apply(fr))
        np.testing.assert_array_equal(kept.getScoreMap(), fresh.getScoreMap())
    assert kept.n_steps_ == fresh.n_steps_ > 0


@pytest.mark.parametrize("count", [20, 7, 1])
def test_quantile_offsets_take_the_rank_of_the_leave_one_out_values(count):
    """nu-NORMA's first-frame offset: the value of rank ``floor(q * count)`` of the pixel's leave-one-out ``f`` over
    its own live samples, the Gaussian computed in float32 (a plain transcription: every live sample's sum without
    its own term, sorted; up to float32's rounding)."""
    from learners.kernels import gaussian_f32, gaussian_lut

    rng = np.random.default_rng(count)
    B, C, q, scale = 20, 3, 0.1, 0.7
    lut = gaussian_lut(40.0, C * 255 * 255)
    gauss = gaussian_f32_args(40.0, lut)
    samples = rng.integers(60, 140, (4, 5, B, C)).astype(np.uint8)
    coef = rng.uniform(0.001, 0.002, (4, 5, B)).astype(np.float32)
    ring = np.zeros((4, 5, 2), np.int64)
    ring[..., 0] = 0 if count < B else 3  # a filling buffer starts at slot 0; a full one anywhere
    ring[..., 1] = count
    rho = np.full((4, 5), -1.0)
    npl.quantile_offsets(npl.planes_of(samples, coef, ring), ring, rho, scale, gauss, q)
    f32 = np.float32
    for i in range(4):
        for j in range(5):
            slots = [(ring[i, j, 0] + a) % B for a in range(count)]
            values = []
            for a in slots:
                total = 0.0
                for b in slots:
                    if b != a:
                        d2 = f32(((samples[i, j, a].astype(int) - samples[i, j, b].astype(int)) ** 2).sum())
                        total += float(coef[i, j, b]) * float(gaussian_f32(d2, f32(gauss[0]), f32(gauss[1])))
                values.append(scale * total)
            want = sorted(values)[min(int(q * count), count - 1)]
            assert rho[i, j] == pytest.approx(want, rel=2e-5, abs=1e-12)
            if count == 1:
                assert rho[i, j] == 0.0


@pytest.mark.parametrize("params", [{}, {"color": "gray"}, {"budget": 1}, {"width": 0.5}, {"width": 255.0},
                                    {"init": "empty", "fg_update_prob": 1.0}, {"init_rho": "steps"}])
def test_planes_and_table_agree_in_every_configuration(params):
    """The score pass over row planes against the one over the per-pixel state with the table (a subtractor that
    keeps no planes), on a noisy stream with inverted frames: the same masks on at least 99.5 % of the pixels
    (the sums differ in their last digits; a term past the table's end is 0 in both, so a pixel far from all its
    samples ties as the table's does)."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (5, 130, 3)).astype(np.uint8)
    planes, table = (bgsub.create("norma", stabilise="off", **params) for _ in range(2))
    table._ROW_PLANES = False
    agree = []
    for t in range(25):
        fr = np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)
        if t % 7 == 6:
            fr = 255 - fr
        agree.append(np.mean(planes.apply(fr) == table.apply(fr)))
    assert planes._planes is not None and table._planes is None
    assert np.mean(agree) >= 0.995
