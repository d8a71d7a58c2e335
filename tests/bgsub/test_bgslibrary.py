"""BGSLibrary's SuBSENSE, LOBSTER, PBAS and ViBe as peers (``bgsub.bgslibrary``; optional ``pybgs``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import bgsub
from bgsub import bgslibrary
from bgsub.bgslibrary import PEERS, BGSLibrarySubtractor

needs_pybgs = pytest.mark.skipif(not bgslibrary.available(),
                                 reason="pybgs (BGSLibrary's wrapper) is not installed: apt install "
                                        "libopencv-dev cmake, then pip install pybgs")


def _scene(T=40, H=32, W=40, seed=0):
    """A noisy static background; a bright square crosses it from frame 20 on."""
    rng = np.random.default_rng(seed)
    frames = np.clip(np.round(90 + rng.normal(0, 2, size=(T, H, W, 3))), 0, 255).astype(np.uint8)
    truth = np.zeros((T, H, W), bool)
    for t in range(20, T):
        x = 2 + (t - 20)
        frames[t, 10:20, x:x + 10] = 230
        truth[t, 10:20, x:x + 10] = True
    return frames, truth


def test_peers_are_registered_exactly_where_pybgs_imports():
    names = set(bgsub.algorithms())
    assert (set(PEERS) <= names) == bgslibrary.available()
    if bgslibrary.available():
        assert bgsub.algorithms()[-4:] == ("subsense", "lobster", "pbas", "vibe")


def test_without_pybgs_a_peer_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(bgslibrary, "_pybgs", None)
    with pytest.raises(ValueError, match="subsense needs BGSLibrary's Python wrapper.*pip install pybgs"):
        BGSLibrarySubtractor("subsense")
    with pytest.raises(ValueError, match="unknown BGSLibrary peer 'gmm'; choose one of subsense, lobster"):
        BGSLibrarySubtractor("gmm")


@needs_pybgs
@pytest.mark.parametrize("algo", list(PEERS))
def test_each_peer_finds_a_moving_object(algo):
    frames, truth = _scene()
    sub = bgsub.create(algo)
    masks = np.array([sub.apply(f) for f in frames])
    assert masks.dtype == np.uint8 and set(np.unique(masks)) <= {0, 255}
    fg = masks[30:] > 0
    recall = (fg & truth[30:]).sum() / truth[30:].sum()
    false_rate = (fg & ~truth[30:]).sum() / (~truth[30:]).sum()
    assert recall > 0.5 and false_rate < 0.1, (recall, false_rate)  # PBAS is still settling (0.06)
    score = sub.getScoreMap()
    assert score.dtype == np.float32 and set(np.unique(score)) <= {-1.0, 1.0}
    np.testing.assert_array_equal(score > 0, masks[-1] > 0)
    assert sub.getBackgroundImage().shape[:2] == (32, 40)


@needs_pybgs
def test_grey_frames_work():
    frames, _ = _scene(T=6)
    sub = bgsub.create("subsense")
    for f in frames:
        mask = sub.apply(f[:, :, 1])
    assert mask.shape == (32, 40)


@needs_pybgs
def test_what_bgslibrary_cannot_do_is_refused_with_a_message():
    frames, _ = _scene(T=3)
    sub = bgsub.create("lobster")
    with pytest.raises(ValueError, match="lobster follows its own update schedule.*learningRate must be -1, got 0"):
        sub.apply(frames[0], None, 0)
    with pytest.raises(ValueError, match=r"lobster needs frames of at least 5×5 pixels, got 3×2"):
        sub.apply(np.zeros((2, 3, 3), np.uint8))
    with pytest.raises(ValueError, match=r"lobster takes uint8 images of shape \(H, W\) or \(H, W, 3\), got float32"):
        sub.apply(frames[0].astype(np.float32))
    sub.apply(frames[0])
    with pytest.raises(ValueError, match=r"model is for frames of shape \(32, 40, 3\), got \(16, 20, 3\); call clear"):
        sub.apply(frames[0][:16, :20])
    sub.clear()  # a new model for the new size
    assert sub.apply(np.ascontiguousarray(frames[0][:16, :20])).shape == (16, 20)
    with pytest.raises(bgsub.CheckpointError, match="lobster keeps its model inside BGSLibrary"):
        sub.save("model.npz")


@needs_pybgs
def test_nothing_is_printed_or_written_to_the_callers_folder(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    frames, _ = _scene(T=4)
    for algo in PEERS:
        sub = bgsub.create(algo)
        for f in frames:
            sub.apply(np.repeat(f[:, :, :1], 3, axis=2))  # SuBSENSE prints a note on grey-looking colour frames
        sub.clear()
        sub.apply(frames[0])
        del sub
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert os.listdir(tmp_path) == []


@needs_pybgs
@pytest.mark.parametrize("algo", list(PEERS))
def test_the_same_frames_give_the_same_masks_whatever_ran_before(algo):
    frames, _ = _scene(T=25)
    first = [m.copy() for m in map(bgsub.create(algo).apply, frames)]
    other = bgsub.create("vibe")  # draws from C's rand() in between
    for f in frames[:7]:
        other.apply(f[::-1].copy())
    again = bgsub.create(algo)
    for f, m in zip(frames, first):
        np.testing.assert_array_equal(again.apply(f), m)
