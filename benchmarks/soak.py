"""Soak: a million small frames through every subtractor, memory bounded, state finite.

Feeds an 8x8 colour stream (a gradient background with slow illumination
drift, sensor noise with bursts, a small object crossing every few dozen frames,
and one that stops for 50 000 frames) to every
registered subtractor for ``--frames`` frames (default 10^6). Every
``--every`` frames it records the resident memory of the process and checks the
model: every float state array (``_STATE_ARRAYS``) and the score map finite,
``scale_`` finite and positive, ring counts within ``[0, budget]``; for the
OpenCV peers the background image. At the end each kernel subtractor is saved
and loaded again (checkpoint round trip after 10^6 frames). Prints one JSON
object per subtractor and exits 1 if any check failed; the figures measured on
the dev machine are in ``docs/usage.md``.

Usage::

    python benchmarks/soak.py [--frames 1000000] [--size 8x8] [--algo olkn --algo knn]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bgsub_longrun import _rss_bytes  # noqa: E402


def _state_ok(sub) -> tuple[bool, str]:
    """(True, "") when the model is finite and consistent, else (False, why)."""
    arrays = getattr(type(sub), "_STATE_ARRAYS", None)
    if arrays is None:  # an OpenCV peer
        bg = sub.getBackgroundImage()
        return (bg is not None and bg.dtype == np.uint8), "no background image"
    for name in arrays:
        a = getattr(sub, name, None)
        if a is not None and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            return False, f"{name} not finite"
    if not (np.isfinite(sub.scale_) and sub.scale_ > 0):
        return False, f"scale_ = {sub.scale_}"
    score = sub.getScoreMap()
    if score is not None and not np.all(np.isfinite(score)):
        return False, "score not finite"
    ring = getattr(sub, "ring_", None)
    if ring is not None and not (np.all(ring[..., 1] >= 0) and np.all(ring[..., 1] <= sub.params["budget"])):
        return False, "ring count out of range"
    return True, ""


def soak(algo: str, n_frames: int, size: tuple[int, int], every: int) -> dict:
    import bgsub

    W, H = size
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([50 + 8 * xx, 80 + 8 * yy, 120 + 4 * (xx + yy)], -1).astype(np.float32)
    noise = rng.normal(0, 1, (4099,) + base.shape).astype(np.float32)  # cycled: drawing costs more than 8x8
    sub = bgsub.create(algo)
    reports, failures = [], []
    t0 = time.perf_counter()
    for t in range(n_frames):
        sigma = 12.0 if (t // 3000) % 10 == 7 else 3.0
        fr = base + np.float32(15.0 * np.sin(2 * np.pi * t / 20000.0)) + sigma * noise[t % 4099]
        x0 = (t // 3) % (W + 6) - 3
        fr[1:3, max(0, x0):max(0, x0 + 3)] = (200, 40, 60)
        if 400_000 <= t < 450_000:
            fr[H - 3:H - 1, 2:5] = (30, 200, 220)
        sub.apply(np.clip(fr, 0, 255).astype(np.uint8))
        if (t + 1) % every == 0 or t == 0:
            ok, why = _state_ok(sub)
            if not ok:
                failures.append({"frame": t + 1, "why": why})
            reports.append({"frame": t + 1, "rss_MiB": round(_rss_bytes() / 2**20, 2),
                            "seconds": round(time.perf_counter() - t0, 1)})
    elapsed = time.perf_counter() - t0
    roundtrip = None
    if hasattr(type(sub), "_STATE_ARRAYS"):
        with tempfile.TemporaryDirectory() as tmp:
            back = bgsub.load(sub.save(os.path.join(tmp, "m.npz")))
            frame = np.full((H, W, 3), 100, np.uint8)
            roundtrip = bool(back.n_frames_ == sub.n_frames_
                             and np.array_equal(back.apply(frame), sub.apply(frame)))
    rss = [r["rss_MiB"] for r in reports[1:]] or [reports[0]["rss_MiB"]]
    return {"algo": algo, "frames": n_frames, "size": f"{W}x{H}", "seconds": round(elapsed, 1),
            "us_per_frame": round(1e6 * elapsed / n_frames, 1), "all_finite": not failures,
            "failures": failures[:5], "rss_MiB_first": reports[0]["rss_MiB"],
            "rss_MiB_range_after_first_report": [min(rss), max(rss)],
            "rss_growth_MiB": round(max(rss) - min(rss), 2), "checkpoint_roundtrip": roundtrip,
            "reports": reports}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--size", default="8x8", help="WxH of the frames (default 8x8)")
    p.add_argument("--every", type=int, default=100_000, help="frames between reports")
    p.add_argument("--algo", dest="algos", action="append", default=None,
                   help="subtractor (repeatable; default: every registered one)")
    args = p.parse_args(argv)
    W, H = (int(v) for v in args.size.lower().split("x"))
    import bgsub

    algos = args.algos or list(bgsub.algorithms())
    results = []
    for algo in algos:
        r = soak(algo, args.frames, (W, H), args.every)
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "reports"}), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))
    ok = all(r["all_finite"] and r["checkpoint_roundtrip"] in (None, True) for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
