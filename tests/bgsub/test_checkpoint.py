"""Checkpoints of the kernel subtractors: resume gives the same masks; bad files get clear errors."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import bgsub
from bgsub.checkpoint import CheckpointError
from bgsub.models import NORMASubtractor, OLKNSubtractor
from learners._persist import FORMAT_VERSION, read_checkpoint, write_checkpoint


def _frames(T=24, H=12, W=16, C=3, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(60, 200, size=(H, W, C))
    out = []
    for t in range(T):
        f = base + rng.normal(0, 5, size=base.shape)
        if 8 <= t < 14:
            f[3:8, 4 + t - 8:9 + t - 8] += 80
        out.append(np.clip(f, 0, 255).astype(np.uint8).squeeze())
    return out


@pytest.mark.parametrize("algo,params,C", [("olkn", {}, 3), ("norma", {}, 3), ("olkn", {"color": "gray"}, 3),
                                          ("norma", {"update_mask": "raw", "budget": 5}, 1),
                                          ("olkn", {"init": "empty", "r": 0.3}, 3),
                                          ("oem", {}, 3), ("oem", {"covariance": "diag", "color": "gray"}, 3)])
def test_resume_gives_byte_identical_masks(tmp_path, algo, params, C):
    frames = _frames(C=C)
    whole = bgsub.create(algo, **params)
    first = bgsub.create(algo, **params)
    for f in frames[:10]:
        first.apply(f)
    path = first.save(tmp_path / "model.npz")
    resumed = bgsub.load(path)
    assert type(resumed) is type(first)
    assert resumed.n_frames_ == 10 and resumed.get_params() == first.get_params()
    expected = [whole.apply(f) for f in frames][10:]
    got = [resumed.apply(f) for f in frames[10:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    assert np.array_equal(resumed.getBackgroundImage(), whole.getBackgroundImage())
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"]  # no temporary file left


def test_save_before_first_frame_and_class_load(tmp_path):
    sub = bgsub.createOLKN(width=12.0)
    sub.save(tmp_path / "fresh.npz")
    back = OLKNSubtractor.load(tmp_path / "fresh.npz")
    assert back.samples_ is None and back.params["width"] == 12.0 and back.n_frames_ == 0


def test_file_holds_documented_entries(tmp_path):
    sub = bgsub.createNORMA(seed=7)
    for f in _frames(T=3):
        sub.apply(f)
    sub.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        meta = json.loads(str(z["meta"][()]))
        names = set(z.files)
    assert meta["version"] == FORMAT_VERSION and meta["kind"] == "norma"
    assert meta["params"]["seed"] == 7 and meta["frame_shape"] == [12, 16] and meta["channels"] == 3
    assert meta["random_state"]["n_frames"] == 3 and meta["scalars"]["n_frames_"] == 3
    # every state array the model has
    assert {f"a.{n}" for n in NORMASubtractor._STATE_ARRAYS} | {"meta", "checksum"} == names


def test_wrong_algorithm_is_refused(tmp_path):
    bgsub.createNORMA().save(tmp_path / "n.npz")
    with pytest.raises(CheckpointError, match="holds a 'norma' model, not 'olkn'"):
        OLKNSubtractor.load(tmp_path / "n.npz")


def test_damaged_file_is_refused(tmp_path):
    sub = bgsub.createOLKN()
    sub.apply(_frames(T=1)[0])
    p = sub.save(tmp_path / "m.npz")
    # change one state value inside the archive, keeping it a valid zip
    with np.load(p, allow_pickle=False) as z:
        entries = {k: z[k] for k in z.files}
    entries["a.rho_"] = entries["a.rho_"] + 1.0
    buf = io.BytesIO()
    np.savez(buf, **entries)
    (tmp_path / "edited.npz").write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="checksum does not match"):
        bgsub.load(tmp_path / "edited.npz")
    data = p.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        bgsub.load(tmp_path / "cut.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        bgsub.load(tmp_path / "text.npz")
    with pytest.raises(CheckpointError, match="does not exist"):
        bgsub.load(tmp_path / "missing.npz")


def test_wrong_version_and_shape_are_refused(tmp_path):
    sub = bgsub.createOLKN(budget=4)
    sub.apply(_frames(T=1)[0])
    arrays = {n: getattr(sub, n) for n in sub._STATE_ARRAYS if getattr(sub, n) is not None}  # texture_: off
    meta = dict(frame_shape=[12, 16], channels=3, random_state={"seed": 0, "n_frames": 1, "generator": None},
                scalars={n: getattr(sub, n) for n in sub._STATE_SCALARS})
    write_checkpoint(tmp_path / "ok.npz", "olkn", sub.get_params(), arrays, **meta)
    assert bgsub.load(tmp_path / "ok.npz").n_frames_ == 1
    wrong = dict(arrays, coef_=np.zeros((12, 16, 5), np.float32))
    write_checkpoint(tmp_path / "shape.npz", "olkn", sub.get_params(), wrong, **meta)
    with pytest.raises(CheckpointError, match=r"state 'coef_' is float32\[12, 16, 5\].*needs float32\[12, 16, 4\]"):
        bgsub.load(tmp_path / "shape.npz")
    # a future format version
    with np.load(tmp_path / "ok.npz", allow_pickle=False) as z:
        entries = {k: z[k] for k in z.files}
    m = json.loads(str(entries["meta"][()]))
    m["version"] = FORMAT_VERSION + 1
    entries["meta"] = np.array(json.dumps(m))
    with zipfile.ZipFile(tmp_path / "v.npz", "w") as zf:
        for k, v in entries.items():
            b = io.BytesIO()
            np.save(b, v)
            zf.writestr(k + ".npy", b.getvalue())
    with pytest.raises(CheckpointError, match="format version 2"):
        bgsub.load(tmp_path / "v.npz")


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_a_checkpoint_from_before_the_blink_feedback_continues_with_it_off(tmp_path, algo):
    frames = _frames()
    whole = bgsub.create(algo, blink_gain=0.0)
    first = bgsub.create(algo, blink_gain=0.0)
    for f in frames[:10]:
        first.apply(f)
    meta, arrays = read_checkpoint(first.save(tmp_path / "new.npz"))
    # as the version before the feedback wrote it: layout 1, no blink parameters or arrays
    params = {k: v for k, v in meta.pop("params").items() if not k.startswith("blink_")}
    arrays = {k: v for k, v in arrays.items() if k not in ("blink_", "post_mask_")}
    extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
    write_checkpoint(tmp_path / "old.npz", algo, params, arrays, **dict(extra, state_layout=1))
    resumed = bgsub.load(tmp_path / "old.npz")
    assert resumed.params["blink_gain"] == 0.0 and resumed.n_frames_ == 10
    expected = [whole.apply(f) for f in frames][10:]
    got = [resumed.apply(f) for f in frames[10:]]
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    # a layout this version does not know is refused, not guessed at
    write_checkpoint(tmp_path / "future.npz", algo, params, arrays, **dict(extra, state_layout=9))
    with pytest.raises(CheckpointError, match="state layout 9, from another version.*start a new model"):
        bgsub.load(tmp_path / "future.npz")


def test_object_arrays_are_never_loaded(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, meta=np.array([{"x": 1}], dtype=object), checksum=np.array("0"))
    (tmp_path / "pickle.npz").write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match=r"entry 'meta.npy' holds \|O values.*\(no objects\)"):
        bgsub.load(tmp_path / "pickle.npz")


def test_failed_write_keeps_previous_checkpoint(tmp_path):
    sub = bgsub.createOLKN()
    sub.save(tmp_path / "m.npz")
    before = (tmp_path / "m.npz").read_bytes()
    with pytest.raises(CheckpointError, match="folder .* does not exist"):
        sub.save(tmp_path / "nowhere" / "m.npz")
    sub.apply(_frames(T=1)[0])
    sub.params["width"] = object()  # not JSON: the write fails before touching the file
    with pytest.raises(CheckpointError, match="not representable as JSON"):
        sub.save(tmp_path / "m.npz")
    assert (tmp_path / "m.npz").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


@pytest.mark.parametrize("algo", ["knn", "mog2"])
def test_opencv_peers_cannot_be_saved(tmp_path, algo):
    with pytest.raises(CheckpointError, match="cannot be saved"):
        bgsub.create(algo).save(tmp_path / "m.npz")
    assert not any(tmp_path.iterdir())
