"""Per-pixel state layout: sparse full sums and sparse steps over a 1280x720 model of 20 colour samples.

olkn's bounded frame sums about 5 % of the pixels in full and steps about a third of them, each at a
scattered address. This times that access pattern alone (a plain Gaussian-table sum; a step that reads the
evicted slot's coefficient, writes a sample and a coefficient into it and moves the pixel's ring) on the
product's layout -- samples (N, B, 3) uint8, coefficients (N, B) float32 and rings (N, 2) int64 in three
arrays -- against two interleaved layouts, on the same pixels:

- ``record``: one record per pixel, its samples and then its coefficients (160 bytes);
- ``slots``: one record per pixel of ``B`` 8-byte slots, each a sample, a pad byte and its coefficient, so
  that a step writes one cache line (the rings stay an array of their own)::

    NUMBA_NUM_THREADS=2 python benchmarks/state_layout.py

It is not the product's kernel: it bounds what an interleaved layout could save there (docs/performance.md).
"""
import time

import numpy as np
from numba import njit, prange

H, W, B, C = 720, 1280, 20, 3
N = H * W
rng = np.random.default_rng(0)
lut = np.exp(-np.arange(26000) / 1600.0).astype(np.float32)
samples = rng.integers(80, 140, (N, B, C)).astype(np.uint8)
coef = rng.random((N, B)).astype(np.float32)
ring = np.zeros((N, 2), np.int64)
ring[:, 0] = rng.integers(0, B, N)
ring[:, 1] = B
frame = rng.integers(80, 140, (N, C)).astype(np.uint8)
summed = np.sort(rng.choice(N, N // 20, replace=False))  # 5 % sum in full
stepped = np.sort(rng.choice(N, N // 3, replace=False))  # a third step
# record: 60 B samples + 4 pad + 80 B coefficients + 16 pad = 160 B, as a uint8 view and a float32 view
rec = np.zeros((N, 160), np.uint8)
rec[:, :60] = samples.reshape(N, 60)
recf = rec.view(np.float32)
recf[:, 16:36] = coef
# slots: B x (3 B sample, 1 pad, 4 B coefficient) = 160 B
slot = np.zeros((N, B, 8), np.uint8)
slot[:, :, :3] = samples
slotf = slot.view(np.float32).reshape(N, B, 2)
slotf[:, :, 1] = coef


@njit(inline="always")
def _advance(ring, p):
    s = ring[p, 0]
    ring[p, 0] = s + 1 if s + 1 < B else 0
    return s


@njit(parallel=True, fastmath=True)
def arrays(frame, samples, coef, ring, lut, summed, stepped, out):
    for k in prange(summed.shape[0]):
        p = summed[k]
        x0, x1, x2 = np.int32(frame[p, 0]), np.int32(frame[p, 1]), np.int32(frame[p, 2])
        t = 0.0
        for b in range(B):
            e0 = np.int32(samples[p, b, 0]) - x0
            e1 = np.int32(samples[p, b, 1]) - x1
            e2 = np.int32(samples[p, b, 2]) - x2
            d2 = e0 * e0 + e1 * e1 + e2 * e2
            if d2 < lut.shape[0]:
                t += np.float64(coef[p, b]) * np.float64(lut[d2])
        out[p] = t
    for k in prange(stepped.shape[0]):
        p = stepped[k]
        s = _advance(ring, p)
        out[p] += coef[p, s]
        for c in range(3):
            samples[p, s, c] = frame[p, c]
        coef[p, s] = np.float32(0.5)


@njit(parallel=True, fastmath=True)
def record(frame, rec, recf, ring, lut, summed, stepped, out):
    for k in prange(summed.shape[0]):
        p = summed[k]
        x0, x1, x2 = np.int32(frame[p, 0]), np.int32(frame[p, 1]), np.int32(frame[p, 2])
        t = 0.0
        for b in range(B):
            e0 = np.int32(rec[p, 3 * b]) - x0
            e1 = np.int32(rec[p, 3 * b + 1]) - x1
            e2 = np.int32(rec[p, 3 * b + 2]) - x2
            d2 = e0 * e0 + e1 * e1 + e2 * e2
            if d2 < lut.shape[0]:
                t += np.float64(recf[p, 16 + b]) * np.float64(lut[d2])
        out[p] = t
    for k in prange(stepped.shape[0]):
        p = stepped[k]
        s = _advance(ring, p)
        out[p] += recf[p, 16 + s]
        for c in range(3):
            rec[p, 3 * s + c] = frame[p, c]
        recf[p, 16 + s] = np.float32(0.5)


@njit(parallel=True, fastmath=True)
def slots(frame, slot, slotf, ring, lut, summed, stepped, out):
    for k in prange(summed.shape[0]):
        p = summed[k]
        x0, x1, x2 = np.int32(frame[p, 0]), np.int32(frame[p, 1]), np.int32(frame[p, 2])
        t = 0.0
        for b in range(B):
            e0 = np.int32(slot[p, b, 0]) - x0
            e1 = np.int32(slot[p, b, 1]) - x1
            e2 = np.int32(slot[p, b, 2]) - x2
            d2 = e0 * e0 + e1 * e1 + e2 * e2
            if d2 < lut.shape[0]:
                t += np.float64(slotf[p, b, 1]) * np.float64(lut[d2])
        out[p] = t
    for k in prange(stepped.shape[0]):
        p = stepped[k]
        s = _advance(ring, p)
        out[p] += slotf[p, s, 1]
        for c in range(3):
            slot[p, s, c] = frame[p, c]
        slotf[p, s, 1] = np.float32(0.5)


out = np.zeros(N)
rings = {name: ring.copy() for name in ("arrays", "record", "slots")}
calls = {
    "arrays": lambda s, t: arrays(frame, samples, coef, rings["arrays"], lut, s, t, out),
    "record": lambda s, t: record(frame, rec, recf, rings["record"], lut, s, t, out),
    "slots": lambda s, t: slots(frame, slot, slotf, rings["slots"], lut, s, t, out),
}
empty = np.zeros(0, np.int64)
for run in calls.values():
    run(summed, stepped)
for name, s_idx, t_idx in (("5 % summed and a third stepped", summed, stepped), ("sums only", summed, empty),
                           ("steps only", empty, stepped)):
    times = {k: [] for k in calls}
    for _ in range(15):
        for k, run in calls.items():  # interleaved
            t = time.perf_counter()
            run(s_idx, t_idx)
            times[k].append(time.perf_counter() - t)
    med = {k: 1e3 * np.median(v) for k, v in times.items()}
    print(f"1280x720, {name}: " + ", ".join(f"{k} {v:.2f} ms ({v / med['arrays']:.2f}x)" for k, v in med.items()))
