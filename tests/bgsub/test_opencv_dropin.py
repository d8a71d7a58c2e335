"""Every subtractor is a drop-in for ``cv2.BackgroundSubtractor`` in code written for OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.bgslibrary import PEERS
from bgsub.models.base import PixelKernelSubtractor
from bgsub.registry import algorithms


def _frames(T=12, H=6, W=8, seed=0):
    rng = np.random.default_rng(seed)
    x = 100 + rng.normal(0, 3, size=(T, H, W, 3))
    x[8:, 2:4, 2:5] += 90  # an object arrives
    return np.clip(np.round(x), 0, 255).astype(np.uint8)


def opencv_client(subtractor, frames, last_rate=0.01):
    """A loop as written against ``cv2.BackgroundSubtractor`` (positional fgmask and learningRate)."""
    assert not subtractor.empty()
    name = subtractor.getDefaultName()
    assert isinstance(name, str) and name.startswith("BackgroundSubtractor")
    fgmask = None
    masks = []
    for i, frame in enumerate(frames):
        rate = -1 if i < len(frames) - 2 else last_rate
        fgmask = subtractor.apply(frame, fgmask, rate)
        masks.append(fgmask.copy())
    background = subtractor.getBackgroundImage()
    subtractor.clear()
    return np.array(masks), background


def test_client_loop_runs_unchanged_with_opencv_itself():
    masks, background = opencv_client(cv2.createBackgroundSubtractorMOG2(), _frames())
    assert masks.shape == (12, 6, 8) and background.shape == (6, 8, 3)


@pytest.mark.parametrize("algo", algorithms())
def test_client_loop_runs_unchanged_with_ours(algo):
    sub = bgsub.create(algo)
    # BGSLibrary's peers have no learning rate and refuse one (tests/bgsub/test_bgslibrary.py)
    masks, background = opencv_client(sub, _frames(), -1 if algo in PEERS else 0.01)
    assert masks.shape == (12, 6, 8) and masks.dtype == np.uint8
    assert set(np.unique(masks)) <= {0, 255}
    assert background is not None and background.shape[:2] == (6, 8)


@pytest.mark.parametrize("algo", algorithms())
def test_apply_writes_into_fgmask_and_matches_a_fresh_mask(algo):
    frames = _frames()
    a, b = bgsub.create(algo), bgsub.create(algo)
    out = np.full((6, 8), 7, np.uint8)
    for frame in frames:
        ref = a.apply(frame)
        got = b.apply(frame, out)
        assert got is out
        np.testing.assert_array_equal(out, ref)
    with pytest.raises(ValueError, match="fgmask must be None or a uint8 array of shape"):
        b.apply(frames[0], np.zeros((3, 3), np.uint8))


@pytest.mark.parametrize("algo", algorithms())
def test_positional_learning_rate_zero_does_not_learn(algo):
    frames = _frames()
    sub = bgsub.create(algo)
    if not isinstance(sub, PixelKernelSubtractor):
        pytest.skip("an OpenCV peer: its background image is OpenCV's business (KNN refreshes it even at learningRate=0)")
    for frame in frames[:6]:
        sub.apply(frame)
    before = sub.getBackgroundImage().copy()
    white = np.full_like(frames[0], 255)
    for _ in range(3):
        sub.apply(white, None, 0)
    np.testing.assert_array_equal(sub.getBackgroundImage(), before)


@pytest.mark.parametrize("algo", algorithms())
def test_clear_forgets_the_model(algo):
    sub = bgsub.create(algo)
    for frame in _frames(T=6):
        sub.apply(frame)
    sub.clear()
    # a frame of another size is accepted only by a model that forgot the old one
    mask = sub.apply(np.zeros((5, 9, 3), np.uint8))
    assert mask.shape == (5, 9)
