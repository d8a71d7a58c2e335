"""The per-stage profile (benchmarks/bgsub_profile.py) times apply's own stages and leaves nothing wrapped."""

import json

import numpy as np

import bgsub
from bgsub.pipeline import components as _components
from bgsub.pipeline import masks as _base
from tests._scripts import load_benchmark


def _script():
    return load_benchmark("bgsub_profile")


def _frames(n, h=48, w=64):
    rng = np.random.default_rng(0)
    bg = rng.integers(60, 200, (h, w, 3)).astype(np.uint8)
    frames = []
    for t in range(n):
        f = np.clip(bg.astype(int) + rng.integers(-3, 4, bg.shape), 0, 255).astype(np.uint8)
        x = (3 * t) % (w - 12)
        f[10:30, x:x + 12] = 250  # a bright object crossing
        frames.append(f)
    return frames


def test_stages_add_up_to_apply_and_the_wrappers_go_away():
    prof = _script()
    functions = (_base.binary_median, _base.fill_holes, _base.remove_small, _components.count_components)
    out = prof.profile("olkn", _frames(14), warm=6)
    assert (_base.binary_median, _base.fill_holes, _base.remove_small, _components.count_components) == functions
    inner = sum(out[k] for k in ("prepare", "stabilise", "illum", "frame", "post"))
    assert out["frame"] > 0 and out["post"] > 0 and out["median"] > 0
    assert out["median"] + out["count"] + out["filters"] <= out["post"] * 1.001 + 1e-3
    # medians of the parts need not add up to the median of the whole, but they stay close to it
    assert 0.5 * out["apply"] <= inner + out["other"] <= 2.0 * out["apply"]
    assert 0.0 < out["summed"] <= 1.0 and 0.0 < out["stepped"] <= 1.0
    # norma runs two passes (score, update) with its post-processing between them
    out = prof.profile("norma", _frames(10), warm=4)
    assert out["frame"] > 0 and out["post"] > 0 and out["summed"] != out["summed"]  # no bounded engine: NaN


def test_the_subtractor_is_left_unwrapped():
    prof = _script()
    sub = bgsub.create("olkn")
    clock = prof._Clock()
    with prof._instrumented(sub, clock):
        assert "_frame" in sub.__dict__
        for f in _frames(3):
            sub.apply(f)
    assert not {"_frame", "_prepare", "_postprocess"} & set(sub.__dict__)
    assert clock.now["frame"] > 0


def test_main_prints_a_table_and_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OLK_DATA_DIR", str(tmp_path))  # no data: the synthetic clip
    prof = _script()
    assert prof.main(["--size", "64x48", "--algo", "olkn", "--frames", "3", "--warmup", "3"]) == 0
    out = capsys.readouterr().out
    assert "synthetic" in out and "| 64x48 | olkn |" in out
    assert prof.main(["--size", "64x48", "--algo", "olkn:fast", "--frames", "2", "--warmup", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["algo"] == "olkn:fast" and rows[0]["apply"] > 0
