"""CPU time per frame of ``oem`` against OpenCV MOG2 (and KNN), less sensitive to load than fps.

The same CDnet highway frames as ``bgsub bench`` (:func:`bgsub.commands.bench.load_frames`,
resized to each size), ``--warmup`` frames (10, as ``bench``; some hundreds to time a
model in its steady state), then ``time.process_time()`` (CPU time of every thread of
this process) around ``--frames`` ``apply`` calls; ``--rounds``
interleaved rounds, median. On a machine shared with other jobs, CPU time moves much
less than wall-clock fps (it still grows somewhat under load: caches and memory
bandwidth are shared). Usage::

    python benchmarks/oem_cputime.py --size 320x240 --size 1920x1080 --frames 60 --rounds 3
    python benchmarks/oem_cputime.py --size 320x240 --warmup 600 --frames 100 --rounds 2

Prints one line per size: milliseconds of CPU per frame for each algorithm and the
ratio MOG2 / oem (> 1: oem needs less CPU per frame than MOG2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import cv2

import bgsub
from bgsub.commands.bench import load_frames


def cpu_ms_per_frame(algo: str, frames, warm) -> float:
    name, _, preset = algo.partition(":")
    from bgsub.settings import resolve_algorithm

    name, params = resolve_algorithm(name, [], None, preset or None)
    sub = bgsub.create(name, **params)
    for f in warm:
        sub.apply(f)
    t0 = time.process_time()
    for f in frames:
        sub.apply(f)
    return (time.process_time() - t0) * 1e3 / len(frames)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", default=None, metavar="WxH")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--algo", action="append", default=None)
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in (args.size or ["320x240", "1920x1080"])]
    algos = args.algo or ["oem", "mog2", "knn"]
    warm = args.warmup
    src, origin = load_frames(args.frames + warm)
    print(f"frames: {origin} ({warm} warm-up); load average {os.getloadavg()[0]:.2f}")
    for (w, h) in sizes:
        frames = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR)
                  for f in src[: args.frames + warm]]
        ms = {a: [] for a in algos}
        for _ in range(args.rounds):
            for a in algos:
                ms[a].append(cpu_ms_per_frame(a, frames[warm:], frames[:warm]))
        med = {a: statistics.median(v) for a, v in ms.items()}
        cells = ", ".join(f"{a} {med[a]:.2f}" for a in algos)
        ratio = f"; MOG2/oem {med['mog2'] / med['oem']:.2f}" if "mog2" in med and "oem" in med else ""
        print(f"{w}x{h}: CPU ms/frame {cells}{ratio}; load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
