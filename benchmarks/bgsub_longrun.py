"""Long synthetic stream: no NaN/inf and constant memory over 100 000 frames.

Feeds a 64x48 colour stream (noisy gradient background, slow illumination
drift, objects crossing, one object that stops for 5 000 frames, sensor noise
bursts) to the default ``olkn`` and ``norma`` subtractors, and every 10 000
frames records the process's resident memory, Python's traced allocations, the
global coefficient scale, and whether any score, coefficient or offset is not
finite. Prints one JSON object; the figures measured on the dev machine are in
``docs/parameters.md``.

Usage::

    python benchmarks/bgsub_longrun.py [--frames 100000] [--algo olkn --algo norma]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc

import numpy as np


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            import os

            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def frame_at(t: int, rng: np.random.Generator, base: np.ndarray) -> np.ndarray:
    H, W = base.shape[:2]
    drift = 15.0 * np.sin(2 * np.pi * t / 20000.0)  # slow illumination change
    sigma = 12.0 if (t // 3000) % 10 == 7 else 3.0  # a noise burst now and then
    fr = base + drift + rng.normal(0, sigma, base.shape)
    x0 = (t * 2) % (W + 20) - 20  # an object crossing every ~42 frames
    fr[10:20, max(0, x0):max(0, x0 + 12)] = (200, 40, 60)
    if 40000 <= t < 45000:  # an object that stops for 5000 frames
        fr[30:40, 20:30] = (30, 200, 220)
    return np.clip(fr, 0, 255).astype(np.uint8)


def run(algo: str, n_frames: int, every: int = 10000) -> dict:
    import bgsub

    rng = np.random.default_rng(0)
    H, W = 48, 64
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([50 + 2 * xx, 80 + 2 * yy, 120 + xx + yy], -1).astype(float)
    sub = bgsub.create(algo)
    tracemalloc.start()
    checkpoints = []
    t0 = time.perf_counter()
    bad = 0
    for t in range(n_frames):
        sub.apply(frame_at(t, rng, base))
        if (t + 1) % every == 0 or t == 0:
            s = sub.getScoreMap()
            finite = bool(np.all(np.isfinite(s)) and np.all(np.isfinite(sub.coef_))
                          and np.all(np.isfinite(sub.rho_)))
            bad += not finite
            checkpoints.append({"frame": t + 1, "rss_MiB": round(_rss_bytes() / 2**20, 2),
                                "traced_KiB": round(tracemalloc.get_traced_memory()[0] / 1024, 1),
                                "scale": sub.scale_, "finite": finite,
                                "score_min": float(s.min()), "score_max": float(s.max())})
    elapsed = time.perf_counter() - t0
    tracemalloc.stop()
    rss = [c["rss_MiB"] for c in checkpoints[1:]]
    traced = [c["traced_KiB"] for c in checkpoints[1:]]
    return {"algo": algo, "frames": n_frames, "size": f"{W}x{H}", "seconds": round(elapsed, 1),
            "all_finite": bad == 0, "rss_MiB_range": [min(rss), max(rss)] if rss else None,
            "traced_KiB_range": [min(traced), max(traced)] if traced else None,
            "checkpoints": checkpoints}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, default=100000)
    p.add_argument("--algo", dest="algos", action="append", default=None)
    args = p.parse_args(argv)
    out = [run(a, args.frames) for a in (args.algos or ["olkn", "norma"])]
    print(json.dumps(out, indent=1))
    return 0 if all(r["all_finite"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
