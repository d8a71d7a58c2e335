"""The bounded ring-buffer expansion: order, eviction, pruning, sums."""

from __future__ import annotations

import math

import numpy as np
import pytest

from learners.expansion import (
    SCALE_MAX,
    SCALE_MIN,
    expansion_nearest,
    expansion_newest,
    expansion_order,
    expansion_prune,
    expansion_push,
    expansion_sum,
    expansion_sum_inter_texture,
    expansion_sum_inter_texture_until,
    expansion_sum_texture,
    expansion_sum_texture_until,
    filling_sum_lut,
    needs_renormalise,
)
from learners.kernels import EMPTY_LUT, GAUSSIAN, GAUSSIAN_LUT, LINEAR, gaussian_lut


def _empty(B, d=2):
    return np.zeros((B, d)), np.zeros(B), np.zeros(2, dtype=np.int64)


def test_push_keeps_the_most_recent_terms_in_order():
    sv, coef, ring = _empty(4)
    for i in range(10):
        expansion_push(np.array([float(i), 0.0]), float(i), sv, coef, ring)
        order = expansion_order(ring, 4)
        assert ring[1] == min(i + 1, 4)
        np.testing.assert_array_equal(coef[order], np.arange(max(0, i - 3), i + 1))
        np.testing.assert_array_equal(sv[order, 0], coef[order])


def test_sum_and_oldest_term():
    sv, coef, ring = _empty(3)
    x = np.array([0.5, -0.2])
    pts = [np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 2.0]), np.array([1.0, 1.0])]
    for j, p in enumerate(pts):
        full = ring[1] == 3
        total, oldest = expansion_sum(x, sv, coef, ring, GAUSSIAN, 1.5, 3.0, 1.0, EMPTY_LUT)
        live = pts[max(0, j - 3):j]
        vals = [(k + 1.0) * math.exp(-np.sum((p_ - x) ** 2) / 1.5 ** 2) for k, p_ in enumerate(pts[:j])][-3:]
        assert total == pytest.approx(sum(vals))
        assert oldest == (pytest.approx(vals[0]) if full else 0.0)
        assert len(live) == ring[1]
        expansion_push(p, j + 1.0, sv, coef, ring)
    # linear kernel goes through the generic branch
    total, _ = expansion_sum(x, sv, coef, ring, LINEAR, 1.0, 3.0, 1.0, EMPTY_LUT)
    order = expansion_order(ring, 3)
    assert total == pytest.approx(float(np.sum(coef[order] * (sv[order] @ x))))


def test_prune_drops_small_terms_and_keeps_order():
    sv, coef, ring = _empty(5)
    values = [0.5, -0.01, 2.0, 0.001, -3.0, 0.2, 0.02]  # wraps around the ring
    for v in values:
        expansion_push(np.array([v, v]), v, sv, coef, ring)
    dropped = expansion_prune(sv, coef, ring, 2.0, 0.1)  # true coefficient = 2 * coef
    order = expansion_order(ring, 5)
    np.testing.assert_array_equal(coef[order], [2.0, -3.0, 0.2])
    np.testing.assert_array_equal(sv[order, 0], [2.0, -3.0, 0.2])
    assert dropped == 2
    expansion_push(np.array([9.0, 9.0]), 9.0, sv, coef, ring)
    np.testing.assert_array_equal(coef[expansion_order(ring, 5)], [2.0, -3.0, 0.2, 9.0])


def test_needs_renormalise_bounds():
    assert not needs_renormalise(1.0)
    assert not needs_renormalise(SCALE_MIN) and not needs_renormalise(SCALE_MAX)
    assert needs_renormalise(SCALE_MIN / 2) and needs_renormalise(SCALE_MAX * 2)
    assert needs_renormalise(float("nan"))


def test_exp_neg_matches_libm():
    from learners._stream import exp_neg
    from numba import njit

    @njit
    def worst(v):
        m = 0.0
        for x in v:
            e = math.exp(x)
            if e > 0.0:
                m = max(m, abs(exp_neg(x) - e) / e)
        return m

    rng = np.random.default_rng(0)
    assert worst(-rng.random(200_000) * 700) < 2e-15
    assert worst(-rng.random(200_000) * 3) < 2e-15
    assert worst(np.array([0.0, -1e-300, -0.5 * math.log(2), -700.0])) < 2e-15


@pytest.mark.parametrize("d", [1, 2, 3, 5])
@pytest.mark.parametrize("start,count", [(0, 0), (0, 5), (3, 7), (6, 7), (0, 7), (4, 7)])
def test_fast_kernel_sum_equals_expansion_sum(d, start, count):
    from learners._stream import kernel_sum

    rng = np.random.default_rng(d)
    B = 7
    sv = rng.normal(size=(B, d))
    coef = rng.normal(size=B)
    ring = np.array([start, count], dtype=np.int64)
    for x in rng.normal(size=(5, d)) * 2:
        want = expansion_sum(x, sv, coef, ring, GAUSSIAN, 1.3, 3.0, 1.0, EMPTY_LUT)
        got = kernel_sum(x, sv, coef, ring, GAUSSIAN, 1.3, 3.0, 1.0, EMPTY_LUT)
        assert got == pytest.approx(want, rel=1e-13, abs=1e-15)
        assert kernel_sum(x, sv, coef, ring, LINEAR, 1.3, 3.0, 1.0, EMPTY_LUT) == pytest.approx(
            expansion_sum(x, sv, coef, ring, LINEAR, 1.3, 3.0, 1.0, EMPTY_LUT))


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("start,count", [(0, 0), (0, 1), (0, 13), (5, 19), (17, 19)])
def test_filling_sum_adds_its_terms_oldest_first(d, start, count):
    """A filling buffer's table sum is its terms' products added one after the other in ring order: a plain
    transcription (Python floats, each product rounded before its sum) gives the same bits, and so does
    expansion_sum with the table kernel."""
    rng = np.random.default_rng(10 * d + count)
    B = 20  # (a sum vectorised in lanes, as a full buffer's, adds in another order from 8 terms on)
    lut = gaussian_lut(60.0, d * 255 * 255)
    sv = rng.integers(0, 256, (B, d)).astype(np.uint8)
    coef = (rng.random(B) * 10.0 ** rng.uniform(-4, 2, B)).astype(np.float32)
    ring = np.array([start, count], dtype=np.int64)
    for x in rng.integers(0, 256, (6, d)).astype(np.uint8):
        x[:] = sv[(start + count // 2) % B] // 2 + x // 2  # near a live sample: the table's range
        want = 0.0
        for k in range(count):
            slot = (start + k) % B
            d2 = int(((sv[slot].astype(int) - x.astype(int)) ** 2).sum())
            if d2 < lut.shape[0]:
                want = want + float(coef[slot]) * float(lut[d2])
        assert filling_sum_lut(x, sv, coef, start, count, lut) == want
        assert expansion_sum(x, sv, coef, ring, GAUSSIAN_LUT, 0.0, 0.0, 0.0, lut) == (want, 0.0)


def test_nearest_is_the_smallest_squared_distance_over_live_terms():
    rng = np.random.default_rng(3)
    B = 5
    sv = np.zeros((B, 3), np.uint8)
    coef = np.zeros(B, np.float32)
    ring = np.zeros(2, np.int64)
    x = np.array([100, 50, 200], np.uint8)
    assert expansion_nearest(x, sv, ring) == -1  # empty
    pushed = []
    for _ in range(12):  # wraps the ring twice: only the last B count
        v = rng.integers(0, 256, 3).astype(np.uint8)
        expansion_push(v, 1.0, sv, coef, ring)
        pushed.append(v.astype(int))
        want = min(int(np.sum((p - x.astype(int)) ** 2)) for p in pushed[-B:])
        assert expansion_nearest(x, sv, ring) == want


def _texture_ring(rng, count, B, lo, hi):
    """A ring of ``B`` uint8 colour samples drawn in ``[lo, hi)``, each with a uint16 descriptor, after ``count``
    pushes (three more when ``count == B``: a full ring that wrapped): ``(sv, tsv, coef, ring)``."""
    sv = np.zeros((B, 3), np.uint8)
    tsv = np.zeros((B, 3), np.uint16)
    coef = np.zeros(B, np.float32)
    ring = np.zeros(2, np.int64)
    for _ in range(count + (3 if count == B else 0)):
        expansion_push(rng.integers(lo, hi, 3).astype(np.uint8), float(rng.random()), sv, coef, ring)
        tsv[expansion_newest(ring, B)] = rng.integers(0, 1 << 16, 3)
    return sv, tsv, coef, ring


@pytest.mark.parametrize("count", [3, 6])  # partial and full ring
def test_texture_sum_is_the_product_of_colour_and_hamming_kernels(count):
    """expansion_sum_texture: sum_j coef_j exp(-(||x - sv_j||^2 + lam h_j) / (factor p)^2), h_j the number of
    differing descriptor bits, transcribed with Python's bit count and math.exp (the table rounds the
    effective distance to an integer), and the evicted term's share; the newest slot is the last push."""
    rng = np.random.default_rng(6)
    B, p = 6, 20.0
    lut = gaussian_lut(p, 3 * 255 ** 2)
    sv, tsv, coef, ring = _texture_ring(rng, count, B, 80, 140)
    x = np.array([110, 100, 120], np.uint8)
    tx = rng.integers(0, 1 << 16, 3).astype(np.uint16)
    for lam in (0.0, 3.0, 40.0):
        for factor in (1.0, 1.7):
            total, oldest = expansion_sum_texture(x, tx, sv, tsv, coef, ring, lam, factor, lut)
            terms = []
            for s in expansion_order(ring, B):
                d2 = int(np.sum((sv[s].astype(int) - x.astype(int)) ** 2))
                h = sum(bin(int(a) ^ int(b)).count("1") for a, b in zip(tx, tsv[s]))
                terms.append(float(coef[s]) * math.exp(-(d2 + lam * h) / (factor * p) ** 2))
            assert total == pytest.approx(sum(terms), rel=2e-3)
            assert oldest == (pytest.approx(terms[0], rel=2e-3) if count == B else 0.0)
    # lam = 0 reads the colour table exactly as expansion_sum does
    t0, o0 = expansion_sum_texture(x, tx, sv, tsv, coef, ring, 0.0, 1.0, lut)
    assert (t0, o0) == pytest.approx(expansion_sum(x, sv, coef, ring, GAUSSIAN_LUT, 0.0, 0.0, 0.0, lut), rel=1e-12)


@pytest.mark.parametrize("count", [3, 6])  # partial and full ring
def test_inter_texture_sum_recomputes_each_descriptor_around_the_sample(count):
    """expansion_sum_inter_texture (LOBSTER's inter-LBSP): term j's Hamming distance is between the stored
    descriptor tsv_j and the word of the value's 16 pattern points tested against sv_j's own centre,
    |pattern[c, k] - sv_j[c]| > thresholds[sv_j[c]]; transcribed with Python's integers and math.exp."""
    rng = np.random.default_rng(7)
    B, p = 6, 25.0
    lut = gaussian_lut(p, 3 * 255 ** 2)
    sv, tsv, coef, ring = _texture_ring(rng, count, B, 60, 160)
    x = np.array([110, 100, 120], np.uint8)
    pattern = rng.integers(40, 200, (3, 16)).astype(np.uint8)
    thresholds = np.minimum(np.floor(np.maximum(0.3 * np.arange(256), 4)), 255).astype(np.uint8)
    for lam in (0.0, 5.0, 60.0):
        total, oldest = expansion_sum_inter_texture(x, pattern, sv, tsv, coef, ring, thresholds, lam, 1.0, lut)
        terms = []
        for s in expansion_order(ring, B):
            d2 = int(np.sum((sv[s].astype(int) - x.astype(int)) ** 2))
            h = 0
            for c in range(3):
                centre = int(sv[s, c])
                word = sum(1 << k for k in range(16) if abs(int(pattern[c, k]) - centre) > int(thresholds[centre]))
                h += bin(word ^ int(tsv[s, c])).count("1")
            terms.append(float(coef[s]) * math.exp(-(d2 + lam * h) / p ** 2))
        assert total == pytest.approx(sum(terms), rel=2e-3)
        assert oldest == (pytest.approx(terms[0], rel=2e-3) if count == B else 0.0)


@pytest.mark.parametrize("inter", [False, True])
def test_textured_sums_until_stop_at_the_first_term_that_reaches_the_limit(inter):
    """expansion_sum_texture_until / expansion_sum_inter_texture_until: the terms of a full ring in storage
    order, summed until ``scale * total >= limit``; each partial total transcribed term by term (as
    differences of the full sums over the first slots), and an unreachable limit gives the full sum."""
    rng = np.random.default_rng(11)
    B, p, scale, lam = 6, 25.0, 0.8, 5.0
    lut = gaussian_lut(p, 3 * 255 ** 2)
    sv = rng.integers(60, 160, (B, 3)).astype(np.uint8)
    tsv = rng.integers(0, 1 << 16, (B, 3)).astype(np.uint16)
    coef = rng.random(B).astype(np.float32)
    x = np.array([110, 100, 120], np.uint8)
    tx = rng.integers(0, 1 << 16, 3).astype(np.uint16)
    pattern = rng.integers(40, 200, (3, 16)).astype(np.uint8)
    thresholds = np.minimum(np.floor(np.maximum(0.3 * np.arange(256), 4)), 255).astype(np.uint8)

    def full(n):  # the sum of the first n slots, by the full sum over a ring holding only them
        ring = np.array([0, n], np.int64)
        if inter:
            return expansion_sum_inter_texture(x, pattern, sv, tsv, coef, ring, thresholds, lam, 1.0, lut)[0]
        return expansion_sum_texture(x, tx, sv, tsv, coef, ring, lam, 1.0, lut)[0]

    def until(limit):
        if inter:
            return expansion_sum_inter_texture_until(x, pattern, sv, tsv, coef, thresholds, lam, 1.0, lut, scale,
                                                     limit)
        return expansion_sum_texture_until(x, tx, sv, tsv, coef, lam, 1.0, lut, scale, limit)

    partial = [full(n) for n in range(1, B + 1)]
    assert all(b > a for a, b in zip(partial, partial[1:]))  # every term positive: the partial sums grow
    total, stopped = until(math.inf)
    assert not stopped and total == pytest.approx(partial[-1], rel=1e-12)
    for n in range(B):
        # a limit between the partial sums over n and n + 1 slots stops after slot n
        limit = scale * (partial[n] if n == 0 else 0.5 * (partial[n - 1] + partial[n]))
        total, stopped = until(limit)
        assert stopped and total == pytest.approx(partial[n], rel=1e-12)


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("start,count", [(0, 0), (0, 1), (5, 19), (17, 20)])
def test_float32_sum_is_the_table_sum_within_the_gaussians_error(d, start, count):
    """expansion_sum_f32: a plain transcription in float32 (each difference, square, product and sum rounded to
    float32, the live slots in storage order) within float32's rounding, and the table's float64 sum within
    the computed Gaussian's 2e-5 (relative)."""
    from learners.expansion import expansion_sum_f32
    from learners.kernels import gaussian_f32, gaussian_f32_args

    rng = np.random.default_rng(10 * d + count)
    B = 20
    lut = gaussian_lut(40.0, d * 255 * 255)
    factor, cutoff = gaussian_f32_args(40.0, lut)
    sv = rng.integers(0, 256, (B, d)).astype(np.uint8)
    coef = rng.uniform(0.5, 1.5, B).astype(np.float32)
    ring = np.array([start, count], dtype=np.int64)
    live = [(start + k) % B for k in range(count)]
    f32 = np.float32
    for x in rng.integers(0, 256, (6, d)).astype(np.uint8):
        got = expansion_sum_f32(x, sv, coef, ring, factor, cutoff)
        assert isinstance(got, np.float32) or type(got) is float
        want = f32(0.0)
        for slot in sorted(live):
            d2 = f32(0.0)
            for c in range(d):
                e = f32(sv[slot, c]) - f32(x[c])
                d2 = f32(d2 + e * e)
            want = f32(want + coef[slot] * gaussian_f32(d2, f32(factor), f32(cutoff)))
        assert got == pytest.approx(want, rel=1e-6, abs=0)
        table, _ = expansion_sum(x, sv, coef, ring, GAUSSIAN_LUT, 0.0, 0.0, 0.0, lut)
        assert abs(got - table) <= 2e-5 * table if live else got == table == 0.0
