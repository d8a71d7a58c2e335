"""Jitted kernels and the Gram helper against their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from learners import kernels
from learners.kernels import EMPTY_LUT
from tests.learners import _reference as ref

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=(4, 3))


@pytest.mark.parametrize("name", ["gaussian", "laplacian", "polynomial", "linear"])
def test_kernel_value_and_gram_match_formula(name):
    kind = kernels.KERNELS[name]
    width, degree, coef0 = 1.7, 2.0, 0.5
    want = np.array([[ref.kernel(name, x, y, width, degree, coef0) for y in Y] for x in X])
    got = np.array([[kernels.kernel_value(kind, x, y, width, degree, coef0, EMPTY_LUT) for y in Y] for x in X])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(kernels.gram(X, Y, kernel=name, width=width, degree=degree, coef0=coef0), want,
                               rtol=1e-12)
    for x in X:
        assert kernels.self_kernel(kind, x, width, degree, coef0, EMPTY_LUT) == pytest.approx(
            ref.kernel(name, x, x, width, degree, coef0), rel=1e-12)


def test_gaussian_is_olk_form_and_normalised():
    x, y = np.array([0.0, 0.0]), np.array([3.0, 4.0])
    assert kernels.kernel_value(kernels.GAUSSIAN, x, y, 5.0, 3.0, 1.0, EMPTY_LUT) == pytest.approx(math.exp(-1.0))
    assert kernels.self_kernel(kernels.GAUSSIAN, y, 5.0, 3.0, 1.0, EMPTY_LUT) == 1.0
    K = kernels.gram(X, width=2.0)
    np.testing.assert_allclose(np.diag(K), 1.0)
    np.testing.assert_allclose(K, K.T)


def test_gaussian_lut_matches_gaussian_on_integer_inputs():
    width = 6.0
    lut = kernels.gaussian_lut(width, 3 * 255 ** 2, dtype=np.float64)
    a = np.array([10, 200, 30], dtype=np.uint8)
    for b in (np.array([12, 197, 31], dtype=np.uint8), np.array([0, 0, 0], dtype=np.uint8), a):
        want = math.exp(-float(np.sum((a.astype(float) - b) ** 2)) / width ** 2)
        got = kernels.kernel_value(kernels.GAUSSIAN_LUT, a, b, width, 3.0, 1.0, lut)
        assert got == pytest.approx(want, abs=1e-7)
    with pytest.raises(ValueError, match="width must be > 0"):
        kernels.gaussian_lut(0.0, 100)


def test_squared_distance_is_safe_for_unsigned_inputs():
    a = np.array([0, 255], dtype=np.uint8)
    b = np.array([255, 0], dtype=np.uint8)
    assert kernels.squared_distance(a, b) == 2 * 255.0 ** 2
    assert kernels.int_squared_distance(a, b) == 2 * 255 ** 2


def _scaled_reference(width, factor, d2):
    """The Gaussian of width ``factor * width`` at the squared distance ``d2``: ``exp(-d2 / (factor width)^2)``."""
    return math.exp(-d2 / (factor * width) ** 2)


@pytest.mark.parametrize("width", [6.0, 40.0])
def test_scaled_table_reads_the_gaussian_of_the_scaled_width(width):
    lut = kernels.gaussian_lut(width, 3 * 255 ** 2)
    tol = 1.0 - math.exp(-0.5 / width ** 2)  # half a table step, relative
    for factor in (0.25, 0.7, 1.0, 1.3, 3.0):
        for d2 in (0, 1, 7, 50, 400, 1601, 5000, 40000, 3 * 255 ** 2):
            got = kernels.scaled_lut_value(lut, d2, factor)
            want = _scaled_reference(width, factor, d2)
            assert got == pytest.approx(want, rel=tol + 1e-6, abs=2e-7), (factor, d2)
    # factor 1 reads the table itself, bit for bit, as GAUSSIAN_LUT does
    for d2 in range(0, lut.shape[0], 37):
        assert kernels.scaled_lut_value(lut, d2, 1.0) == np.float64(lut[d2])


def test_hamming_distance_counts_the_differing_bits():
    rng = np.random.default_rng(3)
    for v in list(range(0, 1 << 16, 257)) + [0xFFFF, 0x8000, 1]:
        assert kernels.popcount16(v) == bin(v).count("1")
    for c in (1, 3):
        for _ in range(200):
            a, b = (rng.integers(0, 1 << 16, c).astype(np.uint16) for _ in range(2))
            want = sum(bin(int(x) ^ int(y)).count("1") for x, y in zip(a, b))
            assert kernels.hamming_distance(a, b) == want
    assert kernels.hamming_distance(np.array([0xFFFF] * 3, np.uint16), np.zeros(3, np.uint16)) == 48


@pytest.mark.parametrize("width", [6.0, 40.0])
def test_texture_kernel_is_the_gaussian_of_the_effective_distance(width):
    """exp(-(d2 + lam h) / (factor width)^2) = colour kernel x exp(-lam h / (factor width)^2)."""
    lut = kernels.gaussian_lut(width, 3 * 255 ** 2)
    tol = 1.0 - math.exp(-0.5 / width ** 2)
    for factor in (1.0, 1.5):
        for d2 in (0, 7, 400, 5000):
            for h in (0, 1, 5, 48):
                for lam in (0.0, 2.5, 100.0):
                    want = _scaled_reference(width, factor, d2) * math.exp(-lam * h / (factor * width) ** 2)
                    got = kernels.texture_lut_value(lut, d2, h, lam, factor)
                    assert got == pytest.approx(want, rel=tol + 1e-6, abs=2e-7), (factor, d2, h, lam)
    for d2 in range(0, lut.shape[0], 37):  # no texture weight: the table itself
        assert kernels.texture_lut_value(lut, d2, 17, 0.0, 1.0) == np.float64(lut[d2])


@pytest.mark.parametrize("width", [0.5, 3.0, 10.0, 40.0, 255.0])
def test_computed_gaussian_is_the_gaussian_within_2e5(width):
    """:func:`kernels.gaussian_f32` against ``exp`` at every squared distance of two colour pixels: within 2e-5
    (relative) below the table's cutoff, 0 from it on, as the table; its arguments from the table."""
    lut = kernels.gaussian_lut(width, 3 * 255 ** 2)
    factor, cutoff = kernels.gaussian_f32_args(width, lut)
    assert factor == pytest.approx(1.0 / (width * width * 2.0 ** kernels.GAUSSIAN_F32_SQUARINGS)) and cutoff == len(lut)
    d2 = np.arange(3 * 255 ** 2 + 1)
    got = _gaussian_f32_all(d2.astype(np.float32), np.float32(factor), np.float32(cutoff))
    assert got.dtype == np.float32
    want = np.exp(-d2 / (width * width))
    live = d2 < cutoff
    np.testing.assert_allclose(got[live], want[live], rtol=2e-5, atol=0)
    assert (got[~live] == 0.0).all()
    with pytest.raises(ValueError, match="width must be > 0, got -1"):
        kernels.gaussian_f32_args(-1, lut)


def _gaussian_f32_all(d2, factor, cutoff):
    from numba import njit

    @njit
    def run(d2, factor, cutoff):
        out = np.empty(d2.shape[0], np.float32)
        for k in range(d2.shape[0]):
            out[k] = kernels.gaussian_f32(d2[k], factor, cutoff)
        return out

    return run(d2, factor, cutoff)
