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
      "shadow_chroma": 0.2, "match_radius": 1, "match_tries": 4, "stabilise_max": 4, "diffuse_radius": 2,
      "median_blobs": 5.0, "median_rate": 0.5, "blink_down": 0.05}


def _frames(n=3, h=24, w=32):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def _with_params(path, arrays=None, scalars=None, **extra):
    """Rewrite the checkpoint at ``path`` as an older version wrote it: ``extra`` added to its parameters,
    ``arrays`` to its state arrays (replacing those of the same name), ``scalars`` to its scalars."""
    meta, saved = read_checkpoint(path)
    rest = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "params")}
    if scalars:
        rest["scalars"] = {**meta["scalars"], **scalars}
    write_checkpoint(path, meta["kind"], {**meta["params"], **extra}, {**saved, **(arrays or {})}, **rest)


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


def _refused(path, match, **extra):
    """The checkpoint at ``path``, rewritten with ``extra`` added to its parameters, is refused in one line."""
    _with_params(path, **extra)
    with pytest.raises(CheckpointError, match=match) as err:
        bgsub.load(path)
    assert "\n" not in str(err.value)


@pytest.fixture()
def olkn_saved(tmp_path):
    """A checkpoint of olkn (no median, no illumination gain) as this version writes it."""
    return bgsub.create("olkn", median=0, illumination="off").save(tmp_path / "m.npz")


@pytest.mark.parametrize("name", sorted(ON))
def test_a_removed_option_switched_on_is_refused_naming_it(tmp_path, name):
    path = bgsub.create("norma", median=0, stabilise="off", illumination="off").save(tmp_path / "m.npz")
    _refused(path, f"option {name} .*was removed", **{name: ON[name]})


@pytest.mark.parametrize("extra, match", [
    ({"stabilise": "phase"}, "option stabilise='phase' was removed; its other values are 'off', 'match'"),
    ({"rho_rule": "primal"}, "option rho_rule='primal' was removed; its other values are 'paper', 'quantile'"),
    ({"init_rho": "quantile"}, "option init_rho .*was removed"),
    ({"adapt_update": 1.0}, "option adapt_update .*was removed"),
    ({"adapt_by": "blink"}, "option adapt_by .*was removed"),
    ({"rho_max": 1.0}, "option rho_max .*was removed; only its neutral value 0.0 is read"),
    ({"update_mask": "post"}, "option update_mask .*was removed; only its neutral value 'raw' is read"),
])
def test_a_removed_olkn_value_is_refused_naming_it(olkn_saved, extra, match):
    _refused(olkn_saved, match, **extra)


def test_removed_olkn_values_are_refused_at_creation_and_load_when_off(olkn_saved):
    with pytest.raises(ValueError, match="stabilise"):
        bgsub.create("olkn", stabilise="phase")
    assert bgsub.create("norma", init_rho="steps").params["init_rho"] == "steps"  # norma keeps its own
    want = bgsub.load(olkn_saved).params
    _with_params(olkn_saved, init_rho="zero", adapt_update=0.0, adapt_by="offset")
    assert bgsub.load(olkn_saved).params == want


def test_oem_reads_the_stabilisers_range_only_at_its_constant(tmp_path):
    sub = bgsub.create("oem")
    for f in _frames(2):
        sub.apply(f)
    path = sub.save(tmp_path / "m.npz")
    _with_params(path, stabilise_max=8)
    assert "stabilise_max" not in bgsub.load(path).params
    _refused(path, "option stabilise_max .*was removed", stabilise_max=4)


def test_a_removed_state_value_loads_at_its_value_when_off_and_is_refused_otherwise(tmp_path):
    sub = bgsub.create("olkn", median=0, illumination="off")
    sub.apply(_frames(1)[0])
    path = sub.save(tmp_path / "m.npz")
    for left, ok in ((0, True), (3, False)):
        _with_params(path, scalars={"relearn_left_": left})
        if ok:
            assert type(sub).load(path).n_frames_ == 1
        else:
            with pytest.raises(CheckpointError, match="relearn_left_ = 3 belongs to a feature that was removed"):
                type(sub).load(path)


def test_a_checkpoint_with_the_per_pixel_widths_off_continues_without_them(tmp_path):
    frames = _frames(4)
    sub = bgsub.create("olkn", median=0, illumination="off")
    for f in frames[:2]:
        sub.apply(f)
    path = sub.save(tmp_path / "m.npz")
    want = [sub.apply(f) for f in frames[2:]]
    widths = dict(adapt_width=0.0, width_rate=0.01, width_min=1.0, width_max=3.0, width_blink=0.0)
    # as the versions with the per-pixel widths wrote it: their parameters and arrays, the widths off
    _with_params(path, arrays={"misfit_": np.zeros((24, 32), np.float32), "width_": np.ones((24, 32), np.float32)},
                 **widths)
    resumed = type(sub).load(path)
    assert not hasattr(resumed, "width_") or resumed.width_ is None
    assert all(np.array_equal(resumed.apply(f), w) for f, w in zip(frames[2:], want))
    _with_params(path, adapt_width=5.0)
    with pytest.raises(CheckpointError, match="option adapt_width .*was removed"):
        type(sub).load(path)
    _with_params(path, arrays={"misfit_": np.zeros((240, 320), np.float32)}, adapt_width=0.0)
    with pytest.raises(CheckpointError, match="state 'misfit_' is declared"):
        type(sub).load(path)


def test_every_removed_option_is_gone_from_the_parameters():
    for algo in ("olkn", "norma", "svmd"):
        names = {p.name for p in bgsub.param_specs(algo)}
        cls = type(bgsub.create(algo))
        assert issubclass(cls, PixelKernelSubtractor)
        assert not names & set(cls._REMOVED_PARAMS), algo
        with pytest.raises(ValueError, match="has no parameter"):
            bgsub.create(algo, blur=1.0)
