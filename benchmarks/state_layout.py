"""Per-pixel state layout: sparse full sums and sparse steps over a 1280x720 model of 20 colour samples.

olkn's bounded frame sums about 5 % of the pixels in full and steps about a third of them, each at a
scattered address. This times that access pattern alone (a plain Gaussian-table sum and a one-slot write)
on the product's layout, samples (N, B, 3) uint8 and coefficients (N, B) float32 in two arrays, against one
interleaved record per pixel (samples, then coefficients: 160 bytes), on the same pixels::

    NUMBA_NUM_THREADS=2 python benchmarks/state_layout.py

It is not the product's kernel: it bounds what an interleaved layout could save there (docs/performance.md).
"""
import time, numpy as np
from numba import njit, prange

H, W, B, C = 720, 1280, 20, 3
N = H * W
rng = np.random.default_rng(0)
lut = np.exp(-np.arange(26000) / 1600.0).astype(np.float32)
samples = rng.integers(80, 140, (N, B, C)).astype(np.uint8)
coef = rng.random((N, B)).astype(np.float32)
# record: 60 B samples + 4 pad + 80 B coef + 16 pad = 160 B (2.5 lines), as a uint8 view + float32 view
REC = 160
rec = np.zeros((N, REC), np.uint8)
rec[:, :60] = samples.reshape(N, 60)
rec.view(np.float32)[:, 16:36] = coef
frame = rng.integers(80, 140, (N, C)).astype(np.uint8)
summed = np.sort(rng.choice(N, N // 20, replace=False))   # 5 % sum in full
stepped = np.sort(rng.choice(N, N // 3, replace=False))   # a third step
slot = rng.integers(0, B, N)

@njit(parallel=True, fastmath=True)
def soa(frame, samples, coef, lut, summed, stepped, slot, out):
    n = summed.shape[0]
    for k in prange(n):
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
    m = stepped.shape[0]
    for k in prange(m):
        p = stepped[k]
        s = slot[p]
        for c in range(3):
            samples[p, s, c] = frame[p, c]
        coef[p, s] = np.float32(0.5)

@njit(parallel=True, fastmath=True)
def aos(frame, rec, recf, lut, summed, stepped, slot, out):
    n = summed.shape[0]
    for k in prange(n):
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
    m = stepped.shape[0]
    for k in prange(m):
        p = stepped[k]
        s = slot[p]
        for c in range(3):
            rec[p, 3 * s + c] = frame[p, c]
        recf[p, 16 + s] = np.float32(0.5)

out = np.zeros(N)
recf = rec.view(np.float32)
soa(frame, samples, coef, lut, summed, stepped, slot, out); aos(frame, rec, recf, lut, summed, stepped, slot, out)
ts, ta = [], []
for r in range(15):
    t = time.perf_counter(); soa(frame, samples, coef, lut, summed, stepped, slot, out); ts.append(time.perf_counter() - t)
    t = time.perf_counter(); aos(frame, rec, recf, lut, summed, stepped, slot, out); ta.append(time.perf_counter() - t)
print(f"1280x720, 5 % summed, a third stepped: two arrays {1e3*np.median(ts):.2f} ms, one record {1e3*np.median(ta):.2f} ms")
empty = np.zeros(0, np.int64)
for name, s_idx, t_idx in (("sums only", summed, empty), ("steps only", empty, stepped)):
    ts, ta = [], []
    for r in range(15):
        t = time.perf_counter(); soa(frame, samples, coef, lut, s_idx, t_idx, slot, out); ts.append(time.perf_counter() - t)
        t = time.perf_counter(); aos(frame, rec, recf, lut, s_idx, t_idx, slot, out); ta.append(time.perf_counter() - t)
    print(f"{name}: two arrays {1e3*np.median(ts):.2f} ms, one record {1e3*np.median(ta):.2f} ms")
