"""Per-stage profile of the kernel subtractors: where a frame's time goes.

For each algorithm and frame size, the same CDnet highway frames (see
:func:`bgsub.commands.bench.load_frames`) go through the stages of
``PixelKernelSubtractor.apply`` one at a time, each timed on its own:

- ``prepare``: input checks, colour conversion, the ``process_scale`` resize, contiguous copy;
- ``score``: the kernel sums alone (``score_frame``: every pixel's full sum,
  no learning), run on a copy of the state;
- ``frame``: the fused jitted pass (kernel sums + the selected pixels' updates);
  ``frame - score`` is the cost of the updates;
- ``post``: mask post-processing (median, morphology, min_area);
- ``copy``: the returned mask (a copy, or the upscale to the input size), ``n_steps_`` bookkeeping and
  the scale;
- ``apply``: the whole ``apply`` as a user calls it (sum of the above plus
  Python overhead), and OpenCV KNN's ``apply`` on the same frames for reference.

Medians over the timed frames, in milliseconds per frame. Usage::

    python benchmarks/bgsub_profile.py --size 320x240 --size 1920x1080 --frames 40 --algo olkn --algo olkn:fast

Prints a Markdown table (paste into docs/performance.md) and, with ``--json``,
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import cv2
import numpy as np

import bgsub
from bgsub.commands.bench import load_frames
from bgsub.models import _frame_kernels as fk
from bgsub.models.base import _prob


def _ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def profile(algo: str, frames: list[np.ndarray], warm: list[np.ndarray]) -> dict[str, float]:
    from bgsub.settings import resolve_algorithm

    name, _, preset = algo.partition(":")
    name, params = resolve_algorithm(name, [], None, preset or None)
    sub = bgsub.create(name, **params)
    for f in warm:
        sub.apply(f)
    stages = {k: [] for k in ("prepare", "score", "frame", "post", "copy", "apply")}
    p = sub.params
    p_bg, p_fg = _prob(p["update_prob"]), _prob(p["fg_update_prob"])
    steps = 0
    for f in frames:
        # stage by stage on the real state (mirrors apply with update_mask="raw")
        t0 = time.perf_counter()
        img = sub._prepare(f)
        sub._img = img
        t1 = time.perf_counter()
        # the sums alone, on copies so that the state is not touched
        f64 = np.empty(sub.rho_.shape, np.float64)
        old = np.empty(sub.rho_.shape, np.float64)
        sc = np.empty(sub.rho_.shape, np.float32)
        mk = np.empty(sub.rho_.shape, np.uint8)
        t2 = time.perf_counter()
        own = np.empty(sub.rho_.shape, np.uint8)
        blink = sub.blink_.copy()
        fk.score_frame(img, sub.samples_, sub.coef_, sub.ring_, sub.rho_, sub.scale_, sub.lut(),
                       sub._score_offset, sc, f64, old, mk, own, blink, sub.prev_mask_, *sub._blink_args(False), 0, 1,
                       0, sub.n_frames_, *sub._kernel_args())
        t3 = time.perf_counter()
        sub._frame(img, p_bg, p_fg, 0, sub._rawmask, sub.prev_mask_)
        sub.prev_mask_[...] = sub._rawmask
        t4 = time.perf_counter()
        mask = sub._postprocess(sub._rawmask)
        t5 = time.perf_counter()
        steps += int(sub._stepped.sum())
        sub.n_steps_ += int(sub._stepped.sum())
        sub._advance_scale()
        sub._mask = mask
        sub.n_frames_ += 1
        sub._full_size(mask, cv2.INTER_NEAREST)
        t6 = time.perf_counter()
        stages["prepare"].append((t1 - t0) * 1e3)
        stages["score"].append((t3 - t2) * 1e3)
        stages["frame"].append((t4 - t3) * 1e3)
        stages["post"].append((t5 - t4) * 1e3)
        stages["copy"].append((t6 - t5) * 1e3)
    for f in frames:
        stages["apply"].append(_ms(lambda: sub.apply(f)))
    out = {k: statistics.median(v) for k, v in stages.items()}
    out["updates"] = max(0.0, out["frame"] - out["score"])
    out["stepped_share"] = steps / len(frames) / (sub.frame_shape_[0] * sub.frame_shape_[1])
    return out


def knn_ms(frames, warm) -> float:
    knn = cv2.createBackgroundSubtractorKNN()
    for f in warm:
        knn.apply(f)
    return statistics.median(_ms(lambda: knn.apply(f)) for f in frames)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", action="append", default=None)
    ap.add_argument("--size", action="append", default=None)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    algos = a.algo or ["olkn", "norma"]
    sizes = [tuple(int(v) for v in s.split("x")) for s in (a.size or ["320x240", "1280x720", "1920x1080"])]
    src, origin = load_frames(a.frames + 10)
    report = {"source": origin, "rows": []}
    for (w, h) in sizes:
        frames = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR)
                  for f in src]
        warm, timed = frames[:10], frames[10:]
        knn = knn_ms(timed, warm)
        for algo in algos:
            r = profile(algo, timed, warm)
            r.update(algo=algo, size=f"{w}x{h}", knn_apply=knn)
            report["rows"].append(r)
    if a.json:
        print(json.dumps(report))
        return
    print(f"frames: {origin}; ms per frame (median)\n")
    cols = ("prepare", "score", "updates", "frame", "post", "copy", "apply", "knn_apply")
    print("| size | algo | " + " | ".join(cols) + " | stepped |")
    print("|---|---|" + "---|" * (len(cols) + 1))
    for r in report["rows"]:
        print(f"| {r['size']} | {r['algo']} | " + " | ".join(f"{r[c]:.2f}" for c in cols)
              + f" | {100 * r['stepped_share']:.0f} % |")


if __name__ == "__main__":
    main()
