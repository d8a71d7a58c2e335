"""Every subtractor is a drop-in for ``cv2.BackgroundSubtractor`` in code written for OpenCV."""

from __future__ import annotations

import warnings

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
    # as OpenCV's output arrays: a mask of another shape is left alone and a new one returned
    other = np.full((3, 3), 7, np.uint8)
    assert b.apply(frames[0], other).shape == (6, 8) and (other == 7).all()


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


# --------------------------------------------------------------------------------------------------------------
# OpenCV's background-subtraction tutorial (samples/python/tutorial_code/video/background_subtraction/bg_sub.py)
# --------------------------------------------------------------------------------------------------------------

KERNEL_ALGOS = ("olkn", "norma", "svmd", "oem")


class MemoryCapture:
    """``cv2.VideoCapture`` over frames held in memory: ``isOpened``, ``read`` (a copy, ``(False, None)`` at
    the end) and ``get(cv2.CAP_PROP_POS_FRAMES)``."""

    def __init__(self, frames):
        self._frames = list(frames)
        self._pos = 0

    def isOpened(self):
        return True

    def read(self):
        if self._pos >= len(self._frames):
            return False, None
        self._pos += 1
        return True, self._frames[self._pos - 1].copy()

    def get(self, prop):
        assert prop == cv2.CAP_PROP_POS_FRAMES
        return float(self._pos)


def tutorial(backSub, capture):
    """The tutorial's loop, step for step: read until no frame, ``apply``, the frame number drawn on the frame,
    both shown (here: kept), ``waitKey`` (here: no key). Returns the masks shown.

    One step is OpenCV's own limit, not the subtractor's: OpenCV 5.0.0's ``putText`` draws on 8-bit images only
    (a 16-bit or float frame fails its assertion ``img.depth() == CV_8U``, whatever the subtractor), so the frame
    number is written on 8-bit frames only; ``rectangle`` draws on every type."""
    shown = []
    while True:
        ret, frame = capture.read()
        if frame is None:
            break
        fgMask = backSub.apply(frame)
        cv2.rectangle(frame, (10, 2), (100, 20), (255, 255, 255), -1)
        if frame.dtype == np.uint8:
            cv2.putText(frame, str(capture.get(cv2.CAP_PROP_POS_FRAMES)), (15, 15),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0))
        shown.append((frame, fgMask))  # cv.imshow('Frame', frame); cv.imshow('FG Mask', fgMask)
        keyboard = -1  # cv.waitKey(30)
        if keyboard == 'q' or keyboard == 27:
            break
    return [m for _, m in shown]


def _scene(T=14, H=24, W=32, seed=1):
    """A small BGR uint8 scene: textured background, noise, an object entering at frame 8."""
    rng = np.random.default_rng(seed)
    base = 60 + 4 * np.arange(W)[None, :, None] + 2 * np.arange(H)[:, None, None] + 30 * np.arange(3)
    x = base + rng.normal(0, 3, size=(T, H, W, 3))
    x[8:, 6:14, 10:20] = (40, 200, 230)
    return np.clip(np.round(x), 0, 255).astype(np.uint8)


#: The frame types OpenCV's subtractors take, each made from the same 8-bit frames (and read back to them).
CONVERSIONS = {
    "uint16 (v * 257)": lambda f: f.astype(np.uint16) * 257,
    "uint16 (v << 8, low bits set)": lambda f: (f.astype(np.uint16) << 8) | 0xA5,
    "float32 (0-255)": lambda f: f.astype(np.float32) + np.float32(0.3),
    "float64 (0-255)": lambda f: f.astype(np.float64) - 0.4,
    "BGRA": lambda f: cv2.cvtColor(f, cv2.COLOR_BGR2BGRA),
    "BGRA uint16": lambda f: cv2.cvtColor(f, cv2.COLOR_BGR2BGRA).astype(np.uint16) * 257,
}


def test_the_tutorial_loop_is_opencvs():
    masks = tutorial(cv2.createBackgroundSubtractorMOG2(), MemoryCapture(_scene()))
    assert len(masks) == 14 and all(m.shape == (24, 32) and m.dtype == np.uint8 for m in masks)


@pytest.mark.parametrize("kind", list(CONVERSIONS))
def test_the_tutorial_runs_unchanged_on_opencvs_frame_types(kind):
    """16-bit, float and BGRA frames give olkn's masks of the 8-bit BGR frames they hold, byte for byte."""
    frames = _scene()
    want = tutorial(bgsub.create("olkn"), MemoryCapture(frames))
    assert want[-1][6:14, 10:20].mean() > 150 and not want[-1][:, :6].any()  # the object found, the rest clean
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either
        got = tutorial(bgsub.create("olkn"), MemoryCapture([CONVERSIONS[kind](f) for f in frames]))
    np.testing.assert_array_equal(np.array(got), np.array(want))


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_every_kernel_subtractor_reads_the_frame_types_alike(algo):
    frames = _scene(T=10)
    ref = bgsub.create(algo)
    want = [ref.apply(f) for f in frames]
    for kind in ("uint16 (v * 257)", "float32 (0-255)", "BGRA"):
        sub = bgsub.create(algo)
        got = [sub.apply(CONVERSIONS[kind](f)) for f in frames]
        np.testing.assert_array_equal(np.array(got), np.array(want), err_msg=kind)
    # grey: (H, W) and (H, W, 1), 8-bit and 16-bit, the same masks
    grey = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames]
    a, b, c = bgsub.create(algo), bgsub.create(algo), bgsub.create(algo)
    for g in grey:
        m = a.apply(g)
        np.testing.assert_array_equal(b.apply(g[:, :, None]), m)
        np.testing.assert_array_equal(c.apply(g.astype(np.uint16) << 8), m)
    assert a.getBackgroundImage().shape == (24, 32)


def test_the_tutorial_runs_through_a_size_change_with_one_warning():
    small, large = _scene(T=8), _scene(T=10, H=30, W=40, seed=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        masks = tutorial(bgsub.create("olkn"), MemoryCapture(list(small) + list(large)))
    news = [w for w in caught if issubclass(w.category, bgsub.NewModelWarning)]
    assert len(news) == 1 and len(caught) == 1
    assert "frame size changed from 32x24 to 40x30: a new model starts from this frame" in str(news[0].message)
    assert [m.shape for m in masks] == [(24, 32)] * 8 + [(30, 40)] * 10
    # the new model is a fresh one: the masks a new subtractor gives on the large frames alone
    fresh = tutorial(bgsub.create("olkn"), MemoryCapture(large))
    np.testing.assert_array_equal(np.array(masks[8:]), np.array(fresh))


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_a_size_or_channel_change_starts_a_new_model(algo):
    frames, other = _scene(T=6), _scene(T=6, H=20, W=30, seed=3)
    sub, fresh = bgsub.create(algo), bgsub.create(algo)
    for f in frames:
        sub.apply(f)
    with pytest.warns(bgsub.NewModelWarning, match="frame size changed from 32x24 to 30x20"):
        first = sub.apply(other[0])
    np.testing.assert_array_equal(first, fresh.apply(other[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per change, not one per frame
        for f in other[1:]:
            np.testing.assert_array_equal(sub.apply(f), fresh.apply(f))
    with pytest.warns(bgsub.NewModelWarning, match=r"frame has 1 channel\(s\) but the model was built from 3"):
        mask = sub.apply(cv2.cvtColor(other[0], cv2.COLOR_BGR2GRAY))
    assert mask.shape == (20, 30) and sub.getBackgroundImage().shape == (20, 30)


@pytest.mark.parametrize("algo", ["knn", "mog2"])
def test_the_opencv_peers_read_the_same_frames_and_warn_on_a_size_change(algo):
    """KNN alone reads a 16-bit frame's bytes as 8-bit values; wrapped, both peers get the frame's values."""
    frames = _scene(T=10)
    want = tutorial(bgsub.create(algo), MemoryCapture(frames))
    got = tutorial(bgsub.create(algo), MemoryCapture([f.astype(np.uint16) * 257 for f in frames]))
    np.testing.assert_array_equal(np.array(got), np.array(want))
    sub = bgsub.create(algo)
    sub.apply(frames[0])
    with pytest.warns(bgsub.NewModelWarning, match="a new model starts from this frame"):
        assert sub.apply(np.zeros((20, 30, 3), np.uint8)).shape == (20, 30)


def test_a_float_frame_on_a_zero_one_scale_is_read_on_opencvs_scale_with_a_warning():
    frames = _scene(T=3)
    sub = bgsub.create("olkn")
    with pytest.warns(UserWarning, match=r"0-255 scale .* pass frame \* 255 if it is on a 0-1 scale"):
        sub.apply(frames[0].astype(np.float32) / 255)
    assert sub.getBackgroundImage().max() <= 1  # read as OpenCV reads it: values 0 and 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the first frame of a model only
        sub.apply(frames[1].astype(np.float32) / 255)


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_other_frame_types_and_shapes_get_one_clear_line(algo):
    sub = bgsub.create(algo)
    for bad in (np.zeros((4, 4), np.int32), np.zeros((4, 4, 3), np.int16), np.zeros((4, 4), bool)):
        with pytest.raises(ValueError, match=f"frame dtype {bad.dtype} is not read; frames are uint8 .*uint16 "
                                             r"\(0-65535, read as v >> 8\) or float32/float64"):
            sub.apply(bad)
    with pytest.raises(ValueError, match=r"\(H, W\) grey, \(H, W, 3\) BGR or \(H, W, 4\) BGRA, got shape \(4, 4, 2\)"):
        sub.apply(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(ValueError, match="frame is empty"):
        sub.apply(np.zeros((0, 4, 3), np.uint8))
    with pytest.raises(TypeError, match="frame must be a numpy array, got list"):
        sub.apply([[1, 2]])


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_learning_rate_as_opencv_reads_it(algo):
    frames = _scene(T=8)
    a, b = bgsub.create(algo), bgsub.create(algo)
    for f in frames[:5]:  # any negative rate is the automatic one
        np.testing.assert_array_equal(a.apply(f, None, -1), b.apply(f, None, -7.5))
    # 1 or more: a new model from this frame, as a fresh subtractor's first frame
    for rate in (1, 2, float("inf")):
        sub, fresh = bgsub.create(algo), bgsub.create(algo)
        for f in frames[:5]:
            sub.apply(f)
        np.testing.assert_array_equal(sub.apply(frames[5], None, rate), fresh.apply(frames[5]))
        np.testing.assert_array_equal(sub.apply(frames[6]), fresh.apply(frames[6]))
        assert sub.n_frames_ == 2
    with pytest.raises(ValueError, match="learningRate must be a number .*got nan"):
        a.apply(frames[5], None, float("nan"))
    with pytest.raises(ValueError, match="learningRate must be a number"):
        a.apply(frames[5], None, "fast")


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_an_fgmask_that_does_not_fit_is_left_alone_as_opencv_does(algo):
    frames = _scene(T=4)
    sub, ref = bgsub.create(algo), bgsub.create(algo)
    wrong = [np.full((3, 3), 7, np.uint8), np.full((24, 32), 7, np.float32), np.full((24, 32, 1), 7, np.uint8)]
    for f, out in zip(frames, wrong + [None]):
        got = sub.apply(f, out)
        np.testing.assert_array_equal(got, ref.apply(f))
        assert got is not out and (out is None or (out == 7).all())
    with pytest.raises(TypeError, match="fgmask must be None or a numpy array, got list"):
        sub.apply(frames[0], [[0]])
    # the OpenCV loop that feeds the last mask back in runs through a size change
    fgmask = None
    with pytest.warns(bgsub.NewModelWarning):
        for f in list(frames) + list(_scene(T=3, H=20, W=30)):
            fgmask = sub.apply(f, fgmask)
    assert fgmask.shape == (20, 30)


@pytest.mark.parametrize("algo", KERNEL_ALGOS)
def test_save_and_load_are_honest_about_the_npz_format(algo, tmp_path):
    sub = bgsub.create(algo)
    for f in _scene(T=3):
        sub.apply(f)
    for name in ("model.yml", "model.xml", "model.YAML", "model", "model.npz.tmp"):
        with pytest.raises(bgsub.CheckpointError, match=r"save writes an \.npz checkpoint .*not OpenCV's YAML/XML; "
                                                        r"give the file a \.npz name"):
            sub.save(tmp_path / name)
    assert list(tmp_path.iterdir()) == []  # nothing written, under any name
    path = sub.save(tmp_path / "model.NPZ")
    assert path.name == "model.NPZ"
    (tmp_path / "model.yml").write_bytes(path.read_bytes())
    with pytest.raises(bgsub.CheckpointError, match=r"load reads the \.npz checkpoints that save writes, not OpenCV"):
        bgsub.load(tmp_path / "model.yml")
    with pytest.raises(bgsub.CheckpointError, match="not OpenCV"):
        type(sub).load(str(tmp_path / "model.yml"))
    # a checkpoint under another name is read by its content
    (tmp_path / "model.ckpt").write_bytes(path.read_bytes())
    assert bgsub.load(tmp_path / "model.ckpt").n_frames_ == 3
    assert type(sub).load(tmp_path / "model.NPZ").n_frames_ == 3


def test_not_an_instance_of_cv2_background_subtractor():
    """Documented (docs/usage.md): duck-typed, not a subclass (a Python subclass of cv2.BackgroundSubtractor
    crashes the interpreter in OpenCV 5.0.0)."""
    for algo in ("olkn", "oem", "knn"):
        sub = bgsub.create(algo)
        assert not isinstance(sub, cv2.BackgroundSubtractor)
        for name in ("apply", "getBackgroundImage", "clear", "empty", "getDefaultName"):
            assert callable(getattr(sub, name))
