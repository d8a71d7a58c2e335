"""norma's full sums under other state layouts and arithmetic: what its score pass could gain.

norma's score pass sums every pixel's 20 colour terms every frame (``learners.expansion.full_sum_lut`` over the
per-pixel state: samples ``(H, W, B, 3)`` uint8, coefficients ``(H, W, B)`` float32, the Gaussian read from its
float32 table, float64 sums). This times that sum, on random 20-sample states near the pixels' values (table
width 40, two threads, rows in parallel), against sums over a *row-planes* layout, each row's state as planes
across its pixels (samples ``(H, B, 3, W)``, coefficients ``(H, B, W)``), so that a row's sum runs slot by slot
across the pixels, vectorised without a remainder:

- ``planes, table``: the same table, float64 sums (the same terms in slot order);
- ``planes, computed``: the Gaussian computed in float32 (:func:`learners.kernels.gaussian_f32`: ``exp(-u)`` for
  ``u = d2 / (256 width^2)`` by its Taylor polynomial of degree 4, squared eight times; within 2e-5 of ``exp``,
  relative) and float32 sums.

::

    python benchmarks/full_sum_layout.py --size 1280x720 --size 1920x1080

norma's score pass sums the ``planes, computed`` way (:mod:`bgsub.models._norma_planes`, with its row's decisions
and over the model's real state); this script compares the three on random states (docs/performance.md, *What was
tried*). Its kernels compile at each run (a few seconds): numba's cache of a parallel loop compiled while a test
imported the script under another name fails to load in the script.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit, prange

from learners.expansion import full_sum_lut
from learners.kernels import gaussian_f32, gaussian_f32_args, gaussian_lut

WIDTH = 40.0
B = 20


@njit(fastmath=True, parallel=True)
def per_pixel(frame, samples, coef, lut, out):
    """The product's sum: :func:`learners.expansion.full_sum_lut` of each pixel."""
    H, W = frame.shape[:2]
    for i in prange(H):
        for j in range(W):
            out[i, j] = full_sum_lut(frame[i, j], samples[i, j], coef[i, j], lut)


@njit(fastmath=True, parallel=True)
def planes_table(frame, samples, coef, lut, out):
    """Row planes (``frame (H, 3, W)``, ``samples (H, B, 3, W)``, ``coef (H, B, W)``), the table, float64."""
    H, nb, _, W = samples.shape
    n = lut.shape[0]
    for i in prange(H):
        acc = np.zeros(W, np.float64)
        for b in range(nb):
            for j in range(W):
                e0 = np.int32(samples[i, b, 0, j]) - np.int32(frame[i, 0, j])
                e1 = np.int32(samples[i, b, 1, j]) - np.int32(frame[i, 1, j])
                e2 = np.int32(samples[i, b, 2, j]) - np.int32(frame[i, 2, j])
                d2 = e0 * e0 + e1 * e1 + e2 * e2
                if d2 < n:
                    acc[j] += np.float64(coef[i, b, j]) * np.float64(lut[d2])
        for j in range(W):
            out[i, j] = acc[j]


@njit(fastmath=True, parallel=True)
def planes_computed(frame, samples, coef, gauss, out):
    """Row planes, the Gaussian computed in float32 (``gauss = (factor, cutoff)``), float32 sums."""
    H, nb, _, W = samples.shape
    factor, cutoff = np.float32(gauss[0]), np.float32(gauss[1])
    for i in prange(H):
        acc = np.zeros(W, np.float32)
        for b in range(nb):
            for j in range(W):
                e0 = np.float32(samples[i, b, 0, j]) - np.float32(frame[i, 0, j])
                e1 = np.float32(samples[i, b, 1, j]) - np.float32(frame[i, 1, j])
                e2 = np.float32(samples[i, b, 2, j]) - np.float32(frame[i, 2, j])
                acc[j] += coef[i, b, j] * gaussian_f32(e0 * e0 + e1 * e1 + e2 * e2, factor, cutoff)
        for j in range(W):
            out[i, j] = acc[j]


def state(W: int, H: int, seed: int = 0):
    """A frame and a full 20-sample colour state near it, in both layouts."""
    rng = np.random.default_rng(seed)
    frame = rng.integers(30, 220, (H, W, 3)).astype(np.uint8)
    noise = rng.normal(0.0, 12.0, (H, W, B, 3)).astype(np.float32)
    samples = np.clip(frame[:, :, None, :] + noise, 0, 255).astype(np.uint8)
    coef = rng.random((H, W, B)).astype(np.float32)
    planes = (np.ascontiguousarray(frame.transpose(0, 2, 1)), np.ascontiguousarray(samples.transpose(0, 2, 3, 1)),
              np.ascontiguousarray(coef.transpose(0, 2, 1)))
    return (frame, samples, coef), planes


def elapsed_ms(fn, args) -> float:
    """The time of one call ``fn(*args)``."""
    t = time.perf_counter()
    fn(*args)
    return 1e3 * (time.perf_counter() - t)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", help="WxH (repeatable; default 1280x720 and 1920x1080)")
    ap.add_argument("--reps", type=int, default=9, help="timed calls of each, interleaved (the minimum counts)")
    args = ap.parse_args(argv)
    lut = gaussian_lut(WIDTH, 3 * 255 ** 2)
    print("| size | per pixel, table (ms) | planes, table | planes, computed | × | largest difference from the per-pixel "
          "sums, table / computed (relative) |")
    print("|---|---|---|---|---|---|")
    for size in args.size or ["1280x720", "1920x1080"]:
        W, H = (int(v) for v in size.lower().split("x"))
        (frame, samples, coef), (pf, ps, pc) = state(W, H)
        ref, tab, com = np.empty((H, W)), np.empty((H, W)), np.empty((H, W), np.float32)
        runs = ((per_pixel, (frame, samples, coef, lut, ref)), (planes_table, (pf, ps, pc, lut, tab)),
                (planes_computed, (pf, ps, pc, gaussian_f32_args(WIDTH, lut), com)))
        for fn, a in runs:  # compile, and the first touch of the outputs
            fn(*a)
        times = [[] for _ in runs]
        for _ in range(args.reps):
            for k, (fn, a) in enumerate(runs):
                times[k].append(elapsed_ms(fn, a))
        t = [min(x) for x in times]
        diff_tab, diff_com = (np.abs(other - ref).max() / ref.max() for other in (tab, com))
        print(f"| {W}x{H} | {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} | {t[2] / t[0]:.2f} | {diff_tab:.1e} / {diff_com:.1e} |")


if __name__ == "__main__":
    main()
