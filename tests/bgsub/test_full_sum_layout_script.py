"""benchmarks/full_sum_layout.py: its row-planes sums are the product's sums, in another layout."""

from __future__ import annotations

import numpy as np

from learners.kernels import gaussian_f32_args, gaussian_lut
from tests._scripts import load_benchmark


def test_the_layouts_sum_the_same_terms(capsys):
    fs = load_benchmark("full_sum_layout")
    W, H = 37, 5
    (frame, samples, coef), (pf, ps, pc) = fs.state(W, H, seed=3)
    lut = gaussian_lut(fs.WIDTH, 3 * 255 ** 2)
    ref, tab, com = np.empty((H, W)), np.empty((H, W)), np.empty((H, W), np.float32)
    fs.per_pixel(frame, samples, coef, lut, ref)
    fs.planes_table(pf, ps, pc, lut, tab)
    fs.planes_computed(pf, ps, pc, gaussian_f32_args(fs.WIDTH, lut), com)
    # a plain transcription of the product's sum at one pixel
    i, j = 2, 11
    d2 = ((samples[i, j].astype(np.int64) - frame[i, j].astype(np.int64)) ** 2).sum(axis=1)
    plain = sum(float(coef[i, j, b]) * float(lut[d2[b]]) for b in range(fs.B) if d2[b] < lut.shape[0])
    assert abs(ref[i, j] - plain) <= 1e-12 * plain
    np.testing.assert_allclose(tab, ref, rtol=1e-12)
    np.testing.assert_allclose(com, ref, rtol=2e-5)
    fs.main(["--size", "24x8", "--reps", "1"])
    out = capsys.readouterr().out
    assert "| 24x8 |" in out
