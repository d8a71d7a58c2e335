"""bgsub.augment: jitter, illumination and noise variants of a sequence, and ``bgsub eval --augment``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bgsub.augment import AugmentedSequence, augment
from bgsub.cdnet import load_sequence
from bgsub.cli import main as cli_main
from tests.bgsub.test_eval import _write_sequence


@pytest.fixture()
def seq(tmp_path):
    return load_sequence(_write_sequence(tmp_path / "cam", n=30, first=8))


def test_jitter_moves_input_and_groundtruth_alike(seq):
    aug = AugmentedSequence(seq, "jitter", amount=3, seed=1)
    moved = 0
    for n in seq.frames:
        dx, dy = aug.shift(n)
        assert max(abs(dx), abs(dy)) <= 3
        img, gt = aug.read_frame(n), aug.read_groundtruth(n)
        assert img.shape == seq.read_frame(n).shape and gt.shape == seq.read_groundtruth(n).shape
        if (dx, dy) == (0, 0):
            continue
        moved += 1
        H, W = gt.shape
        ys, xs = slice(max(dy, 0), H + min(dy, 0)), slice(max(dx, 0), W + min(dx, 0))
        src_ys, src_xs = slice(max(-dy, 0), H + min(-dy, 0)), slice(max(-dx, 0), W + min(-dx, 0))
        np.testing.assert_array_equal(img[ys, xs], seq.read_frame(n)[src_ys, src_xs])
        np.testing.assert_array_equal(gt[ys, xs], seq.read_groundtruth(n)[src_ys, src_xs])
        uncovered = np.ones_like(gt, bool)
        uncovered[ys, xs] = False
        assert np.all(gt[uncovered] == 85)  # shifted-in border: outside the ROI, not scored
    assert moved > len(seq.frames) // 2
    again = AugmentedSequence(seq, "jitter", amount=3, seed=1)
    assert [again.shift(n) for n in seq.frames] == [aug.shift(n) for n in seq.frames]  # deterministic
    assert aug.name == "cam+jitter" and aug.is_scored(8) and not aug.is_scored(7)


def test_illumination_and_noise(seq):
    ill = AugmentedSequence(seq, "illumination", amount=0.3)
    gains = [ill.gain(n) for n in seq.frames]
    assert gains[0] == 1.0 and min(gains) == pytest.approx(0.7) and max(gains) == pytest.approx(1.15)
    n = seq.frames[15]
    ratio = ill.read_frame(n).astype(float).sum() / seq.read_frame(n).astype(float).sum()
    assert ratio == pytest.approx(ill.gain(n), rel=0.02)
    np.testing.assert_array_equal(ill.read_groundtruth(n), seq.read_groundtruth(n))
    noisy = AugmentedSequence(seq, "noise", amount=10)
    d = noisy.read_frame(n).astype(float) - seq.read_frame(n)
    assert 7 < d.std() < 11
    np.testing.assert_array_equal(noisy.read_frame(n), noisy.read_frame(n))
    assert augment(seq, None) is seq and augment(seq, "none") is seq
    with pytest.raises(ValueError, match="unknown augmentation"):
        AugmentedSequence(seq, "rain")


def test_eval_augment_option(tmp_path, capsys):
    root = _write_sequence(tmp_path / "cam", n=30, first=8)
    rows = {}
    for kind in (None, "jitter", "noise"):
        args = ["eval", str(root), "--algo", "olkn", "--json"] + ([] if kind is None else ["--augment", kind])
        assert cli_main(args) == 0
        rows[kind] = json.loads(capsys.readouterr().out)["sequences"][0]
    assert rows[None]["F"] > 0.8
    assert rows["jitter"]["F"] != rows[None]["F"] and rows["noise"]["F"] != rows[None]["F"]
    with pytest.raises(SystemExit):
        cli_main(["eval", str(root), "--augment", "rain"])
    assert "invalid choice: 'rain'" in capsys.readouterr().err
