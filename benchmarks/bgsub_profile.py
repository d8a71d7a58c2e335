"""Per-stage profile of the kernel subtractors: where a frame's time goes.

The same CDnet highway frames (:func:`bgsub.commands.bench.load_frames`, resized to each size) go
through ``apply`` exactly as a user calls it; the stages are timed from inside, by wrapping the
subtractor's own methods and the post-processing functions for the run (nothing is re-implemented,
so the profile cannot drift from the code it measures):

- ``prepare``: input checks, colour conversion, blur, the ``process_scale`` resize;
- ``stabilise``: the shift against the stream's reference frame and the translation;
- ``illum``: the illumination gain (``illumination="gain"``) and the division by it;
- ``frame``: the jitted pass(es) over the model: the fused frame (olkn's bounded engine, oem), or
  the score pass and the update pass (norma's ``update_mask="post"``, which also runs its
  post-processing in between: that part is counted under ``post``, not here);
- ``post``: mask post-processing, split into ``median`` (``binary_median``, both apertures),
  ``count`` (the clutter count of ``median_max``) and ``filters`` (``fill_holes``, ``min_area``);
- ``other``: the rest of ``apply`` (the blink margin's dilation, the unshift, the mask's copy, the
  driver's bookkeeping);
- ``apply``: the whole call; ``knn``: OpenCV KNN's ``apply`` on the same frames (run on its own, not
  interleaved frame by frame, so that neither evicts the other's model from the caches), and ``×knn``
  its ratio to ``apply``. ``first`` is the first ``apply`` (the model's allocation and bootstrap).

``summed`` is the share of pixels whose kernel sum ran in full (the bounded engine), ``stepped`` the
share that learnt. Medians over the timed frames, in milliseconds. Usage::

    python benchmarks/bgsub_profile.py --size 320x240 --size 1280x720 --size 1920x1080 --algo olkn --algo norma

With ``--device cuda`` the GPU engine is profiled: each stage ends by waiting for the model's CUDA stream (so
a stage's time includes the GPU work it issued, and ``apply`` is a little slower than unprofiled), ``median``
is the GPU's median with its download, and ``upload`` (a part of ``frame``) the frame's and the previous output
mask's upload::

    python benchmarks/bgsub_profile.py --device cuda --size 1920x1080 --size 3840x2160 --algo olkn --algo norma

Prints a Markdown table (paste into docs/performance.md) and, with ``--json``, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import contextmanager

import cv2
import numpy as np

import bgsub
from bgsub.commands.bench import load_frames
from bgsub.pipeline import masks as _masks

#: Stages timed by wrapping the subtractor's methods (method name -> stage).
_METHODS = {"_prepare": "prepare", "_frame": "frame", "_score_pass": "frame", "_update": "frame"}
#: Stages timed by wrapping the ``apply`` of the subtractor's stage objects (attribute -> stage).
_STAGES = {"_stabiliser": "stabilise", "_illumination": "illum"}
#: Post-processing functions of :mod:`bgsub.pipeline.masks` (name -> stage).
_FUNCTIONS = {"binary_median": "median", "fill_holes": "filters", "remove_small": "filters"}
STAGES = ("prepare", "stabilise", "illum", "frame", "median", "count", "filters", "post", "other")


class _Clock:
    """Milliseconds per stage within one ``apply``. A top-level stage called inside another (a frame run by
    the bootstrap) is not counted twice; a part (``outer=False``: the median inside ``post``) is counted in
    its own stage and in the one around it."""

    def __init__(self, sync=None) -> None:
        self.now: dict[str, float] = {}
        self.depth = 0
        self.sync = sync  # called at the end of each timed stage (the GPU engine: wait for its stream)

    def timed(self, stage, fn, outer: bool = True):
        def wrapper(*args, **kwargs):
            if outer and self.depth:
                return fn(*args, **kwargs)
            self.depth += outer
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.sync is not None:
                    self.sync()
                self.now[stage] = self.now.get(stage, 0.0) + (time.perf_counter() - t0) * 1e3
                self.depth -= outer
        return wrapper


@contextmanager
def _instrumented(sub, clock: _Clock):
    """``sub``'s stages and :mod:`bgsub.pipeline.masks`' filters timed into ``clock``."""
    from bgsub.pipeline import components as _components

    saved = {name: getattr(_masks, name) for name in _FUNCTIONS}
    saved_count = _components.count_components
    gpu = _gpu_state_class(sub)
    if gpu is not None:
        saved_gpu = {"median": gpu.median}
    try:
        if gpu is not None:  # the GPU's median (in place of binary_median) and the uploads
            gpu.median = clock.timed("median", saved_gpu["median"], outer=False)
            sub._ready = clock.timed("upload", sub._ready, outer=False)
        for name, stage in _METHODS.items():
            if hasattr(sub, name):
                setattr(sub, name, clock.timed(stage, getattr(sub, name)))
        for name, stage in _STAGES.items():
            obj = getattr(sub, name, None)
            if obj is not None:
                obj.apply = clock.timed(stage, obj.apply)
        post = sub._postprocess
        for name, stage in _FUNCTIONS.items():
            setattr(_masks, name, clock.timed(stage, saved[name], outer=False))
        _components.count_components = clock.timed("count", saved_count, outer=False)
        sub._postprocess = clock.timed("post", post)
        yield
    finally:
        for name, fn in saved.items():
            setattr(_masks, name, fn)
        _components.count_components = saved_count
        if gpu is not None:
            gpu.median = saved_gpu["median"]
        for name in (*_METHODS, "_postprocess", "_ready"):
            sub.__dict__.pop(name, None)
        for name in _STAGES:
            getattr(sub, name, None).__dict__.pop("apply", None)


def _gpu_state_class(sub):
    """The GPU engine's device-state class when ``sub`` runs on the GPU, else None."""
    if getattr(sub, "device", "cpu") != "cuda":
        return None
    from bgsub.models._cuda_engine import _DeviceState

    return _DeviceState


def _gpu_wait(sub):
    """A callable that waits for ``sub``'s CUDA stream (None on the CPU)."""
    if _gpu_state_class(sub) is None:
        return None

    def wait():
        dev = sub.__dict__.get("_dev")
        if dev is not None:
            dev.wait()
    return wait


def profile(algo: str, frames: list[np.ndarray], warm: int, device: str = "cpu") -> dict[str, float]:
    """Stage medians of ``algo`` (``NAME`` or ``NAME:PRESET``) on ``device`` over ``frames[warm:]``."""
    from bgsub.settings import resolve_algorithm

    name, _, preset = algo.partition(":")
    name, params = resolve_algorithm(name, [], None, preset or None)
    sub = bgsub.create(name, device=device, **params)
    t0 = time.perf_counter()
    sub.apply(frames[0])
    first = (time.perf_counter() - t0) * 1e3
    for f in frames[1:warm]:
        sub.apply(f)
    clock = _Clock(_gpu_wait(sub))
    rows: dict[str, list[float]] = {k: [] for k in (*STAGES, "upload", "apply")}
    summed, stepped = [], []
    with _instrumented(sub, clock):
        for f in frames[warm:]:
            clock.now = {}
            t0 = time.perf_counter()
            sub.apply(f)
            total = (time.perf_counter() - t0) * 1e3
            inner = sum(clock.now.get(k, 0.0) for k in ("prepare", "stabilise", "illum", "frame", "post"))
            clock.now["other"] = max(0.0, total - inner)
            for k in (*STAGES, "upload"):
                rows[k].append(clock.now.get(k, 0.0))
            rows["apply"].append(total)
            n = sub.frame_shape_[0] * sub.frame_shape_[1]
            stepped.append(float(sub._stepped.sum()) / n)
            if getattr(sub, "_summed", None) is not None and device == "cpu":  # (the GPU sums every pixel)
                summed.append(float(sub._summed.sum()) / n)
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["first"] = first
    out["stepped"] = statistics.mean(stepped)
    out["summed"] = statistics.mean(summed) if summed else float("nan")
    return out


def knn_ms(frames: list[np.ndarray], warm: int) -> float:
    knn = cv2.createBackgroundSubtractorKNN()
    for f in frames[:warm]:
        knn.apply(f)
    times = []
    for f in frames[warm:]:
        t0 = time.perf_counter()
        knn.apply(f)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", action="append", default=None, help="NAME or NAME:PRESET (repeatable; olkn, norma)")
    ap.add_argument("--size", action="append", default=None, help="WxH (repeatable; 320x240, 1280x720, 1920x1080)")
    ap.add_argument("--frames", type=int, default=40, help="timed frames (default 40)")
    ap.add_argument("--warmup", type=int, default=60, help="frames before timing (default 60, as bgsub bench)")
    ap.add_argument("--threads", type=int, default=2, help="numba and OpenCV threads (default 2)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="the engine profiled (default cpu; cuda: the GPU engine, KNN still on the CPU)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.frames < 1 or a.warmup < 1:
        ap.error(f"--frames and --warmup must be >= 1, got {a.frames} and {a.warmup}")
    if a.device == "cuda":
        from bgsub.models._cuda_engine import cuda_runtime

        try:
            cuda_runtime()
        except ValueError as exc:
            ap.error(str(exc))
    import numba

    numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
    cv2.setNumThreads(a.threads)
    algos = a.algo or ["olkn", "norma"]
    sizes = [tuple(int(v) for v in s.split("x")) for s in (a.size or ["320x240", "1280x720", "1920x1080"])]
    src, origin = load_frames(a.warmup + a.frames)
    report = {"source": origin, "threads": a.threads, "device": a.device, "rows": []}
    for (w, h) in sizes:
        frames = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR)
                  for f in src]
        knn = knn_ms(frames, a.warmup)
        for algo in algos:
            r = profile(algo, frames, a.warmup, a.device)
            r.update(algo=algo, size=f"{w}x{h}", knn=knn, ratio=knn / r["apply"])
            report["rows"].append(r)
    if a.json:
        print(json.dumps(report))
        return 0
    print(f"frames: {origin}; {a.threads} threads; {a.device}; ms per frame (median of {a.frames} after "
          f"{a.warmup})\n")
    cols = (*STAGES, *(("upload",) if a.device == "cuda" else ()), "apply", "knn")
    print("| size | algo | " + " | ".join(cols) + " | ×knn | first | summed | stepped |")
    print("|---|---|" + "---|" * (len(cols) + 4))
    for r in report["rows"]:
        summed = "–" if r["summed"] != r["summed"] else f"{100 * r['summed']:.1f} %"
        print(f"| {r['size']} | {r['algo']} | " + " | ".join(f"{r[c]:.2f}" for c in cols)
              + f" | {r['ratio']:.2f} | {r['first']:.0f} | {summed} | {100 * r['stepped']:.0f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
