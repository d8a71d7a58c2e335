"""Checkpoints written before an option was removed: at its neutral value they load, at another they are
refused with a message naming the option."""

from __future__ import annotations

import numpy as np
import pytest

import bgsub
from bgsub.models.base import PixelKernelSubtractor
from learners._persist import CheckpointError, read_checkpoint, write_checkpoint

#: Removed options of every kernel subtractor, with a value each did not have when off.
ON = {"blur": 1.5, "open": 3, "close": 3, "relearn_fraction": 0.5, "relearn_frames": 5, "shadow_low": 0.5,
      "shadow_chroma": 0.2, "match_radius": 1, "match_tries": 4}


def _frames(n=3, h=24, w=32):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def _with_params(path, **extra):
    """Rewrite the checkpoint at ``path`` with ``extra`` added to its parameters (as an older version wrote)."""
    meta, arrays = read_checkpoint(path)
    rest = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    write_checkpoint(path, meta["kind"], {**meta["params"], **extra}, arrays, **rest)


@pytest.mark.parametrize("algo", ["olkn", "norma"])
def test_a_removed_option_at_its_neutral_value_loads(tmp_path, algo):
    sub = bgsub.create(algo, median=0, stabilise="off", illumination="off")
    frames = _frames()
    for f in frames[:2]:
        sub.apply(f)
    path = sub.save(tmp_path / "m.npz")
    want = sub.apply(frames[2])
    cls = type(sub)
    _with_params(path, **cls._REMOVED_PARAMS)
    loaded = cls.load(path)
    assert not set(cls._REMOVED_PARAMS) & set(loaded.params)
    assert np.array_equal(loaded.apply(frames[2]), want)


@pytest.mark.parametrize("name", sorted(ON))
def test_a_removed_option_switched_on_is_refused_naming_it(tmp_path, name):
    sub = bgsub.create("norma", median=0, stabilise="off", illumination="off")
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, **{name: ON[name]})
    with pytest.raises(CheckpointError, match=f"option {name} .*was removed") as err:
        type(sub).load(path)
    assert "\n" not in str(err.value)


def test_a_removed_value_is_refused_naming_it(tmp_path):
    sub = bgsub.create("olkn", median=0, illumination="off")
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, stabilise="phase")
    with pytest.raises(CheckpointError, match="option stabilise='phase' was removed; its other values are 'off', "
                                              "'match'"):
        type(sub).load(path)
    with pytest.raises(ValueError, match="stabilise"):
        bgsub.create("olkn", stabilise="phase")


def test_a_removed_state_value_loads_at_its_value_when_off_and_is_refused_otherwise(tmp_path):
    sub = bgsub.create("olkn", median=0, illumination="off")
    sub.apply(_frames(1)[0])
    path = sub.save(tmp_path / "m.npz")
    meta, arrays = read_checkpoint(path)
    rest = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    for left, ok in ((0, True), (3, False)):
        rest["scalars"] = {**meta["scalars"], "relearn_left_": left}
        write_checkpoint(path, meta["kind"], meta["params"], arrays, **rest)
        if ok:
            assert type(sub).load(path).n_frames_ == 1
        else:
            with pytest.raises(CheckpointError, match="relearn_left_ = 3 belongs to a feature that was removed"):
                type(sub).load(path)


def test_olkn_init_rho_was_removed_but_norma_keeps_its_own(tmp_path):
    sub = bgsub.create("olkn", median=0, illumination="off")
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, init_rho="zero")
    assert "init_rho" not in type(sub).load(path).params
    _with_params(path, init_rho="quantile")
    with pytest.raises(CheckpointError, match="option init_rho .*was removed"):
        type(sub).load(path)
    assert bgsub.create("norma", init_rho="steps").params["init_rho"] == "steps"


@pytest.mark.parametrize("name, value", [("adapt_update", 1.0), ("adapt_by", "blink")])
def test_olkn_adaptive_update_probability_was_removed(tmp_path, name, value):
    sub = bgsub.create("olkn", median=0, illumination="off")
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, adapt_update=0.0, adapt_by="offset")
    assert type(sub).load(path).params == sub.params
    _with_params(path, **{name: value})
    with pytest.raises(CheckpointError, match=f"option {name} .*was removed"):
        type(sub).load(path)


def test_a_checkpoint_with_the_per_pixel_widths_off_continues_without_them(tmp_path):
    frames = _frames(4)
    sub = bgsub.create("olkn", median=0, illumination="off")
    for f in frames[:2]:
        sub.apply(f)
    path = sub.save(tmp_path / "m.npz")
    want = [sub.apply(f) for f in frames[2:]]
    meta, arrays = read_checkpoint(path)
    rest = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    widths = dict(adapt_width=0.0, width_rate=0.01, width_min=1.0, width_max=3.0, width_blink=0.0)
    # as the versions with the per-pixel widths wrote it: their parameters and arrays, the widths off
    arrays = dict(arrays, misfit_=np.zeros((24, 32), np.float32), width_=np.ones((24, 32), np.float32))
    write_checkpoint(path, "olkn", {**meta["params"], **widths}, arrays, **rest)
    resumed = type(sub).load(path)
    assert not hasattr(resumed, "width_") or resumed.width_ is None
    assert all(np.array_equal(resumed.apply(f), w) for f, w in zip(frames[2:], want))
    write_checkpoint(path, "olkn", {**meta["params"], **widths, "adapt_width": 5.0}, arrays, **rest)
    with pytest.raises(CheckpointError, match="option adapt_width .*was removed"):
        type(sub).load(path)
    bad = dict(arrays, misfit_=np.zeros((240, 320), np.float32))
    write_checkpoint(path, "olkn", {**meta["params"], **widths}, bad, **rest)
    with pytest.raises(CheckpointError, match="state 'misfit_' is declared"):
        type(sub).load(path)


def test_olkn_primal_offset_rule_was_removed(tmp_path):
    sub = bgsub.create("olkn", median=0, illumination="off")
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, rho_rule="primal")
    with pytest.raises(CheckpointError, match="option rho_rule='primal' was removed; its other values are 'paper', "
                                              "'quantile'"):
        type(sub).load(path)


def test_every_removed_option_is_gone_from_the_parameters():
    for algo in ("olkn", "norma", "svmd"):
        names = {p.name for p in bgsub.param_specs(algo)}
        cls = type(bgsub.create(algo))
        assert issubclass(cls, PixelKernelSubtractor)
        assert not names & set(cls._REMOVED_PARAMS), algo
        with pytest.raises(ValueError, match="has no parameter"):
            bgsub.create(algo, blur=1.0)
