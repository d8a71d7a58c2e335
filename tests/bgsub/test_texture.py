"""The texture features of olkn (``texture``, ``texture_threshold``): LBSP descriptors in a product kernel with
colour; norma's were removed."""

from __future__ import annotations

import glob

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.checkpoint import CheckpointError
from bgsub.models import _state, _texture
from learners._persist import read_checkpoint, write_checkpoint
from tests.bgsub._params import WIDE_KERNEL
from tests.conftest import shared_data_dir

# ----------------------------------------------------------------- the descriptor against its transcription


def _lbsp_reference(img, t, floor):
    """LBSP (Bilodeau et al. 2013) written out: for every pixel and channel, bit k set when the k-th point of
    the 16-point 5x5 pattern differs from the centre by more than max(t * centre, floor); borders replicate."""
    H, W, C = img.shape
    pattern = [(-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1),
               (-2, -2), (-2, 0), (-2, 2), (0, 2), (2, 2), (2, 0), (2, -2), (0, -2)]
    out = np.zeros((H, W, C), np.uint16)
    for i in range(H):
        for j in range(W):
            for c in range(C):
                centre = float(img[i, j, c])
                word = 0
                for k, (dy, dx) in enumerate(pattern):
                    n = float(img[min(max(i + dy, 0), H - 1), min(max(j + dx, 0), W - 1), c])
                    if abs(n - centre) > max(t * centre, floor):
                        word |= 1 << k
                out[i, j, c] = word
    return out


@pytest.mark.parametrize("C", [1, 3])
def test_lbsp_matches_its_transcription(C):
    rng = np.random.default_rng(C)
    img = rng.integers(0, 256, (9, 11, C)).astype(np.uint8)
    img[:3, :4] = 5  # a flat dark patch: only the floor decides there
    for t in (0.0, 0.3, 1.0):
        out = np.empty(img.shape, np.uint16)
        _texture.lbsp(img, t, _texture.LBSP_FLOOR, out)
        np.testing.assert_array_equal(out, _lbsp_reference(img, t, _texture.LBSP_FLOOR))
    assert out[0, 0, 0] == 0 and out.max() > 0


def test_lbsp_survives_a_global_gain_on_texture():
    """The relative threshold: a checkerboard scaled by 1.3 keeps its descriptor (the point of LBSP)."""
    yy, xx = np.mgrid[0:12, 0:12]
    img = (60 + 80 * ((yy // 2 + xx // 2) % 2)).astype(np.uint8)[:, :, None]
    a, b = np.empty(img.shape, np.uint16), np.empty(img.shape, np.uint16)
    _texture.lbsp(img, 0.3, _texture.LBSP_FLOOR, a)
    _texture.lbsp((img * 1.3).astype(np.uint8), 0.3, _texture.LBSP_FLOOR, b)
    np.testing.assert_array_equal(a, b)
    assert np.count_nonzero(a) == a.size


def test_inter_frame_descriptor_of_a_pixels_own_neighbourhood_is_its_lbsp():
    """patterns + thresholds: the word of a pixel's 16 pattern points tested against its own centre is
    lbsp's intra-frame descriptor (so a sample taken from a frame matches that frame's neighbourhood with
    Hamming distance 0 under texture_mode="inter")."""
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (9, 11, 3)).astype(np.uint8)
    img[:3, :4] = 5
    for t in (0.0, 0.3, 1.0, 10.0):
        pat = np.empty((*img.shape, 16), np.uint8)
        _texture.patterns(img, pat)
        thr = _texture.thresholds(t)
        bits = (np.abs(pat.astype(int) - img[..., None].astype(int)) > thr[img][..., None].astype(int))
        words = (bits * (1 << np.arange(16))).sum(-1)
        np.testing.assert_array_equal(words, _lbsp_reference(img, t, _texture.LBSP_FLOOR))
    assert thr.dtype == np.uint8 and thr[0] == 4 and thr[255] == 255


# ----------------------------------------------------------------- the subtractor


def _checker_scene(T, H=32, W=40, seed=0):
    """A static textured background: 2x2 checks of 60 and 140 grey, noise of 2 levels."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.repeat((60.0 + 80.0 * ((yy // 2 + xx // 2) % 2))[:, :, None], 3, 2)
    return [base + rng.normal(0, 2, base.shape) for _ in range(T)]


def _flagged(params, last):
    """Fraction of ``last(frame)`` flagged after 40 frames of the checkered background (whole frame, or the
    patch ``[8:24, 10:30]`` where ``last`` pastes one)."""
    frames = _checker_scene(41)
    sub = bgsub.create("olkn", median=0, **{**WIDE_KERNEL, **params})
    for f in frames[:40]:
        sub.apply(np.clip(f, 0, 255).astype(np.uint8))
    img, region = last(frames[40])
    return (sub.apply(np.clip(img, 0, 255).astype(np.uint8))[region] > 0).mean()


def _brighter(f):
    return f * 1.3, np.s_[:, :]


def _flat_patch(f):  # an object of the background's mean colour without its texture: camouflage
    f = f.copy()
    f[8:24, 10:30] = 100.0
    return f, np.s_[8:24, 10:30]


def test_texture_lets_a_wider_colour_kernel_keep_camouflaged_objects():
    """The product kernel only adds discrimination, so its use is a wider colour kernel: a global gain of 1.3
    is flagged far less than by the defaults, while an untextured object of the background's mean colour,
    which the wider colour kernel alone misses, is still found."""
    wide, textured = {"width": 80.0}, {"width": 80.0, "texture": 200.0}
    assert _flagged({}, _brighter) > 0.85
    assert _flagged(textured, _brighter) < 0.6
    assert _flagged(wide, _flat_patch) < 0.3
    assert _flagged(textured, _flat_patch) > 0.95
    assert _flagged(textured, lambda f: (f, np.s_[:, :])) < 0.01  # the background itself stays background


def _highway(n, size=(80, 60)):
    root = shared_data_dir() / "bgs" / "cdnet2014" / "highway" / "input"
    files = sorted(glob.glob(str(root / "*.jpg")))[600:600 + n]
    if len(files) < n:
        pytest.skip("CDnet highway not found")
    return [cv2.resize(cv2.imread(f), size, interpolation=cv2.INTER_AREA) for f in files]


@pytest.mark.parametrize("algo, extra", [("olkn", {"score_map": "exact"}), ("olkn", {"diffuse_prob": 0.2})])
def test_zero_texture_weight_gives_the_colour_engine(algo, extra):
    """A vanishing weight (every table index rounds to the colour one) through the texture code path, which
    stores descriptors everywhere a sample is written: masks, samples, coefficients and offsets
    identical to the engine without texture; texture 0 keeps no descriptors."""
    frames = _highway(30)
    off = bgsub.create(algo, **extra)
    on = bgsub.create(algo, texture=1e-9, **extra)
    for fr in frames:
        np.testing.assert_array_equal(on.apply(fr), off.apply(fr))
    for name in ("samples_", "coef_", "ring_"):
        np.testing.assert_array_equal(getattr(on, name), getattr(off, name))
    # the offsets to the last bits: the two loops may add the same terms in another order under fastmath
    # (4e-16 apart on an AVX-512 machine), which no decision above depended on
    np.testing.assert_allclose(on.rho_, off.rho_, rtol=0, atol=1e-12)
    assert off.texture_ is None and on.texture_.shape == on.samples_.shape and on.texture_.dtype == np.uint16


@pytest.mark.parametrize("algo, extra", [("olkn", {})])
def test_every_sample_keeps_the_descriptor_of_its_value(algo, extra):
    """Bootstrap (init=neighbours), own steps and neighbour
    diffusion all store the descriptor of the very pixel whose colour they store: each (colour, descriptor)
    pair of a model is one some frame had at a pixel within the bootstrap's and the diffusion's radius."""
    rng = np.random.default_rng(4)
    frames = [rng.integers(0, 256, (10, 12, 3)).astype(np.uint8) for _ in range(6)]
    sub = bgsub.create(algo, texture=50.0, diffuse_prob=1.0, update_prob=0.5, median=0, **extra)
    seen = []
    for fr in frames:
        sub.apply(fr)
        d = np.empty(fr.shape, np.uint16)
        _texture.lbsp(fr, sub.params["texture_threshold"], _texture.LBSP_FLOOR, d)
        seen.append((fr, d))
    H, W, B = sub.samples_.shape[:3]
    r = max(sub.params["init_radius"], _state.DIFFUSE_RADIUS)
    for i in range(H):
        for j in range(W):
            pairs = {(tuple(fr[ii, jj]), tuple(d[ii, jj])) for fr, d in seen
                     for ii in range(max(i - r, 0), min(i + r, H - 1) + 1)
                     for jj in range(max(j - r, 0), min(j + r, W - 1) + 1)}
            for b in range(sub.ring_[i, j, 1]):
                assert (tuple(sub.samples_[i, j, b]), tuple(sub.texture_[i, j, b])) in pairs, (i, j, b)
    assert sub.texture_.any()


def test_texture_parameters_are_validated():
    with pytest.raises(ValueError, match="texture must be >= 0, got -1"):
        bgsub.create("olkn", texture=-1.0)
    with pytest.raises(ValueError, match="texture_threshold must be >= 0, got -0.1"):
        bgsub.create("olkn", texture_threshold=-0.1)


def test_norma_has_no_texture_and_its_old_checkpoints_load_without_it(tmp_path):
    """norma's texture features were removed: the parameter is unknown, a checkpoint that carries them off
    (with any descriptor settings) continues without them, one with them on is refused in one line."""
    with pytest.raises(ValueError, match="no parameter 'texture'"):
        bgsub.create("norma", texture=100.0)
    frames = [f.astype(np.uint8) for f in _checker_scene(6)]
    sub = bgsub.create("norma")
    for f in frames[:3]:
        sub.apply(f)
    path = tmp_path / "norma.npz"
    sub.save(path)
    meta, arrays = read_checkpoint(path)
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    for texture, ok in ((0.0, True), (100.0, False)):
        old = tmp_path / f"old{texture:g}.npz"
        params = {**meta["params"], "texture": texture, "texture_threshold": 0.5, "texture_mode": "inter"}
        write_checkpoint(old, "norma", params, arrays, **extra)
        if ok:
            resumed = bgsub.load(old)
            assert "texture" not in resumed.params and resumed.n_frames_ == 3
            for f in frames[3:]:
                np.testing.assert_array_equal(resumed.apply(f), sub.apply(f))
        else:
            with pytest.raises(CheckpointError, match=r"the option texture \(here 100.0\) was removed"):
                bgsub.load(old)


def test_parameter_validation_and_live_switch():
    frames = _checker_scene(12)
    sub = bgsub.create("olkn")
    for f in frames[:4]:
        sub.apply(f.astype(np.uint8))
    assert sub._bounded() and sub.texture_ is None
    # on in a running model: its samples have no descriptors, so it starts again
    assert sub.set_params(texture=100.0) is True and sub.n_frames_ == 0 and sub.samples_ is None
    for f in frames[4:8]:
        sub.apply(f.astype(np.uint8))
    assert not sub._bounded() and sub.texture_ is not None
    assert sub.set_params(texture=200.0) is False and sub.n_frames_ == 4  # a new weight: live
    assert sub.set_params(texture_threshold=0.2) is True  # other descriptors: a new model
    for f in frames[8:]:
        sub.apply(f.astype(np.uint8))
    assert sub.set_params(texture=0.0) is False and sub.texture_ is None and sub._bounded()
    assert sub.n_frames_ == 4
    sub.apply(frames[0].astype(np.uint8))


@pytest.mark.parametrize("algo, layout", [("olkn", 5)])
def test_checkpoint_round_trip_keeps_the_descriptors(tmp_path, algo, layout):
    frames = [np.clip(f, 0, 255).astype(np.uint8) for f in _checker_scene(30)]
    params = dict(texture=150.0, width=60.0)
    whole = bgsub.create(algo, **params)
    expected = [whole.apply(f) for f in frames]
    first = bgsub.create(algo, **params)
    for f in frames[:15]:
        first.apply(f)
    path = first.save(tmp_path / "t.npz")
    assert read_checkpoint(path)[0]["state_layout"] == layout
    resumed = bgsub.load(path)
    np.testing.assert_array_equal(resumed.texture_, first.texture_)
    got = [resumed.apply(f) for f in frames[15:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected[15:], got))
    np.testing.assert_array_equal(resumed.texture_, whole.texture_)
    # damaged: a texture model without its descriptors
    meta, arrays = read_checkpoint(path)
    arrays.pop("texture_")
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    write_checkpoint(tmp_path / "bad.npz", algo, meta["params"], arrays, **extra)
    with pytest.raises(CheckpointError, match="lacks the state array 'texture_'"):
        bgsub.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("algo, old_layout", [("olkn", 3), ("norma", 2)])
def test_a_checkpoint_from_before_the_texture_continues_without_it(tmp_path, algo, old_layout):
    frames = [np.clip(f, 0, 255).astype(np.uint8) for f in _checker_scene(20)]
    old = dict(warmup_frames=0, stabilise="off")  # neither existed before the texture
    whole = bgsub.create(algo, **old)
    first = bgsub.create(algo, **old)
    for f in frames[:10]:
        first.apply(f)
    meta, arrays = read_checkpoint(first.save(tmp_path / "new.npz"))
    assert "texture_" not in arrays
    # as the version before the texture wrote it: the layout before, no texture parameters
    params = {k: v for k, v in meta.pop("params").items() if k not in ("texture", "texture_threshold")}
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    write_checkpoint(tmp_path / "old.npz", algo, params, arrays, **dict(extra, state_layout=old_layout))
    resumed = bgsub.load(tmp_path / "old.npz")
    assert resumed.params.get("texture", 0.0) == 0.0 and resumed.n_frames_ == 10 and resumed.texture_ is None
    expected = [whole.apply(f) for f in frames][10:]
    got = [resumed.apply(f) for f in frames[10:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))


def test_inter_texture_mode_keeps_camouflage_and_gain_robustness():
    """texture_mode="inter" (LOBSTER's inter-LBSP) on the checkered scene: the background stays background,
    the untextured object of the background's mean colour that a wide colour kernel misses is found."""
    inter = {"width": 80.0, "texture": 200.0, "texture_mode": "inter"}
    assert _flagged(inter, lambda f: (f, np.s_[:, :])) < 0.01
    assert _flagged(inter, _flat_patch) > 0.95


def test_inter_texture_mode_is_validated_and_switches_live():
    sub = bgsub.create("olkn", texture=50.0)
    with pytest.raises(ValueError, match="texture_mode"):
        sub.set_params(texture_mode="lobster")
    frames = _highway(12)
    for fr in frames[:6]:
        sub.apply(fr)
    a = bgsub.create("olkn", texture=50.0)
    for fr in frames[:6]:
        a.apply(fr)
    sub.set_params(texture_mode="inter")  # the samples keep their intra-frame descriptors: no reset
    masks_inter, masks_intra = [], []
    for fr in frames[6:]:
        masks_inter.append(sub.apply(fr))
        masks_intra.append(a.apply(fr))
    assert sub.n_frames_ == 12 and sub.texture_ is not None
    assert any((m1 != m2).any() for m1, m2 in zip(masks_inter, masks_intra))


def _sample_frames(n, size=(160, 120)):
    from bgsub.cdnet import load_sequence
    from bgsub.sample import sample_sequence

    seq = load_sequence(sample_sequence())
    return [cv2.resize(seq.read_frame(k), size, interpolation=cv2.INTER_AREA) for k in seq.frames[90:90 + n]]


@pytest.mark.parametrize("extra", [
    {"preset": "accurate"},
    {"texture": 25.0, "width": 30.0},
    {"preset": "accurate", "rho_rule": "paper"},
    {"preset": "accurate", "blink_gain": 0.0, "diffuse_prob": 0.0},
])
def test_textured_sums_that_stop_once_decided_leave_the_full_sums_model(extra):
    """``score_map="bounded"`` (the default) lets a textured sum stop once it passes the decision level and
    the multiplier's saturation point: masks, offsets, blink accumulators and the model are the full
    sums' (``score_map="exact"``), and a stopped pixel's score has the full score's sign and is no lower."""
    from bgsub.models.olkn import createOLKN

    params = dict(extra)
    preset = params.pop("preset", None)
    stops = createOLKN(preset=preset, **params)
    full = createOLKN(preset=preset, score_map="exact", **params)
    assert stops._early_stop() and not full._early_stop()
    differed = 0
    for fr in _sample_frames(40):
        np.testing.assert_array_equal(stops.apply(fr), full.apply(fr))
        np.testing.assert_array_equal(stops.getRawMask(), full.getRawMask())
        s, f = stops.getScoreMap(), full.getScoreMap()
        np.testing.assert_array_equal(s > 0, f > 0)
        assert (s >= f - 1e-9).all()
        differed += int((s != f).sum())
    for name in ("samples_", "coef_", "ring_", "rho_", "blink_", "texture_"):
        np.testing.assert_array_equal(getattr(stops, name), getattr(full, name), err_msg=name)
    assert differed > 0  # the sums did stop early


def test_textured_sums_stop_early_only_under_the_bounded_score_map():
    from bgsub.models.olkn import createOLKN

    assert createOLKN(preset="accurate")._early_stop()
    assert not createOLKN(preset="accurate", score_map="exact")._early_stop()
    assert not createOLKN()._early_stop()  # no texture: the bounded engine
